// H2ClientLink: one HTTP/2 client connection (cleartext, prior knowledge)
// over a non-blocking socket, made for load generators that drive many of
// them from one poll loop on one thread. nghttp2 does the protocol: the
// owner submits streams on session() and hears about their headers, data
// and end through Events; the link moves the bytes.
#pragma once

#include <netinet/in.h>
#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace edri::bench {

class H2ClientLink {
 public:
  // Called from inside on_ready(), while nghttp2 takes in the server's
  // bytes: record what happened and act after on_ready returns.
  class Events {
   public:
    virtual ~Events() = default;
    virtual void on_header(std::int32_t stream, std::string_view name, std::string_view value) = 0;
    virtual void on_data(std::int32_t stream, std::string_view bytes) = 0;
    virtual void on_stream_close(std::int32_t stream, std::uint32_t error_code) = 0;
  };

  explicit H2ClientLink(Events& events) : events_(events) {}
  H2ClientLink(const H2ClientLink&) = delete;
  H2ClientLink& operator=(const H2ClientLink&) = delete;
  ~H2ClientLink() { close(); }

  // Starts a non-blocking connect and a fresh session with its SETTINGS
  // queued; streams may be submitted at once. False, with `error`, when the
  // socket cannot be made or the connect is refused outright.
  bool open(const sockaddr_in& peer, std::string& error);
  void close();
  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  nghttp2_session* session() const { return session_; }

  // What poll should wait for on fd().
  short wanted_events() const;
  // Reads and writes what `revents` allows. False, with `error`, when the
  // connection is lost or the session has ended (GOAWAY); close() it then.
  bool on_ready(short revents, std::string& error);
  // Writes what the session has queued since (a submit, a resumed stream).
  bool flush(std::string& error);

 private:
  bool finish_connect(std::string& error);
  bool read_available(std::string& error);
  bool take_frames(std::string& error);
  void create_session();

  static int on_header_cb(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name, std::size_t name_len,
                          const std::uint8_t* value, std::size_t value_len, std::uint8_t flags, void* user);
  static int on_data_cb(nghttp2_session*, std::uint8_t flags, std::int32_t stream, const std::uint8_t* data,
                        std::size_t size, void* user);
  static int on_close_cb(nghttp2_session*, std::int32_t stream, std::uint32_t error_code, void* user);

  Events& events_;
  int fd_ = -1;
  bool connecting_ = false;
  nghttp2_session* session_ = nullptr;
  std::string unsent_;  // frames the socket has yet to take
};

// A header field for nghttp2_submit_request whose strings outlive the
// request (nghttp2 then keeps pointers instead of copies).
nghttp2_nv static_header(std::string_view name, std::string_view value);

// host:port as an IPv4 socket address; nullopt when host is not an IPv4
// literal.
std::optional<sockaddr_in> ipv4_address(const std::string& host, std::uint16_t port);

// One GET over HTTP/2 (prior knowledge) on a fresh connection; true when it
// answers 200 within the timeout. Tells when a server that speaks only
// HTTP/2 on its port (nginx's `listen ... http2`) is serving.
bool probe_h2_ok(const std::string& host, std::uint16_t port, const std::string& path, double timeout_seconds);

}  // namespace edri::bench
