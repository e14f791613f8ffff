// Pages driven in headless Chromium (Debian's `chromium`) over the
// DevTools protocol: the notes page (a note added with the form in one
// page appears in a second page through the WebSocket push, without a
// reload), and the API docs page at /docs (a "try it" request made from
// it creates a note; its screenshot is kept in the build's test-artifacts).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"
#include "support/ws_client.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {

// Headless Chromium in its own process group, killed with it by PID.
class Chromium {
 public:
  Chromium() {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      ::dup2(null, 2);
      const std::string data_dir = "--user-data-dir=" + profile_.path.string();
      // Its scratch files (org.chromium.Chromium.*) go with the profile,
      // not into /tmp to stay there.
      ::setenv("TMPDIR", profile_.path.c_str(), 1);
      ::execlp("chromium", "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
               "--disable-extensions", "--disable-sync", "--disable-component-update",
               "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", data_dir.c_str(), "about:blank",
               static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);
    // Chromium writes the port it took, then the browser's endpoint path.
    const auto file = profile_.path / "DevToolsActivePort";
    const bool up = eventually(
        [&] {
          std::ifstream in(file);
          return static_cast<bool>(in >> port_ >> path_);
        },
        std::chrono::seconds(30));
    if (!up) throw std::runtime_error("chromium did not start (is the Debian package `chromium` installed?)");
  }
  ~Chromium() {
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  std::uint16_t port() const { return port_; }
  const std::string& path() const { return path_; }

 private:
  TempDir profile_;
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
  std::string path_;
};

// A DevTools connection: commands answered by id, events skipped.
class DevTools {
 public:
  DevTools(const Chromium& c) : ws_(c.port(), c.path(), {}, 20000) {}

  json call(const std::string& method, const json& params, const std::string& session = {}) {
    json msg{{"id", ++id_}, {"method", method}, {"params", params}};
    if (!session.empty()) msg["sessionId"] = session;
    ws_.send(msg.dump());
    for (;;) {
      auto m = ws_.read_json();
      if (m.value("id", 0) != id_) continue;
      if (m.contains("error")) throw std::runtime_error(method + ": " + m["error"].dump());
      return m["result"];
    }
  }
  // Opens a page at `url`; returns its session.
  std::string open(const std::string& url) {
    const auto target = call("Target.createTarget", {{"url", url}})["targetId"];
    return call("Target.attachToTarget", {{"targetId", target}, {"flatten", true}})["sessionId"];
  }
  // A PNG of the page as it is drawn now.
  std::string screenshot(const std::string& session) {
    const std::string b64 = call("Page.captureScreenshot", {{"format", "png"}}, session)["data"];
    std::string png(b64.size() / 4 * 3, '\0');
    const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(png.data()),
                                  reinterpret_cast<const unsigned char*>(b64.data()), static_cast<int>(b64.size()));
    if (n < 0) throw std::runtime_error("the screenshot is not base64");
    png.resize(static_cast<std::size_t>(n) - (b64.ends_with("==") ? 2 : b64.ends_with("=") ? 1 : 0));
    return png;
  }
  json eval(const std::string& session, const std::string& expression) {
    const auto r = call("Runtime.evaluate",
                        {{"expression", expression}, {"returnByValue", true}, {"awaitPromise", true}}, session);
    if (r.contains("exceptionDetails")) throw std::runtime_error("page threw: " + r["exceptionDetails"].dump());
    return r["result"].value("value", json());
  }

 private:
  WsClient ws_;
  int id_ = 0;
};

}  // namespace

TEST_CASE("the notes page: a note added in one page appears live in another", "[notes][browser][alone]") {
  TempDir dir;
  ServerProcess server({plugin_path("notes"), plugin_path("audit")},
                       {{"EDRI_NOTES_DB", (dir.path / "notes.db").string()}});
  Chromium chromium;
  DevTools dt(chromium);
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/";
  const auto a = dt.open(url);
  const auto b = dt.open(url);
  const std::string count = "document.querySelector('.count').textContent";
  // Both pages loaded, listed the (no) notes and subscribed.
  for (const auto& page : {a, b})
    REQUIRE(eventually([&] { return dt.eval(page, "window.notesReady === true") == true; }, std::chrono::seconds(20)));
  CHECK(dt.eval(b, "document.querySelectorAll('#notes li').length") == 0);
  CHECK(dt.eval(b, count) == "0 notes");
  // A mark that a reload would wipe.
  dt.eval(b, "window.sameDocument = 'yes'");

  dt.eval(a, R"(
    document.getElementById('title').value = 'From the browser';
    document.getElementById('body').value = 'typed into the form';
    document.getElementById('new-note').requestSubmit();
  )");

  const std::string titles = "[...document.querySelectorAll('#notes li h2')].map(e => e.textContent)";
  CHECK(eventually([&] { return dt.eval(b, titles) == json{"From the browser"}; }, std::chrono::seconds(10)));
  CHECK(dt.eval(b, "window.sameDocument") == "yes");
  CHECK(dt.eval(b, "document.getElementById('total').textContent") == "1");
  CHECK(dt.eval(b, count) == "1 note");
  CHECK(dt.eval(b, "document.querySelector('#notes li p').textContent") == "typed into the form");
  // The page that sent it shows it too (through the same push), and the form was reset.
  CHECK(eventually([&] { return dt.eval(a, titles) == json{"From the browser"}; }));
  CHECK(dt.eval(a, "document.getElementById('title').value") == "");
  // It is really stored.
  const auto list = json::parse(http_get(server.port(), "/notes").body);
  REQUIRE(list["total"] == 1);
  CHECK(list["items"][0]["title"] == "From the browser");

  // A change from elsewhere (REST) reaches both pages as well.
  HttpClient c(server.port());
  CHECK(c.request("DELETE", "/notes/" + std::to_string(list["items"][0]["id"].get<long>())).status == 204);
  CHECK(eventually([&] { return dt.eval(b, "document.querySelectorAll('#notes li').length") == 0; }));
  CHECK(dt.eval(b, count) == "0 notes");
  CHECK(dt.eval(b, "window.sameDocument") == "yes");

  for (const char* title : {"one", "two"})
    CHECK(c.request("POST", "/notes", json{{"title", title}, {"body", "x"}}.dump()).status == 201);
  CHECK(eventually([&] { return dt.eval(b, count) == "2 notes"; }));
  // The footer follows the live stream "audit": the audit manager's counts,
  // the same as GET /audit.
  const std::string audit =
      "['created','updated','deleted'].map(k => document.getElementById('audit-' + k).textContent)";
  CHECK(eventually([&] { return dt.eval(b, audit) == json{"3", "0", "1"}; }));
  CHECK(json::parse(http_get(server.port(), "/audit").body) == json{{"created", 3}, {"updated", 0}, {"deleted", 1}});
  // A page opened now gets the counts from the stream's snapshot.
  const auto late = dt.open(url);
  CHECK(eventually([&] { return dt.eval(late, audit) == json{"3", "0", "1"}; }, std::chrono::seconds(20)));
}

