#include "http/content_coding.hpp"
#include "http/field_text.hpp"

#include <brotli/encode.h>
#include <zlib.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace edri::http {

namespace {

// What an answer's encoder asks of zlib and brotli at most. Brotli's
// window: 512 KiB (ngx_brotli's default), not its 4 MiB, so that a
// streamed answer holds less while it lasts.
constexpr int kGzipWindowBits = 15 + 16;  // 32 KiB, with a gzip header and trailer
constexpr int kZlibMemLevel = 8;
constexpr int kBrotliWindowBits = 19;
// zlib counts in uInt: bodies past 1 GiB go in slices.
constexpr std::size_t kSlice = std::size_t{1} << 30;
constexpr std::size_t kMinRoom = 16 * 1024;

// A qvalue (RFC 9110 12.4.2) in thousandths, or -1 when malformed.
int parse_qvalue(std::string_view v) {
  if (v.empty() || v.size() > 5 || (v[0] != '0' && v[0] != '1')) return -1;
  int q = (v[0] - '0') * 1000;
  if (v.size() == 1) return q;
  if (v[1] != '.') return -1;
  int scale = 100;
  for (const char c : v.substr(2)) {
    if (c < '0' || c > '9') return -1;
    q += (c - '0') * scale;
    scale /= 10;
  }
  return q > 1000 ? -1 : q;
}

// The weight after an element's token (";q=0.5", other parameters
// ignored): 1000 without one, -1 when malformed.
int element_weight(std::string_view params) {
  int q = 1000;
  while (!params.empty()) {
    const auto semi = params.find(';');
    const auto param = trim_ows(params.substr(0, semi));
    if (param.size() >= 2 && ascii_lower(param[0]) == 'q' && param[1] == '=')
      q = parse_qvalue(trim_ows(param.substr(2)));
    if (q < 0 || semi == std::string_view::npos) break;
    params.remove_prefix(semi + 1);
  }
  return q;
}

// The weights an Accept-Encoding gives the codings the server has: -1
// where it names neither the coding nor "*".
struct Weights {
  int gzip = -1;
  int brotli = -1;
  int any = -1;
  void take(std::string_view token, int q) {
    int& slot = iequals(token, "gzip") || iequals(token, "x-gzip") ? gzip
                : iequals(token, "br")                             ? brotli
                : token == "*"                                     ? any
                                                                   : unnamed_;
    slot = std::max(slot, q);
  }
  int of(int named) const { return named >= 0 ? named : std::max(any, 0); }

 private:
  int unnamed_ = -1;
};

Weights weigh(std::string_view accept_encoding) {
  Weights w;
  for (;;) {
    const auto comma = accept_encoding.find(',');
    const auto element = accept_encoding.substr(0, comma);
    const auto semi = element.find(';');
    const auto token = trim_ows(element.substr(0, semi));
    const int q = semi == std::string_view::npos ? 1000 : element_weight(element.substr(semi + 1));
    if (!token.empty() && q >= 0) w.take(token, q);
    if (comma == std::string_view::npos) return w;
    accept_encoding.remove_prefix(comma + 1);
  }
}

}  // namespace

Coding choose_coding(std::string_view accept_encoding, CodingSet offered) {
  if (trim_ows(accept_encoding).empty()) return Coding::Identity;
  const Weights w = weigh(accept_encoding);
  const int brotli = offered & kOffersBrotli ? w.of(w.brotli) : 0;
  const int gzip = offered & kOffersGzip ? w.of(w.gzip) : 0;
  if (brotli > 0 && brotli >= gzip) return Coding::Brotli;
  return gzip > 0 ? Coding::Gzip : Coding::Identity;
}

std::string_view coding_token(Coding coding) {
  switch (coding) {
    case Coding::Gzip: return "gzip";
    case Coding::Brotli: return "br";
    case Coding::Identity: break;
  }
  return "identity";
}

bool is_compressible(std::string_view content_type, const std::vector<std::string>& types) {
  const auto media = trim_ows(content_type.substr(0, content_type.find(';')));
  return std::any_of(types.begin(), types.end(), [&](const std::string& t) {
    if (t.size() >= 2 && t.ends_with("/*"))
      return media.size() > t.size() - 1 &&
             iequals(media.substr(0, t.size() - 1), std::string_view(t).substr(0, t.size() - 1));
    return iequals(media, t);
  });
}

Encoder::Encoder(Coding coding, int level) : coding_(coding) {
  if (coding == Coding::Gzip) {
    zlib_ = std::make_unique<z_stream_s>();
    if (deflateInit2(zlib_.get(), level, Z_DEFLATED, kGzipWindowBits, kZlibMemLevel, Z_DEFAULT_STRATEGY) != Z_OK) {
      zlib_.reset();
      throw std::runtime_error("zlib refused a gzip encoder");
    }
  } else if (coding == Coding::Brotli) {
    brotli_ = BrotliEncoderCreateInstance(nullptr, nullptr, nullptr);
    if (!brotli_) throw std::runtime_error("brotli refused an encoder");
    BrotliEncoderSetParameter(brotli_, BROTLI_PARAM_QUALITY, static_cast<std::uint32_t>(level));
    BrotliEncoderSetParameter(brotli_, BROTLI_PARAM_LGWIN, kBrotliWindowBits);
  }
}

