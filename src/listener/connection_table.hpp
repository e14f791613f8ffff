// ConnectionTable: a listener's client connections. It accepts them, up to
// this listener's share of EDRI_MAX_CONNECTIONS (past it a 503 and a
// close), finds one by (id, generation) for an answer (a closed one's slot
// is reused under a new generation, so a late answer finds nothing), keeps
// the ones with output to write this turn, and the total of unsent bytes
// they hold: past EDRI_OUTPUT_BUFFER_TOTAL those furthest behind are
// closed. A closed connection is destroyed at the end of the turn, never
// inside its own callback.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "listener/connection.hpp"
#include "listener/connection_owner.hpp"
#include "listener/tls.hpp"
#include "runtime/address_range.hpp"
#include "runtime/config.hpp"
#include "transport/shm_layout.hpp"
#include "transport/unique_fd.hpp"

namespace edri::listener {

class ConnectionTable {
 public:
  // `on_refused`: counts a connection refused past the cap (metrics).
  ConnectionTable(ConnectionContext& context, const Config& config, transport::ListenerMetricsHeader& metrics,
                  std::function<void()> on_refused);

  // Accepts every connection waiting on `listen_fd` (TLS with `tls`).
  enum class Accepted : std::uint8_t {
    All,      // none waits any more
    Stopped,  // the socket stopped listening: the server is stopping
    Failed,   // out of descriptors or memory: retry later (the edge is spent)
  };
  // `admin`: EDRI_ADMIN_SOCKET's connections (Connection::admin).
  Accepted accept_from(int listen_fd, const TlsContext* tls, bool admin = false);
  // The open connection `id` of `generation`, or nullptr.
  Connection* find(std::uint32_t id, std::uint32_t generation);
  // Connections not closed yet (a closed one gives its id back at once).
  std::size_t open() const { return connections_.size() - free_ids_.size(); }
  std::uint32_t generation_of(std::uint32_t id) const { return generations_[id]; }
  // Calls f(Connection&) for each open connection.
  template <class F>
  void for_each_open(F&& f) {
    for (auto& c : connections_)
      if (c && !c->closed()) f(*c);
  }

  void mark_dirty(Connection& c);
  // Writes what the connections marked this turn have; then, past
  // EDRI_OUTPUT_BUFFER_TOTAL, closes the clients furthest behind.
  void flush_dirty();
  bool has_dirty() const { return !dirty_.empty(); }
  void release(Connection& c);
  // The end of a loop turn: the connections closed in it are destroyed.
  void end_turn();

  void held_changed(std::size_t before, std::size_t after);
  void count_shed();
  // A trusted proxy's connection without a valid PROXY protocol header:
  // counted (/metrics) and logged, warned of at the first and each 1000th.
  void count_proxy_refused(const Connection& c, std::string_view why);

 private:
  void refuse(UniqueFd fd, bool tls);
  // EDRI_PROXY_PROTOCOL: whether connections from `peer` begin with a
  // PROXY protocol header (it is a trusted proxy).
  bool expects_proxy_header(const std::string& peer) const;
  void shed_output();

  ConnectionContext& context_;
  const Config& config_;
  transport::ListenerMetricsHeader& metrics_;
  std::function<void()> on_refused_;
  std::size_t cap_;  // this listener's share of EDRI_MAX_CONNECTIONS
  std::uint64_t refusals_ = 0;
  std::uint64_t proxy_refusals_ = 0;
  // EDRI_TRUSTED_PROXIES when EDRI_PROXY_PROTOCOL is on, else empty.
  std::vector<AddressRange> proxy_peers_;
  std::vector<std::unique_ptr<Connection>> connections_;  // by id
  std::vector<std::uint32_t> generations_;                // by id
  std::vector<std::uint32_t> free_ids_;
  std::vector<Connection*> dirty_;
  std::vector<std::unique_ptr<Connection>> graveyard_;
  std::size_t held_total_ = 0;  // sum of the connections' held_bytes()
};

}  // namespace edri::listener
