// OtlpReceiver: a small HTTP/1.1 server a test runs on a free loopback
// port, in threads of its own: it answers every request 200 `{}` (the
// first `refuse_first` with `refuse_status` and no body) and keeps what
// came (method, target, headers, body). It stands for an
// OpenTelemetry Collector's OTLP/HTTP receiver (no collector is packaged
// here) and for a service a handler calls.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace edri::test {

class OtlpReceiver {
 public:
  struct Received {
    std::string method;
    std::string target;
    std::map<std::string, std::string> headers;  // names lower-case
    std::string body;
  };

  explicit OtlpReceiver(std::size_t refuse_first = 0, int refuse_status = 503);
  ~OtlpReceiver();  // stops the threads, closes every socket
  OtlpReceiver(const OtlpReceiver&) = delete;
  OtlpReceiver& operator=(const OtlpReceiver&) = delete;

  std::uint16_t port() const { return port_; }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  // What came so far, in order.
  std::vector<Received> received() const;

 private:
  void accept_loop();
  void serve(int fd);

  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::vector<Received> received_;
  std::size_t refuse_first_;
  int refuse_status_;
  std::vector<int> connections_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

}  // namespace edri::test
