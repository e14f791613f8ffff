// Content codings: Accept-Encoding negotiation, the streaming encoders
// checked against zlib's and brotli's own decoders, and the bounded gzip
// decoder against a decompression bomb.
#include <brotli/decode.h>
#include <zlib.h>

#include <catch2/catch.hpp>

#include <string>

#include "http/content_coding.hpp"
#include "support/json_answer.hpp"

using edri::http::choose_coding;
using edri::http::Coding;
using edri::http::Encoder;
using edri::http::Inflated;

namespace {

// `in` through one call of a decoder (`step`: input, its size, output,
// its room; the bytes it made), into room enough for these tests.
template <class Step>
std::string decoded(const std::string& in, Step step) {
  std::string out(in.size() * 20 + 1024, '\0');
  out.resize(step(reinterpret_cast<const std::uint8_t*>(in.data()), in.size(),
                  reinterpret_cast<std::uint8_t*>(out.data()), out.size()));
  return out;
}

// What zlib's own decoder makes of `in`; `complete` false: the input may
// stop anywhere (a stream's bytes so far).
std::string zlib_inflate(const std::string& in, bool complete = true) {
  return decoded(in, [&](const std::uint8_t* src, std::size_t n, std::uint8_t* dst, std::size_t room) {
    z_stream z{};
    REQUIRE(inflateInit2(&z, 31) == Z_OK);
    z.next_in = const_cast<Bytef*>(src);
    z.avail_in = static_cast<uInt>(n);
    z.next_out = dst;
    z.avail_out = static_cast<uInt>(room);
    CHECK(inflate(&z, Z_SYNC_FLUSH) == (complete ? Z_STREAM_END : Z_OK));
    inflateEnd(&z);
    return room - z.avail_out;
  });
}

std::string brotli_decode(const std::string& in, bool complete = true) {
  return decoded(in, [&](const std::uint8_t* src, std::size_t n, std::uint8_t* dst, std::size_t room) {
    BrotliDecoderState* s = BrotliDecoderCreateInstance(nullptr, nullptr, nullptr);
    std::size_t left = room;
    const auto rc = BrotliDecoderDecompressStream(s, &n, &src, &left, &dst, nullptr);
    CHECK(rc == (complete ? BROTLI_DECODER_RESULT_SUCCESS : BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT));
    BrotliDecoderDestroyInstance(s);
    return room - left;
  });
}

std::string decode(Coding c, const std::string& in, bool complete = true) {
  return c == Coding::Gzip ? zlib_inflate(in, complete) : brotli_decode(in, complete);
}

}  // namespace

TEST_CASE("Accept-Encoding: the client's weights choose, brotli wins a tie", "[compression]") {
  CHECK(choose_coding("gzip, deflate, br") == Coding::Brotli);
  CHECK(choose_coding("gzip") == Coding::Gzip);
  CHECK(choose_coding("br") == Coding::Brotli);
  CHECK(choose_coding("gzip;q=0.5, br") == Coding::Brotli);
  CHECK(choose_coding("gzip, br;q=0.5") == Coding::Gzip);
  CHECK(choose_coding("gzip;q=1.0, br;q=0.999") == Coding::Gzip);
  CHECK(choose_coding("deflate") == Coding::Identity);
  CHECK(choose_coding("identity") == Coding::Identity);
}

TEST_CASE("Accept-Encoding: q=0 refuses, * stands for the rest, no header is identity", "[compression]") {
  CHECK(choose_coding("") == Coding::Identity);
  CHECK(choose_coding("  ") == Coding::Identity);
  CHECK(choose_coding("br;q=0, gzip") == Coding::Gzip);
  CHECK(choose_coding("br;q=0, gzip;q=0") == Coding::Identity);
  CHECK(choose_coding("gzip;q=0.000") == Coding::Identity);
  CHECK(choose_coding("*") == Coding::Brotli);
  CHECK(choose_coding("*;q=0.5, gzip") == Coding::Gzip);
  CHECK(choose_coding("br;q=0, *") == Coding::Gzip);
  CHECK(choose_coding("*;q=0, identity") == Coding::Identity);
  CHECK(choose_coding("identity;q=0, gzip") == Coding::Gzip);
}

