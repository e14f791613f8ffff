// WsClient: a WebSocket client for tests (Boost.Beast over TCP to
// 127.0.0.1), every operation bounded by a timeout so a test never hangs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace edri::test {

class WsClient {
 public:
  // Opens the WebSocket; throws std::runtime_error if the handshake fails
  // (what() then holds the HTTP status).
  explicit WsClient(std::uint16_t port, const std::string& path = "/ws",
                    const std::map<std::string, std::string>& headers = {}, int timeout_ms = 5000);
  ~WsClient();
  WsClient(const WsClient&) = delete;
  WsClient& operator=(const WsClient&) = delete;

  void send(const std::string& text);
  void send_binary(const std::string& bytes);
  // One text message sent as several frames.
  void send_fragmented(const std::vector<std::string>& parts);
  void ping(const std::string& payload);
  // The next text message; throws on timeout or when the server closes.
  std::string read();
  nlohmann::json read_json() { return nlohmann::json::parse(read()); }
  // Sends one command and reads the next message.
  nlohmann::json command(const nlohmann::json& msg) {
    send(msg.dump());
    return read_json();
  }
  // True if no message arrives within `ms`.
  bool quiet_for(int ms);
  // Reads until the server closes; its close code, or -1 on timeout.
  int read_close_code();
  // Pongs seen so far (their payloads).
  const std::vector<std::string>& pongs() const;
  // Starts the closing handshake with `code` and waits for the server's.
  int close(int code = 1000);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace edri::test
