// StreamRef: a streamed answer in flight (Response::stream), as the
// listener knows it: its producer's manager slot and request id (where
// credit and cancellation go), and whether its body goes out chunked.
#pragma once

#include <cstdint>

namespace edri::listener {

struct StreamRef {
  std::uint16_t manager_slot = 0;
  std::uint64_t id = 0;
  bool chunked = false;
};

}  // namespace edri::listener