TEST_CASE("Accept-Encoding: tokens in any case, x-gzip, and garbage tolerated", "[compression]") {
  CHECK(choose_coding("GZIP") == Coding::Gzip);
  CHECK(choose_coding("Br ; Q=0.8 , gzip;q=0.7") == Coding::Brotli);
  CHECK(choose_coding("x-gzip") == Coding::Gzip);
  CHECK(choose_coding("br;q=2, gzip") == Coding::Gzip);       // a qvalue above 1: that element dropped
  CHECK(choose_coding("br;q=abc, gzip") == Coding::Gzip);     // not a number
  CHECK(choose_coding("br;q=0.1234, gzip") == Coding::Gzip);  // four decimals
  CHECK(choose_coding(",,;;, ,br") == Coding::Brotli);
  CHECK(choose_coding(";q=1") == Coding::Identity);
  CHECK(choose_coding("gzip;level=9;q=0.3") == Coding::Gzip);
  CHECK(choose_coding("\x01\xff, gzip") == Coding::Gzip);
}

TEST_CASE("Accept-Encoding: only the codings offered are chosen", "[compression]") {
  using edri::http::kOffersBrotli;
  using edri::http::kOffersGzip;
  CHECK(choose_coding("br, gzip", kOffersGzip) == Coding::Gzip);
  CHECK(choose_coding("br", kOffersGzip) == Coding::Identity);
  CHECK(choose_coding("gzip", kOffersBrotli) == Coding::Identity);
  CHECK(choose_coding("br, gzip", 0) == Coding::Identity);
}

TEST_CASE("Compressible types: media types, text/* prefixes, parameters ignored", "[compression]") {
  const std::vector<std::string> types{"text/*", "application/json", "image/svg+xml"};
  using edri::http::is_compressible;
  CHECK(is_compressible("application/json", types));
  CHECK(is_compressible("Application/JSON; charset=utf-8", types));
  CHECK(is_compressible("text/html; charset=utf-8", types));
  CHECK(is_compressible(" text/plain", types));
  CHECK_FALSE(is_compressible("text/", types));
  CHECK_FALSE(is_compressible("image/png", types));
  CHECK_FALSE(is_compressible("application/jsonx", types));
  CHECK_FALSE(is_compressible("", types));
}

TEST_CASE("gzip and brotli round-trip through the libraries' own decoders", "[compression]") {
  const std::string body = edri::test::json_answer(300 * 1024);
  for (const Coding c : {Coding::Gzip, Coding::Brotli}) {
    for (const int level : {1, 4, 9}) {
      const std::string packed = edri::http::compress(c, level, body);
      CHECK(packed.size() < body.size() / 3);
      CHECK(decode(c, packed) == body);
    }
  }
  CHECK(edri::http::compress(Coding::Identity, 0, body) == body);
  CHECK(zlib_inflate(edri::http::compress(Coding::Gzip, 1, "")).empty());
}

TEST_CASE("flush makes every byte written so far decodable", "[compression]") {
  const std::string body = edri::test::json_answer(64 * 1024);
  for (const Coding c : {Coding::Gzip, Coding::Brotli}) {
    Encoder e(c, 2);
    std::string out;
    e.write(body.substr(0, 1000), out);
    e.flush(out);
    CHECK(decode(c, out, false) == body.substr(0, 1000));
    e.write(body.substr(1000), out);
    e.flush(out);
    CHECK(decode(c, out, false) == body);
    e.finish(out);
    CHECK(decode(c, out) == body);
  }
}

TEST_CASE("gunzip inflates within the limit and stops a bomb at it", "[compression]") {
  const std::string body = edri::test::json_answer(100 * 1024);
  const std::string packed = edri::http::compress(Coding::Gzip, 6, body);
  std::string out;
  CHECK(edri::http::gunzip(packed, body.size(), out) == Inflated::Ok);
  CHECK(out == body);
  CHECK(edri::http::gunzip(packed, body.size() - 1, out) == Inflated::TooLarge);

  // 10 MB of zeros is about 10 KB of gzip.
  const std::string bomb = edri::http::compress(Coding::Gzip, 9, std::string(10'000'000, '\0'));
  CHECK(bomb.size() < 20'000);
  CHECK(edri::http::gunzip(bomb, 1'000'000, out) == Inflated::TooLarge);
  CHECK(out.size() <= 1'000'001);
  CHECK(out.capacity() < 4'000'000);
}

TEST_CASE("gunzip refuses what is not one whole gzip member", "[compression]") {
  const std::string packed = edri::http::compress(Coding::Gzip, 6, edri::test::json_answer(10 * 1024));
  std::string out;
  CHECK(edri::http::gunzip(packed.substr(0, packed.size() / 2), 1 << 20, out) == Inflated::Corrupt);
  CHECK(edri::http::gunzip("not gzip at all", 1 << 20, out) == Inflated::Corrupt);
  CHECK(edri::http::gunzip(packed + "x", 1 << 20, out) == Inflated::Corrupt);
  CHECK(edri::http::gunzip("", 1 << 20, out) == Inflated::Corrupt);
}
