#include "listener/listener.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "envelope/control.hpp"
#include "envelope/envelope.hpp"
#include "envelope/send.hpp"
#include "listener/connection.hpp"
#include "listener/upload_file.hpp"

namespace edri::listener {

namespace env = edri::envelope;

namespace {

std::uint64_t now_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

bool header_safe(std::string_view s) { return s.find_first_of("\r\n") == std::string_view::npos; }

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

}  // namespace

Listener::Listener(ProcessLoop& loop, const Config& config, const plugin::PluginSet& plugins, std::uint16_t index,
                   int listen_fd, int unix_fd)
    : loop_(loop),
      config_(config),
      to_broker_(loop.outbox_to(transport::Topology::kBroker)),
      index_(index),
      // Our own descriptor: the supervisor keeps the original across restarts.
      listen_fd_(::fcntl(listen_fd, F_DUPFD_CLOEXEC, 0)),
      accept_retry_(loop.events(), [this] { accept_all(); }),
      sweep_(loop.events(), [this] { sweep_overdue(); }),
      lost_watch_(loop, [this] { answer_lost(); }),
      connection_cap_(config.connections_per_listener()),
      drain_deadline_(loop.events(),
                      [this] {
                        spdlog::warn("EDRI_SHUTDOWN_TIMEOUT: closed {} connections still open", open_connections());
                        for (auto& c : connections_)
                          if (c && !c->closed()) c->close();
                        loop_.stop();
                      }),
      builtins_(loop.segment(), loop.topology(), plugins,
                plugin::manager_titles(plugins.manager_domains(config.manager_replicas))),
      unrouted_row_(static_cast<std::uint32_t>(plugins.routes().size())),
      metrics_(loop.segment().listener_metrics(index)),
      request_counters_(&loop.segment().request_counter(index, 0, 0)) {
  if (!listen_fd_) throw std::runtime_error("the inherited listening socket is not valid");
  builtins_.set_blobs(loop.blobs());
  if (unix_fd >= 0) {
    unix_fd_.reset(::fcntl(unix_fd, F_DUPFD_CLOEXEC, 0));
    if (!unix_fd_) throw std::runtime_error("the inherited Unix domain socket is not valid");
  }
  // One validator per event, shared by the routes that lead to it.
  std::vector<std::shared_ptr<const RequestValidator>> validators(plugins.events().size());
  for (std::size_t e = 0; e < plugins.events().size(); ++e)
    if (!plugins.events()[e].fields.empty())
      validators[e] = std::make_shared<const RequestValidator>(plugins.events()[e].fields, config.max_json_depth);
  if (!config.ssl_certificate.empty()) tls_ = std::make_unique<TlsContext>(config.ssl_certificate, config.ssl_key);
  for (const auto& [prefix, folder] : plugins.asset_mounts()) static_files_.mount(prefix, folder);
  if (!config.assets_path.empty()) static_files_.mount("/", config.assets_path);
  middlewares_ = plugins.middlewares();
  view_.max_json_depth = config.max_json_depth;  // a middleware's req.json() too
  for (const auto& mw : middlewares_)
    if (mw.on_response) has_response_middleware_ = true;
  if (!config.cors_origins.empty())
    cors_ =
        std::make_unique<Cors>(config.cors_origins, config.cors_headers, config.cors_credentials, config.cors_max_age);
  instance_tag_ = static_cast<std::uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                  static_cast<std::uint32_t>(::getpid());
  for (const auto& r : plugins.routes()) {
    const auto t = static_cast<std::uint32_t>(targets_.size());
    targets_.push_back(
        Target{plugins.events()[r.event].type_id, validators[r.event], plugins.events()[r.event].replay});
    routes_.add(r.method, r.path, t);
  }
  for (const auto& cmd : plugins.commands()) {
    const auto& ev = plugins.events()[cmd.event];
    WsCommand w{
        WsCommand::Kind::Event, ev.type_id, validators[cmd.event], {}, nlohmann::json(cmd.command).dump(), ev.replay};
    for (const auto& r : plugins.routes())
      if (r.event == cmd.event) {
        w.path_params = http::RouteTable::parameters(r.path);
        break;
      }
    ws_commands_.emplace(cmd.command, std::move(w));
  }
  for (const auto& p : plugins.pushes()) {
    const auto& ev = plugins.events()[p.notification];
    ws_commands_.emplace(
        p.subscribe,
        WsCommand{WsCommand::Kind::Subscribe, ev.type_id, nullptr, {}, nlohmann::json(p.subscribe).dump()});
    ws_commands_.emplace(
        p.unsubscribe,
        WsCommand{WsCommand::Kind::Unsubscribe, ev.type_id, nullptr, {}, nlohmann::json(p.unsubscribe).dump()});
    push_names_.emplace(ev.type_id, nlohmann::json(ev.name).dump());
  }
  loop_.on_records_from(transport::Topology::kBroker, [this](std::span<const std::byte> rec) { on_response(rec); });
  loop_.after_drain([this] { return after_drain(); });
  loop_.on_stop_signal([this] { begin_drain(); });
  loop_.on_peer_death([this](std::uint32_t slot) {
    if (slot != transport::Topology::kBroker) return;
    // Controls too: a WebSocket subscription the successor takes is answered.
    left_for_successor_.clear();
    for_each_untaken_envelope(to_broker_, [&](const env::EnvelopeHeader& h) {
      left_for_successor_.emplace(h.origin_connection, h.origin_generation, h.origin_stream);
    });
    lost_watch_.died(slot);
  });
  next_request_ = static_cast<std::uint64_t>(index) << 48;
}

Listener::~Listener() {
  loop_.events().unwatch(listen_fd_.get());
  if (unix_fd_) loop_.events().unwatch(unix_fd_.get());
}

http::ParserLimits Listener::parser_limits() const {
  http::ParserLimits l;
  l.max_header_bytes = config_.max_header_bytes;
  l.max_url_bytes = config_.max_url_bytes;
  l.max_header_count = config_.max_header_count;
  l.max_body_bytes = config_.max_body_size;
  l.spill_bytes = config_.upload_threshold;
  return l;
}

void Listener::start() {
  spdlog::info("serving {} routes", routes_.size());
  // Subscriptions of this listener's previous life died with its
  // connections; the broker forgets them before anything new arrives.
  auto h = env::make_header(env::Kind::Control, env::kControlListenerReset, 0);
  h.origin_listener = index_;
  env::EnvelopeWriter w(h);
  if (!env::send(to_broker_, w, transport::Admission::Answer))
    spdlog::error("cannot tell the broker this listener restarted");
  loop_.events().watch(listen_fd_.get(), EPOLLIN, [this](std::uint32_t) { accept_from(listen_fd_.get(), tls_.get()); });
  // Behind a reverse proxy on the same host: plain HTTP, never TLS.
  if (unix_fd_)
    loop_.events().watch(unix_fd_.get(), EPOLLIN, [this](std::uint32_t) { accept_from(unix_fd_.get(), nullptr); });
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
  std::vector<std::uint32_t> overdue;
  for (auto& c : connections_) {
    if (!c || c->closed() || !c->waiting()) continue;
    overdue.clear();
    c->for_each_overdue(cutoff, [&](std::uint32_t seq) { overdue.push_back(seq); });
    for (const auto seq : overdue) {
      spdlog::warn("request {} on connection {} got no answer, not even a 504: answering 504", seq, c->id());
      static constexpr std::string_view kLost = "no answer from the pipeline (a process may have restarted)";
      if (c->websocket())
        ws_error(*c, seq, 504, kLost);
      else
        problem(*c, seq, 504, kLost, {});
    }
  }
  // A client that has taken no byte of its output for EDRI_WRITE_TIMEOUT
  // stopped reading: close it, and its output goes with it.
  const auto write_cutoff =
      std::chrono::steady_clock::now() - std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                             std::chrono::duration<double>(config_.write_timeout_s));
  // Also closed: a streamed answer whose producer sent nothing for the
  // response timeout (and more) while its client waited; its manager died
  // or hangs, and with the head out no error can be sent.
  // And slow request heads (408) and idle connections. A close here moves
  // the connection to the graveyard: its slot in connections_ is left empty.
  const auto now = std::chrono::steady_clock::now();
  for (auto& c : connections_) {
    if (!c || c->closed()) continue;
    if (c->write_stalled_since(write_cutoff)) {
      spdlog::info("closing connection {}: the client took no output for {} s ({} bytes unsent)", c->id(),
                   config_.write_timeout_s, c->backlog());
      c->close();
    } else if (c->stream_stalled_since(cutoff)) {
      spdlog::warn("closing connection {}: its streamed answer stalled", c->id());
      c->close();
    } else {
      c->apply_idle_limits(now);
    }
  }
  sweep_.expires_after(std::chrono::seconds(1));
}