Encoder::~Encoder() {
  if (zlib_) deflateEnd(zlib_.get());
  if (brotli_) BrotliEncoderDestroyInstance(brotli_);
}

void Encoder::write(std::string_view in, std::string& out) {
  if (coding_ == Coding::Gzip) return deflate_all(in, Z_NO_FLUSH, out);
  if (coding_ == Coding::Brotli) return brotli_all(in, BROTLI_OPERATION_PROCESS, out);
  out.append(in);
}

void Encoder::flush(std::string& out) {
  if (coding_ == Coding::Gzip) deflate_all({}, Z_SYNC_FLUSH, out);
  if (coding_ == Coding::Brotli) brotli_all({}, BROTLI_OPERATION_FLUSH, out);
}

void Encoder::finish(std::string& out) {
  if (coding_ == Coding::Gzip) deflate_all({}, Z_FINISH, out);
  if (coding_ == Coding::Brotli) brotli_all({}, BROTLI_OPERATION_FINISH, out);
}

void Encoder::deflate_all(std::string_view in, int mode, std::string& out) {
  z_stream_s& z = *zlib_;
  do {
    const auto slice = in.substr(0, kSlice);
    in.remove_prefix(slice.size());
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(slice.data()));
    z.avail_in = static_cast<uInt>(slice.size());
    const int now = in.empty() ? mode : Z_NO_FLUSH;
    // Until zlib leaves room unused: then it has given all it had.
    for (int rc = Z_OK; rc != Z_STREAM_END;) {
      const std::size_t at = out.size();
      const std::size_t room = std::max(kMinRoom, std::size_t{z.avail_in} / 2);
      out.resize(at + room);
      z.next_out = reinterpret_cast<Bytef*>(out.data() + at);
      z.avail_out = static_cast<uInt>(room);
      rc = deflate(&z, now);
      out.resize(at + room - z.avail_out);
      if (rc == Z_STREAM_ERROR) throw std::runtime_error("zlib's deflate failed");
      if (z.avail_out > 0 && z.avail_in == 0 && now != Z_FINISH) break;
    }
  } while (!in.empty());
}

void Encoder::brotli_all(std::string_view in, int operation, std::string& out) {
  std::size_t avail_in = in.size();
  const auto* next_in = reinterpret_cast<const std::uint8_t*>(in.data());
  const auto op = static_cast<BrotliEncoderOperation>(operation);
  for (;;) {
    const std::size_t at = out.size();
    const std::size_t room = std::max(kMinRoom, avail_in / 2);
    out.resize(at + room);
    std::size_t avail_out = room;
    auto* next_out = reinterpret_cast<std::uint8_t*>(out.data() + at);
    const bool ok = BrotliEncoderCompressStream(brotli_, op, &avail_in, &next_in, &avail_out, &next_out, nullptr);
    out.resize(at + room - avail_out);
    if (!ok) throw std::runtime_error("brotli's encoder failed");
    if (avail_in == 0 && !BrotliEncoderHasMoreOutput(brotli_) &&
        (op != BROTLI_OPERATION_FINISH || BrotliEncoderIsFinished(brotli_)))
      return;
  }
}

std::string compress(Coding coding, int level, std::string_view body) {
  Encoder encoder(coding, level);
  std::string out;
  encoder.write(body, out);
  encoder.finish(out);
  return out;
}

Inflated gunzip(std::string_view in, std::size_t limit, std::string& out) {
  out.clear();
  if (in.size() > std::numeric_limits<uInt>::max()) return Inflated::TooLarge;
  z_stream z{};
  if (inflateInit2(&z, kGzipWindowBits) != Z_OK) throw std::runtime_error("zlib refused a gzip decoder");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  Inflated result = Inflated::Corrupt;
  for (;;) {
    // One byte past the limit at most: enough to know it passed.
    const std::size_t at = out.size();
    const std::size_t room = std::min(std::max(kMinRoom, in.size() * 4), limit - at) + 1;
    out.resize(at + room);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + at);
    z.avail_out = static_cast<uInt>(std::min<std::size_t>(room, std::numeric_limits<uInt>::max()));
    const uInt given = z.avail_out;
    const int rc = inflate(&z, Z_NO_FLUSH);
    out.resize(at + (given - z.avail_out));
    if (out.size() > limit) {
      result = Inflated::TooLarge;
      break;
    }
    if (rc == Z_STREAM_END) {
      result = z.avail_in == 0 ? Inflated::Ok : Inflated::Corrupt;  // one member, nothing after it
      break;
    }
    // An error, or input that ends inside the member.
    if (rc != Z_OK || (z.avail_in == 0 && z.avail_out > 0)) break;
  }
  inflateEnd(&z);
  return result;
}

}  // namespace edri::http
