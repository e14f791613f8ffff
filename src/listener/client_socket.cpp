#include "listener/client_socket.hpp"

#include <sys/sendfile.h>
#include <sys/socket.h>

#include <cerrno>

namespace edri::listener {

namespace {
// What a failed call's errno means to the caller.
ssize_t failure() {
  return (errno == EAGAIN || errno == EWOULDBLOCK) ? ClientSocket::kWouldBlock : ClientSocket::kFailed;
}
}  // namespace

ClientSocket::ClientSocket(UniqueFd fd, const TlsContext* tls)
    : fd_(std::move(fd)), tls_(tls ? std::make_unique<TlsSession>(*tls, fd_.get()) : nullptr) {}

ssize_t ClientSocket::read_some(char* buf, std::size_t n) { return tls_ ? tls_->read(buf, n) : recv_raw(buf, n, 0); }

ssize_t ClientSocket::recv_raw(char* buf, std::size_t n, int flags) {
  for (;;) {
    const ssize_t r = ::recv(fd_.get(), buf, n, flags);
    if (r >= 0) return r;
    if (errno != EINTR) return failure();
  }
}

ssize_t ClientSocket::write_some(const char* buf, std::size_t n) {
  if (tls_) return tls_->write(buf, n);
  for (;;) {
    const ssize_t r = ::send(fd_.get(), buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r >= 0) return r;
    if (errno != EINTR) return failure();
  }
}

ssize_t ClientSocket::send_file(int file, off_t& offset, std::size_t n) {
  for (;;) {
    const ssize_t r = ::sendfile(fd_.get(), file, &offset, n);
    if (r >= 0) return r;
    if (errno != EINTR) return failure();
  }
}

void ClientSocket::close() {
  if (tls_) tls_->shutdown();
  fd_.reset();
}

bool ClientSocket::limit_send_buffer(int bytes) {
  return ::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes) == 0;
}

bool ClientSocket::has_unread_input() const {
  char probe;
  return ::recv(fd_.get(), &probe, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

}  // namespace edri::listener
