// TestClient (include/edri/testing.hpp): the listener's steps for one
// request (route, middleware, fields), then the manager's (the handler, on
// a DomainContext), on one loop in the test's thread.
#include <edri/testing.hpp>

#include <cstdio>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>

#include "domain_context.hpp"
#include "http/route_table.hpp"
#include "listener/gate.hpp"
#include "listener/request_validator.hpp"
#include "runtime/config.hpp"

namespace edri::testing {

namespace {

using Clock = std::chrono::steady_clock;

Config config_of(const TestOptions& o) {
  Config c{};
  c.production = o.production;
  c.max_json_depth = o.max_json_depth;
  return c;
}

Response problem(int status, std::string_view detail) {
  return Response::problem(status, reason_phrase(status), detail);
}

// A streamed body, made to its end (what a WebSocket client is sent).
void collect(Response& r) {
  auto* stream = std::get_if<StreamBody>(&r.body);
  if (!stream) return;
  std::string bytes;
  try {
    while (stream->next(bytes)) {
    }
  } catch (const std::exception& e) {
    r = problem(500, std::string("the body's producer threw: ") + e.what());
    return;
  }
  r.body = std::move(bytes);
}

// The header lines middleware added ("a: b\r\n..."), onto the answer.
void add_lines(Response& r, std::string_view lines) {
  while (!lines.empty()) {
    const auto end = lines.find("\r\n");
    const auto line = lines.substr(0, end);
    lines = end == std::string_view::npos ? std::string_view{} : lines.substr(end + 2);
    const auto colon = line.find(": ");
    if (colon != std::string_view::npos)
      r.headers.emplace_back(std::string(line.substr(0, colon)), std::string(line.substr(colon + 2)));
  }
}

// Everything a request's views point into, for as long as it runs.
struct Call {
  std::string path, query, event, id;
  http::HttpRequest head;
  std::vector<std::pair<std::string, std::string>> params;
  listener::ValidatedFields fields;
  Admission admission;
  std::string claims;
  Request req;
};

}  // namespace

class TestClient::Impl final : public TestHost {
 public:
  Impl(std::vector<std::string> paths, TestOptions options);
  ~Impl() override;

  Response send(Method method, std::string_view target, std::string body, Headers headers);
  void answer(std::string event, Answerer a) { answerers_[std::move(event)] = std::move(a); }
  void settle(std::chrono::milliseconds up_to);
  void clear_records() {
    published_.clear();
    asked_.clear();
    patches_.clear();
    logs_.clear();
  }

  std::vector<Published> published_;
  std::vector<Asked> asked_;
  std::vector<StreamPatch> patches_;
  std::vector<LogLine> logs_;

  // TestHost
  EventLoop& loop() override { return loop_; }
  const TestOptions& options() const override { return options_; }
  void post(std::function<void()> fn) override { posted_.push_back(std::move(fn)); }
  void answered(std::uint64_t id, Response response) override;
  bool request(const std::string& from, std::string_view event, const nlohmann::json& body,
               std::function<void(const Response&)> done) override;
  void publish(const std::string& from, std::string_view event, const nlohmann::json& payload) override;
  std::uint64_t patch_stream(const std::string& from, std::string_view name, const nlohmann::json& patch) override;
  nlohmann::json read_stream(std::string_view name) const override;
  std::uint64_t stream_revision(std::string_view name) const override;
  void log(const std::string& domain, LogLevel level, std::string_view message) override {
    logs_.push_back({domain, level, std::string(message)});
  }

 private:
  DomainContext& context_of(const std::string& domain) { return *domains_.at(domain); }
  // Route, middleware and fields: the handler's Request in `c`, or the
  // refusal.
  std::optional<Response> admit(Method method, std::string_view target, Call& c, std::size_t& event);
  // The handler of `event` for `req`; `done` gets its answer, now or later.
  void dispatch(std::size_t event, const Request& req, std::function<void(Response)> done);
  std::string next_id() {
    char id[40];
    std::snprintf(id, sizeof id, "0000000000000000-%016llx", static_cast<unsigned long long>(++ids_));
    return id;
  }
  // Runs posted functions and the loop until `done()` or `deadline`.
  template <class Done>
  void run_until(Done&& done, Clock::time_point deadline);
  bool idle() const;
  void run_posted();

