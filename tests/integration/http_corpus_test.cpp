// Every request of tests/corpus/http_requests.txt against a real server:
// each gets the status the corpus names, and a refused one closes the
// connection, so that nothing after it can be read as another request.
#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "support/http_client.hpp"
#include "support/server_process.hpp"

using namespace edri::test;

namespace {

struct Case {
  std::string name;
  int status;
  std::string bytes;
};

// \r \n \t \\ and \xHH.
std::string unescape(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    const char e = text[++i];
    if (e == 'r')
      out += '\r';
    else if (e == 'n')
      out += '\n';
    else if (e == 't')
      out += '\t';
    else if (e == '\\')
      out += '\\';
    else if (e == 'x' && i + 2 < text.size()) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else
      throw std::runtime_error("bad escape in the corpus: " + text);
  }
  return out;
}

std::vector<Case> load_corpus() {
  std::ifstream in(EDRI_CORPUS_DIR "/http_requests.txt");
  REQUIRE(in);
  std::vector<Case> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto a = line.find(" | ");
    const auto b = line.find(" | ", a + 3);
    REQUIRE(b != std::string::npos);
    cases.push_back({line.substr(0, a), std::stoi(line.substr(a + 3, b - a - 3)), unescape(line.substr(b + 3))});
  }
  return cases;
}

}  // namespace

TEST_CASE("the strict HTTP corpus: each request gets its status, a refused one closes the connection", "[http]") {
  const auto cases = load_corpus();
  REQUIRE(cases.size() >= 40);
  ServerProcess server({test_plugin_path("test_app")});
  for (const auto& c : cases) {
    INFO(c.name);
    HttpClient client(server.port(), 3000);
    client.send_raw(c.bytes);
    const auto r = client.read_response();
    CHECK(r.status == c.status);
    if (c.status >= 400) {
      CHECK(r.header("connection") == "close");
      CHECK(client.closed_by_peer(1000));
    }
  }
  // The server is none the worse.
  CHECK(http_get(server.port(), "/hello/after").status == 200);
}
