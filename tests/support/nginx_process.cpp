#include "support/nginx_process.hpp"

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

NginxProcess::NginxProcess(const Config& config, const std::string& head) : port_(bench::free_loopback_port()) {
  const std::string prefix = dir_.path.string() + "/";
  // One process (no master, no workers to find), in the foreground, every
  // file it writes in the folder.
  std::string conf = "daemon off;\nmaster_process off;\npid " + prefix + "nginx.pid;\n" + head;
  conf += "events { worker_connections 256; }\n";
  conf += config(port_, dir_.path.string());
  dir_.write("nginx.conf", conf);
  pid_ = spawn_logged({"/usr/sbin/nginx", "-p", prefix, "-e", prefix + "error.log", "-c", prefix + "nginx.conf"},
                      prefix + "output.log");
  wait_until_listening();
}

NginxProcess::~NginxProcess() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
}

void NginxProcess::wait_until_listening() {
  // nginx writes its pid file once its sockets listen: no probe connection
  // reaches what is behind it.
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
