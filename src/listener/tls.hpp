// TLS for the listener's connections, on OpenSSL, over the same
// non-blocking edge-triggered sockets as plain HTTP.
//
// TlsContext holds the certificate and key (EDRI_SSL_CERTIFICATE,
// EDRI_SSL_KEY); TlsSession is one connection's state. Reads and writes
// return what plain recv/send would: bytes, 0 at the end of the stream,
// kWouldBlock, or kFailed.
#pragma once

#include <sys/types.h>
#include <cstddef>
#include <string>

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace edri::listener {

class TlsContext {
 public:
  // Loads both files and checks that the key matches the certificate;
  // throws std::runtime_error naming the file and OpenSSL's reason.
  TlsContext(const std::string& certificate, const std::string& key);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  SSL_CTX* native() const { return ctx_; }

 private:
  SSL_CTX* ctx_;
};

class TlsSession {
 public:
  static constexpr ssize_t kWouldBlock = -1;
  static constexpr ssize_t kFailed = -2;

  TlsSession(const TlsContext& ctx, int fd);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  ssize_t read(char* buf, std::size_t n);
  ssize_t write(const char* buf, std::size_t n);
  // Sends close_notify if it can, without waiting.
  void shutdown();
  bool handshake_done() const { return handshake_done_; }

 private:
  ssize_t result(int r);
  ssize_t handshake();  // 1 when done, else kWouldBlock or kFailed
  SSL* ssl_;
  bool handshake_done_ = false;
  bool failed_ = false;
};

}  // namespace edri::listener
