// A live stream's publish as the broker orders it, by the size of the
// stream's state: the patch merged into a copy of the state serialized
// whole to check EDRI_STREAM_MAX_BYTES (what the broker did before
// decision 0042), against the patch merged in place under a bound of the
// state's size (apply_stream_patch). The patch is
// the same small one each time: the cost that grows is the state's.
#include <benchmark/benchmark.h>

#include <string>

#include <nlohmann/json.hpp>

#include "envelope/stream_patch.hpp"

namespace {

constexpr std::size_t kMaxBytes = 262144;  // EDRI_STREAM_MAX_BYTES's default
constexpr std::string_view kPatch = R"({"f3":17,"rev":17})";

// A state of about `bytes` as JSON: fields of 40 characters each.
nlohmann::json state_of(std::size_t bytes) {
  nlohmann::json state = nlohmann::json::object();
  for (std::size_t i = 0; state.dump().size() < bytes; ++i) {
    std::string key = "field";
    key += std::to_string(i);
    state[key] = std::string(40, 'x');
  }
  return state;
}

void BM_StreamPublishCopy(benchmark::State& st) {
  nlohmann::json state = state_of(static_cast<std::size_t>(st.range(0)));
  for (auto _ : st) {
    // What the broker did before 0042, step by step.
    auto patch = nlohmann::json::parse(kPatch);
    nlohmann::json next = state;
    next.merge_patch(patch);
    if (next.dump().size() <= kMaxBytes) state = std::move(next);
    benchmark::DoNotOptimize(patch.dump());
  }
}
BENCHMARK(BM_StreamPublishCopy)->Arg(100)->Arg(10000)->Arg(100000);

void BM_StreamPublishInPlace(benchmark::State& st) {
  edri::envelope::StreamState state;
  state.replace(state_of(static_cast<std::size_t>(st.range(0))));
  for (auto _ : st) {
    auto applied = edri::envelope::apply_stream_patch("s", state, kPatch, kMaxBytes);
    benchmark::DoNotOptimize(applied);
  }
}
BENCHMARK(BM_StreamPublishInPlace)->Arg(100)->Arg(10000)->Arg(100000);

}  // namespace
