#include "cluster/portable.hpp"

#include <edri/problem.hpp>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <iterator>

#include "envelope/body.hpp"
#include "envelope/problem.hpp"
#include "envelope/send.hpp"

namespace edri::cluster {

namespace env = edri::envelope;

namespace {

bool is_body(env::SectionType t) {
  return t == env::SectionType::Body || t == env::SectionType::Blob || t == env::SectionType::File ||
         t == env::SectionType::Upload;
}

// Every section but the body, as it is.
void copy_head(env::EnvelopeWriter& w, const env::EnvelopeView& v) {
  for (std::size_t i = 0; i < v.section_count; ++i)
    if (!is_body(v.sections[i].type)) w.raw(v.sections[i].type, v.sections[i].data);
}

// The bytes of a file, or false when it is unreadable or past `max`.
bool read_file(const std::string& path, std::size_t max, std::string& out, bool& too_large) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return false;
  const auto size = static_cast<std::size_t>(in.tellg());
  too_large = size > max;
  if (too_large) return false;
  out.resize(size);
  in.seekg(0);
  return static_cast<bool>(in.read(out.data(), static_cast<std::streamsize>(size)));
}

std::string_view as_text(std::span<const std::byte> s) { return {reinterpret_cast<const char*>(s.data()), s.size()}; }

}  // namespace

WireMessage::WireMessage(FrameKind kind) : kind_(kind) { clear(); }

void WireMessage::clear() {
  bytes_.resize(sizeof(Frame));
  const Frame f{kFrameMagic, kFrameVersion, static_cast<std::uint16_t>(kind_), 0, 0};
  std::memcpy(bytes_.data(), &f, sizeof f);
  count_ = 0;
  last_at_ = bytes_.size();
}

void WireMessage::add_entry(std::uint64_t id, std::uint32_t deadline_ms, const env::EnvelopeWriter& w) {
  const Entry e{id, deadline_ms, static_cast<std::uint32_t>(w.size())};
  last_at_ = bytes_.size();
  bytes_.resize(last_at_ + sizeof e + w.size());
  std::memcpy(bytes_.data() + last_at_, &e, sizeof e);
  w.write(bytes_.data() + last_at_ + sizeof e);
  set_count(count_ + 1);
}

void WireMessage::set_count(std::uint32_t n) {
  count_ = n;
  std::memcpy(bytes_.data() + offsetof(Frame, count), &count_, sizeof count_);
}

std::vector<std::byte> WireMessage::take_last() {
  std::vector<std::byte> entry(bytes_.begin() + static_cast<std::ptrdiff_t>(last_at_), bytes_.end());
  bytes_.resize(last_at_);
  set_count(count_ - 1);
  return entry;
}

void WireMessage::put_back(std::span<const std::byte> entry) {
  last_at_ = bytes_.size();
  bytes_.insert(bytes_.end(), entry.begin(), entry.end());
  set_count(count_ + 1);
}

int WireMessage::add(std::uint64_t id, std::uint32_t deadline_ms, const env::EnvelopeHeader& header,
                     std::span<const std::byte> record, transport::BlobArena* blobs, std::size_t max_bytes,
                     std::string& problem) {
  const bool request = kind_ == FrameKind::Request;
  auto refuse = [&](std::string why) {
    problem = std::move(why);
    return request ? 413 : 502;
  };
  env::EnvelopeView v;
  if (env::decode(record, v) != env::DecodeError::None) return refuse("a malformed envelope");
  std::string owned;  // a body read from a file
  std::string_view body = v.text(env::SectionType::Body);
  transport::BlobLease blob;
  if (v.has(env::SectionType::Blob)) {
    blob = transport::claim_blob(blobs, v.section(env::SectionType::Blob));
    if (!blob) return refuse("the body was lost on the way");
    body = blob.view();
  }
  std::string path;
  if (v.has(env::SectionType::File)) path = std::string(v.text(env::SectionType::File));
  if (const auto up = v.section(env::SectionType::Upload); up.size() > sizeof(std::uint64_t))
    path = std::string(as_text(up.subspan(sizeof(std::uint64_t))));
  const std::string too_large =
      request ? "the request is larger than EDRI_NATS_MAX_MESSAGE allows to cross to another instance"
              : "the answer is larger than EDRI_NATS_MAX_MESSAGE allows to cross back";
  if (!path.empty()) {
    bool past_max = false;
    if (!read_file(path, max_bytes, owned, past_max))
      return refuse(past_max ? too_large : "the body's file cannot be read");
    body = owned;
  }
  env::EnvelopeWriter w(header);
  copy_head(w, v);
  if (!body.empty()) w.text(env::SectionType::Body, body);
  if (sizeof(Frame) + sizeof(Entry) + w.size() > max_bytes) return refuse(too_large);
  add_entry(id, deadline_ms, w);
  return 0;
}

void WireMessage::add_problem(std::uint64_t id, const env::EnvelopeHeader& request, int status,
                              std::string_view detail) {
  const std::string body = edri::problem_json(status, detail);
  env::EnvelopeWriter w(env::response_header_for(request, status));
  w.text(env::SectionType::ContentType, "application/problem+json");
  w.text(env::SectionType::Body, body);
  add_entry(id, 0, w);
}

bool for_each_entry(std::span<const std::byte> data, FrameKind kind, const std::function<void(const WireEntry&)>& f) {
  Frame frame;
  if (data.size() < sizeof frame) return false;
  std::memcpy(&frame, data.data(), sizeof frame);
  if (frame.magic != kFrameMagic || frame.version != kFrameVersion || frame.kind != static_cast<std::uint16_t>(kind))
    return false;
  std::size_t at = sizeof frame;
  for (std::uint32_t i = 0; i < frame.count; ++i) {
    WireEntry e;
    if (data.size() - at < sizeof(Entry)) return false;
    std::memcpy(&e.entry, data.data() + at, sizeof(Entry));
    at += sizeof(Entry);
    if (data.size() - at < e.entry.length) return false;
    if (env::decode(data.subspan(at, e.entry.length), e.view) != env::DecodeError::None) return false;
    at += e.entry.length;
    // Nothing that names a thing of the other host.
    if (e.view.has(env::SectionType::Blob) || e.view.has(env::SectionType::File) ||
        e.view.has(env::SectionType::Upload) || e.view.has(env::SectionType::Stream))
      return false;
    f(e);
  }
  return at == data.size();
}

bool send_local(transport::Outbox& out, const env::EnvelopeHeader& header, const env::EnvelopeView& view,
                transport::BlobArena* blobs, std::size_t threshold, transport::Admission admission) {
  env::EnvelopeWriter w(header);
  copy_head(w, view);
  transport::BlobLease blob;
  const std::string_view body = view.text(env::SectionType::Body);
  if (!env::attach_body(w, blob, blobs, threshold, body)) w.text(env::SectionType::Body, body);
  if (w.size() > out.max_record()) return false;
  if (!env::send(out, w, admission)) return false;
  if (blob) (void)blob.take();  // its reader frees it now
  return true;
}

}  // namespace edri::cluster
