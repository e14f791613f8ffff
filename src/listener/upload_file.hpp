// UploadFile: a request body written to a file under EDRI_UPLOAD_FILES_PATH
// while it arrives (docs/decisions/0012), instead of held in memory.
//
// Named edri-upload-<listener pid>-<n>: never reused while the listener
// lives (a handler that keeps a file renames it away, and the name must not
// come back for another request), and the supervisor can remove what a
// listener that died left (runtime/upload_files.hpp). The file is removed when
// the request ends: its slot, which holds the last reference, goes.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "http/request_parser.hpp"
#include "runtime/upload_files.hpp"
#include "transport/unique_fd.hpp"

namespace edri::listener {

class UploadFile final : public http::SpilledBody {
 public:
  // Creates the next file in `dir`; null when it cannot.
  static std::shared_ptr<UploadFile> create(const std::string& dir) {
    static std::uint64_t counter = 0;
    std::string path = dir + "/" + upload_file_prefix(::getpid()) + std::to_string(++counter);
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd) return nullptr;
    return std::shared_ptr<UploadFile>(new UploadFile(std::move(fd), std::move(path)));
  }
  ~UploadFile() override {
    fd_.reset();
    ::unlink(path_.c_str());  // ENOENT when a handler kept it: fine
  }
  UploadFile(const UploadFile&) = delete;
  UploadFile& operator=(const UploadFile&) = delete;

  // Appends `bytes`; false on a write error (a full disk).
  bool append(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd_.get(), bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
      size_ += static_cast<std::uint64_t>(n);
    }
    return true;
  }
  // The body is complete: no more writes.
  void finish() { fd_.reset(); }
  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }

 private:
  UploadFile(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  UniqueFd fd_;
  std::string path_;
  std::uint64_t size_ = 0;
};

}  // namespace edri::listener
