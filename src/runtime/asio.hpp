// The one place edri includes Asio. Boost 1.74's awaitable.hpp uses
// std::exchange without including <utility>; under C++20 with GCC 12 that
// fails unless <utility> comes first.
#pragma once

#include <utility>

#include <boost/asio.hpp>

namespace edri {
namespace asio = boost::asio;
}
