#include "listener/connection_table.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include <spdlog/spdlog.h>

#include <edri/problem.hpp>

#include "http/proxy_header.hpp"

namespace edri::listener {

namespace {

// A peer's address as Request::client_address shows it: IPv4 dotted (also
// when a dual-stack socket maps it into IPv6), IPv6 compressed, "unix".
std::string address_text(const sockaddr_storage& peer) {
  if (peer.ss_family == AF_INET)
    return http::address_text(AF_INET, &reinterpret_cast<const sockaddr_in&>(peer).sin_addr);
  if (peer.ss_family == AF_INET6)
    return http::address_text(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr);
  return "unix";
}

}  // namespace

ConnectionTable::ConnectionTable(ConnectionContext& context, const Config& config,
                                 transport::ListenerMetricsHeader& metrics, std::function<void()> on_refused)
    : context_(context),
      config_(config),
      metrics_(metrics),
      on_refused_(std::move(on_refused)),
      cap_(config.connections_per_listener()),
      proxy_peers_(config.proxy_protocol ? parse_ranges(config.trusted_proxies) : std::vector<AddressRange>{}) {}

ConnectionTable::Accepted ConnectionTable::accept_from(int listen_fd, const TlsContext* tls, bool admin) {
  for (;;) {
    sockaddr_storage peer{};
    socklen_t peer_size = sizeof peer;
    UniqueFd fd(::accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &peer_size, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // Another listener took it, or the backlog is empty.
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Accepted::All;
      if (errno == EINVAL) return Accepted::Stopped;
      // Out of descriptors or memory: back off instead of spinning.
      spdlog::warn("accept failed: {}", std::strerror(errno));
      return Accepted::Failed;
    }
    if (open() >= cap_) {
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
    connections_[id] = std::make_unique<Connection>(context_, std::move(fd), id, generations_[id], tls);
    connections_[id]->set_peer(address_text(peer));
    if (expects_proxy_header(connections_[id]->peer())) connections_[id]->expect_proxy_header();
    if (admin) connections_[id]->set_admin();
    connections_[id]->start();
  }
}

void ConnectionTable::refuse(UniqueFd fd, bool tls) {
  // Over EDRI_MAX_CONNECTIONS: a 503 without reading the request (never
  // for TLS, which would need a handshake first), and the connection
  // closes. What the client sent already is read and dropped first, so
  // that the close does not reset the connection before the 503 is read.
  if (!tls) {
    static const std::string kRefusal = [] {
      const std::string body = problem_json(503, "too many connections (EDRI_MAX_CONNECTIONS); retry later");
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
  on_refused_();
  if (refusals_++ % 1000 == 0)
    spdlog::warn("refusing connections: {} open, EDRI_MAX_CONNECTIONS allows {} per listener ({} refused so far)",
                 open(), cap_, refusals_);
}

Connection* ConnectionTable::find(std::uint32_t id, std::uint32_t generation) {
  if (id >= connections_.size() || generations_[id] != generation) return nullptr;
  Connection* c = connections_[id].get();
  return (c && !c->closed()) ? c : nullptr;
}

void ConnectionTable::mark_dirty(Connection& c) {
  c.dirty = true;
  dirty_.push_back(&c);
}

void ConnectionTable::flush_dirty() {
  // A flush may read more and so mark more: the list grows while walked.
  for (std::size_t i = 0; i < dirty_.size(); ++i) {
    Connection* c = dirty_[i];
    if (c->dirty) c->flush();
  }
  dirty_.clear();
  if (held_total_ > config_.output_buffer_total) shed_output();
}

void ConnectionTable::release(Connection& c) {
  const auto id = c.id();
  ++generations_[id];
  graveyard_.push_back(std::move(connections_[id]));
  free_ids_.push_back(id);
}

void ConnectionTable::end_turn() {
  // What is still marked is flushed next turn; the closed go now.
  std::erase_if(dirty_, [](const Connection* c) { return c->closed(); });
  graveyard_.clear();
}

void ConnectionTable::held_changed(std::size_t before, std::size_t after) {
  held_total_ = held_total_ - before + after;
  metrics_.output_held_bytes.store(held_total_, std::memory_order_relaxed);
}

bool ConnectionTable::expects_proxy_header(const std::string& peer) const {
  if (proxy_peers_.empty()) return false;
  const auto address = parse_ip(peer);  // "unix" is none: a Unix socket's peer is never a trusted proxy
  return address && any_contains(proxy_peers_, *address);
}

void ConnectionTable::count_shed() { transport::bump_owned(metrics_.clients_shed); }

void ConnectionTable::count_proxy_refused(const Connection& c, std::string_view why) {
  transport::bump_owned(metrics_.proxy_headers_refused);
  // A misconfigured proxy has every connection refused: the log says so
  // without a line for each.
  const auto level = proxy_refusals_++ % 1000 == 0 ? spdlog::level::warn : spdlog::level::debug;
  spdlog::log(level, "closed connection {} from trusted proxy {} unanswered: {} ({} so far)", c.id(), c.peer(), why,
              proxy_refusals_);
}

void ConnectionTable::shed_output() {
  std::vector<Connection*> behind;
  for_each_open([&](Connection& c) {
    if (c.held_bytes() > 0) behind.push_back(&c);
  });
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

}  // namespace edri::listener
