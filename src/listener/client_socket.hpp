// ClientSocket: a client's connected, non-blocking socket, and TLS over it
// when the listener speaks TLS. It reads and writes bytes and knows no
// protocol: every read and write of a connection goes through here.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>

#include "listener/tls.hpp"
#include "transport/unique_fd.hpp"

namespace edri::listener {

class ClientSocket {
 public:
  static constexpr ssize_t kWouldBlock = TlsSession::kWouldBlock;
  static constexpr ssize_t kFailed = TlsSession::kFailed;

  // Takes ownership of `fd`; speaks TLS over it when `tls` is given.
  ClientSocket(UniqueFd fd, const TlsContext* tls);

  // Bytes, 0 at the end of the stream, kWouldBlock or kFailed.
  ssize_t read_some(char* buf, std::size_t n);
  ssize_t write_some(const char* buf, std::size_t n);
  // The plain socket's recv(), TLS or not (the PROXY protocol header
  // comes before TLS): `flags` as recv() takes them.
  ssize_t recv_raw(char* buf, std::size_t n, int flags);
  // sendfile() of `n` bytes of `file` from `offset` (advanced): bytes,
  // kWouldBlock or kFailed; 0 when the file ended early. Plain sockets
  // only: TLS encrypts in user space (OutputQueue reads the file then).
  ssize_t send_file(int file, off_t& offset, std::size_t n);

  bool tls() const { return tls_ != nullptr; }
  // TLS: the handshake is not done (it may wait on either direction).
  bool handshaking() const { return tls_ && !tls_->handshake_done(); }
  int fd() const { return fd_.get(); }
  bool open() const { return static_cast<bool>(fd_); }
  // Sends TLS's close_notify if it can, then closes the descriptor.
  void close();
  // Caps SO_SNDBUF at `bytes`; false when the kernel refused.
  bool limit_send_buffer(int bytes);
  // True when the client sent bytes not yet read (a close now would reset
  // the connection, and it could lose its answer).
  bool has_unread_input() const;

 private:
  UniqueFd fd_;
  std::unique_ptr<TlsSession> tls_;
};

}  // namespace edri::listener
