#include "listener/listener.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "envelope/envelope.hpp"
#include "listener/connection.hpp"

namespace edri::listener {

namespace env = edri::envelope;

namespace {

std::optional<Method> to_method(llhttp_method_t m) {
  switch (m) {
    case HTTP_GET: return Method::Get;
    case HTTP_HEAD: return Method::Head;
    case HTTP_POST: return Method::Post;
    case HTTP_PUT: return Method::Put;
    case HTTP_DELETE: return Method::Delete;
    case HTTP_PATCH: return Method::Patch;
    case HTTP_OPTIONS: return Method::Options;
    default: return std::nullopt;
  }
}

std::uint64_t now_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

bool header_safe(std::string_view s) { return s.find_first_of("\r\n") == std::string_view::npos; }

struct PairKey {
  std::string_view operator()(const std::pair<std::string, std::string>& p) const { return p.first; }
};
struct PairValue {
  std::string_view operator()(const std::pair<std::string, std::string>& p) const { return p.second; }
};
struct ParamKey {
  std::string_view operator()(const Param& p) const { return p.name; }
};
struct ParamValue {
  std::string_view operator()(const Param& p) const { return p.value; }
};

}  // namespace

Listener::Listener(ProcessLoop& loop, const Config& config, const plugin::PluginSet& plugins, std::uint16_t index,
                   int listen_fd)
    : loop_(loop),
      config_(config),
      to_broker_(loop.outbox_to(transport::Topology::kBroker)),
      index_(index),
      // Our own descriptor: the supervisor keeps the original across restarts.
      listen_fd_(::fcntl(listen_fd, F_DUPFD_CLOEXEC, 0)),
      accept_retry_(loop.events(), [this] { accept_all(); }),
      sweep_(loop.events(), [this] { sweep_overdue(); }) {
  if (listen_fd_ < 0) throw std::runtime_error("the inherited listening socket is not valid");
  // One validator per event, shared by the routes that lead to it.
  std::vector<std::shared_ptr<const RequestValidator>> validators(plugins.events().size());
  for (std::size_t e = 0; e < plugins.events().size(); ++e)
    if (!plugins.events()[e].fields.empty())
      validators[e] = std::make_shared<const RequestValidator>(plugins.events()[e].fields);
  for (const auto& r : plugins.routes()) {
    const auto t = static_cast<std::uint32_t>(targets_.size());
    targets_.push_back(Target{plugins.events()[r.event].type_id, validators[r.event]});
    routes_.add(r.method, r.path, t);
  }
  loop_.on_records_from(transport::Topology::kBroker, [this](std::span<const std::byte> rec) { on_response(rec); });
  loop_.after_drain([this] { after_drain(); });
  next_request_ = static_cast<std::uint64_t>(index) << 48;
}

Listener::~Listener() {
  loop_.events().unwatch(listen_fd_);
  ::close(listen_fd_);
}

http::ParserLimits Listener::parser_limits() const {
  http::ParserLimits l;
  l.max_header_bytes = config_.max_header_bytes;
  l.max_url_bytes = config_.max_url_bytes;
  l.max_body_bytes = config_.max_body_size;
  return l;
}

void Listener::start() {
  spdlog::info("serving {} routes", routes_.size());
  loop_.events().watch(listen_fd_, EPOLLIN, [this](std::uint32_t) { accept_all(); });
  accept_all();
  sweep_.expires_after(std::chrono::seconds(1));
}

void Listener::sweep_overdue() {
  // The broker answers 504 at EDRI_API_RESPONSE_TIMEOUT. A request that
  // outlives that by two seconds was lost with a process that died (a
  // broker restart forgets its deadlines): answer it here, never hang.
  const auto grace = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(config_.api_response_timeout_s + 2.0));
  const auto cutoff = std::chrono::steady_clock::now() - grace;
  std::vector<std::pair<std::uint32_t, Connection::SlotInfo>> overdue;
  for (auto& c : connections_) {
    if (!c || c->closed() || !c->waiting()) continue;
    overdue.clear();
    c->for_each_overdue(cutoff,
                        [&](std::uint32_t seq, const Connection::SlotInfo& info) { overdue.emplace_back(seq, info); });
    for (const auto& [seq, info] : overdue) {
      spdlog::warn("request {} on connection {} got no answer, not even a 504: answering 504", seq, c->id());
      c->complete(seq, [&](std::string& out) {
        writer_.write_problem(out, 504, "no answer from the pipeline (a process may have restarted)", info.keep_alive,
                              info.http10, info.head);
      });
    }
  }
  sweep_.expires_after(std::chrono::seconds(1));
}