  TestOptions options_;
  Config config_;
  EventLoop loop_;
  plugin::PluginSet plugins_;
  http::RouteTable routes_;
  std::vector<std::shared_ptr<const listener::RequestValidator>> validators_;
  listener::Gate gate_;
  std::map<std::string, std::unique_ptr<DomainContext>> domains_;
  std::map<std::string, Answerer, std::less<>> answerers_;
  std::unordered_map<std::uint64_t, std::function<void(Response)>> waiting_;  // answers to come, by request id
  std::deque<std::function<void()>> posted_;
  std::map<std::string, std::pair<nlohmann::json, std::uint64_t>, std::less<>> streams_;
  std::uint64_t ids_ = 0;
};

TestClient::Impl::Impl(std::vector<std::string> paths, TestOptions options)
    : options_(std::move(options)),
      config_(config_of(options_)),
      plugins_(plugin::PluginSet::load(paths)),
      validators_(listener::make_validators(plugins_, options_.max_json_depth)),
      gate_(config_, plugins_) {
  plugins_.check_databases(options_.databases);
  for (std::size_t i = 0; i < plugins_.routes().size(); ++i)
    routes_.add(plugins_.routes()[i].method, plugins_.routes()[i].path, static_cast<std::uint32_t>(i));
  for (const auto& d : plugins_.domains()) domains_.emplace(d, std::make_unique<DomainContext>(*this, plugins_, d));
  for (auto& [name, ctx] : domains_) ctx->run_hooks(true);
}

TestClient::Impl::~Impl() {
  for (auto& [name, ctx] : domains_) {
    try {
      ctx->run_hooks(false);
    } catch (const std::exception&) {  // a destructor throws nothing
    }
  }
}

std::optional<Response> TestClient::Impl::admit(Method method, std::string_view target, Call& c, std::size_t& event) {
  const auto q = target.find('?');
  c.path = std::string(target.substr(0, q));
  c.query = q == std::string_view::npos ? std::string() : std::string(target.substr(q + 1));
  const auto m = routes_.find(method, c.path);
  if (m.result == http::RouteTable::Match::Result::NotFound) return problem(404, "no route for " + c.path);
  if (m.result == http::RouteTable::Match::Result::MethodNotAllowed)
    return problem(405, std::string(method_name(method)) + " is not allowed here")
        .header("Allow", http::RouteTable::allow_header(m.allowed));
  event = plugins_.routes()[m.target].event;
  const plugin::LoadedEvent& e = plugins_.events()[event];
  c.event = e.name;
  for (const auto& p : m.path_params()) {
    std::string value;
    if (!listener::percent_decode(p.value, value, false)) return problem(400, "malformed percent-escape in the path");
    c.params.emplace_back(std::string(p.name), std::move(value));
  }
  listener::Gate::Call call{"http/1.1", method, c.path, c.query, c.event, &c.head, "127.0.0.1", c.head.body};
  if (!gate_.empty())
    if (auto refused = gate_.admit(call, c.admission)) return refused;
  if (const auto& v = validators_[event]) {
    v->check(c.query, c.head, c.fields);
    if (c.fields.status)
      return Response::bytes(listener::RequestValidator::problem_body(c.fields), "application/problem+json",
                             c.fields.status);
  }
  return std::nullopt;
}

Response TestClient::Impl::send(Method method, std::string_view target, std::string body, Headers headers) {
  Call c;
  c.head.target = std::string(target);
  c.head.headers = std::move(headers);
  c.head.body_size = body.size();
  c.head.body = std::move(body);
  std::size_t event = 0;
  if (auto refused = admit(method, target, c, event)) return std::move(*refused);
  Request& r = c.req;
  r.method = method;
  r.path = c.path;
  r.event = c.event;
  r.protocol = "http/1.1";
  r.client_address = "127.0.0.1";
  if (c.admission.has_principal()) {
    r.principal = c.admission.principal();
    c.claims = c.admission.claims().dump();
    r.claims_json = c.claims;
  }
  c.id = next_id();
  r.id = c.id;
  for (const auto& [k, v] : c.params) r.path_params.push_back({k, v});
  r.query = c.query;
  for (const auto& [k, v] : c.fields.query) r.query_params.push_back({k, v});
  if (plugins_.events()[event].all_headers) {
    for (const auto& [k, v] : c.head.headers) r.headers.push_back({k, v});
  } else {
    for (const auto& [k, v] : c.fields.headers) r.headers.push_back({k, v});
  }
  for (const auto& [k, v] : c.fields.cookies) r.cookies.push_back({k, v});
  r.body = c.head.body;
  r.content_type = c.head.header("content-type");
  r.max_json_depth = options_.max_json_depth;
  std::optional<Response> answer;
  dispatch(event, r, [&answer](Response a) { answer = std::move(a); });
  run_until([&] { return answer.has_value(); }, Clock::now() + options_.answer_timeout);
  if (!answer)
    answer = problem(504, "the handler did not answer within " + std::to_string(options_.answer_timeout.count()) +
                              " ms (TestOptions::answer_timeout)");
  collect(*answer);
  add_lines(*answer, c.admission.lines());
  return std::move(*answer);
}

void TestClient::Impl::dispatch(std::size_t event, const Request& req, std::function<void(Response)> done) {
  const plugin::LoadedEvent& e = plugins_.events()[event];
  if (e.handler < 0) return done(problem(503, "no domain handles the event " + e.name));
  // Waited for before the handler runs: it may answer through a
  // Responder before it returns Deferred.
  const std::uint64_t id = ++ids_;
  waiting_.emplace(id, std::move(done));
  Reply reply = context_of(e.domain).call(plugins_.handlers()[static_cast<std::size_t>(e.handler)], req, id);
  if (auto* r = std::get_if<Response>(&reply)) answered(id, std::move(*r));
}

void TestClient::Impl::answered(std::uint64_t id, Response response) {
  const auto it = waiting_.find(id);
  if (it == waiting_.end()) return;  // answered already, or given up on
  auto done = std::move(it->second);
  waiting_.erase(it);
  done(std::move(response));
}

bool TestClient::Impl::request(const std::string& from, std::string_view event, const nlohmann::json& body,
                               std::function<void(const Response&)> done) {
  asked_.push_back({from, std::string(event), body});
  if (const auto a = answerers_.find(event); a != answerers_.end()) {
    post([answerer = a->second, body, done = std::move(done)] {
      try {
        done(answerer(body));
      } catch (const std::exception& e) {
        done(problem(500, std::string("the test's answerer threw: ") + e.what()));
      }
    });
    return true;
  }
  const int e = plugins_.event_index(event);
  if (e < 0) return false;
  post([this, e, body_text = body.dump(), done = std::move(done)]() mutable {
    // What the asked handler's Request points into: kept until it answers.
    auto call = std::make_shared<Call>();
    call->event = plugins_.events()[static_cast<std::size_t>(e)].name;
    call->id = next_id();
    call->head.body = std::move(body_text);
    Request& r = call->req;
    r.method = Method::Post;
    r.event = call->event;
    r.protocol = "internal";
    r.id = call->id;
    r.body = call->head.body;
    r.content_type = "application/json";
    r.max_json_depth = kJsonDepthCeiling;
    dispatch(static_cast<std::size_t>(e), r, [call, done = std::move(done)](Response a) {
      collect(a);
      done(a);
    });
  });
  return true;
}

void TestClient::Impl::publish(const std::string& from, std::string_view event, const nlohmann::json& payload) {
  published_.push_back({from, std::string(event), payload});
  post([this, event = std::string(event), body = payload.dump()] {
    Request n;
    n.method = Method::Post;
    n.event = event;
    n.protocol = "internal";
    n.body = body;
    n.content_type = "application/json";
    n.max_json_depth = kJsonDepthCeiling;
    for (const auto& s : plugins_.subscribers())
      if (plugins_.events()[s.event].name == event) context_of(s.domain).deliver(s.subscriber, n);
  });
}

std::uint64_t TestClient::Impl::patch_stream(const std::string& from, std::string_view name,
                                             const nlohmann::json& patch) {
  auto it = streams_.find(name);
  if (it == streams_.end()) it = streams_.emplace(std::string(name), std::pair{nlohmann::json::object(), 0}).first;
  it->second.first.merge_patch(patch);
  const auto revision = ++it->second.second;
  patches_.push_back({from, std::string(name), patch, revision});
  return revision;
}

nlohmann::json TestClient::Impl::read_stream(std::string_view name) const {
  const auto it = streams_.find(name);
  return it == streams_.end() ? nlohmann::json::object() : it->second.first;
}

std::uint64_t TestClient::Impl::stream_revision(std::string_view name) const {
  const auto it = streams_.find(name);
  return it == streams_.end() ? 0 : it->second.second;
}

void TestClient::Impl::run_posted() {
  while (!posted_.empty()) {
    auto fn = std::move(posted_.front());
    posted_.pop_front();
    fn();
  }
}

template <class Done>
void TestClient::Impl::run_until(Done&& done, Clock::time_point deadline) {
  for (;;) {
    run_posted();
    if (done()) return;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return;
    loop_.poll(static_cast<int>(std::min<long long>(left, 20)));
  }
}

bool TestClient::Impl::idle() const {
  if (!posted_.empty() || !waiting_.empty()) return false;
  for (const auto& [name, ctx] : domains_)
    if (!ctx->idle()) return false;
  return true;
}

void TestClient::Impl::settle(std::chrono::milliseconds up_to) {
  run_until([this] { return idle(); }, Clock::now() + up_to);
}

TestClient::TestClient(std::vector<std::string> plugin_paths, TestOptions options)
    : impl_(std::make_unique<Impl>(std::move(plugin_paths), std::move(options))) {}
TestClient::~TestClient() = default;

Response TestClient::send(Method method, std::string_view target, std::string body, Headers headers) {
  return impl_->send(method, target, std::move(body), std::move(headers));
}
Response TestClient::get(std::string_view target, Headers headers) {
  return send(Method::Get, target, {}, std::move(headers));
}
Response TestClient::del(std::string_view target, Headers headers) {
  return send(Method::Delete, target, {}, std::move(headers));
}

namespace {
Headers with_json_type(Headers headers) {
  Response named;
  named.headers = headers;
  if (!header_of(named, "content-type")) headers.emplace_back("Content-Type", "application/json");
  return headers;
}
}  // namespace

Response TestClient::post(std::string_view target, const nlohmann::json& body, Headers headers) {
  return send(Method::Post, target, body.dump(), with_json_type(std::move(headers)));
}
Response TestClient::put(std::string_view target, const nlohmann::json& body, Headers headers) {
  return send(Method::Put, target, body.dump(), with_json_type(std::move(headers)));
}
Response TestClient::patch(std::string_view target, const nlohmann::json& body, Headers headers) {
  return send(Method::Patch, target, body.dump(), with_json_type(std::move(headers)));
}

void TestClient::answer(std::string event, Answerer answerer) { impl_->answer(std::move(event), std::move(answerer)); }
void TestClient::publish(std::string_view event, const nlohmann::json& payload) {
  impl_->publish("test", event, payload);
  impl_->settle(std::chrono::milliseconds(0));
}
void TestClient::settle(std::chrono::milliseconds up_to) { impl_->settle(up_to); }
const std::vector<Published>& TestClient::published() const { return impl_->published_; }
const std::vector<Asked>& TestClient::asked() const { return impl_->asked_; }
const std::vector<StreamPatch>& TestClient::patches() const { return impl_->patches_; }
const std::vector<LogLine>& TestClient::logs() const { return impl_->logs_; }
nlohmann::json TestClient::stream(std::string_view name) const { return impl_->read_stream(name); }
void TestClient::clear_records() { impl_->clear_records(); }

}  // namespace edri::testing
