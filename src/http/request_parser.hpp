// RequestParser: HTTP/1.1 requests from a byte stream, on llhttp.
//
// One final class owns the llhttp_t; llhttp's C callbacks forward to member
// functions; the only output is a callback with each finished request.
// Parsing knows nothing of routing or dispatch. Pipelined requests in one
// buffer produce one callback each, in order.
#pragma once

#include <llhttp.h>
#include <edri/plugin.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace edri::http {

// Where a large body went instead of `body` (RequestParser's OnSpill
// decides); owned by whoever spilled it.
struct SpilledBody {
  virtual ~SpilledBody() = default;
};

struct HttpRequest {
  llhttp_method_t method = HTTP_GET;
  std::string target;  // request-target as sent: path and query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;                    // empty once the body was spilled
  std::shared_ptr<SpilledBody> spill;  // set when it was
  std::uint64_t body_size = 0;         // all body bytes, spilled or not
  std::uint8_t http_major = 1;
  std::uint8_t http_minor = 1;
  bool keep_alive = true;
  bool upgrade = false;

  // First header with this name (ASCII case-insensitive), or empty.
  std::string_view header(std::string_view name) const;
  void clear();
};

struct ParserLimits {
  std::size_t max_header_bytes = 16 * 1024;  // all header names and values together
  std::size_t max_header_count = 100;
  std::size_t max_url_bytes = 8 * 1024;
  std::size_t max_body_bytes = 1 << 20;
  // Bodies larger than this go to OnSpill as they arrive instead of into
  // HttpRequest::body (nothing spills when no OnSpill is given).
  std::size_t spill_bytes = SIZE_MAX;
};

// RFC 9112 3.2 / RFC 3986 3.2.2: Host = uri-host [ ":" port ], where
// uri-host is an IP-literal ("[v6]"), an IPv4 address or a reg-name
// (unreserved, pct-encoded, sub-delims) and port = *DIGIT. Empty is valid
// (a target without authority); userinfo ("a@b") and spaces are not.
// Surrounding OWS is ignored.
bool is_valid_host(std::string_view value);

// The plugin API's method for an llhttp one; nullopt for a method no
// route can name (CONNECT, TRACE, ...).
inline std::optional<Method> to_method(llhttp_method_t m) {
  switch (m) {
    case HTTP_GET: return Method::Get;
    case HTTP_HEAD: return Method::Head;
    case HTTP_POST: return Method::Post;
    case HTTP_PUT: return Method::Put;
    case HTTP_DELETE: return Method::Delete;
    case HTTP_PATCH: return Method::Patch;
    case HTTP_OPTIONS: return Method::Options;
    default: return std::nullopt;
  }
}

class RequestParser final {
 public:
  using OnRequest = std::function<void(HttpRequest&)>;
  // Called when a request's headers ask for `Expect: 100-continue` and its
  // declared body is within the limit: the client waits for an interim
  // 100 response before it sends the body.
  using OnContinue = std::function<void()>;
  // Takes body bytes past ParserLimits::spill_bytes: first what `body`
  // holds so far (it then clears it), then each new part, and sets
  // HttpRequest::spill. False: they could not be kept (the request fails
  // with 500).
  using OnSpill = std::function<bool(HttpRequest& req, std::string_view bytes)>;

  // A chunk-size line (size, extensions, CRLF) longer than this, or a size
  // of more digits (leading zeros count), is refused with 400, as Go's
  // net/http does: llhttp itself bounds neither, so a client could make
  // the server read an endless line.
  static constexpr std::size_t kMaxChunkLineBytes = 4096;
  static constexpr std::size_t kMaxChunkSizeDigits = 16;