void Listener::accept_all() {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // Another listener took it, or the backlog is empty.
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // Out of descriptors or memory: back off instead of spinning; the
      // edge is spent, so the retry timer resumes accepting.
      spdlog::warn("accept failed: {}", std::strerror(errno));
      accept_retry_.expires_after(std::chrono::milliseconds(50));
      return;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::uint32_t id;
    if (!free_ids_.empty()) {
      id = free_ids_.back();
      free_ids_.pop_back();
    } else {
      id = static_cast<std::uint32_t>(connections_.size());
      connections_.emplace_back();
      generations_.push_back(0);
    }
    connections_[id] = std::make_unique<Connection>(*this, fd, id, generations_[id]);
    connections_[id]->start();
  }
}

Connection* Listener::find(std::uint32_t id, std::uint32_t generation) {
  if (id >= connections_.size() || generations_[id] != generation) return nullptr;
  Connection* c = connections_[id].get();
  return (c && !c->closed()) ? c : nullptr;
}

void Listener::release(Connection& c) {
  const auto id = c.id();
  ++generations_[id];
  // Destroyed at the end of the loop turn, never inside its own callback.
  graveyard_.push_back(std::move(connections_[id]));
  free_ids_.push_back(id);
}

void Listener::mark_dirty(Connection& c) {
  c.dirty = true;
  dirty_.push_back(&c);
}

void Listener::after_drain() {
  for (std::size_t i = 0; i < dirty_.size(); ++i) {
    Connection* c = dirty_[i];
    if (c->dirty) c->flush();
  }
  dirty_.clear();
  graveyard_.clear();
}

void Listener::answer_locally(Connection& c, bool keep_alive, bool http10, bool head, int status,
                              std::string_view detail, std::string_view extra_headers) {
  const auto seq = c.open_slot(keep_alive, http10, head);
  c.complete(seq, [&](std::string& out) {
    writer_.write_problem(out, status, detail, keep_alive, http10, head, extra_headers);
  });
}

void Listener::dispatch(Connection& c, http::HttpRequest& req) {
  const bool http10 = req.http_minor == 0;
  const bool keep_alive = req.keep_alive;
  const auto method = to_method(req.method);
  const bool head = method == Method::Head;
  if (!method) {
    answer_locally(c, keep_alive, http10, false, 501, "method not implemented");
    return;
  }
  std::string_view target = req.target;
  std::string_view path = target, query;
  if (auto q = target.find('?'); q != std::string_view::npos) {
    path = target.substr(0, q);
    query = target.substr(q + 1);
  }
  if (*method == Method::Options && target == "*") {
    // Asterisk-form (RFC 9110 9.3.7): what the server as a whole allows.
    const auto seq = c.open_slot(keep_alive, http10, false);
    c.complete(seq, [&](std::string& out) {
      writer_.write(out, {204, {}, 0, keep_alive, http10, false},
                    "Allow: GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS\r\n", {});
    });
    return;
  }
  if (path.empty() || path[0] != '/') {
    answer_locally(c, false, http10, head, 400, "the request-target must be an absolute path");
    return;
  }
  auto m = routes_.find(*method, path);
  if (head && m.result == http::RouteTable::Match::Result::MethodNotAllowed &&
      (m.allowed & (1u << static_cast<unsigned>(Method::Get))))
    m = routes_.find(Method::Get, path);  // HEAD is GET without the body
  if (m.result == http::RouteTable::Match::Result::NotFound) {
    answer_locally(c, keep_alive, http10, head, 404, "no route for " + std::string(path));
    return;
  }
  if (m.result == http::RouteTable::Match::Result::MethodNotAllowed) {
    std::uint8_t allowed = m.allowed;
    if (allowed & (1u << static_cast<unsigned>(Method::Get))) allowed |= 1u << static_cast<unsigned>(Method::Head);
    allowed |= 1u << static_cast<unsigned>(Method::Options);
    const std::string allow = "Allow: " + http::RouteTable::allow_header(allowed) + "\r\n";
    if (*method == Method::Options) {
      // A path that exists answers OPTIONS itself unless a plugin routes it.
      const auto seq = c.open_slot(keep_alive, http10, false);
      c.complete(seq, [&](std::string& out) {
        writer_.write(out, {204, {}, 0, keep_alive, http10, false}, allow, {});
      });
      return;
    }
    answer_locally(c, keep_alive, http10, head, 405, std::string(method_name(*method)) + " is not allowed here", allow);
    return;
  }

  const Target& route = targets_[m.target];
  validated_.clear();
  if (route.validator) {
    route.validator->check(query, req, validated_);
    if (validated_.status) {
      const auto seq = c.open_slot(keep_alive, http10, head);
      const std::string body = RequestValidator::problem_body(validated_);
      c.complete(seq, [&](std::string& out) {
        writer_.write(out, {validated_.status, "application/problem+json", body.size(), keep_alive, http10, head}, {},
                      body);
      });
      return;
    }
  }

  const auto seq = c.open_slot(keep_alive, http10, head);
  auto h = env::make_header(env::Kind::Request, route.event_type, ++next_request_);
  h.origin_listener = index_;
  h.origin_connection = c.id();
  h.origin_generation = c.generation();
  h.origin_stream = seq;
  if (config_.server_timing) {
    h.flags |= env::kFlagTiming;
    h.t0_ns = now_ns();
  }
  env::EnvelopeWriter w(h);
  const auto params = m.path_params();
  if (!params.empty()) w.key_values(env::SectionType::PathParams, params, ParamKey{}, ParamValue{});
  if (!query.empty()) w.text(env::SectionType::Query, query);
  if (!validated_.query.empty()) w.key_values(env::SectionType::QueryParams, validated_.query, PairKey{}, PairValue{});
  if (!validated_.headers.empty()) w.key_values(env::SectionType::Headers, validated_.headers, PairKey{}, PairValue{});
  if (!validated_.cookies.empty()) w.key_values(env::SectionType::Cookies, validated_.cookies, PairKey{}, PairValue{});
  if (!req.body.empty()) w.text(env::SectionType::Body, req.body);
  if (!to_broker_.emplace(w.size(), [&](std::byte* p) { w.write(p); })) {
    c.complete(seq, [&](std::string& out) {
      writer_.write_problem(out, 503, "the server is overloaded; retry later", keep_alive, http10, head,
                            "Retry-After: 1\r\n");
    });
  }
}

