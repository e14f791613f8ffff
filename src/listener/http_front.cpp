#include "listener/http_front.hpp"

#include "plugin/openapi.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>

#include <spdlog/spdlog.h>

#include <edri/live_stream.hpp>
#include <edri/problem.hpp>

#include "envelope/body.hpp"
#include "http/content_coding.hpp"
#include "http/field_text.hpp"
#include "listener/upload_file.hpp"
#include "listener/websocket_front.hpp"
#include "transport/unique_fd.hpp"

namespace edri::listener {

namespace env = edri::envelope;
using Result = http::RouteTable::Match::Result;

namespace {

// The whole file at `path` into `out`.
bool read_file(const std::string& path, std::string& out) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  out.clear();
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  return n == 0;
}

constexpr unsigned bit(Method m) { return 1u << static_cast<unsigned>(m); }

// What the manager compresses a compressible answer with: the coding
// Accept-Encoding prefers (docs/compression.md). Chosen here, where the
// request's headers are; the compressing is the manager's.
std::uint16_t coding_flags(std::string_view accept_encoding) {
  switch (http::choose_coding(accept_encoding)) {
    case http::Coding::Brotli: return env::kFlagCodingAsked | env::kFlagCodingBrotli;
    case http::Coding::Gzip: return env::kFlagCodingAsked | env::kFlagCodingGzip;
    case http::Coding::Identity: break;
  }
  return env::kFlagCodingAsked;
}

}  // namespace

HttpFront::HttpFront(const Config& config, const plugin::PluginSet& plugins,
                     const std::vector<std::shared_ptr<const RequestValidator>>& validators, Answers& answers,
                     EventSender& sender, WebSocketFront& websocket, StreamHub& streams, BuiltinEndpoints& builtins,
                     const Cors* cors, Gate& gate, transport::BlobArena* blobs, std::uint16_t listener_index)
    : config_(config),
      answers_(answers),
      sender_(sender),
      websocket_(websocket),
      streams_(streams),
      builtins_(builtins),
      cors_(cors),
      gate_(gate),
      blobs_(blobs),
      index_(listener_index),
      instance_tag_(static_cast<std::uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                    static_cast<std::uint32_t>(::getpid())) {
  for (const auto& r : plugins.routes()) {
    const auto t = static_cast<std::uint32_t>(targets_.size());
    const auto& ev = plugins.events()[r.event];
    targets_.push_back(Target{ev.type_id, ev.name, validators[r.event], ev.replay, false, ev.all_headers});
    routes_.add(r.method, r.path, t);
  }
  for (const auto& path : plugins.stream_event_routes()) {
    const auto t = static_cast<std::uint32_t>(targets_.size());
    targets_.push_back(Target{0, "stream.subscribe", nullptr, false, true});
    routes_.add(Method::Get, path, t);
  }
  for (const auto& [prefix, folder] : plugins.asset_mounts()) static_files_.mount(prefix, folder);
  if (!config.assets_path.empty()) static_files_.mount("/", config.assets_path);
  if (config.serves_api_docs()) {
    api_document_ = plugin::openapi_document(plugins).dump();
    docs_page_ = std::make_unique<ApiDocsPage>(config.api_docs_ui);
    if (serves_own_docs()) {
      // The app's own files at /docs win over the API's page.
      docs_page_.reset();
      if (listener_index == 0) spdlog::warn("/docs is served from the assets: the API docs page is not served");
    } else if (!docs_page_->installed() && listener_index == 0) {
      spdlog::warn("/docs answers 404: no Swagger UI in '{}' (scripts/setup.sh installs it; EDRI_API_DOCS_UI)",
                   docs_page_->folder());
    }
  }
  static_files_.serve_precompressed(config.compression);
}

