#include "listener/static_files.hpp"

#include "transport/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <stdexcept>

#include "listener/request_validator.hpp"

namespace edri::listener {

namespace {

std::string http_date(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  const auto n = std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string(buf, n);
}

std::time_t parse_http_date(std::string_view s) {
  std::tm tm{};
  const std::string text(s);
  if (!strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm)) return -1;
  return timegm(&tm);
}

bool etag_matches(std::string_view header, std::string_view etag) {
  if (header == "*") return true;
  // A list of (possibly weak) tags; weak comparison (RFC 9110 13.1.2).
  auto strip = [](std::string_view t) {
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    if (t.rfind("W/", 0) == 0) t.remove_prefix(2);
    return t;
  };
  const auto mine = strip(etag);
  while (!header.empty()) {
    const auto comma = header.find(',');
    if (strip(header.substr(0, comma)) == mine) return true;
    if (comma == std::string_view::npos) break;
    header.remove_prefix(comma + 1);
  }
  return false;
}

// "bytes=a-b" | "bytes=a-" | "bytes=-n" against `size`. Returns false when
// the header is not one range we serve (then the whole file is sent);
// sets `unsatisfiable` for a range outside the file.
bool parse_range(std::string_view h, std::uint64_t size, std::uint64_t& first, std::uint64_t& last,
                 bool& unsatisfiable) {
  unsatisfiable = false;
  if (h.rfind("bytes=", 0) != 0) return false;
  h.remove_prefix(6);
  if (h.find(',') != std::string_view::npos) return false;  // several ranges: whole file
  const auto dash = h.find('-');
  if (dash == std::string_view::npos) return false;
  auto num = [](std::string_view s, std::uint64_t& v) {
    if (s.empty() || s.size() > 19) return false;
    v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return true;
  };
  const auto a = h.substr(0, dash), b = h.substr(dash + 1);
  std::uint64_t x = 0, y = 0;
  if (a.empty()) {  // suffix: the last y bytes
    if (!num(b, y)) return false;
    if (y == 0 || size == 0) return unsatisfiable = true;
    first = y >= size ? 0 : size - y;
    last = size - 1;
    return true;
  }
  if (!num(a, x)) return false;
  if (b.empty()) {
    y = size ? size - 1 : 0;
  } else {
    if (!num(b, y) || y < x) return false;
    y = std::min<std::uint64_t>(y, size ? size - 1 : 0);
  }
  if (x >= size) return unsatisfiable = true;
  first = x;
  last = y;
  return true;
}

}  // namespace

std::string_view StaticFiles::content_type_for(std::string_view name) {
  const auto dot = name.rfind('.');
  const auto ext = dot == std::string_view::npos ? std::string_view{} : name.substr(dot + 1);
  static constexpr std::pair<std::string_view, std::string_view> kTypes[] = {
      {"html", "text/html; charset=utf-8"},
      {"htm", "text/html; charset=utf-8"},
      {"css", "text/css; charset=utf-8"},
      {"js", "text/javascript; charset=utf-8"},
      {"mjs", "text/javascript; charset=utf-8"},
      {"json", "application/json"},
      {"txt", "text/plain; charset=utf-8"},
      {"svg", "image/svg+xml"},
      {"png", "image/png"},
      {"jpg", "image/jpeg"},
      {"jpeg", "image/jpeg"},
      {"gif", "image/gif"},
      {"webp", "image/webp"},
      {"ico", "image/x-icon"},
      {"wasm", "application/wasm"},
      {"pdf", "application/pdf"},
      {"woff", "font/woff"},
      {"woff2", "font/woff2"},
      {"xml", "application/xml"},
      {"map", "application/json"},
  };
  for (const auto& [e, t] : kTypes)
    if (e == ext) return t;
  return "application/octet-stream";
}

void StaticFiles::mount(std::string url_prefix, const std::string& folder) {
  char resolved[PATH_MAX];
  struct stat st {};
  if (!::realpath(folder.c_str(), resolved) || ::stat(resolved, &st) != 0 || !S_ISDIR(st.st_mode))
    throw std::invalid_argument("assets folder " + folder + " is not a directory");
  if (url_prefix.empty() || url_prefix.front() != '/') url_prefix = "/" + url_prefix;
  if (url_prefix.back() != '/') url_prefix += '/';
  mounts_.push_back(Mount{std::move(url_prefix), resolved});
  std::stable_sort(mounts_.begin(), mounts_.end(),
                   [](const Mount& a, const Mount& b) { return a.prefix.size() > b.prefix.size(); });
}