  struct Result {
    bool ok = true;
    int status = 0;           // the HTTP status to answer with when !ok (400, 413, 414, 431, 501)
    const char* reason = "";  // why, for logs and the problem detail
    std::size_t consumed = 0;
    // The request just delivered asked for a protocol upgrade: parsing
    // stopped after it, at `consumed`. The caller either takes the rest of
    // the stream for the new protocol or calls resume_after_upgrade() and
    // feeds the rest again (an upgrade it ignores).
    bool upgrade = false;
    // pause() was called during the request just delivered: parsing
    // stopped after it, at `consumed`; feed the rest later.
    bool paused = false;
  };

  RequestParser(ParserLimits limits, OnRequest on_request, OnContinue on_continue = {}, OnSpill on_spill = {});
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  // Parses the next bytes of the stream. After an error the parser stays in
  // error: the caller answers `status` and closes the connection.
  Result feed(const char* data, std::size_t size);

  void resume_after_upgrade() { llhttp_resume_after_upgrade(&parser_); }
  // Called from OnRequest: stop after this request (the caller has enough
  // in flight); feed() returns with Result::paused.
  void pause() { pause_requested_ = true; }

  // True between the first byte of a request and its end.
  bool mid_message() const { return in_message_; }
  // True between the first byte of a request and the end of its headers.
  bool in_head() const { return in_message_ && !head_done_; }

 private:
  static int on_message_begin(llhttp_t* p);
  static int on_url(llhttp_t* p, const char* at, std::size_t n);
  static int on_header_field(llhttp_t* p, const char* at, std::size_t n);
  static int on_header_value(llhttp_t* p, const char* at, std::size_t n);
  static int on_headers_complete(llhttp_t* p);
  static int on_body(llhttp_t* p, const char* at, std::size_t n);
  static int on_message_complete(llhttp_t* p);
  static int on_chunk_header(llhttp_t* p);
  static int on_chunk_extension_name(llhttp_t* p, const char* at, std::size_t n);

  int fail(int status, const char* reason);
  Result failed(const char* data, const char* at);
  bool count_header_bytes(std::size_t n);
  // Where `at` (in the feed() in progress) is in the whole stream.
  std::uint64_t offset(const char* at) const { return feed_offset_ + static_cast<std::uint64_t>(at - feed_begin_); }
  // Called where llhttp paused for a chunk-line mark, `at` being where.
  // False: the line broke a limit (the parser failed).
  bool mark_chunk_line(const char* at);
  void expect_chunk_line(std::uint64_t start);
  bool chunk_line_too_long(std::uint64_t end) const;

  llhttp_t parser_;
  llhttp_settings_t settings_;
  ParserLimits limits_;
  OnRequest on_request_;
  OnContinue on_continue_;
  OnSpill on_spill_;
  HttpRequest request_;
  std::size_t header_bytes_ = 0;
  bool last_was_value_ = false;
  bool in_message_ = false;
  bool head_done_ = false;
  // The bytes of the feed() in progress, and whether the last header value
  // piece ended with them (for telling a read boundary from obs-fold).
  const char* feed_begin_ = nullptr;
  const char* feed_end_ = nullptr;
  bool value_at_buffer_end_ = false;
  bool pause_requested_ = false;
  // Chunk-size lines: llhttp reports no position for the size digits or the
  // line's end, so in a chunked body it is paused where each line starts
  // (end of the headers) and ends (on_chunk_header), and stream offsets
  // measure the line. The next line starts a known distance after the end
  // of the last: the chunk's size plus its CRLF.
  enum class ChunkMark : std::uint8_t { None, LineStart, LineEnd };
  ChunkMark chunk_mark_ = ChunkMark::None;
  std::uint64_t feed_offset_ = 0;       // the stream offset of feed_begin_
  bool in_chunked_body_ = false;        // a chunk-size line is being read, or comes next
  std::uint64_t chunk_line_start_ = 0;  // the stream offset where it starts
  bool chunk_extension_seen_ = false;   // its first extension began: the size digits are known
  std::uint64_t chunk_size_ = 0;        // the size the line just read declared
  int error_status_ = 0;
  const char* error_reason_ = "";
};

}  // namespace edri::http
