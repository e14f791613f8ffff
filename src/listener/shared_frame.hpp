// SharedFrame: one buffer of bytes shared by every connection it goes to (a
// push, a live-stream frame), written by each without a copy.
#pragma once

#include <memory>
#include <string>

namespace edri::listener {

using SharedFrame = std::shared_ptr<const std::string>;

}  // namespace edri::listener