std::optional<StaticFiles::Answer> StaticFiles::serve(std::string_view path, const http::HttpRequest& req) const {
  std::string decoded;
  if (!percent_decode(path, decoded, false) || decoded.find('\0') != std::string::npos) return std::nullopt;
  for (const auto& m : mounts_) {
    // "/app" matches the mount "/app/" too.
    std::string_view rest;
    if (decoded.rfind(m.prefix, 0) == 0)
      rest = std::string_view(decoded).substr(m.prefix.size());
    else if (decoded + "/" == m.prefix)
      rest = {};
    else
      continue;
    // No segment may be "..": refuse before touching the file system.
    bool bad = false;
    for (std::size_t start = 0; start <= rest.size();) {
      const auto slash = rest.find('/', start);
      const auto seg = rest.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
      if (seg == "..") bad = true;
      if (slash == std::string_view::npos) break;
      start = slash + 1;
    }
    if (bad) return std::nullopt;
    std::string file = m.root + "/" + std::string(rest);
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) file += "/index.html";
    // Symlinks may point anywhere: the canonical path must stay inside.
    char resolved[PATH_MAX];
    if (!::realpath(file.c_str(), resolved)) continue;
    const std::string canonical = resolved;
    if (canonical.rfind(m.root + "/", 0) != 0) return std::nullopt;
    if (auto a = serve_variant(canonical, m.root, req)) return a;
  }
  return std::nullopt;
}

std::optional<StaticFiles::Answer> StaticFiles::serve_variant(const std::string& file, const std::string& root,
                                                              const http::HttpRequest& req) const {
  const Conditions conditions = Conditions::of(req);
  const http::CodingSet siblings = precompressed_ ? siblings_of(file, root) : 0;
  if (!siblings) return serve_file(file, conditions);
  // A Range counts the identity's bytes: it never gets a sibling's.
  const http::Coding coding =
      conditions.range.empty() ? http::choose_coding(req.header("accept-encoding"), siblings) : http::Coding::Identity;
  auto a = coding == http::Coding::Identity
               ? serve_file(file, conditions)
               : serve_file(file + sibling_suffix(coding), conditions, content_type_for(file));
  if (!a) return a;
  a->headers += "Vary: Accept-Encoding\r\n";
  if (coding != http::Coding::Identity && a->status != 304)
    a->headers.append("Content-Encoding: ").append(http::coding_token(coding)).append("\r\n");
  return a;
}

const char* StaticFiles::sibling_suffix(http::Coding coding) { return coding == http::Coding::Brotli ? ".br" : ".gz"; }

http::CodingSet StaticFiles::siblings_of(const std::string& file, const std::string& root) {
  // A sibling is a regular file inside the mount, as the file itself is.
  // Most files have none: one stat() each says so, before realpath()'s
  // walk of every path component.
  auto present = [&](http::Coding coding) {
    char resolved[PATH_MAX];
    struct stat st {};
    const std::string sibling = file + sibling_suffix(coding);
    return ::stat(sibling.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::realpath(sibling.c_str(), resolved) &&
           std::string_view(resolved).starts_with(root + "/");
  };
  return (present(http::Coding::Gzip) ? http::kOffersGzip : 0) |
         (present(http::Coding::Brotli) ? http::kOffersBrotli : 0);
}

StaticFiles::Conditions StaticFiles::Conditions::of(const http::HttpRequest& req) {
  return Conditions{std::string(req.header("range")), std::string(req.header("if-none-match")),
                    std::string(req.header("if-modified-since"))};
}

std::optional<StaticFiles::Answer> StaticFiles::serve_file(const std::string& file, const Conditions& conditions,
                                                           std::string_view content_type) {
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  const auto size = static_cast<std::uint64_t>(st.st_size);
  char etag_buf[64];
  std::snprintf(etag_buf, sizeof etag_buf, "W/\"%llx-%llx\"",
                static_cast<unsigned long long>(st.st_mtim.tv_sec) * 1000000000ull +
                    static_cast<unsigned long long>(st.st_mtim.tv_nsec),
                static_cast<unsigned long long>(size));
  const std::string etag = etag_buf;
  Answer a{200, std::string(content_type.empty() ? content_type_for(file) : content_type), {}, {}};
  a.headers = "ETag: " + etag + "\r\nLast-Modified: " + http_date(st.st_mtim.tv_sec) + "\r\nAccept-Ranges: bytes\r\n";

  const std::string_view inm = conditions.if_none_match;
  const std::string_view ims = conditions.if_modified_since;
  if ((!inm.empty() && etag_matches(inm, etag)) ||
      (inm.empty() && !ims.empty() && parse_http_date(ims) >= st.st_mtim.tv_sec)) {
    a.status = 304;
    return a;
  }
  std::uint64_t first = 0, last = size ? size - 1 : 0;
  bool unsatisfiable = false;
  const std::string_view range = conditions.range;
  const bool ranged = !range.empty() && parse_range(range, size, first, last, unsatisfiable);
  if (unsatisfiable) {
    a.status = 416;
    a.content_type = "text/plain; charset=utf-8";
    a.headers += "Content-Range: bytes */" + std::to_string(size) + "\r\n";
    return a;
  }
  const std::uint64_t length = size == 0 ? 0 : last - first + 1;
  a.file = FileBody(std::move(fd), first, length);
  if (ranged) {
    a.status = 206;
    a.headers += "Content-Range: bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" +
                 std::to_string(size) + "\r\n";
  }
  return a;
}

}  // namespace edri::listener
