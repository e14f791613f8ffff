// NatsServer: a real nats-server (Debian `nats-server`) started by a test
// on a free loopback port, stopped by PID. It can be stopped and started
// again on the same port (a NATS outage), with the same options.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace edri::test {

class NatsServer {
 public:
  // `options`: extra nats-server arguments (--user u --pass p, --tls ...).
  // With `jetstream` (live streams cross instances through it), its store
  // is a directory of its own that outlives a stop() and start().
  // It listens on `host` only.
  explicit NatsServer(std::vector<std::string> options = {}, bool jetstream = true, std::string host = "127.0.0.1");
  ~NatsServer();
  NatsServer(const NatsServer&) = delete;
  NatsServer& operator=(const NatsServer&) = delete;

  std::uint16_t port() const { return port_; }
  std::string url(const std::string& scheme = "nats") const {
    return scheme + "://" + host_ + ":" + std::to_string(port_);
  }
  pid_t pid() const { return pid_; }
  // SIGKILL (a crash, no goodbye to the clients) or SIGTERM, and wait.
  void stop(bool kill = false);
  // Starts again on the same port; waits until it takes connections.
  void start();

 private:
  bool accepts() const;
  std::vector<std::string> options_;
  std::string host_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
  std::string log_path_;
  std::string store_;  // JetStream's, or empty
};

// One message as a bare NATS client publishes it (a reply subject, or none).
struct RawNatsMessage {
  std::string subject, reply, payload;
};

// Publishes `messages` in one write with the protocol's text commands, as
// a bare NATS client would (what edri never sends: garbage, floods), and
// waits until the server has them all (its PONG comes after); no -ERR.
void raw_publish(std::uint16_t nats_port, const std::vector<RawNatsMessage>& messages);
void raw_publish(std::uint16_t nats_port, const std::string& subject, const std::string& payload);

}  // namespace edri::test