void Listener::begin_drain() {
  if (draining_) {
    loop_.stop();  // a second signal: now
    return;
  }
  draining_ = true;
  // The supervisor stops the shared socket listening; this listener just
  // takes no more from it.
  loop_.events().unwatch(listen_fd_.get());
  if (unix_fd_) loop_.events().unwatch(unix_fd_.get());
  accept_retry_.cancel();
  spdlog::info("stopping: {} connections to finish, for up to {} s", open_connections(), config_.shutdown_timeout_s);
  for (auto& c : connections_)
    if (c && !c->closed()) c->drain();
  drain_deadline_.expires_after(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(config_.shutdown_timeout_s)));
  stop_if_drained();
}

void Listener::stop_if_drained() {
  if (open_connections() > 0) return;
  spdlog::info("every connection finished");
  loop_.stop();
}

void Listener::answer_lost() {
  std::size_t lost = 0;
  std::vector<std::uint32_t> seqs;
  for (auto& c : connections_) {
    if (!c || c->closed() || !c->waiting()) continue;
    seqs.clear();
    c->for_each_overdue(lost_watch_.died_at(), [&](std::uint32_t seq) {
      if (!left_for_successor_.count({c->id(), generations_[c->id()], seq})) seqs.push_back(seq);
    });
    for (const auto seq : seqs) {
      ++lost;
      if (c->websocket())
        ws_error(*c, seq, 503, kLostWithProcess);
      else
        problem(*c, seq, 503, kLostWithProcess, {});
    }
  }
  left_for_successor_.clear();
  if (lost) spdlog::warn("the broker died: {} requests without an answer since answered 503", lost);
}

