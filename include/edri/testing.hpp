// A plugin's handlers tested in the test's own process, without a server
// (docs/writing-a-plugin.md, "Testing handlers"; docs/decisions/0053).
//
//   edri::testing::TestClient client({"build/plugins/notes.so"});
//   edri::Response r = client.post("/notes", {{"title", ""}, {"body", "x"}});
//   CHECK(r.status == 422);                        // refused at the edge
//   CHECK(client.published().empty());             // no handler ran
//
// A TestClient loads the plugins as edri-server does (the same loader and
// checks), and runs each request through what a listener and a manager
// run: the route table, the middleware, the declared fields' validation,
// then the handler, callback or coroutine, with a Context that works as a
// manager's does (databases, timers, worker threads, templates, outbound
// HTTP) and records what the handler asked for beside its answer:
// notifications published, requests to other domains (answered by the
// test, or by a loaded plugin's handler), stream patches, log lines.
// Notifications reach the subscribers of the loaded plugins, as they would
// in the server. It works from Catch2 or any other framework: it only
// returns values and throws nothing for a request the server would answer.
//
// Everything runs on the calling thread: a request returns once its
// handler answered (or after TestOptions::answer_timeout, as a 504), its
// awaits served by the client's own event loop meanwhile. Not for use by
// two threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <edri/json_depth.hpp>
#include <edri/log.hpp>
#include <edri/request.hpp>
#include <edri/response.hpp>

namespace edri::testing {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct TestOptions {
  // Database URLs by name, winning over what a plugin declared (as
  // EDRI_DATABASES does): a test's own SQLite file, its own Postgres.
  std::vector<std::pair<std::string, std::string>> databases = {};
  // Where Context::render finds templates (EDRI_TEMPLATE_PATH).
  std::string template_path = "templates";
  // How long a request may wait for its handler's answer; past it the
  // request returns a 504 problem (a handler that never answers).
  std::chrono::milliseconds answer_timeout{5000};
  // Problems hide a handler's exception text, as ENVIRONMENT=production.
  bool production = false;
  std::size_t max_json_depth = kDefaultMaxJsonDepth;  // EDRI_MAX_JSON_DEPTH
};

// What handlers did besides answering, in the order they did it.
struct Published {
  std::string domain;  // whose handler published
  std::string event;
  nlohmann::json payload;
};
struct Asked {
  std::string domain;  // whose handler asked
  std::string event;
  nlohmann::json body;
};
struct StreamPatch {
  std::string domain;
  std::string stream;
  nlohmann::json patch;
  std::uint64_t revision;  // what the broker would have numbered it
};
struct LogLine {
  std::string domain;
  LogLevel level;
  std::string message;
};

// Answers a request a handler sends to another domain (Context::ask,
// request): the event's body in, its response out.
using Answerer = std::function<Response(const nlohmann::json& body)>;

class TestClient {
 public:
  // Loads `plugin_paths` in order, as EDRI_PLUGINS; runs every domain's
  // start hooks. Throws std::runtime_error with the server's message for a
  // plugin it would refuse to start with (a bad declaration, a default
  // that breaks its own field's rules).
  explicit TestClient(std::vector<std::string> plugin_paths, TestOptions options = {});
  ~TestClient();  // runs the stop hooks
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;

  // A request as a client sends it: `target` is the path and the query
  // ("/notes?limit=5"). The body of post/put/patch is sent as JSON
  // (Content-Type application/json unless `headers` names another).
  Response get(std::string_view target, Headers headers = {});
  Response del(std::string_view target, Headers headers = {});
  Response post(std::string_view target, const nlohmann::json& body, Headers headers = {});
  Response put(std::string_view target, const nlohmann::json& body, Headers headers = {});
  Response patch(std::string_view target, const nlohmann::json& body, Headers headers = {});
  // Any method, the body as bytes (its Content-Type in `headers`).
  Response send(Method method, std::string_view target, std::string body = {}, Headers headers = {});

  // Answers the requests handlers send for `event` with `answerer` from
  // now on, instead of a loaded plugin's handler (or a 503 where none is
  // loaded).
  void answer(std::string event, Answerer answerer);
  // Publishes notification `event` to the loaded plugins' subscribers, as a
  // handler would; returns once they ran.
  void publish(std::string_view event, const nlohmann::json& payload);
  // Serves timers, subscribers and awaits for up to `up_to`, or until
  // nothing is left to run: what a test waits on that no request answers.
  void settle(std::chrono::milliseconds up_to = std::chrono::milliseconds(1000));

  const std::vector<Published>& published() const;
  const std::vector<Asked>& asked() const;
  const std::vector<StreamPatch>& patches() const;
  const std::vector<LogLine>& logs() const;
  // A live stream's state, every patch merged ({} when none was published).
  nlohmann::json stream(std::string_view name) const;
  // Forgets what was recorded (not the streams' states).
  void clear_records();

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The body of `r` parsed as JSON (discarded when it is not JSON).
inline nlohmann::json body_json(const Response& r) { return nlohmann::json::parse(r.body_bytes(), nullptr, false); }

// The value of header `name` in `r` (ASCII case-insensitive), if any.
inline std::optional<std::string> header_of(const Response& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (k.size() != name.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < k.size() && same; ++i) same = (k[i] | 0x20) == (name[i] | 0x20);
    if (same) return v;
  }
  return std::nullopt;
}

}  // namespace edri::testing
