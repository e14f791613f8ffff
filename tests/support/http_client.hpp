// HttpClient: a small blocking HTTP/1.1 client for tests, over a real TCP
// connection to 127.0.0.1, with timeouts so that a test never hangs.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace edri::test {

struct HttpResponse {
  int status = 0;
  std::string version;                         // "HTTP/1.1"
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string raw_head;  // status line and headers as received
  int chunks = -1;       // chunked: how many chunks carried data; -1: not chunked
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

class HttpClient {
 public:
  explicit HttpClient(std::uint16_t port, int timeout_ms = 5000);
  // A server on another address (an instance in a network namespace).
  HttpClient(const std::string& host, std::uint16_t port, int timeout_ms = 5000);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  void send_raw(const std::string& bytes);
  // Reads one response (Content-Length, chunked or close-delimited bodies;
  // HEAD responses if `head`).
  // Throws on timeout or when the connection closes first.
  HttpResponse read_response(bool head = false);
  HttpResponse get(const std::string& path);
  HttpResponse request(const std::string& method, const std::string& path, const std::string& body = {},
                       const std::string& extra_headers = {});
  // Exactly `n` raw bytes (after whatever a response left unread).
  std::string read_bytes(std::size_t n);
  // True if the server closed the connection (read returns 0) within the timeout.
  bool closed_by_peer(int timeout_ms = 2000);
  // Bytes received that no read took yet (what closed_by_peer() saw
  // before the close).
  const std::string& unread() const { return buf_; }

 private:
  bool fill(int timeout_ms);
  int fd_ = -1;
  int timeout_ms_;
  std::string buf_;
};

// A TCP connection to 127.0.0.1:port; `receive_buffer` bytes of window when
// not 0. Throws when it cannot connect.
int connect_loopback(std::uint16_t port, int receive_buffer = 0);
// The same to an IPv4 `host`.
int connect_to(const std::string& host, std::uint16_t port, int receive_buffer = 0);

// One request on a fresh connection.
HttpResponse http_get(std::uint16_t port, const std::string& path);

// A raw connection to 127.0.0.1:port with a tiny receive window, so that the
// server feels at once a client that does not read; its descriptor (the
// caller closes it). Throws when it cannot connect.
int connect_small_window(std::uint16_t port);

}  // namespace edri::test