void Listener::accept_all() {
  if (accept_from(listen_fd_.get(), tls_.get()) && unix_fd_) accept_from(unix_fd_.get(), nullptr);
}

bool Listener::accept_from(int listen_fd, const TlsContext* tls) {
  for (;;) {
    UniqueFd fd(::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // Another listener took it, or the backlog is empty.
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      // The socket stopped listening: the server is stopping.
      if (errno == EINVAL) return false;
      // Out of descriptors or memory: back off instead of spinning; the
      // edge is spent, so the retry timer resumes accepting.
      spdlog::warn("accept failed: {}", std::strerror(errno));
      accept_retry_.expires_after(std::chrono::milliseconds(50));
      return false;
    }
    if (open_connections() >= connection_cap_) {
      refuse(std::move(fd), tls != nullptr);
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // fails harmlessly on a Unix socket
    std::uint32_t id;
    if (!free_ids_.empty()) {
      id = free_ids_.back();
      free_ids_.pop_back();
    } else {
      id = static_cast<std::uint32_t>(connections_.size());
      connections_.emplace_back();
      generations_.push_back(0);
    }
    connections_[id] = std::make_unique<Connection>(*this, std::move(fd), id, generations_[id], tls);
    connections_[id]->start();
  }
}

void Listener::refuse(UniqueFd fd, bool tls) {
  // Over EDRI_MAX_CONNECTIONS: a 503 without reading the request (never
  // for TLS, which would need a handshake first), and the connection
  // closes. What the client sent already is read and dropped first, so
  // that the close does not reset the connection before the 503 is read.
  if (!tls) {
    static const std::string kRefusal = [] {
      const std::string body = http::problem_json(503, "too many connections (EDRI_MAX_CONNECTIONS); retry later");
      return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\nRetry-After: 1\r\n"
             "Connection: close\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body;
    }();
    char sink[4096];
    while (::recv(fd.get(), sink, sizeof sink, MSG_DONTWAIT) > 0) {
    }
    [[maybe_unused]] const auto sent = ::send(fd.get(), kRefusal.data(), kRefusal.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    ::shutdown(fd.get(), SHUT_WR);
  }
  fd.reset();
  Connection::SlotInfo info{};
  info.route = Connection::kNoRoute;
  info.opened = std::chrono::steady_clock::now();
  record(info, 503);
  if (refusals_++ % 1000 == 0)
    spdlog::warn("refusing connections: {} open, EDRI_MAX_CONNECTIONS allows {} per listener ({} refused so far)",
                 open_connections(), connection_cap_, refusals_);
}

Connection* Listener::find(std::uint32_t id, std::uint32_t generation) {
  if (id >= connections_.size() || generations_[id] != generation) return nullptr;
  Connection* c = connections_[id].get();
  return (c && !c->closed()) ? c : nullptr;
}

void Listener::release(Connection& c) {
  if (!c.subscriptions.empty()) send_control(c, env::kControlPushUnsubscribe, env::kNoAnswer, {});
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

void Listener::poll_io() {
  if (!poll_needed_) return;
  poll_needed_ = false;
  try {
    io_.poll();
  } catch (const std::exception& e) {
    spdlog::error("websocket handler failed: {}", e.what());
  }
}

bool Listener::after_drain() {
  // WebSocket work first: it may add output to the connections flushed
  // next, and a flush may let a session take its next message.
  for (int round = 0; round < 4; ++round) {
    poll_io();
    for (std::size_t i = 0; i < dirty_.size(); ++i) {
      Connection* c = dirty_[i];
      if (c->dirty) c->flush();
    }
    dirty_.clear();
    if (held_total_ > config_.output_buffer_total) shed_output();
    if (!poll_needed_ && dirty_.empty()) break;
  }
  // What is still dirty is flushed next turn; the closed go now.
  std::erase_if(dirty_, [](const Connection* c) { return c->closed(); });
  graveyard_.clear();
  if (draining_) stop_if_drained();
  return poll_needed_ || !dirty_.empty();
}

void Listener::held_changed(std::size_t before, std::size_t after) {
  held_total_ = held_total_ - before + after;
  metrics_.output_held_bytes.store(held_total_, std::memory_order_relaxed);
}

void Listener::client_shed() {
  metrics_.clients_shed.store(metrics_.clients_shed.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void Listener::shed_output() {
  std::vector<Connection*> behind;
  for (auto& c : connections_)
    if (c && !c->closed() && c->held_bytes() > 0) behind.push_back(c.get());
  std::sort(behind.begin(), behind.end(),
            [](const Connection* a, const Connection* b) { return a->held_bytes() > b->held_bytes(); });
  const std::size_t before = held_total_;
  std::size_t shed = 0;
  for (auto* c : behind) {
    if (held_total_ <= config_.output_buffer_total) break;
    c->close_lagging(1008, "too far behind: the server holds too much unsent output (EDRI_OUTPUT_BUFFER_TOTAL)");
    ++shed;
  }
  if (shed)
    spdlog::warn("{} bytes unsent held for clients, over EDRI_OUTPUT_BUFFER_TOTAL={}: closed the {} furthest behind",
                 before, config_.output_buffer_total, shed);
}

void Listener::answer_locally(Connection& c, bool keep_alive, bool http10, bool head, int status,
                              std::string_view detail, std::string_view extra_headers) {
  const auto seq = c.open_slot(keep_alive, http10, head, {});
  problem(c, seq, status, detail, extra_headers);
}

void Listener::compose_headers(const Connection::SlotInfo& info, int status, std::string_view headers) {
  composed_.assign(headers);
  composed_ += info.headers;  // added by middleware when the request came in
  if (has_response_middleware_) {
    response_headers_.clear();
    for (const auto& mw : middlewares_)
      if (mw.on_response) mw.on_response(status, response_headers_);
    composed_ += response_headers_.lines();
  }
}

void Listener::reply(Connection& c, std::uint32_t seq, int status, std::string_view content_type, std::string_view body,
                     std::string_view headers) {
  const auto* info = c.slot(seq);
  if (!info) return;
  compose_headers(*info, status, headers);
  const http::ResponseHead h{status, content_type, body.size(), info->keep_alive, info->http10, info->head};
  record(*info, status);
  c.complete(seq, [&](std::string& out) { writer_.write(out, h, composed_, body); });
}

template <class Body>
void Listener::reply_body(Connection& c, std::uint32_t seq, int status, std::string_view content_type, Body body,
                          std::size_t length, std::string_view headers) {
  const auto* info = c.slot(seq);
  if (!info) return;
  compose_headers(*info, status, headers);
  const http::ResponseHead h{status, content_type, length, info->keep_alive, info->http10, info->head};
  record(*info, status);
  auto head = [&](std::string& out) { writer_.write(out, h, composed_, {}); };
  if (info->head)
    c.complete(seq, head);  // the body is dropped unsent: the file closed, the blob freed
  else
    c.complete(seq, head, std::move(body));
}

void Listener::reply_static(Connection& c, std::uint32_t seq, StaticFiles::Answer&& a, std::string_view headers) {
  if (!a.file) return reply(c, seq, a.status, a.content_type, std::string_view(), headers);
  const auto length = static_cast<std::size_t>(a.file.remaining());  // before the move
  reply_body(c, seq, a.status, a.content_type, std::move(a.file), length, headers);
}

void Listener::record(const Connection::SlotInfo& info, int status) {
  // This listener is the only writer of its block: plain load + store.
  auto bump = [](std::atomic<std::uint64_t>& a, std::uint64_t by) {
    a.store(a.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  };
  const auto row = info.route == Connection::kNoRoute ? unrouted_row_ : info.route;
  bump(request_counters_[row * transport::kStatusColumns + transport::status_column(status)], 1);
  const auto us = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - info.opened).count());
  std::size_t b = 0;
  while (b < std::size(transport::kLatencyBucketsUs) && us > transport::kLatencyBucketsUs[b]) ++b;
  bump(metrics_.latency[b], 1);
  bump(metrics_.latency_sum_us, us);
  bump(metrics_.latency_count, 1);
}

bool Listener::run_request_middleware(Connection& c, const http::HttpRequest& req, Method method, std::string_view path,
                                      std::string_view query, bool keep_alive, bool http10) {
  if (config_.request_id) {
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
  if (cors_) {
    const auto verdict = cors_->apply(req, method, request_headers_);
    if (verdict == Cors::Verdict::Preflight || verdict == Cors::Verdict::Refused) {
      const auto seq = c.open_slot(keep_alive, http10, false, request_headers_.lines());
      if (verdict == Cors::Verdict::Preflight)
        reply(c, seq, 204, {}, {}, {});
      else
        reply(c, seq, 403, "application/problem+json", http::problem_json(403, "origin not allowed"), {});
      return false;
    }
  }
  if (middlewares_.empty()) return true;
  view_.method = method;
  view_.path = path;
  view_.query = query;
  view_.headers.clear();
  for (const auto& [k, v] : req.headers) view_.headers.push_back(Param{k, v});
  view_.body = req.body;
  for (const auto& mw : middlewares_) {
    if (!mw.on_request) continue;
    std::optional<Response> early;
    try {
      early = mw.on_request(view_, request_headers_);
    } catch (const std::exception& e) {
      spdlog::error("middleware {} threw: {}", mw.name, e.what());
      early =
          Response::problem(500, "Internal Server Error",
                            config_.production ? "the request failed" : std::string("middleware threw: ") + e.what());
    }
    if (!early) continue;
    const auto seq = c.open_slot(keep_alive, http10, method == Method::Head, request_headers_.lines());
    std::string lines;
    for (const auto& [k, v] : early->headers)
      if (header_safe(k) && header_safe(v) && !k.empty()) lines.append(k).append(": ").append(v).append("\r\n");
    reply(c, seq, early->status, early->content_type, early->body, lines);
    return false;
  }
  return true;
}

void Listener::dispatch(Connection& c, http::HttpRequest& req) {
  const bool http10 = req.http_minor == 0;
  const bool keep_alive = req.keep_alive;
  const auto method = http::to_method(req.method);
  const bool head = method == Method::Head;
  request_headers_.clear();
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
  if ((*method == Method::Get || *method == Method::Head) && BuiltinEndpoints::is_builtin(path)) {
    // Before middleware: health checks need no credentials.
    const auto a = builtins_.handle(path);
    const auto seq = c.open_slot(keep_alive, http10, head, {});
    reply(c, seq, a->status, a->content_type, a->body, "Cache-Control: no-store\r\n");
    return;
  }
  if (!run_request_middleware(c, req, *method, path, query, keep_alive, http10)) return;
  if (req.upgrade && !config_.websocket_path.empty() && path == config_.websocket_path)
    return ws_upgrade(c, req, http10);

  if (*method == Method::Options && target == "*") {
    // Asterisk-form (RFC 9110 9.3.7): what the server as a whole allows.
    const auto seq = c.open_slot(keep_alive, http10, false, request_headers_.lines());
    reply(c, seq, 204, {}, {}, "Allow: GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS\r\n");
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
  if (m.result == http::RouteTable::Match::Result::NotFound && !static_files_.empty() &&
      (*method == Method::Get || head)) {
    if (auto a = static_files_.serve(path, req)) {
      const auto seq = c.open_slot(keep_alive, http10, head, request_headers_.lines());
      const std::string extra = std::move(a->headers);
      reply_static(c, seq, std::move(*a), extra);
      return;
    }
  }
  if (m.result == http::RouteTable::Match::Result::NotFound) {
    const auto seq = c.open_slot(keep_alive, http10, head, request_headers_.lines());
    if (!config_.websocket_path.empty() && path == config_.websocket_path)
      problem(c, seq, 426, "this is the WebSocket endpoint: send a WebSocket upgrade request",
              "Upgrade: websocket\r\nConnection: Upgrade\r\n");
    else
      problem(c, seq, 404, "no route for " + std::string(path), {});
    return;
  }
  if (m.result == http::RouteTable::Match::Result::MethodNotAllowed) {
    std::uint8_t allowed = m.allowed;
    if (allowed & (1u << static_cast<unsigned>(Method::Get))) allowed |= 1u << static_cast<unsigned>(Method::Head);
    allowed |= 1u << static_cast<unsigned>(Method::Options);
    const std::string allow = "Allow: " + http::RouteTable::allow_header(allowed) + "\r\n";
    const auto seq = c.open_slot(keep_alive, http10, head, request_headers_.lines());
    // A path that exists answers OPTIONS itself unless a plugin routes it.
    if (*method == Method::Options)
      reply(c, seq, 204, {}, {}, allow);
    else
      problem(c, seq, 405, std::string(method_name(*method)) + " is not allowed here", allow);
    return;
  }

  // Path parameters reach handlers percent-decoded ("%20" -> " ").
  decoded_params_.clear();
  for (const auto& p : m.path_params()) {
    if (p.value.find('%') == std::string_view::npos) continue;
    for (const auto& q : m.path_params()) {
      std::string value;
      if (!percent_decode(q.value, value, false)) {
        const auto seq = c.open_slot(keep_alive, http10, head, request_headers_.lines());
        problem(c, seq, 400, "malformed percent-escape in the path", {});
        return;
      }
      decoded_params_.emplace_back(std::string(q.name), std::move(value));
    }
    break;
  }

  const Target& route = targets_[m.target];
  // A body written to a file as it came (EDRI_UPLOAD_THRESHOLD): complete.
  auto* upload = static_cast<UploadFile*>(req.spill.get());
  if (upload) upload->finish();
  validated_.clear();
  if (route.validator && route.validator->reads_body() && upload && !read_file(upload->path(), req.body)) {
    const auto seq = c.open_slot(keep_alive, http10, head, request_headers_.lines(), m.target);
    problem(c, seq, 500, "the request body's file cannot be read", {});
    return;
  }
  if (route.validator) {
    route.validator->check(query, req, validated_);
    if (validated_.status) {
      const auto seq = c.open_slot(keep_alive, http10, head, request_headers_.lines(), m.target);
      reply(c, seq, validated_.status, "application/problem+json", RequestValidator::problem_body(validated_), {});
      return;
    }
  }
  if (config_.request_id) validated_.headers.emplace_back("x-request-id", request_id_);

  const auto seq = c.open_slot(keep_alive, http10, head, request_headers_.lines(), m.target);
  // Kept in case the handler answers with a file (Response::file).
  if (auto conditions = StaticFiles::Conditions::of(req); conditions.any())
    c.set_conditions(seq, std::move(conditions));
  auto h = origin_header(c, env::Kind::Request, route.event_type, seq);
  if (route.replay) h.flags |= env::kFlagReplay;
  if (config_.server_timing) h.flags |= env::kFlagTiming;
  env::EnvelopeWriter w(h);
  const auto params = m.path_params();
  if (!decoded_params_.empty())
    w.key_values(env::SectionType::PathParams, decoded_params_, env::StringPairKey{}, env::StringPairValue{});
  else if (!params.empty())
    w.key_values(env::SectionType::PathParams, params, env::ParamKey{}, env::ParamValue{});
  if (!query.empty()) w.text(env::SectionType::Query, query);
  add_validated(w);
  if (req.body_size > 0)
    if (const auto type = req.header("content-type"); !type.empty()) w.text(env::SectionType::BodyType, type);
  // A large body is written once into the blob area; the manager reads it
  // there and frees it. A larger one is in its file already: the manager
  // maps it, and it is removed when the response is sent.
  transport::BlobLease blob;
  std::string upload_section;
  if (upload) {
    c.hold_upload(seq, req.spill);
    const std::uint64_t size = upload->size();
    upload_section.assign(reinterpret_cast<const char*>(&size), sizeof size).append(upload->path());
    w.text(env::SectionType::Upload, upload_section);
  } else if (auto* blobs = loop_.blobs(); blobs && req.body.size() >= config_.blob_threshold) {
    blob = transport::BlobLease(blobs, blobs->store(req.body));
    if (!blob) {
      problem(c, seq, 503, "the blob area is full; retry later", "Retry-After: 1\r\n");
      return;
    }
    w.raw(env::SectionType::Blob, transport::BlobArena::section_of(blob.handle()));
  } else if (!req.body.empty()) {
    w.text(env::SectionType::Body, req.body);
  }
  if (env::send(to_broker_, w))
    (void)blob.take();  // the manager frees it
  else
    problem(c, seq, 503, "the server is overloaded; retry later", "Retry-After: 1\r\n");
}

env::EnvelopeHeader Listener::origin_header(const Connection& c, env::Kind kind, std::uint64_t type,
                                            std::uint32_t seq) {
  auto h = env::make_header(kind, type, ++next_request_);
  h.origin_listener = index_;
  h.origin_connection = c.id();
  h.origin_generation = c.generation();
  h.origin_stream = seq;
  // With request_id, unique across listener restarts (which start the
  // counter over): Request::id.
  if (kind == env::Kind::Request) h.t0_ns = now_ns();
  return h;
}

void Listener::add_validated(env::EnvelopeWriter& w) const {
  if (!validated_.query.empty())
    w.key_values(env::SectionType::QueryParams, validated_.query, env::StringPairKey{}, env::StringPairValue{});
  if (!validated_.headers.empty())
    w.key_values(env::SectionType::Headers, validated_.headers, env::StringPairKey{}, env::StringPairValue{});
  if (!validated_.cookies.empty())
    w.key_values(env::SectionType::Cookies, validated_.cookies, env::StringPairKey{}, env::StringPairValue{});
}

void Listener::problem(Connection& c, std::uint32_t seq, int status, std::string_view detail,
                       std::string_view headers) {
  reply(c, seq, status, "application/problem+json", http::problem_json(status, detail), headers);
}

void Listener::stream_credit(const Connection::StreamRef& s, std::uint64_t bytes) {
  stream_control(s, env::kControlStreamCredit, std::as_bytes(std::span<const std::uint64_t>(&bytes, 1)));
}

void Listener::stream_cancel(const Connection::StreamRef& s) { stream_control(s, env::kControlStreamCancel, {}); }

void Listener::stream_control(const Connection::StreamRef& s, std::uint64_t code, std::span<const std::byte> payload) {
  auto h = env::make_header(env::Kind::Control, code, s.id);
  h.origin_listener = index_;
  h.reply_to = s.manager_slot;
  env::EnvelopeWriter w(h);
  if (!payload.empty()) w.raw(env::SectionType::Control, payload);
  if (!env::send(to_broker_, w, transport::Admission::Answer)) spdlog::error("a stream credit did not fit a record");
}

void Listener::reply_stream(Connection& c, std::uint32_t seq, int status, std::string_view content_type,
                            const env::StreamHead& sh, std::uint64_t id, std::string_view headers) {
  const Connection::StreamRef ref{sh.manager_slot, id, false};
  const auto* info = c.slot(seq);
  if (!info) return stream_cancel(ref);
  compose_headers(*info, status, headers);
  record(*info, status);
  http::ResponseHead h{status,           content_type, sh.length >= 0 ? static_cast<std::size_t>(sh.length) : 0,
                       info->keep_alive, info->http10, info->head};
  h.framing = sh.length >= 0 ? http::ResponseHead::Framing::Length : http::ResponseHead::Framing::Chunked;
  const bool bodyless = status == 204 || status == 304 || status < 200;
  if (info->head || bodyless) {
    // No body goes out: the head alone, and the producer is stopped.
    c.complete(seq, [&](std::string& out) { writer_.write(out, h, composed_, {}); });
    return stream_cancel(ref);
  }
  // An HTTP/1.0 client knows no chunks: the body ends with the connection.
  const bool close_after = sh.length < 0 && info->http10;
  if (close_after) {
    h.framing = http::ResponseHead::Framing::Close;
    h.keep_alive = false;
  }
  c.open_stream(
      seq, [&](std::string& out) { writer_.write(out, h, composed_, {}); },
      Connection::StreamRef{sh.manager_slot, id, h.framing == http::ResponseHead::Framing::Chunked}, close_after);
}

void Listener::on_response(std::span<const std::byte> record) {
  env::EnvelopeView v;
  if (auto e = env::decode(record, v); e != env::DecodeError::None) {
    spdlog::error("dropping a malformed response envelope: {}", env::to_string(e));
    return;
  }
  const auto& h = v.header;
  if (h.flags & env::kFlagStreamPiece) return on_stream_piece(v);
  if (h.kind == static_cast<std::uint8_t>(env::Kind::Notification)) return on_push(v);
  if (h.kind == static_cast<std::uint8_t>(env::Kind::Control)) {
    if (h.event_type == env::kControlPushClose) close_pushed(v);
    return;
  }
  // A body in the blob area is this listener's to free from here on: when
  // this returns, unless the connection takes it to send.
  transport::BlobLease blob;
  const bool has_blob = v.has(env::SectionType::Blob);
  if (has_blob) blob = transport::claim_blob(loop_.blobs(), v.section(env::SectionType::Blob));
  const bool blob_lost = has_blob && !blob;
  Connection* c = find(h.origin_connection, h.origin_generation);
  if (!c) return;  // the client went away
  if (c->websocket()) {
    if (!c->ws_slot(h.origin_stream)) return;
    if (v.has(env::SectionType::File))
      return ws_error(*c, h.origin_stream, 500, "a file answer cannot be sent over WebSocket");
    if (blob_lost) return ws_error(*c, h.origin_stream, 502, "the answer's body was lost on the way");
    return ws_answer(*c, h.origin_stream, h.status, v.text(env::SectionType::ContentType),
                     blob ? blob.view() : v.text(env::SectionType::Body));
  }
  if (!c->slot(h.origin_stream)) return;
  if (blob_lost) {
    problem(*c, h.origin_stream, 502, "the answer's body was lost on the way (a process restarted)", {});
    return;
  }

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
  if (v.has(env::SectionType::Stream)) {
    env::StreamHead sh{};
    const auto sec = v.section(env::SectionType::Stream);
    if (sec.size() != sizeof sh) return problem(*c, h.origin_stream, 502, "a malformed streamed answer", {});
    std::memcpy(&sh, sec.data(), sizeof sh);
    return reply_stream(*c, h.origin_stream, h.status, v.text(env::SectionType::ContentType), sh, h.request_id,
                        extra_headers_);
  }
  if (v.has(env::SectionType::File)) {
    // The handler answered with a file: sent from here, from disk.
    const std::string path(v.text(env::SectionType::File));
    auto a = StaticFiles::serve_file(path, c->slot(h.origin_stream)->conditions, v.text(env::SectionType::ContentType));
    if (!a) {
      spdlog::error("a handler answered with the file {}, which cannot be read", path);
      problem(*c, h.origin_stream, 500,
              config_.production ? "the answer's file cannot be read" : "the answer's file cannot be read: " + path,
              {});
      return;
    }
    // A handler's own status stands, unless the file answer is partial or
    // conditional (206, 304, 416).
    if (a->status == 200) a->status = h.status;
    extra_headers_ += a->headers;
    reply_static(*c, h.origin_stream, std::move(*a), extra_headers_);
    return;
  }
  if (blob) {
    // Sent from the blob area's mapping, never copied into this process;
    // freed once the socket took it or when the connection goes.
    const std::size_t length = blob.view().size();
    reply_body(*c, h.origin_stream, h.status, v.text(env::SectionType::ContentType), std::move(blob), length,
               extra_headers_);
    return;
  }
  reply(*c, h.origin_stream, h.status, v.text(env::SectionType::ContentType), v.text(env::SectionType::Body),
        extra_headers_);
}

void Listener::on_stream_piece(const env::EnvelopeView& v) {
  const auto& h = v.header;
  // A piece in the blob area is this listener's to free from here on.
  transport::BlobLease blob;
  const bool has_blob = v.has(env::SectionType::Blob);
  if (has_blob) blob = transport::claim_blob(loop_.blobs(), v.section(env::SectionType::Blob));
  Connection* c = find(h.origin_connection, h.origin_generation);
  if (!c || c->websocket()) return;  // gone: its close cancelled the stream
  const bool end = h.flags & env::kFlagStreamEnd;
  const bool abort = (h.flags & env::kFlagStreamAbort) || (has_blob && !blob);
  const std::string_view bytes = blob ? std::string_view() : v.text(env::SectionType::Body);
  if (abort) spdlog::warn("a streamed answer on connection {} was cut short", c->id());
  (void)c->stream_piece(h.origin_stream, bytes, std::move(blob), end, abort);
}

}  // namespace edri::listener
