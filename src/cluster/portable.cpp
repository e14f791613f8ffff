#include "cluster/portable.hpp"

#include <edri/problem.hpp>

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

WireMessage refused(FrameKind kind, const std::string& why) {
  WireMessage m;
  m.status = kind == FrameKind::Request ? 413 : 502;
  m.problem = why;
  return m;
}

WireMessage framed(FrameKind kind, std::uint32_t deadline_ms, const env::EnvelopeWriter& w) {
  WireMessage m;
  m.bytes.resize(sizeof(Frame) + w.size());
  const Frame f{kFrameMagic, kFrameVersion, static_cast<std::uint16_t>(kind), deadline_ms, 0};
  std::memcpy(m.bytes.data(), &f, sizeof f);
  w.write(m.bytes.data() + sizeof f);
  return m;
}

}  // namespace

WireMessage to_wire(FrameKind kind, std::uint32_t deadline_ms, const env::EnvelopeHeader& header,
                    std::span<const std::byte> record, transport::BlobArena* blobs, std::size_t max_bytes) {
  env::EnvelopeView v;
  if (env::decode(record, v) != env::DecodeError::None) return refused(kind, "a malformed envelope");
  std::string owned;  // a body read from a file
  std::string_view body = v.text(env::SectionType::Body);
  transport::BlobLease blob;
  if (v.has(env::SectionType::Blob)) {
    blob = transport::claim_blob(blobs, v.section(env::SectionType::Blob));
    if (!blob) return refused(kind, "the body was lost on the way");
    body = blob.view();
  }
  std::string path;
  if (v.has(env::SectionType::File)) path = std::string(v.text(env::SectionType::File));
  if (const auto up = v.section(env::SectionType::Upload); up.size() > sizeof(std::uint64_t))
    path = std::string(as_text(up.subspan(sizeof(std::uint64_t))));
  if (!path.empty()) {
    bool too_large = false;
    if (!read_file(path, max_bytes, owned, too_large))
      return too_large
                 ? refused(kind, "the body is larger than EDRI_NATS_MAX_MESSAGE allows to cross to another instance")
                 : refused(kind, "the body's file cannot be read");
    body = owned;
  }
  env::EnvelopeWriter w(header);
  copy_head(w, v);
  if (!body.empty()) w.text(env::SectionType::Body, body);
  if (sizeof(Frame) + w.size() > max_bytes)
    return refused(kind, kind == FrameKind::Request
                             ? "the request is larger than EDRI_NATS_MAX_MESSAGE allows to cross to another instance"
                             : "the answer is larger than EDRI_NATS_MAX_MESSAGE allows to cross back");
  return framed(kind, deadline_ms, w);
}

WireMessage problem_message(const env::EnvelopeHeader& request, int status, std::string_view detail) {
  const std::string body = edri::problem_json(status, detail);
  env::EnvelopeWriter w(env::response_header_for(request, status));
  w.text(env::SectionType::ContentType, "application/problem+json");
  w.text(env::SectionType::Body, body);
  return framed(FrameKind::Answer, 0, w);
}

bool from_wire(std::span<const std::byte> data, Frame& frame, env::EnvelopeView& view) {
  if (data.size() < sizeof(Frame)) return false;
  std::memcpy(&frame, data.data(), sizeof frame);
  if (frame.magic != kFrameMagic || frame.version != kFrameVersion) return false;
  if (env::decode(data.subspan(sizeof(Frame)), view) != env::DecodeError::None) return false;
  // Nothing that names a thing of the other host.
  return !view.has(env::SectionType::Blob) && !view.has(env::SectionType::File) &&
         !view.has(env::SectionType::Upload) && !view.has(env::SectionType::Stream);
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
