// What the switch reads from NATS (cluster/inbound.hpp, cluster/wire.hpp):
// the first byte says which, the rest is the message.
//   0  a hello: refused, or a hello no deeper than kHelloMaxDepth whose id
//      is 1 to kInstanceIdMaxBytes long, listed for /health as the switch
//      lists it
//   1  a stream bucket value, with EDRI_STREAM_MAX_BYTES from the second
//      byte: refused, or a revision after its start whose state is no
//      larger and no deeper than the limits, copied, merged onto and
//      dumped as the ledger and the broker do
//   2  a request, an answer or a notification: taken apart or refused,
//      every entry inside the message, its JSON claims and body measured
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "cluster/inbound.hpp"
#include "cluster/portable.hpp"
#include "dom_depth.hpp"
#include "envelope/stream_patch.hpp"

using namespace edri;

namespace {

void hello(std::string_view text) {
  const auto h = cluster::read_hello(text);
  if (!h) return;
  if (h->id.empty() || h->id.size() > cluster::kInstanceIdMaxBytes) __builtin_trap();
  if (fuzz::dom_depth(nlohmann::json::parse(text)) > cluster::kHelloMaxDepth) __builtin_trap();
  (void)h->listed().dump();
}

void stream_value(std::string_view text, std::size_t max_bytes) {
  std::string why;
  const auto r = cluster::read_stream_value(text, max_bytes, why);
  if (!r) {
    if (why.empty()) __builtin_trap();
    return;
  }
  if (r->from >= r->revision || r->revision > cluster::kMaxRevision || !r->state.is_object()) __builtin_trap();
  if (fuzz::dom_depth(r->state) > cluster::kStreamValueMaxDepth) __builtin_trap();
  // What the ledger does with a state it took: a patch applied (its size
  // unknown: a copy, a merge, a dump), then the state dumped.
  envelope::StreamState state;
  state.replace(r->state);
  if (std::holds_alternative<envelope::PatchApplied>(
          envelope::apply_stream_patch("s", state, R"({"fuzz":1})", max_bytes)))
    (void)state.value.dump();
  if (r->state.dump().size() > max_bytes) __builtin_trap();
}

void frames(std::span<const std::byte> in) {
  for (const auto kind : {cluster::FrameKind::Request, cluster::FrameKind::Answer, cluster::FrameKind::Notification}) {
    (void)cluster::for_each_entry(in, kind, [&](const cluster::WireEntry& e) {
      for (const auto type : {envelope::SectionType::Body, envelope::SectionType::Claims}) {
        const auto s = e.view.section(type);
        if (!s.empty() && (s.data() < in.data() || s.data() + s.size() > in.data() + in.size())) __builtin_trap();
      }
      // As the switch measures what a manager would parse unmeasured.
      (void)cluster::json_too_deep("json", e.view.text(envelope::SectionType::Claims));
      (void)cluster::json_too_deep(e.view.text(envelope::SectionType::ContentType),
                                   e.view.text(envelope::SectionType::Body));
    });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);
  switch (data[0] % 3) {
    case 0: hello(text); break;
    // From 64 bytes up: small enough that the fuzzer reaches the limits.
    case 1: stream_value(text, 64 + std::size_t{data[1]} * 16); break;
    default: frames(std::as_bytes(std::span(data + 2, size - 2))); break;
  }
  return 0;
}
