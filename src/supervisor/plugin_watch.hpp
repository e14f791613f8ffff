// PluginWatch: the plugin files, watched for a new build
// (EDRI_RELOAD_ON_CHANGE=on, for development).
//
// inotify watches the folder of each plugin file, not the file: a linker
// or a deploy may replace the file (a new inode, renamed over it) as well
// as write it in place, and a watch on the old inode would see neither.
// A write that closes (IN_CLOSE_WRITE) or a rename onto the name
// (IN_MOVED_TO) of a plugin file starts a quiet period; `changed` runs
// once no such event came for that long, so a linker's several writes
// are one reload, and a reload never loads a file half written by one
// that is still open.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/asio.hpp"

namespace edri::supervisor {

class PluginWatch {
 public:
  // Throws std::system_error when inotify cannot watch a folder.
  PluginWatch(asio::io_context& io, const std::vector<std::string>& plugin_paths, std::chrono::milliseconds quiet,
              std::function<void(const std::string& file)> changed);

  // Runs `changed` again after a quiet period (a reload that could not
  // run yet), with the last file that changed.
  void again();

 private:
  void read();
  void on_bytes(std::size_t n);
  void arm(const std::string& file);

  asio::posix::stream_descriptor fd_;
  asio::steady_timer quiet_timer_;
  std::chrono::milliseconds quiet_;
  std::function<void(const std::string&)> changed_;
  std::map<int, std::pair<std::string, std::set<std::string>>> folders_;  // watch -> (folder, plugin file names)
  std::string last_;
  alignas(8) char buffer_[8192];
};

}  // namespace edri::supervisor
