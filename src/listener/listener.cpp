#include "listener/listener.hpp"

#include <fcntl.h>
#include <sys/epoll.h>

#include <spdlog/spdlog.h>

#include "envelope/control.hpp"
#include "envelope/envelope.hpp"
#include "envelope/send.hpp"
#include "http/route_table.hpp"

namespace edri::listener {

namespace env = edri::envelope;

namespace {

std::unique_ptr<Cors> make_cors(const Config& config) {
  if (config.cors_origins.empty()) return nullptr;
  return std::make_unique<Cors>(config.cors_origins, config.cors_headers, config.cors_credentials, config.cors_max_age);
}

// Our own descriptor of an inherited socket: the supervisor keeps the
// original across restarts.
UniqueFd duplicate(int fd, const char* what) {
  UniqueFd own(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!own) throw std::runtime_error(std::string("the inherited ") + what + " is not valid");
  return own;
}

// This listener's channels to the managers, by index (0027); none where
// requests do not go to managers straight.
std::vector<transport::Outbox*> manager_outboxes(ProcessLoop& loop) {
  const auto& topo = loop.topology();
  std::vector<transport::Outbox*> out;
  if (topo.direct_requests())
    for (std::uint32_t j = 0; j < topo.managers(); ++j) out.push_back(&loop.outbox_to(topo.manager_slot(j)));
  return out;
}

// Which requests go to those channels: none where there are none.
plugin::DirectRoutes direct_routes(const ProcessLoop& loop, const plugin::PluginSet& plugins, const Config& config) {
  if (!loop.topology().direct_requests()) return {};
  return plugin::DirectRoutes(plugins,
                              plugins.manager_domains(config.manager_replicas, config.domains, config.domain_replicas));
}

}  // namespace

Listener::Listener(ProcessLoop& loop, const Config& config, const plugin::PluginSet& plugins, std::uint16_t index,
                   int listen_fd, int unix_fd, int admin_fd, const std::vector<int>& helper_cpus)
    : loop_(loop),
      config_(config),
      access_log_(AccessLog::open(config, plugins,
                                  AccessLog::Counters{loop.segment().listener_metrics(index).access_log_lines,
                                                      loop.segment().listener_metrics(index).access_log_dropped},
                                  helper_cpus)),
      sender_(loop.outbox_to(transport::Topology::kBroker), loop.outbox_to(transport::Topology::kRouter),
              manager_outboxes(loop), direct_routes(loop, plugins, config), index),
      tls_(config.ssl_certificate.empty() ? nullptr
                                          : std::make_unique<TlsContext>(config.ssl_certificate, config.ssl_key)),
      cors_(make_cors(config)),
      builtins_(config, loop.segment(), loop.topology(), plugins,
                plugins.manager_domains(config.manager_replicas, config.domains, config.domain_replicas)),
      validators_(make_validators(plugins, config.max_json_depth)),
      answers_(config, table_, sender_, loop.blobs(), plugins.middlewares(),
               Answers::Metrics{loop.segment().listener_metrics(index), &loop.segment().request_counter(index, 0, 0),
                                static_cast<std::uint32_t>(plugins.routes().size()),
                                &loop.segment().route_latency(index, 0), &loop.segment().call_latency(index, 0)}),
      streams_(config, sender_),
      grpc_services_(plugins.grpc_services()),
      gate_(config, plugins),
      commands_(config, plugins, validators_, sender_, gate_),
      grpc_(config, grpc_services_, commands_, streams_, loop.events()),
      websocket_(config, commands_, answers_, cors_.get(), streams_),
      context_{config_, loop.events(), websocket_.io(), parser_limits(), draining_, *this,
               *this,   *this,         *this,           *this,           *this},
      table_(context_, config, loop.segment().listener_metrics(index), [this] { answers_.count_refusal(); }),
      http_(config, plugins, validators_, answers_, sender_, websocket_, streams_, builtins_, cors_.get(), gate_,
            loop.blobs(), index),
      listen_fd_(duplicate(listen_fd, "listening socket")),
      accept_retry_(loop.events(), [this] { accept_all(); }),
      sweep_(loop.events(), [this] { sweep(); }),
      drain_deadline_(loop.events(),
                      [this] {
                        spdlog::warn("EDRI_SHUTDOWN_TIMEOUT: closed {} connections still open", table_.open());
                        table_.for_each_open([](Connection& c) { c.close(); });
                        loop_.stop();
                      }),
      reload_grace_(loop.events(),
                    [this] {
                      spdlog::info("EDRI_RELOAD_GRACE is over: {} connections to close", table_.open());
                      drain_all();
                    }),
      lost_watch_(loop, [this] { answer_lost(); }) {
  if (unix_fd >= 0) unix_fd_ = duplicate(unix_fd, "Unix domain socket");
  if (admin_fd >= 0) admin_fd_ = duplicate(admin_fd, "admin socket");
  builtins_.set_blobs(loop.blobs());
  websocket_.set_table(table_);
  grpc_.set_table(table_);
  answers_.set_grpc(grpc_);
  answers_.set_access_log(access_log_.get());
  grpc_.set_access_log(access_log_.get());
  if (access_log_) {
    auto& d = loop.segment().doorbell(loop.slot());
    access_log_->count_trace_losses_in({&d.spans_dropped, &d.trace_batches_failed});
  }
  grpc_.set_metrics(loop.segment().listener_metrics(index), &loop.segment().call_latency(index, 0));
  streams_.set_metrics(loop.segment().listener_metrics(index));
  if (access_log_) loop_.on_reopen_signal([this] { access_log_->reopen(); });
  loop_.on_records_from(transport::Topology::kBroker,
                        [this](std::span<const std::byte> rec) { on_broker_record(rec); });
  const auto& topo = loop.topology();
  if (topo.direct_answers())
    for (std::uint32_t j = 0; j < topo.destinations(); ++j)
      loop_.on_records_from(topo.destination_slot(j),
                            [this](std::span<const std::byte> rec) { on_manager_record(rec); });
  loop_.after_drain([this] { return after_drain(); });
  loop_.on_stop_signal([this] { on_stop_signal(); });
  loop_.on_replaced_signal([this] { begin_drain(true); });
  loop_.on_peer_death([this](std::uint32_t slot) {
    if (slot != transport::Topology::kBroker) return;
    // Controls too: a WebSocket subscription the successor takes is answered.
    left_for_successor_.clear();
    for_each_untaken_envelope(sender_.outbox(), [&](const env::EnvelopeHeader& h) {
      left_for_successor_.emplace(h.origin_connection, h.origin_generation, h.origin_stream);
    });
    lost_watch_.died(slot);
  });
}

Listener::~Listener() {
  loop_.events().unwatch(listen_fd_.get());
  if (unix_fd_) loop_.events().unwatch(unix_fd_.get());
  if (admin_fd_) loop_.events().unwatch(admin_fd_.get());
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
  spdlog::info("serving {} routes", http_.route_count());
  sender_.listener_reset();
  loop_.events().watch(listen_fd_.get(), EPOLLIN, [this](std::uint32_t) { accept_from(listen_fd_.get(), tls_.get()); });
  // Behind a reverse proxy on the same host: plain HTTP, never TLS.
  if (unix_fd_)
    loop_.events().watch(unix_fd_.get(), EPOLLIN, [this](std::uint32_t) { accept_from(unix_fd_.get(), nullptr); });
  if (admin_fd_)
    loop_.events().watch(admin_fd_.get(), EPOLLIN,
                         [this](std::uint32_t) { accept_from(admin_fd_.get(), nullptr, true); });
  accept_all();
  sweep_.expires_after(std::chrono::seconds(1));
}

void Listener::refuse(Connection& c, int status, std::string_view reason) {
  // A request that could not be read: logged without its request line.
  auto access = access_log_ ? access_log_->begin(c.answers().protocol(), "-", "-", c.peer(), nullptr) : nullptr;
  answers_.answer_locally(c, false, false, false, status, reason, {}, std::move(access));
}

void Listener::closed(Connection& c) {
  grpc_.connection_closed(c);
  websocket_.closed(c);
  streams_.closed(c);
  table_.release(c);
}

void Listener::on_broker_record(std::span<const std::byte> record) {
  env::EnvelopeView v;
  if (auto e = env::decode(record, v); e != env::DecodeError::None) {
    spdlog::error("dropping a malformed envelope from the broker: {}", env::to_string(e));
    return;
  }
  const auto& h = v.header;
  if (h.flags & env::kFlagStreamPiece) return answers_.on_stream_piece(v);
  if (h.kind == static_cast<std::uint8_t>(env::Kind::Notification)) return websocket_.on_push(v);
  if (h.kind == static_cast<std::uint8_t>(env::Kind::Control) && env::is_stream_control(h.event_type))
    return streams_.on_control(v);
  if (h.kind == static_cast<std::uint8_t>(env::Kind::Control)) return websocket_.on_control(v);
  answers_.on_response(v);
}

void Listener::on_manager_record(std::span<const std::byte> record) {
  env::EnvelopeView v;
  if (auto e = env::decode(record, v); e != env::DecodeError::None) {
    spdlog::error("dropping a malformed envelope from a manager: {}", env::to_string(e));
    return;
  }
  if (v.header.kind != static_cast<std::uint8_t>(env::Kind::Response) || (v.header.flags & env::kFlagStreamPiece)) {
    spdlog::error("dropping an envelope of kind {} sent by a manager directly", v.header.kind);
    return;
  }
  answered_.push_back(v.header.request_id);
  answers_.on_response(v);
}

bool Listener::after_drain() {
  // The broker keeps its books of what is pending from these; it reads
  // them when it next runs, woken by nothing here.
  if (!answered_.empty()) {
    env::send_answered(sender_.outbox(), answered_, sender_.index());
    answered_.clear();
  }
  // The turn's stream revisions, then WebSocket work: both may add output
  // to the connections flushed next, and a flush may let a session take
  // its next message.
  streams_.end_turn(loop_.behind());
  for (int round = 0; round < 4; ++round) {
    websocket_.poll();
    table_.flush_dirty();
    if (!websocket_.poll_needed() && !table_.has_dirty()) break;
  }
  table_.end_turn();
  if (draining_) stop_if_drained();
  return websocket_.poll_needed() || table_.has_dirty();
}

void Listener::accept_all() {
  if (!accept_from(listen_fd_.get(), tls_.get())) return;
  if (unix_fd_ && !accept_from(unix_fd_.get(), nullptr)) return;
  if (admin_fd_) accept_from(admin_fd_.get(), nullptr, true);
}

bool Listener::accept_from(int fd, const TlsContext* tls, bool admin) {
  switch (table_.accept_from(fd, tls, admin)) {
    case ConnectionTable::Accepted::All: return true;
    case ConnectionTable::Accepted::Stopped: return false;
    case ConnectionTable::Accepted::Failed:
      // The edge is spent: the timer resumes accepting.
      accept_retry_.expires_after(std::chrono::milliseconds(50));
      return false;
  }
  return false;
}

void Listener::sweep() {
  answer_overdue();
  // A client that has taken no byte of its output for EDRI_WRITE_TIMEOUT
  // stopped reading: close it, and its output goes with it. Also closed: a
  // streamed answer whose producer sent nothing for the response timeout
  // (and more) while its client waited; its manager died or hangs, and
  // with the head out no error can be sent. And slow request heads (408)
  // and idle connections.
  const auto now = std::chrono::steady_clock::now();
  const auto write_cutoff = now - seconds(config_.write_timeout_s);
  const auto stream_cutoff = now - seconds(config_.api_response_timeout_s + 2.0);
  table_.for_each_open([&](Connection& c) {
    if (c.write_stalled_since(write_cutoff)) {
      spdlog::info("closing connection {}: the client took no output for {} s ({} bytes unsent)", c.id(),
                   config_.write_timeout_s, c.backlog());
      c.close();
    } else if (c.stream_stalled_since(stream_cutoff)) {
      spdlog::warn("closing connection {}: its streamed answer stalled", c.id());
      c.close();
    } else {
      c.apply_idle_limits(now);
    }
  });
  sweep_.expires_after(std::chrono::seconds(1));
}

void Listener::answer_overdue() {
  // The broker answers 504 at EDRI_API_RESPONSE_TIMEOUT. A request that
  // outlives that by two seconds was lost with a process that died (a
  // broker restart forgets its deadlines): answer it here, never hang.
  const auto cutoff = std::chrono::steady_clock::now() - seconds(config_.api_response_timeout_s + 2.0);
  std::vector<std::uint32_t> overdue;
  table_.for_each_open([&](Connection& c) {
    if (!c.waiting()) return;
    overdue.clear();
    c.for_each_overdue(cutoff, [&](std::uint32_t seq) { overdue.push_back(seq); });
    for (const auto seq : overdue) {
      spdlog::warn("request {} on connection {} got no answer, not even a 504: answering 504", seq, c.id());
      answer_missing(c, seq, 504, "no answer from the pipeline (a process may have restarted)");
    }
  });
}

void Listener::answer_lost() {
  std::size_t lost = 0;
  std::vector<std::uint32_t> seqs;
  table_.for_each_open([&](Connection& c) {
    if (!c.waiting()) return;
    seqs.clear();
    c.for_each_overdue(lost_watch_.died_at(), [&](std::uint32_t seq) {
      if (!left_for_successor_.count({c.id(), table_.generation_of(c.id()), seq})) seqs.push_back(seq);
    });
    lost += seqs.size();
    for (const auto seq : seqs) answer_missing(c, seq, 503, kLostWithProcess);
  });
  left_for_successor_.clear();
  if (lost) spdlog::warn("the broker died: {} requests without an answer since answered 503", lost);
}

void Listener::answer_missing(Connection& c, std::uint32_t seq, int status, std::string_view detail) {
  if (GrpcFront::owns(c, seq))
    grpc_.refused(c, seq, status, detail);
  else
    answers_.problem(c.answers(), seq, status, detail);
}

void Listener::on_stop_signal() {
  if (stop_signaled_) return loop_.stop();  // a second signal: now
  stop_signaled_ = true;
  begin_drain(false);
}

void Listener::begin_drain(bool gently) {
  if (draining_) {
    // Stopping after a reload's drain: the idle connections go now.
    if (!gently) {
      reload_grace_.cancel();
      drain_all();
    }
    return;
  }
  draining_ = true;
  // The supervisor stops the shared socket listening; this listener just
  // takes no more from it.
  loop_.events().unwatch(listen_fd_.get());
  if (unix_fd_) loop_.events().unwatch(unix_fd_.get());
  if (admin_fd_) loop_.events().unwatch(admin_fd_.get());
  accept_retry_.cancel();
  spdlog::info("{}: {} connections to finish, for up to {} s", gently ? "replaced by a reload" : "stopping",
               table_.open(), config_.shutdown_timeout_s);
  // A reload keeps WebSockets, event streams and gRPC streaming calls for
  // EDRI_RELOAD_GRACE (on either HTTP version): only what is idle goes.
  if (gently)
    table_.for_each_open([](Connection& c) { c.drain_gently(); });
  else
    drain_all();
  auto after = [](double s) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(s));
  };
  drain_deadline_.expires_after(after(config_.shutdown_timeout_s));
  if (gently && config_.reload_grace_s < config_.shutdown_timeout_s)
    reload_grace_.expires_after(after(config_.reload_grace_s));
  stop_if_drained();
}

void Listener::drain_all() {
  table_.for_each_open([this](Connection& c) {
    grpc_.drain(c);
    c.drain();
  });
}

void Listener::stop_if_drained() {
  if (table_.open() > 0) return;
  spdlog::info("every connection finished");
  loop_.stop();
}

}  // namespace edri::listener
