#include "support/tls_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace edri::test {

TlsClient::TlsClient(std::uint16_t port, const std::string& preamble) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{5, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("connect failed");
  if (!preamble.empty() && ::send(fd_, preamble.data(), preamble.size(), MSG_NOSIGNAL) != ssize_t(preamble.size()))
    throw std::runtime_error("sending the preamble failed");
  ctx_ = SSL_CTX_new(TLS_client_method());
  ssl_ = SSL_new(ctx_);
  SSL_set_fd(ssl_, fd_);
  if (SSL_connect(ssl_) != 1) throw std::runtime_error("TLS handshake failed");
}

TlsClient::~TlsClient() {
  if (ssl_) SSL_free(ssl_);
  if (ctx_) SSL_CTX_free(ctx_);
  if (fd_ >= 0) ::close(fd_);
}

HttpResponse TlsClient::request(const std::string& method, const std::string& path, const std::string& body) {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  if (!body.empty()) req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  send_raw(req);
  std::size_t end;
  while ((end = buf_.find("\r\n\r\n")) == std::string::npos) fill();
  HttpResponse r;
  r.raw_head = buf_.substr(0, end);
  r.status = std::stoi(r.raw_head.substr(9, 3));
  std::size_t pos = r.raw_head.find("\r\n");
  while (pos != std::string::npos && pos < r.raw_head.size()) {
    const auto next = r.raw_head.find("\r\n", pos + 2);
    const auto line = r.raw_head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
    const auto colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    pos = next;
  }
  buf_.erase(0, end + 4);
  const std::size_t len = r.headers.count("content-length") ? std::stoul(r.headers["content-length"]) : 0;
  while (buf_.size() < len) fill();
  r.body = buf_.substr(0, len);
  buf_.erase(0, len);
  return r;
}

void TlsClient::send_raw(const std::string& bytes) {
  if (SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size())) != static_cast<int>(bytes.size()))
    throw std::runtime_error("TLS write failed");
}

void TlsClient::fill() {
  char tmp[16384];
  const int n = SSL_read(ssl_, tmp, sizeof tmp);
  if (n <= 0) throw std::runtime_error("TLS read failed or timed out");
  buf_.append(tmp, static_cast<std::size_t>(n));
}

std::string TlsClient::read_until(const std::string& delimiter) {
  std::size_t end;
  while ((end = buf_.find(delimiter)) == std::string::npos) fill();
  std::string out = buf_.substr(0, end + delimiter.size());
  buf_.erase(0, end + delimiter.size());
  return out;
}

std::string TlsClient::read_bytes(std::size_t n) {
  while (buf_.size() < n) fill();
  std::string out = buf_.substr(0, n);
  buf_.erase(0, n);
  return out;
}

SelfSignedCertificate::SelfSignedCertificate() {
  std::string tmpl = "/tmp/edri-tls.XXXXXX";
  dir = ::mkdtemp(tmpl.data());
  certificate = dir + "/cert.pem";
  key = dir + "/key.pem";
  const std::string cmd =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
      "-addext subjectAltName=IP:127.0.0.1 -keyout " +
      key + " -out " + certificate + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("openssl could not make a certificate");
}

SelfSignedCertificate::~SelfSignedCertificate() { std::filesystem::remove_all(dir); }

}  // namespace edri::test
