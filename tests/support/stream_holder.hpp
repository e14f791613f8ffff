// What a live-stream subscriber holds, built from the frames it reads
// (../shared/specs/streams.md): every patch frame must start where the
// frame before it ended, or the test fails.
#pragma once

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>

#include "support/ws_client.hpp"

namespace edri::test {

// What one client holds of each stream, built from the frames it reads;
// every patch frame must start where the one before ended.
struct Holder {
  struct View {
    nlohmann::json state;
    std::uint64_t revision = 0;
    int frames = 0, snapshots = 0;
  };
  std::map<std::string, View> views;

  void apply(const nlohmann::json& f) {
    INFO(f.dump());
    REQUIRE(f.contains("stream"));
    REQUIRE(f["ts"].is_number_unsigned());
    auto& v = views[f["stream"].get<std::string>()];
    ++v.frames;
    if (f.contains("state")) {
      v.state = f["state"];
      v.revision = f["revision"];
      ++v.snapshots;
      return;
    }
    REQUIRE(v.frames > 1);  // a patch never comes first
    REQUIRE(f["from"].get<std::uint64_t>() == v.revision);
    REQUIRE(f["revision"].get<std::uint64_t>() >= v.revision);
    v.state.merge_patch(f["patch"]);
    v.revision = f["revision"];
  }
  bool holds(const std::string& name, std::uint64_t revision) const {
    const auto it = views.find(name);
    return it != views.end() && it->second.revision == revision;
  }
};

// Reads frames from `ws` into `h` until it holds every stream of `finals`
// at its revision (throws when a read times out).
inline void read_until(WsClient& ws, Holder& h, const std::map<std::string, std::uint64_t>& finals) {
  auto done = [&] {
    for (const auto& [name, rev] : finals)
      if (!h.holds(name, rev)) return false;
    return true;
  };
  while (!done()) h.apply(ws.read_json());
}

}  // namespace edri::test