void HttpFront::check_routes(const Config& config, const plugin::PluginSet& plugins) {
  http::RouteTable table;
  auto add = [&](Method method, const std::string& path, std::string_view event) {
    if ((method == Method::Get || method == Method::Head) && BuiltinEndpoints::serves_publicly(config, path))
      throw plugin::PluginError("route GET " + path + " (" + std::string(event) +
                                ") would be hidden by the built-in endpoint of that path");
    try {
      table.add(method, path, 0);
    } catch (const std::invalid_argument& e) {
      throw plugin::PluginError(std::string(e.what()) + " (event " + std::string(event) + ")");
    }
  };
  for (const auto& r : plugins.routes()) add(r.method, r.path, plugins.events()[r.event].name);
  for (const auto& path : plugins.stream_event_routes()) add(Method::Get, path, "stream_events");
}

void HttpFront::dispatch(Connection& c, http::HttpRequest& req) {
  const auto method = http::to_method(req.method);
  const bool http10 = req.http_major == 1 && req.http_minor == 0;
  Exchange ex(c, answers_, req.keep_alive, http10, method == Method::Head);
  request_headers_.clear();
  if (AccessLog* log = answers_.access_log()) begin_access(*log, ex, req, http10);
  if (!method) return ex.problem(501, "method not implemented");
  const std::string_view target = req.target;
  const auto q = target.find('?');
  const std::string_view path = target.substr(0, q);
  const std::string_view query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  if (answer_builtin(ex, req, *method, path)) return;
  if (!run_builtin_middleware(ex, req, *method)) return;
  // The route is found before the plugins' middleware runs, so that it
  // sees the event the request becomes (none: a file, a 404, a handshake).
  const bool upgrade = req.upgrade && !config_.websocket_path.empty() && path == config_.websocket_path;
  auto m = upgrade ? http::RouteTable::Match{} : find_route(*method, path);
  const bool found = m.result == Result::Found;
  call_ = Gate::Call{upgrade  ? std::string_view("websocket")
                     : http10 ? std::string_view("http/1.0")
                              : c.answers().protocol(),
                     *method,
                     path,
                     query,
                     found ? targets_[m.target].event : std::string_view(),
                     &req,
                     gate_.client_address(c.peer(), req),
                     req.body};
  if (!admit(ex)) return;
  ex.add_middleware_lines(request_headers_);
  if (upgrade) return websocket_.upgrade(c, req, request_headers_.lines(), ex.http10(), ex.take_access());
  if (*method == Method::Options && target == "*")  // asterisk-form (RFC 9110 9.3.7): what the server allows
    return ex.answer(204, {}, {}, "Allow: GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS\r\n");
  if (path.empty() || path[0] != '/') return ex.refuse(400, "the request-target must be an absolute path");
  route(ex, req, *method, path, query, m);
}

void HttpFront::begin_access(AccessLog& log, Exchange& ex, const http::HttpRequest& req, bool http10) {
  auto r =
      log.begin(http10 ? std::string_view("http/1.0") : ex.connection().answers().protocol(),
                llhttp_method_name(req.method), req.target, gate_.client_address(ex.connection().peer(), req), &req);
  r->bytes_in = req.body_size;
  // The trace goes back to the client, in the answer's `traceparent`.
  if (r->traced)
    request_headers_.add("traceparent", std::string_view(r->trace_section).substr(0, TraceContext::kTextSize));
  ex.set_access(std::move(r));
}

bool HttpFront::answer_builtin(Exchange& ex, const http::HttpRequest& req, Method method, std::string_view path) {
  // Before middleware: health checks need no credentials.
  const bool admin = ex.connection().admin();
  const bool get = method == Method::Get || method == Method::Head;
  // The API's description and its page are the public side's (EDRI_API_DOCS).
  if (!admin && !api_document_.empty() && path == plugin::kApiDocumentPath && get) {
    ex.answer(200, "application/json", api_document_, "Cache-Control: no-cache\r\n");
    return true;
  }
  if (!admin && docs_page_ && ApiDocsPage::is_page_path(path) && get) {
    answer_docs(ex, req, path);
    return true;
  }
  const auto a = method == Method::Get || method == Method::Head ? builtins_.handle(path, admin) : std::nullopt;
  if (a) ex.answer(a->status, a->content_type, a->body, "Cache-Control: no-store\r\n");
  if (!a && admin) ex.problem(404, "the admin socket serves the built-in endpoints alone");
  return a || admin;
}

