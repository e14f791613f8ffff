// What the supervisor holds for the whole instance, outside any
// generation: the listening sockets, the descriptor limit and the upload
// folder.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cstring>

#include "runtime/upload_files.hpp"
#include "supervisor/supervisor.hpp"

namespace edri::supervisor {

void Supervisor::raise_descriptor_limit(const Config& config) {
  // Every connection is a descriptor: take all the system allows (the
  // children inherit it), and say so when that is below what
  // EDRI_MAX_CONNECTIONS promises.
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  if (lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) ::getrlimit(RLIMIT_NOFILE, &lim);
  }
  const rlim_t per_listener = config.connections_per_listener();
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < per_listener + 256)
    spdlog::warn(
        "the descriptor limit ({}) is below EDRI_MAX_CONNECTIONS per listener ({}) plus what a listener "
        "needs besides: past it, connections wait in the kernel's queue instead of getting a 503",
        static_cast<unsigned long long>(lim.rlim_cur), static_cast<unsigned long long>(per_listener));
}

void Supervisor::remove_unix_sockets() {
  if (unix_fd_) ::unlink(unix_path_.c_str());
  if (admin_fd_) ::unlink(admin_path_.c_str());
}

UniqueFd Supervisor::bind_unix_socket(const std::string& path, const char* setting) {
  // A socket file left by a dead instance is replaced; anything else at the
  // path is not ours to remove.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) throw ConfigError(std::string(setting) + "=" + path + ": exists and is not a socket");
    ::unlink(path.c_str());
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0));
  if (!fd) throw std::runtime_error(std::string("socket(AF_UNIX): ") + std::strerror(errno));
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd.get(), 4096) != 0)
    throw ConfigError(std::string(setting) + "=" + path + ": cannot listen: " + std::strerror(errno));
  return fd;
}

void Supervisor::bind_listen_socket(const Config& config) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(config.port);
  if (int rc = ::getaddrinfo(config.host.c_str(), port.c_str(), &hints, &res); rc != 0)
    throw ConfigError("EDRI_HOST=" + config.host + ": " + ::gai_strerror(rc));
  std::string last_error = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK, a->ai_protocol));
    if (!fd) continue;
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd.get(), 4096) == 0) {
      listen_fd_ = std::move(fd);
      break;
    }
    last_error = std::strerror(errno);
  }
  ::freeaddrinfo(res);
  if (!listen_fd_) throw std::runtime_error("cannot listen on " + config.host + ":" + port + ": " + last_error);
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(listen_fd_.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  bound_port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                               : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

void Supervisor::prepare_upload_path(const Config& config) {
  const auto& dir = config.upload_path;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("EDRI_UPLOAD_FILES_PATH=" + dir + ": cannot create it: " + std::strerror(errno));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw std::runtime_error("EDRI_UPLOAD_FILES_PATH=" + dir + ": not a writable directory: " + std::strerror(errno));
  if (const auto files = remove_upload_files_of(dir, -1))
    spdlog::warn("removed {} upload files in {} left by listeners that died", files, dir);
}

}  // namespace edri::supervisor
