#include "envelope/envelope.hpp"

#include <stdexcept>

namespace edri::envelope {

const char* to_string(DecodeError e) {
  switch (e) {
    case DecodeError::None: return "ok";
    case DecodeError::Truncated: return "truncated";
    case DecodeError::BadMagic: return "bad magic";
    case DecodeError::BadVersion: return "unsupported version";
    case DecodeError::BadKind: return "bad kind";
    case DecodeError::LengthMismatch: return "length mismatch";
    case DecodeError::TooManySections: return "too many sections";
    case DecodeError::SectionOverflow: return "section overflows the envelope";
    case DecodeError::TrailingBytes: return "trailing bytes";
    case DecodeError::DuplicateSection: return "duplicate section";
  }
  return "unknown";
}

DecodeError peek_header(std::span<const std::byte> in, EnvelopeHeader& out) {
  if (in.size() < sizeof(EnvelopeHeader)) return DecodeError::Truncated;
  std::memcpy(&out, in.data(), sizeof out);
  if (out.magic != kMagic) return DecodeError::BadMagic;
  if (out.version != kVersion) return DecodeError::BadVersion;
  if (out.kind < static_cast<std::uint8_t>(Kind::Request) || out.kind > static_cast<std::uint8_t>(Kind::Control))
    return DecodeError::BadKind;
  if (out.total_length > in.size()) return DecodeError::Truncated;
  if (out.total_length != in.size()) return DecodeError::LengthMismatch;
  return DecodeError::None;
}

DecodeError decode(std::span<const std::byte> in, EnvelopeView& out) {
  out.section_count = 0;
  if (auto e = peek_header(in, out.header); e != DecodeError::None) return e;
  if (out.header.section_count > kMaxSections) return DecodeError::TooManySections;
  std::size_t pos = sizeof(EnvelopeHeader);
  std::uint32_t seen = 0;  // bit per known section type
  for (std::size_t i = 0; i < out.header.section_count; ++i) {
    if (in.size() - pos < sizeof(SectionHeader)) return DecodeError::SectionOverflow;
    SectionHeader sh;
    std::memcpy(&sh, in.data() + pos, sizeof sh);
    pos += sizeof sh;
    if (sh.length > in.size() - pos) return DecodeError::SectionOverflow;
    if (sh.type < 32) {
      if (seen & (1u << sh.type)) return DecodeError::DuplicateSection;
      seen |= 1u << sh.type;
    }
    out.sections[out.section_count++] = Section{static_cast<SectionType>(sh.type), in.subspan(pos, sh.length)};
    pos += sh.length;
  }
  if (pos != in.size()) return DecodeError::TrailingBytes;
  return DecodeError::None;
}

bool KeyValueReader::next(std::string_view& key, std::string_view& value) {
  if (!ok_ || pos_ == data_.size()) return false;
  const std::size_t left = data_.size() - pos_;
  std::uint16_t kl;
  std::uint32_t vl;
  if (left < 2) return ok_ = false;
  std::memcpy(&kl, data_.data() + pos_, 2);
  if (left - 2 < std::size_t{kl} + 4) return ok_ = false;
  std::memcpy(&vl, data_.data() + pos_ + 2 + kl, 4);
  if (left - 2 - kl - 4 < vl) return ok_ = false;
  key = {reinterpret_cast<const char*>(data_.data() + pos_ + 2), kl};
  value = {reinterpret_cast<const char*>(data_.data() + pos_ + 2 + kl + 4), vl};
  pos_ += 2 + std::size_t{kl} + 4 + vl;
  return true;
}

EnvelopeWriter& EnvelopeWriter::raw(SectionType type, std::span<const std::byte> data) {
  if (count_ == kMaxSections) throw std::length_error("envelope: too many sections");
  // Field by field: a whole Pending built on the stack and copied stalls on
  // store forwarding (measured: encode 36 -> 58 ns).
  Pending& p = pending_[count_++];
  p.type = type;
  p.raw = data;
  p.kv_range = nullptr;
  p.kv_write = nullptr;
  p.length = static_cast<std::uint32_t>(data.size());
  size_ += sizeof(SectionHeader) + data.size();
  return *this;
}

void EnvelopeWriter::write(std::byte* out) const {
  EnvelopeHeader h = header_;
  h.section_count = static_cast<std::uint16_t>(count_);
  h.total_length = static_cast<std::uint32_t>(size_);
  std::memcpy(out, &h, sizeof h);
  std::byte* p = out + sizeof h;
  for (std::size_t i = 0; i < count_; ++i) {
    const Pending& s = pending_[i];
    const SectionHeader sh{static_cast<std::uint16_t>(s.type), 0, s.length};
    std::memcpy(p, &sh, sizeof sh);
    p += sizeof sh;
    if (s.kv_write) {
      s.kv_write(s.kv_range, p);
    } else if (s.length) {
      std::memcpy(p, s.raw.data(), s.length);
    }
    p += s.length;
  }
}

}  // namespace edri::envelope