namespace {
// A PNG's width and height, from its IHDR chunk (0, 0 when not a PNG).
std::pair<std::uint32_t, std::uint32_t> png_size(const std::string& png) {
  if (png.size() < 24 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return {0, 0};
  auto be32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(png[at + i]);
    return v;
  };
  return {be32(16), be32(20)};
}
}  // namespace

TEST_CASE("the /docs page lists the routes and a try-it request from it succeeds", "[openapi][browser][alone]") {
  TempDir dir;
  ServerProcess server({plugin_path("notes"), plugin_path("audit")},
                       {{"EDRI_NOTES_DB", (dir.path / "notes.db").string()}});
  // Swagger UI's files are served beside the page, and only they.
  const auto page = http_get(server.port(), "/docs");
  REQUIRE(page.status == 200);
  CHECK(page.header("content-type") == "text/html; charset=utf-8");
  CHECK(http_get(server.port(), "/docs/swagger-ui-bundle.js").status == 200);
  CHECK(http_get(server.port(), "/docs/init.js").body.find("/openapi.json") != std::string::npos);
  CHECK(http_get(server.port(), "/docs/../notes.db").status == 404);
  CHECK(http_get(server.port(), "/docs/nothing.js").status == 404);

  Chromium chromium;
  DevTools dt(chromium);
  const auto docs = dt.open("http://127.0.0.1:" + std::to_string(server.port()) + "/docs");
  dt.call("Emulation.setDeviceMetricsOverride",
          {{"width", 1280}, {"height", 1000}, {"deviceScaleFactor", 1}, {"mobile", false}}, docs);
  const std::string paths = "[...document.querySelectorAll('.opblock-summary-path')].map(e => e.textContent.trim())";
  REQUIRE(eventually([&] { return dt.eval(docs, paths).size() == 6; }, std::chrono::seconds(30)));
  CHECK(dt.eval(docs, "document.querySelector('.opblock-post .opblock-summary-path').textContent.trim()") == "/notes");

  // POST /notes opened, tried with the body Swagger UI makes from the
  // declared fields ({"title":"string","body":"string"}).
  const std::string post = "document.querySelector('.opblock-post')";
  dt.eval(docs, post + ".querySelector('button.opblock-summary-control').click()");
  // Executed once its body editor holds the example (React fills it after
  // the button is drawn; a click before would send no body).
  const std::string example = post + ".querySelector('textarea.body-param__text')?.value.includes('title') === true";
  REQUIRE(eventually([&] { return dt.eval(docs, example) == true; }, std::chrono::seconds(10)));
  dt.eval(docs, post + ".querySelector('button.execute').click()");
  const std::string status =
      post + ".querySelector('.live-responses-table tbody .response-col_status')?.textContent.trim() ?? ''";
  json shown;
  const bool answered = eventually(
      [&] {
        shown = dt.eval(docs, status);
        return shown != "";
      },
      std::chrono::seconds(10));
  INFO("the page shows status " << shown.dump());
  REQUIRE(answered);
  CHECK(shown == "201");
  const auto list = json::parse(http_get(server.port(), "/notes").body);
  CHECK(list["total"] == 1);
  CHECK(list["items"][0]["title"] == "string");

  // The answer in view, for the screenshot.
  dt.eval(docs, post + ".querySelector('.live-responses-table').scrollIntoView()");
  const std::string png = dt.screenshot(docs);
  CHECK(png_size(png) == std::pair<std::uint32_t, std::uint32_t>{1280, 1000});
  CHECK(png.size() > 20000);  // drawn, not a blank page
  std::filesystem::create_directories(EDRI_TEST_ARTIFACT_DIR);
  std::ofstream(std::string(EDRI_TEST_ARTIFACT_DIR) + "/docs-try-it.png", std::ios::binary) << png;
}
