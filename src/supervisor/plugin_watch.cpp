#include "supervisor/plugin_watch.hpp"

#include <sys/inotify.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace edri::supervisor {

namespace {
int inotify_descriptor() {
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "inotify_init1");
  return fd;
}
}  // namespace

PluginWatch::PluginWatch(asio::io_context& io, const std::vector<std::string>& plugin_paths,
                         std::chrono::milliseconds quiet, std::function<void(const std::string& file)> changed)
    : fd_(io, inotify_descriptor()), quiet_timer_(io), quiet_(quiet), changed_(std::move(changed)) {
  std::map<std::string, int> by_folder;
  for (const auto& p : plugin_paths) {
    const std::filesystem::path path = std::filesystem::absolute(p);
    const std::string folder = path.parent_path().string();
    auto it = by_folder.find(folder);
    if (it == by_folder.end()) {
      const int wd = ::inotify_add_watch(fd_.native_handle(), folder.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO);
      if (wd < 0) throw std::system_error(errno, std::generic_category(), "inotify_add_watch " + folder);
      it = by_folder.emplace(folder, wd).first;
      folders_[wd].first = folder;
    }
    folders_[it->second].second.insert(path.filename().string());
  }
  read();
}

void PluginWatch::read() {
  fd_.async_read_some(asio::buffer(buffer_), [this](const boost::system::error_code& ec, std::size_t n) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) on_bytes(n);
    read();
  });
}

void PluginWatch::on_bytes(std::size_t n) {
  for (std::size_t at = 0; at + sizeof(inotify_event) <= n;) {
    inotify_event e;
    std::memcpy(&e, buffer_ + at, sizeof e);
    const std::string name = e.len ? std::string(buffer_ + at + sizeof e) : std::string();
    at += sizeof e + e.len;
    const auto folder = folders_.find(e.wd);
    if (folder != folders_.end() && folder->second.second.count(name))
      arm((std::filesystem::path(folder->second.first) / name).string());
  }
}

void PluginWatch::arm(const std::string& file) {
  last_ = file;
  quiet_timer_.expires_after(quiet_);
  quiet_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) changed_(last_);
  });
}

void PluginWatch::again() { arm(last_); }

}  // namespace edri::supervisor