void Listener::on_response(std::span<const std::byte> record) {
  env::EnvelopeView v;
  if (auto e = env::decode(record, v); e != env::DecodeError::None) {
    spdlog::error("dropping a malformed response envelope: {}", env::to_string(e));
    return;
  }
  const auto& h = v.header;
  Connection* c = find(h.origin_connection, h.origin_generation);
  if (!c) return;  // the client went away
  const auto* info = c->slot(h.origin_stream);
  if (!info) return;

  extra_headers_.clear();
  if (v.has(env::SectionType::Headers)) {
    env::KeyValueReader kv(v.section(env::SectionType::Headers));
    std::string_view k, val;
    while (kv.next(k, val)) {
      if (!header_safe(k) || !header_safe(val) || k.empty()) {
        spdlog::warn("dropping a response header with CR/LF from a handler");
        continue;
      }
      extra_headers_.append(k).append(": ").append(val).append("\r\n");
    }
  }
  if ((h.flags & env::kFlagTiming) && h.t0_ns) {
    const auto& s = h.stamps;
    const double total = static_cast<double>(now_ns() - h.t0_ns);
    auto ms = [](double ns) { return ns / 1e6; };
    char buf[256];
    const int n = std::snprintf(buf, sizeof buf,
                                "Server-Timing: broker;dur=%.3f, router;dur=%.3f, manager;dur=%.3f, handler;dur=%.3f, "
                                "return;dur=%.3f, total;dur=%.3f\r\n",
                                ms(s[env::kStampBrokerIn]), ms(double(s[env::kStampRouterIn]) - s[env::kStampBrokerIn]),
                                ms(double(s[env::kStampManagerIn]) - s[env::kStampRouterIn]),
                                ms(double(s[env::kStampManagerOut]) - s[env::kStampManagerIn]),
                                ms(total - s[env::kStampManagerOut]), ms(total));
    if (n > 0) extra_headers_.append(buf, static_cast<std::size_t>(std::min(n, int(sizeof buf) - 1)));
  }
  const std::string_view body = v.text(env::SectionType::Body);
  const http::ResponseHead head{
      h.status, v.text(env::SectionType::ContentType), body.size(), info->keep_alive, info->http10, info->head};
  c->complete(h.origin_stream, [&](std::string& out) { writer_.write(out, head, extra_headers_, body); });
}

}  // namespace edri::listener
