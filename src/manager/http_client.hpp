// HttpClient: a manager's outbound HTTP calls (Context::fetch, http), run
// on its own event loop by libcurl's multi-socket interface: each socket
// curl opens is watched in the loop's epoll set (level-triggered, as curl
// asks), its timeouts are one timerfd (and the end of the loop's turn for
// "at once": run_due), and no call has a thread. The multi
// handle keeps connections per origin for the next call; HTTP/2 is used
// where a TLS server offers it; certificates are verified.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <edri/http_call.hpp>

#include "runtime/event_loop.hpp"

typedef void CURLM;
typedef void CURL;

namespace edri::manager {

class HttpClient {
 public:
  struct Settings {
    std::chrono::milliseconds timeout;          // EDRI_HTTP_CLIENT_TIMEOUT
    std::chrono::milliseconds connect_timeout;  // EDRI_HTTP_CLIENT_CONNECT_TIMEOUT
    std::size_t max_response_bytes;             // EDRI_HTTP_CLIENT_MAX_RESPONSE
    std::string ca_file;                        // EDRI_HTTP_CLIENT_CA_FILE; empty: the system's
  };
  using Done = std::function<void(HttpReply)>;

  HttpClient(EventLoop& loop, Settings settings);
  ~HttpClient();  // calls still running end without their `done`
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Starts `call`, bounded by `deadline` too; `done` runs in the loop with
  // the answer or the error (at once for a call that cannot start). The
  // returned function stops it, `done` then not called.
  std::function<void()> start(HttpCall call, std::chrono::steady_clock::time_point deadline, Done done);
  std::size_t running() const { return transfers_.size(); }
  // What curl asked to run at once (a timeout of 0, as every new call
  // asks), run at the end of the loop's turn. True when it ran.
  bool run_due();

 private:
  struct Transfer;
  static int on_socket(void* easy, int socket, int what, void* self, void* socket_data);
  static int on_timer(CURLM* multi, long timeout_ms, void* self);
  void on_ready(int socket, std::uint32_t events);
  void on_timeout();
  void run_timeouts();
  void arm(std::chrono::steady_clock::time_point at);
  // Hands every finished transfer its answer.
  void collect();
  void stop(std::uint64_t id);
  // Easy handles, reset and used again (at most kSpareHandles kept).
  static constexpr std::size_t kSpareHandles = 64;
  CURL* take_easy();
  void give_back(CURL* easy);
  std::chrono::milliseconds budget(const HttpCall& call, std::chrono::steady_clock::time_point deadline) const;

  EventLoop& loop_;
  Settings settings_;
  CURLM* multi_ = nullptr;
  EventLoop::Timer timer_;
  // What curl wants and what the timerfd is set for (max: nothing).
  std::chrono::steady_clock::time_point wanted_ = std::chrono::steady_clock::time_point::max();
  std::chrono::steady_clock::time_point armed_ = std::chrono::steady_clock::time_point::max();
  bool due_ = false;  // curl asked for a timeout of 0
  std::unordered_map<std::uint64_t, std::unique_ptr<Transfer>> transfers_;
  std::unordered_set<int> watched_;
  std::vector<CURL*> spare_;
  std::uint64_t next_ = 0;
};

}  // namespace edri::manager
