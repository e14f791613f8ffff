#include "runtime/upload_files.hpp"

#include "transport/stale_owner.hpp"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string_view>

namespace edri {

namespace {
constexpr std::string_view kUploadPrefix = "edri-upload-";
}  // namespace

std::string upload_file_prefix(int pid) { return std::string(kUploadPrefix) + std::to_string(pid) + "-"; }

std::size_t remove_upload_files_of(const std::string& dir, int pid) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;
  std::size_t removed = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name.substr(0, kUploadPrefix.size()) != kUploadPrefix) continue;
    const int owner = std::atoi(name.data() + kUploadPrefix.size());
    if (owner <= 0 || name.substr(0, upload_file_prefix(owner).size()) != upload_file_prefix(owner)) continue;
    const bool dead = pid > 0 ? owner == pid : transport::owner_gone(owner);
    if (dead && ::unlinkat(::dirfd(d), e->d_name, 0) == 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

}  // namespace edri
