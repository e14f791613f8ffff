#include "support/nginx_stream.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "loopback_port.hpp"
#include "support/server_process.hpp"

namespace edri::test {

namespace {

constexpr const char* kNginx = "/usr/sbin/nginx";
constexpr const char* kStreamModule = "/usr/lib/nginx/modules/ngx_stream_module.so";

}  // namespace

std::string NginxStream::missing() {
  if (!std::filesystem::exists(kNginx)) return std::string(kNginx) + " (Debian nginx-light)";
  if (!std::filesystem::exists(kStreamModule)) return std::string(kStreamModule) + " (Debian libnginx-mod-stream)";
  return {};
}

NginxStream::NginxStream(std::uint16_t upstream_port, const std::string& source) : port_(bench::free_loopback_port()) {
  write_config(upstream_port, source);
  const std::string prefix = dir_.path.string() + "/";
  pid_ = spawn_logged({kNginx, "-p", prefix, "-e", prefix + "error.log", "-c", prefix + "nginx.conf"},
                      prefix + "output.log");
  wait_until_listening();
}

NginxStream::~NginxStream() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
}

void NginxStream::write_config(std::uint16_t upstream_port, const std::string& source) const {
  // One process (no master, no workers to find), in the foreground, every
  // file it writes in the folder.
  std::string conf = "daemon off;\nmaster_process off;\n";
  conf += "pid " + dir_.path.string() + "/nginx.pid;\n";
  conf += std::string("load_module ") + kStreamModule + ";\n";
  conf += "events { worker_connections 64; }\n";
  conf += "stream {\n  server {\n";
  conf += "    listen 127.0.0.1:" + std::to_string(port_) + ";\n";
  conf += "    proxy_pass 127.0.0.1:" + std::to_string(upstream_port) + ";\n";
  conf += "    proxy_protocol on;\n";
  conf += "    proxy_bind " + source + ";\n";
  conf += "  }\n}\n";
  dir_.write("nginx.conf", conf);
}

void NginxStream::wait_until_listening() {
  // nginx writes its pid file once its sockets listen: no probe connection
  // reaches the server behind it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!std::filesystem::exists(dir_.path / "nginx.pid")) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("nginx did not start; its log:\n" + read_file((dir_.path / "output.log").string()) +
                               read_file((dir_.path / "error.log").string()));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      // The destructor does not run for a constructor that throws.
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
      throw std::runtime_error("nginx did not listen in 10 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace edri::test
