#include "listener/tls.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <stdexcept>

namespace edri::listener {

namespace {
std::string openssl_error() {
  const unsigned long e = ERR_get_error();
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return e ? buf : "unknown error";
}

int select_protocol(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
                    void*) {
  static constexpr unsigned char kServed[] = "\x02h2\x08http/1.1";
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outlen, kServed, sizeof kServed - 1, in, inlen) != OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;  // none in common: no ALPN, HTTP/1.1 as before
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}
}  // namespace

TlsContext::TlsContext(const std::string& certificate, const std::string& key)
    : ctx_(SSL_CTX_new(TLS_server_method())) {
  if (!ctx_) throw std::runtime_error("TLS: cannot create a context: " + openssl_error());
  SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx_,
                   SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_options(ctx_, SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_use_certificate_chain_file(ctx_, certificate.c_str()) != 1) {
    const auto why = openssl_error();
    SSL_CTX_free(ctx_);
    throw std::runtime_error("EDRI_SSL_CERTIFICATE=" + certificate + ": " + why);
  }
  if (SSL_CTX_use_PrivateKey_file(ctx_, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    const auto why = openssl_error();
    SSL_CTX_free(ctx_);
    throw std::runtime_error("EDRI_SSL_KEY=" + key + ": " + why);
  }
  if (SSL_CTX_check_private_key(ctx_) != 1) {
    SSL_CTX_free(ctx_);
    throw std::runtime_error("EDRI_SSL_KEY=" + key + ": does not match EDRI_SSL_CERTIFICATE=" + certificate);
  }
  // ALPN: h2 where the client offers it, else http/1.1. The connection
  // then tells them apart by HTTP/2's preface, as in cleartext.
  SSL_CTX_set_alpn_select_cb(ctx_, &select_protocol, nullptr);
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

TlsSession::TlsSession(const TlsContext& ctx, int fd) : ssl_(SSL_new(ctx.native())) {
  if (!ssl_ || SSL_set_fd(ssl_, fd) != 1) failed_ = true;
  if (ssl_) SSL_set_accept_state(ssl_);
}

TlsSession::~TlsSession() {
  if (ssl_) SSL_free(ssl_);
}

ssize_t TlsSession::result(int r) {
  switch (SSL_get_error(ssl_, r)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE: return kWouldBlock;
    case SSL_ERROR_ZERO_RETURN: return 0;
    case SSL_ERROR_SYSCALL:
      ERR_clear_error();
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return kWouldBlock;
      failed_ = true;
      return errno == 0 ? 0 : kFailed;  // errno 0: the peer closed without close_notify
    default:
      ERR_clear_error();
      failed_ = true;
      return kFailed;
  }
}

ssize_t TlsSession::handshake() {
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl_);
  if (r == 1) {
    handshake_done_ = true;
    return 1;
  }
  const auto e = result(r);
  if (e == kWouldBlock) return kWouldBlock;
  failed_ = true;  // a client that is not speaking TLS, or a failed negotiation
  return kFailed;
}

ssize_t TlsSession::read(char* buf, std::size_t n) {
  if (failed_) return kFailed;
  if (!handshake_done_)
    if (const auto h = handshake(); h != 1) return h;
  ERR_clear_error();
  const int r = SSL_read(ssl_, buf, static_cast<int>(n));
  return r > 0 ? r : result(r);
}

ssize_t TlsSession::write(const char* buf, std::size_t n) {
  if (failed_) return kFailed;
  if (!handshake_done_)
    if (const auto h = handshake(); h != 1) return h;
  ERR_clear_error();
  const int r = SSL_write(ssl_, buf, static_cast<int>(n));
  if (r > 0) return r;
  const auto e = result(r);
  return e == 0 ? kFailed : e;
}

void TlsSession::shutdown() {
  if (ssl_ && handshake_done_ && !failed_) {
    ERR_clear_error();
    SSL_shutdown(ssl_);
    ERR_clear_error();
  }
}

}  // namespace edri::listener
