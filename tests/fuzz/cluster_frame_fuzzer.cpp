// Messages from NATS (cluster/wire.hpp): any byte string is taken apart or
// refused, never read past its end; every entry handed out is an envelope
// inside the message, with nothing that names a thing of another host.
#include <cstddef>
#include <cstdint>
#include <span>

#include "cluster/portable.hpp"

using namespace edri;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto in = std::as_bytes(std::span(data, size));
  for (const auto kind : {cluster::FrameKind::Request, cluster::FrameKind::Answer, cluster::FrameKind::Notification}) {
    (void)cluster::for_each_entry(in, kind, [&](const cluster::WireEntry& e) {
      if (e.view.has(envelope::SectionType::Blob) || e.view.has(envelope::SectionType::File)) __builtin_trap();
      const auto body = e.view.section(envelope::SectionType::Body);
      if (!body.empty() && (body.data() < in.data() || body.data() + body.size() > in.data() + in.size()))
        __builtin_trap();
    });
  }
  return 0;
}
