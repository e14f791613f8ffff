// Rate limits for middleware: token buckets by key (the client's address,
// or the principal an earlier middleware named), and a middleware that
// answers 429 with Retry-After past the rate (docs/security.md).
//
// The buckets live in the process that runs the middleware: each listener
// keeps its own. With EDRI_LISTENER_WORKERS = L, a client whose connections
// land on different listeners can reach up to L times the rate; one
// connection (a browser's HTTP/2, a WebSocket, a gRPC channel) stays on one
// listener and sees the rate exactly.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <edri/admission.hpp>
#include <edri/registry.hpp>
#include <edri/request.hpp>
#include <edri/response.hpp>

namespace edri {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    double per_second = 10;         // tokens added per second
    double burst = 20;              // the most a bucket holds (and a new key starts with)
    std::size_t max_keys = 100000;  // buckets kept; past it, full ones go first, then any
  };

  explicit RateLimiter(Options o) : o_(o) {}

  // Takes a token from `key`'s bucket: nullopt when there was one, else how
  // long until there will be.
  std::optional<std::chrono::duration<double>> take(std::string_view key, Clock::time_point now = Clock::now()) {
    Bucket& b = bucket(key, now);
    const double elapsed = std::chrono::duration<double>(now - b.at).count();
    b.tokens = std::min(o_.burst, b.tokens + std::max(0.0, elapsed) * o_.per_second);
    b.at = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return std::nullopt;
    }
    return std::chrono::duration<double>((1 - b.tokens) / o_.per_second);
  }

  std::size_t keys() const { return buckets_.size(); }

 private:
  struct Bucket {
    double tokens;
    Clock::time_point at;
  };

  Bucket& bucket(std::string_view key, Clock::time_point now) {
    if (auto it = buckets_.find(std::string(key)); it != buckets_.end()) return it->second;
    if (buckets_.size() >= o_.max_keys) evict(now);
    return buckets_.emplace(std::string(key), Bucket{o_.burst, now}).first->second;
  }

  // Buckets that would be full again are forgotten at no cost to anyone;
  // if none is, one bucket goes (its key starts afresh: a bounded table
  // cannot remember every client of a flood).
  void evict(Clock::time_point now) {
    const double refill = o_.burst / o_.per_second;
    std::erase_if(buckets_,
                  [&](const auto& kv) { return std::chrono::duration<double>(now - kv.second.at).count() >= refill; });
    if (buckets_.size() >= o_.max_keys) buckets_.erase(buckets_.begin());
  }

  Options o_;
  std::unordered_map<std::string, Bucket> buckets_;
};

// What a rate limit counts by.
enum class RateKey { ClientAddress, Principal };

// A middleware that allows `options.per_second` calls per key (with bursts
// of `options.burst`) to `events` (empty: every call), and answers the
// rest 429 with Retry-After (a WebSocket error reply, gRPC
// RESOURCE_EXHAUSTED). By principal: a call without one counts by its
// address. Order it after the middleware that names the principal.
inline MiddlewareDecl rate_limit(std::string name, int order, RateLimiter::Options options,
                                 RateKey key = RateKey::ClientAddress, std::vector<std::string> events = {}) {
  auto limiter = std::make_shared<RateLimiter>(options);
  MiddlewareDecl m{
      std::move(name), order, [limiter, key](const Request& req, Admission& admitted) -> std::optional<Response> {
        const bool by_principal = key == RateKey::Principal && admitted.has_principal();
        const std::string_view k = by_principal ? std::string_view(admitted.principal()) : req.client_address;
        const auto wait = limiter->take(by_principal ? "p:" + std::string(k) : "a:" + std::string(k));
        if (!wait) return std::nullopt;
        const auto seconds = static_cast<long>(std::ceil(wait->count()));
        return Response::problem(429, "Too Many Requests", "the rate limit of this client is reached")
            .header("Retry-After", std::to_string(std::max(1L, seconds)));
      }};
  m.events = std::move(events);
  return m;
}

}  // namespace edri
