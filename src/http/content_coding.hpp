// Content codings (RFC 9110 8.4, 12.5.3): which one a client's
// Accept-Encoding lets an answer use, streaming gzip (zlib) and brotli
// encoders, and a gzip decoder bounded by the size of what it inflates.
// No I/O: the manager compresses handlers' answers with these, the listener
// gRPC messages and the choice of a static file's precompressed sibling
// (docs/compression.md, docs/decisions/0034).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct z_stream_s;
struct BrotliEncoderStateStruct;

namespace edri::http {

enum class Coding : std::uint8_t { Identity, Gzip, Brotli };

// A set of codings the server can answer with, one bit each.
using CodingSet = unsigned;
inline constexpr CodingSet kOffersGzip = 1u << 0;
inline constexpr CodingSet kOffersBrotli = 1u << 1;
inline constexpr CodingSet kOffersBoth = kOffersGzip | kOffersBrotli;

// The coding of `offered` that `accept_encoding` weighs highest, above
// q=0; brotli on a tie (it is smaller for the same time). Identity when
// the client accepts none of them, or sent no Accept-Encoding (an absent
// header allows any coding, but clients that decode one say so). Tokens
// are case-insensitive, "x-gzip" is gzip, "*" stands for every coding the
// header does not name, and a malformed element is skipped.
Coding choose_coding(std::string_view accept_encoding, CodingSet offered = kOffersBoth);

// The coding's token for Content-Encoding: "gzip", "br" or "identity".
std::string_view coding_token(Coding coding);

// Whether `content_type`'s media type (its parameters ignored, any case)
// is one of `types`: lower-case media types, where "text/*" stands for
// every text type.
bool is_compressible(std::string_view content_type, const std::vector<std::string>& types);

// A streaming encoder: what write() takes comes out compressed, a piece at
// a time. Every call appends what it made to `out`.
class Encoder {
 public:
  // `level`: zlib's 1..9 for gzip, brotli's quality 0..11. Throws
  // std::runtime_error when the library refuses (out of memory).
  Encoder(Coding coding, int level);
  ~Encoder();
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  void write(std::string_view in, std::string& out);
  // Makes everything written so far decodable by the client as it arrives
  // (Z_SYNC_FLUSH, BROTLI_OPERATION_FLUSH): a streamed answer's piece
  // reaches it whole, not when the encoder's buffer happens to fill.
  void flush(std::string& out);
  // Ends the stream (gzip's trailer, brotli's last block); nothing may be
  // written after.
  void finish(std::string& out);

 private:
  void deflate_all(std::string_view in, int mode, std::string& out);
  void brotli_all(std::string_view in, int operation, std::string& out);

  Coding coding_;
  std::unique_ptr<z_stream_s> zlib_;
  BrotliEncoderStateStruct* brotli_ = nullptr;
};

// `body` compressed whole.
std::string compress(Coding coding, int level, std::string_view body);

enum class Inflated : std::uint8_t {
  Ok,
  TooLarge,  // it would pass the limit: stopped there, whatever the rest holds
  Corrupt,   // not one whole gzip member
};

// Inflates the gzip member `in` into `out` (replaced), stopping as soon as
// the output would pass `limit` bytes: a few kilobytes that inflate to
// gigabytes (a decompression bomb) cost at most `limit` and the time to
// make it.
Inflated gunzip(std::string_view in, std::size_t limit, std::string& out);

}  // namespace edri::http
