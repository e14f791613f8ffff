// TlsClient: a blocking HTTPS/1.1 client for tests (OpenSSL), with the same
// reading rules as HttpClient.
#pragma once

#include <cstdint>
#include <string>

#include "support/http_client.hpp"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace edri::test {

class TlsClient {
 public:
  // Connects and completes the handshake; throws on failure. The server's
  // certificate is not verified (tests use a throwaway self-signed one).
  // `preamble`: bytes sent in the clear before the handshake (a PROXY
  // protocol header).
  explicit TlsClient(std::uint16_t port, const std::string& preamble = {});
  ~TlsClient();
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;

  HttpResponse request(const std::string& method, const std::string& path, const std::string& body = {});
  void send_raw(const std::string& bytes);
  // Raw bytes: up to and including `delimiter`, or exactly `n`.
  std::string read_until(const std::string& delimiter);
  std::string read_bytes(std::size_t n);

 private:
  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  void fill();
  std::string buf_;
};

// A throwaway self-signed certificate and key in a temporary folder,
// removed with it.
struct SelfSignedCertificate {
  std::string dir, certificate, key;
  SelfSignedCertificate();
  ~SelfSignedCertificate();
};

}  // namespace edri::test