bool HttpFront::serves_own_docs() const {
  const http::HttpRequest probe;
  return static_files_.serve("/docs", probe) || static_files_.serve("/docs/", probe);
}

void HttpFront::answer_docs(Exchange& ex, const http::HttpRequest& req, std::string_view path) {
  auto a = docs_page_->answer(path, req);
  if (a.file) {
    const std::string extra = std::move(a.file->headers);
    return answers_.reply_static(ex.connection().answers(), ex.open(), std::move(*a.file), extra);
  }
  if (a.status != 200) return ex.problem(a.status, std::string(a.body));
  ex.answer(200, a.content_type, a.body, "Cache-Control: no-cache\r\n");
}

bool HttpFront::run_builtin_middleware(Exchange& ex, const http::HttpRequest& req, Method method) {
  if (config_.request_id) {
    add_request_id(req);
    if (ex.access()) ex.access()->request_id = request_id_;
  }
  if (cors_) {
    const auto verdict = cors_->apply(req, method, request_headers_);
    if (verdict == Cors::Verdict::Preflight || verdict == Cors::Verdict::Refused) {
      ex.add_middleware_lines(request_headers_);
      if (verdict == Cors::Verdict::Preflight)
        ex.answer(204, {}, {});
      else
        ex.problem(403, "origin not allowed");
      return false;
    }
  }
  return true;
}

bool HttpFront::admit(Exchange& ex) {
  if (gate_.empty()) return true;
  auto refusal = gate_.admit(call_, request_headers_);
  if (!refusal) return true;
  std::string lines;
  for (const auto& [k, v] : refusal->headers)
    if (is_valid_header(k, v)) lines.append(k).append(": ").append(v).append("\r\n");
  ex.add_middleware_lines(request_headers_);
  ex.answer(refusal->status, refusal->content_type, refusal->body_bytes(), lines);
  return false;
}

void HttpFront::add_request_id(const http::HttpRequest& req) {
  // Keep a sane id the client (or a proxy) sent; otherwise make one.
  std::string_view sent = req.header("x-request-id");
  const bool sane = !sent.empty() && sent.size() <= 128 &&
                    sent.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.:") ==
                        std::string_view::npos;
  if (sane) {
    request_id_.assign(sent);
  } else {
    // <instance:8 hex>-<listener:4 hex>-<counter:12 hex>, without printf.
    static constexpr char hex[] = "0123456789abcdef";
    char buf[26];
    auto put = [&](char* at, std::uint64_t v, int digits) {
      for (int i = digits - 1; i >= 0; --i, v >>= 4) at[i] = hex[v & 15];
    };
    put(buf, instance_tag_, 8);
    buf[8] = '-';
    put(buf + 9, index_, 4);
    buf[13] = '-';
    put(buf + 14, ++request_ids_, 12);
    request_id_.assign(buf, 26);
  }
  request_headers_.add("X-Request-Id", request_id_);
}

http::RouteTable::Match HttpFront::find_route(Method method, std::string_view path) const {
  auto m = routes_.find(method, path);
  if (method == Method::Head && m.result == Result::MethodNotAllowed && (m.allowed & bit(Method::Get)))
    m = routes_.find(Method::Get, path);  // HEAD is GET without the body
  return m;
}

void HttpFront::route(Exchange& ex, http::HttpRequest& req, Method method, std::string_view path,
                      std::string_view query, http::RouteTable::Match& m) {
  const bool head = method == Method::Head;
  if (m.result == Result::NotFound && (method == Method::Get || head) && answer_static(ex, req, path)) return;
  if (m.result == Result::NotFound) {
    if (!config_.websocket_path.empty() && path == config_.websocket_path)
      return ex.problem(426, "this is the WebSocket endpoint: send a WebSocket upgrade request",
                        "Upgrade: websocket\r\nConnection: Upgrade\r\n");
    return ex.problem(404, "no route for " + std::string(path));
  }
  if (m.result == Result::MethodNotAllowed) return answer_not_allowed(ex, m, method);
  if (!decode_params(ex, m)) return;
  const Target& target = targets_[m.target];
  if (ex.access()) answers_.access_log()->set_route(*ex.access(), m.target);
  if (target.stream_events) return answer_stream_events(ex, req, m, head);
  ex.set_route(m.target);
  if (!check_fields(ex, target, req, query)) return;
  send_event(ex, req, target, m, query);
}

