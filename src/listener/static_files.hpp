// StaticFiles: files served by the listener from mounted folders.
//
// Mounts are (URL prefix, folder) pairs: a plugin's assets folder, and
// EDRI_ASSETS_PATH at "/". A request path is percent-decoded and resolved
// under the folder; a path that leaves it (.., a symlink pointing out, a
// NUL) is not found. Answers carry Content-Type, ETag and Last-Modified,
// honour If-None-Match / If-Modified-Since (304) and a single byte Range
// (206, or 416). A directory serves its index.html.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/request_parser.hpp"

namespace edri::listener {

class StaticFiles {
 public:
  struct Answer {
    int status;
    std::string content_type;
    std::string body;
    std::string headers;  // "Name: value\r\n" lines
  };

  // Adds a mount; throws std::invalid_argument if `folder` is not a
  // directory. Longer prefixes are tried first.
  void mount(std::string url_prefix, const std::string& folder);
  bool empty() const { return mounts_.empty(); }

  // The answer for a GET/HEAD of `path`, or nothing if no mount has it.
  std::optional<Answer> serve(std::string_view path, const http::HttpRequest& req) const;

  static std::string_view content_type_for(std::string_view file_name);

 private:
  struct Mount {
    std::string prefix;  // always ends with '/'
    std::string root;    // canonical, no trailing '/'
  };
  std::optional<Answer> serve_file(const std::string& file, const http::HttpRequest& req) const;
  std::vector<Mount> mounts_;
};

}  // namespace edri::listener
