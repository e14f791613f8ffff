#include "runtime/trace_context.hpp"

#include <sys/random.h>

#include <random>

namespace edri {

namespace {

constexpr char kHex[] = "0123456789abcdef";

// A character's value as a lowercase hex digit, 0xff for any other
// character (uppercase is not allowed either).
constexpr std::array<std::uint8_t, 256> kHexValue = [] {
  std::array<std::uint8_t, 256> t{};
  t.fill(0xff);
  for (int c = '0'; c <= '9'; ++c) t[static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c) t[static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(c - 'a' + 10);
  return t;
}();

// `text` (2 x N lowercase hex digits) into `out`; false on any other.
// Without a branch per digit: ids are random, so a branch on each would
// be mispredicted about every third digit (180 ns a traceparent, against
// 37 without; bench_micro BM_TraceparentParse).
template <std::size_t N>
bool read_hex(std::string_view text, std::array<std::uint8_t, N>& out) {
  std::uint8_t bad = 0;
  for (std::size_t i = 0; i < N; ++i) {
    const std::uint8_t hi = kHexValue[static_cast<unsigned char>(text[2 * i])];
    const std::uint8_t lo = kHexValue[static_cast<unsigned char>(text[2 * i + 1])];
    bad |= hi | lo;
    out[i] = static_cast<std::uint8_t>(hi << 4 | (lo & 15));
  }
  return (bad & 0xf0) == 0;
}

template <std::size_t N>
bool all_zero(const std::array<std::uint8_t, N>& a) {
  for (const auto b : a)
    if (b) return false;
  return true;
}

// The thread's generator, seeded from the kernel at its first use (every
// role is a process of its own made by exec, so none starts with another's
// state).
std::mt19937_64& generator() {
  thread_local std::mt19937_64 g = [] {
    std::uint64_t seed[2] = {0, 0};
    if (getrandom(seed, sizeof seed, 0) != static_cast<ssize_t>(sizeof seed)) seed[0] = std::random_device{}();
    std::seed_seq s{seed[0], seed[0] >> 32, seed[1], seed[1] >> 32};
    return std::mt19937_64(s);
  }();
  return g;
}

template <std::size_t N>
void fill_random(std::array<std::uint8_t, N>& out) {
  do {
    for (std::size_t i = 0; i < N; i += 8) {
      const std::uint64_t r = generator()();
      for (std::size_t j = 0; j < 8 && i + j < N; ++j) out[i + j] = static_cast<std::uint8_t>(r >> (8 * j));
    }
  } while (all_zero(out));
}

}  // namespace

char* write_hex(char* out, const std::uint8_t* bytes, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) {
    *out++ = kHex[bytes[i] >> 4];
    *out++ = kHex[bytes[i] & 15];
  }
  return out;
}

void TraceContext::write(char (&out)[kTextSize]) const {
  out[0] = '0';
  out[1] = '0';
  out[2] = '-';
  write_hex(out + 3, trace_id.data(), trace_id.size());
  out[35] = '-';
  write_hex(out + 36, span_id.data(), span_id.size());
  out[52] = '-';
  write_hex(out + 53, &flags, 1);
}

std::string TraceContext::text() const {
  char out[kTextSize];
  write(out);
  return std::string(out, kTextSize);
}

TraceContext TraceContext::child() const {
  TraceContext c = *this;
  c.span_id = new_span_id();
  return c;
}

std::optional<TraceContext> parse_traceparent(std::string_view text) {
  if (text.size() < TraceContext::kTextSize || text[2] != '-' || text[35] != '-' || text[52] != '-') return {};
  std::array<std::uint8_t, 1> version{}, flags{};
  if (!read_hex(text.substr(0, 2), version) || version[0] == 0xff) return {};
  if (version[0] == 0 ? text.size() != TraceContext::kTextSize
                      : text.size() > TraceContext::kTextSize && text[TraceContext::kTextSize] != '-')
    return {};
  TraceContext c;
  if (!read_hex(text.substr(3, 32), c.trace_id) || !read_hex(text.substr(36, 16), c.span_id) ||
      !read_hex(text.substr(53, 2), flags))
    return {};
  if (all_zero(c.trace_id) || all_zero(c.span_id)) return {};
  c.flags = flags[0];
  return c;
}

TraceContext new_trace(bool sampled) {
  TraceContext c;
  fill_random(c.trace_id);
  fill_random(c.span_id);
  c.flags = sampled ? TraceContext::kSampled : 0;
  return c;
}

SpanId new_span_id() {
  SpanId id;
  fill_random(id);
  return id;
}

bool sample(double rate) {
  if (rate >= 1) return true;
  if (rate <= 0) return false;
  return static_cast<double>(generator()() >> 11) * 0x1.0p-53 < rate;
}

void append_hex(std::string& out, const std::uint8_t* bytes, std::size_t size) {
  const std::size_t at = out.size();
  out.resize(at + 2 * size);
  write_hex(out.data() + at, bytes, size);
}

std::string hex_of(const std::uint8_t* bytes, std::size_t size) {
  std::string out;
  append_hex(out, bytes, size);
  return out;
}

}  // namespace edri