void HttpFront::answer_stream_events(Exchange& ex, const http::HttpRequest& req, const http::RouteTable::Match& m,
                                     bool head) {
  const std::string_view name = m.path_params().back().value;
  if (!is_valid_stream_name(name)) return ex.problem(422, "a stream name is 1 to 128 of A-Z a-z 0-9 . _ : -");
  std::optional<std::uint64_t> since;
  if (const auto last = req.header("last-event-id"); !last.empty()) {
    std::uint64_t r = 0;
    const auto [end, ec] = std::from_chars(last.data(), last.data() + last.size(), r);
    if (ec != std::errc() || end != last.data() + last.size())
      return ex.problem(400, "Last-Event-ID must be a revision (an integer >= 0)");
    since = r;
  }
  if (head) return ex.answer(200, "text/event-stream", {}, "Cache-Control: no-store\r\n");
  Connection& c = ex.connection();
  const auto seq = ex.open_kept();
  SlotInfo& slot = *c.answers().slot(seq);
  const std::string lines = "Cache-Control: no-store\r\nX-Accel-Buffering: no\r\n" + slot.headers;
  // Logged as its head goes (the slot may not outlive start_events).
  auto access = std::move(slot.access);
  const auto carrier = c.start_events(seq, lines);
  if (carrier != AnswerSink::EventsCarrier::Refused && access) answers_.access_log()->end(std::move(access), 200, 0);
  switch (carrier) {
    case AnswerSink::EventsCarrier::Stream:  // the slot's own stream; the others go on beside it
      return streams_.subscribe_events(c, name, since, static_cast<std::int32_t>(seq));
    case AnswerSink::EventsCarrier::Connection: return streams_.subscribe_events(c, name, since);
    case AnswerSink::EventsCarrier::Refused: break;
  }
  if (SlotInfo* still = c.answers().slot(seq)) still->access = std::move(access);  // logged with the refusal
  answers_.problem(c.answers(), seq, 400,
                   "an event stream cannot follow requests still unanswered on its connection (pipelining)");
}

bool HttpFront::answer_static(Exchange& ex, const http::HttpRequest& req, std::string_view path) {
  if (static_files_.empty()) return false;
  auto a = static_files_.serve(path, req);
  if (!a) return false;
  const std::string extra = std::move(a->headers);
  answers_.reply_static(ex.connection().answers(), ex.open(), std::move(*a), extra);
  return true;
}

void HttpFront::answer_not_allowed(Exchange& ex, const http::RouteTable::Match& m, Method method) {
  std::uint8_t allowed = m.allowed;
  if (allowed & bit(Method::Get)) allowed |= bit(Method::Head);
  allowed |= bit(Method::Options);
  const std::string allow = "Allow: " + http::RouteTable::allow_header(allowed) + "\r\n";
  // A path that exists answers OPTIONS itself unless a plugin routes it.
  if (method == Method::Options) return ex.answer(204, {}, {}, allow);
  ex.problem(405, std::string(method_name(method)) + " is not allowed here", allow);
}

bool HttpFront::decode_params(Exchange& ex, const http::RouteTable::Match& m) {
  // Path parameters reach handlers percent-decoded ("%20" -> " ").
  decoded_params_.clear();
  const auto params = m.path_params();
  const bool escaped = std::any_of(params.begin(), params.end(),
                                   [](const auto& p) { return p.value.find('%') != std::string_view::npos; });
  if (!escaped) return true;
  for (const auto& p : params) {
    std::string value;
    if (!percent_decode(p.value, value, false)) {
      ex.problem(400, "malformed percent-escape in the path");
      return false;
    }
    decoded_params_.emplace_back(std::string(p.name), std::move(value));
  }
  return true;
}

