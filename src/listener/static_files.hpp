// StaticFiles: files served by the listener from mounted folders.
//
// Mounts are (URL prefix, folder) pairs: a plugin's assets folder, and
// EDRI_ASSETS_PATH at "/". A request path is percent-decoded and resolved
// under the folder; a path that leaves it (.., a symlink pointing out, a
// NUL) is not found. Answers carry Content-Type, ETag and Last-Modified,
// honour If-None-Match / If-Modified-Since (304) and a single byte Range
// (206, or 416). A directory serves its index.html. Bodies stay on disk:
// the answer carries the open file, which the connection sends with
// sendfile, so a large file costs no memory. With precompressed siblings
// on (EDRI_COMPRESSION), a file's `name.br` or `name.gz` is served in its
// stead to a client that accepts that coding (docs/compression.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/content_coding.hpp"
#include "http/request_parser.hpp"
#include "listener/file_body.hpp"

namespace edri::listener {

class StaticFiles {
 public:
  struct Answer {
    int status;
    std::string content_type;
    std::string headers;  // "Name: value\r\n" lines
    FileBody file;        // the body, sent from disk (none for 304 and 416)
  };
  // The request headers a file answer depends on.
  struct Conditions {
    std::string range;
    std::string if_none_match;
    std::string if_modified_since;
    static Conditions of(const http::HttpRequest& req);
    bool any() const { return !range.empty() || !if_none_match.empty() || !if_modified_since.empty(); }
  };

  // Adds a mount; throws std::invalid_argument if `folder` is not a
  // directory. Longer prefixes are tried first.
  void mount(std::string url_prefix, const std::string& folder);
  bool empty() const { return mounts_.empty(); }
  // Serve `name.br` / `name.gz` for `name` where they exist.
  void serve_precompressed(bool on) { precompressed_ = on; }

  // The answer for a GET/HEAD of `path`, or nothing if no mount has it.
  std::optional<Answer> serve(std::string_view path, const http::HttpRequest& req) const;

  static std::string_view content_type_for(std::string_view file_name);

  // The answer for the regular file at `file` (an absolute path the caller
  // trusts): 200 with the file open, 206 with a range of it, 304 or 416;
  // nothing if it cannot be opened. `content_type` empty: by the name.
  static std::optional<Answer> serve_file(const std::string& file, const Conditions& conditions,
                                          std::string_view content_type = {});

 private:
  struct Mount {
    std::string prefix;  // always ends with '/'
    std::string root;    // canonical, no trailing '/'
  };
  // The file at `file` (canonical, under the mount `root`), or the sibling
  // in the coding the client prefers, with its own length and ETag, the
  // file's type, and Vary: Accept-Encoding.
  std::optional<Answer> serve_variant(const std::string& file, const std::string& root,
                                      const http::HttpRequest& req) const;
  static const char* sibling_suffix(http::Coding coding);
  static http::CodingSet siblings_of(const std::string& file, const std::string& root);

  std::vector<Mount> mounts_;
  bool precompressed_ = false;
};

}  // namespace edri::listener
