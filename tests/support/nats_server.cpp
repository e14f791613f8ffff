#include "support/nats_server.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "loopback_port.hpp"
#include "support/http_client.hpp"
#include "support/server_process.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>

namespace edri::test {

NatsServer::NatsServer(std::vector<std::string> options, bool jetstream, std::string host)
    : options_(std::move(options)), host_(std::move(host)), port_(bench::free_loopback_port()) {
  char tmpl[] = "/tmp/edri-test-nats.XXXXXX";
  const int fd = ::mkstemp(tmpl);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  ::close(fd);
  log_path_ = tmpl;
  if (jetstream) {
    char dir[] = "/tmp/edri-test-jetstream.XXXXXX";
    if (!::mkdtemp(dir)) throw std::runtime_error("mkdtemp failed");
    store_ = dir;
    options_.insert(options_.end(), {"-js", "-sd", store_});
  }
  start();
}

NatsServer::~NatsServer() {
  stop(true);
  ::unlink(log_path_.c_str());
  std::error_code ignored;
  if (!store_.empty()) std::filesystem::remove_all(store_, ignored);
}

void NatsServer::start() {
  if (pid_ > 0) return;
  std::vector<std::string> args{"/usr/sbin/nats-server", "-a", host_, "-p", std::to_string(port_)};
  args.insert(args.end(), options_.begin(), options_.end());
  pid_ = spawn_logged(args, log_path_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!accepts()) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("nats-server did not start (is it installed? scripts/setup.sh); its log:\n" +
                               read_file(log_path_));
    }
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("nats-server did not listen in 10 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool NatsServer::accepts() const {
  try {
    ::close(connect_to(host_, port_));
    return true;
  } catch (const std::runtime_error&) {
    return false;
  }
}

void NatsServer::stop(bool kill) {
  if (pid_ <= 0) return;
  ::kill(pid_, kill ? SIGKILL : SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void raw_publish(std::uint16_t nats_port, const std::vector<RawNatsMessage>& messages) {
  const int fd = connect_to("127.0.0.1", nats_port);
  std::string out = "CONNECT {\"verbose\":false}\r\n";
  for (const auto& m : messages)
    out += "PUB " + m.subject + (m.reply.empty() ? "" : " " + m.reply) + " " + std::to_string(m.payload.size()) +
           "\r\n" + m.payload + "\r\n";
  out += "PING\r\n";
  for (std::size_t sent = 0; sent < out.size();) {
    const ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    REQUIRE(n > 0);
    sent += static_cast<std::size_t>(n);
  }
  std::string in;
  char buf[4096];
  while (in.find("PONG") == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    REQUIRE(::poll(&p, 1, 5000) == 1);
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    REQUIRE(n > 0);
    in.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  INFO(in);
  CHECK(in.find("-ERR") == std::string::npos);
}

void raw_publish(std::uint16_t nats_port, const std::string& subject, const std::string& payload) {
  raw_publish(nats_port, {RawNatsMessage{subject, "", payload}});
}

}  // namespace edri::test