bool HttpFront::check_fields(Exchange& ex, const Target& target, http::HttpRequest& req, std::string_view query) {
  // A body written to a file as it came (EDRI_UPLOAD_THRESHOLD): complete.
  auto* upload = static_cast<UploadFile*>(req.spill.get());
  if (upload) upload->finish();
  validated_.clear();
  if (target.validator && target.validator->reads_body() && upload && !read_file(upload->path(), req.body)) {
    ex.problem(500, "the request body's file cannot be read");
    return false;
  }
  if (target.validator) {
    target.validator->check(query, req, validated_);
    if (validated_.status) {
      ex.answer(validated_.status, "application/problem+json", RequestValidator::problem_body(validated_));
      return false;
    }
  }
  if (config_.request_id) validated_.headers.emplace_back("x-request-id", request_id_);
  return true;
}

void HttpFront::send_event(Exchange& ex, http::HttpRequest& req, const Target& target, const http::RouteTable::Match& m,
                           std::string_view query) {
  Connection& c = ex.connection();
  const auto seq = ex.open();
  // Kept in case the handler answers with a file (Response::file).
  if (auto conditions = StaticFiles::Conditions::of(req); conditions.any())
    if (auto* info = c.answers().slot(seq)) info->conditions = std::move(conditions);
  auto h = sender_.origin_header(c, env::Kind::Request, target.event_type, seq);
  if (target.replay) h.flags |= env::kFlagReplay;
  if (config_.server_timing) h.flags |= env::kFlagTiming;
  if (config_.compression) h.flags |= coding_flags(req.header("accept-encoding"));
  env::EnvelopeWriter w(h);
  const auto params = m.path_params();
  if (!decoded_params_.empty())
    w.key_values(env::SectionType::PathParams, decoded_params_, env::StringPairKey{}, env::StringPairValue{});
  else if (!params.empty())
    w.key_values(env::SectionType::PathParams, params, env::ParamKey{}, env::ParamValue{});
  if (!query.empty()) w.text(env::SectionType::Query, query);
  if (target.all_headers)
    for (const auto& [k, v] : req.headers) validated_.headers.emplace_back(http::lowered(k), v);
  add_validated(w, validated_);
  Gate::write_identity(w, call_, request_headers_, claims_text_);
  if (const SlotInfo* info = c.answers().slot(seq); info && info->access && info->access->traced)
    w.text(env::SectionType::Trace, info->access->trace_section);
  if (req.body_size > 0)
    if (const auto type = req.header("content-type"); !type.empty()) w.text(env::SectionType::BodyType, type);
  transport::BlobLease blob;
  std::string upload_section;
  if (!add_body(w, ex, seq, req, blob, upload_section)) return;
  if (sender_.send_request(w))
    (void)blob.take();  // the manager frees it
  else
    answers_.problem(c.answers(), seq, 503, "the server is overloaded; retry later", "Retry-After: 1\r\n");
}

bool HttpFront::add_body(env::EnvelopeWriter& w, Exchange& ex, std::uint32_t seq, http::HttpRequest& req,
                         transport::BlobLease& blob, std::string& upload_section) {
  // A large body is written once into the blob area; the manager reads it
  // there and frees it. A larger one is in its file already: the manager
  // maps it, and it is removed when the response is sent.
  Connection& c = ex.connection();
  if (auto* upload = static_cast<UploadFile*>(req.spill.get())) {
    c.answers().hold_upload(seq, req.spill);
    const std::uint64_t size = upload->size();
    upload_section.assign(reinterpret_cast<const char*>(&size), sizeof size).append(upload->path());
    w.text(env::SectionType::Upload, upload_section);
  } else if (!env::attach_body(w, blob, blobs_, config_.blob_threshold, req.body)) {
    answers_.problem(c.answers(), seq, 503, "the blob area is full; retry later", "Retry-After: 1\r\n");
    return false;
  }
  return true;
}

}  // namespace edri::listener
