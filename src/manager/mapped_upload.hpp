// MappedUpload: a request body the listener wrote to a file (the
// envelope's Upload section: u64 size, then the path), mapped read-only in
// the manager while the handler runs (docs/decisions/0012).
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "transport/unique_fd.hpp"

namespace edri::manager {

class MappedUpload {
 public:
  MappedUpload() = default;
  MappedUpload(const MappedUpload&) = delete;
  MappedUpload& operator=(const MappedUpload&) = delete;
  ~MappedUpload() {
    if (data_) ::munmap(data_, size_);
  }
  // False when the section is malformed or the file is gone (the request
  // ended meanwhile) or shorter than it was.
  bool map(std::span<const std::byte> section) {
    std::uint64_t size = 0;
    if (section.size() <= sizeof size) return false;
    std::memcpy(&size, section.data(), sizeof size);
    path_.assign(reinterpret_cast<const char*>(section.data()) + sizeof size, section.size() - sizeof size);
    const UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return false;
    struct stat st {};
    bool ok = ::fstat(fd.get(), &st) == 0 && static_cast<std::uint64_t>(st.st_size) == size;
    if (ok && size > 0) {
      void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
      ok = p != MAP_FAILED;
      if (ok) {
        data_ = p;
        size_ = size;
      }
    }
    return ok;
  }
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }
  const std::string& path() const { return path_; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
  std::string path_;
};

}  // namespace edri::manager
