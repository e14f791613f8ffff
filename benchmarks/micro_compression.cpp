// bench_micro's compression cases: gzip and brotli of a 1 MB JSON answer
// at the levels worth serving with, in MB/s of input (the rate a process
// that compresses answers can serve them at). Decision 0034 chose the
// defaults and the process that compresses from these.
#include <benchmark/benchmark.h>

#include "http/content_coding.hpp"
#include "support/json_answer.hpp"

namespace {

using edri::http::Coding;

const std::string& one_megabyte_answer() {
  static const std::string body = edri::test::json_answer(1 << 20);
  return body;
}

void compress_answer(benchmark::State& state, Coding coding) {
  const std::string& body = one_megabyte_answer();
  const int level = static_cast<int>(state.range(0));
  std::size_t packed = 0;
  for (auto _ : state) {
    const std::string out = edri::http::compress(coding, level, body);
    packed = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
  state.counters["ratio"] = static_cast<double>(body.size()) / static_cast<double>(packed);
}

void BM_GzipJsonAnswer1MB(benchmark::State& state) { compress_answer(state, Coding::Gzip); }
BENCHMARK(BM_GzipJsonAnswer1MB)->Arg(1)->Arg(2)->Arg(4)->Arg(6)->Arg(9)->Unit(benchmark::kMillisecond);

void BM_BrotliJsonAnswer1MB(benchmark::State& state) { compress_answer(state, Coding::Brotli); }
BENCHMARK(BM_BrotliJsonAnswer1MB)
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Arg(3)
    ->Arg(4)
    ->Arg(5)
    ->Arg(6)
    ->Unit(benchmark::kMillisecond);

// A streamed answer: 64 KiB pieces, each flushed so that it reaches the
// client whole (what the manager does for Response::stream).
void stream_answer(benchmark::State& state, Coding coding) {
  const std::string& body = one_megabyte_answer();
  const int level = static_cast<int>(state.range(0));
  constexpr std::size_t kPiece = 64 * 1024;
  for (auto _ : state) {
    edri::http::Encoder encoder(coding, level);
    std::string out;
    for (std::size_t at = 0; at < body.size(); at += kPiece) {
      encoder.write(std::string_view(body).substr(at, kPiece), out);
      encoder.flush(out);
    }
    encoder.finish(out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
}

void BM_GzipStreamedAnswer1MB(benchmark::State& state) { stream_answer(state, Coding::Gzip); }
BENCHMARK(BM_GzipStreamedAnswer1MB)->Arg(1)->Arg(4)->Unit(benchmark::kMillisecond);

void BM_BrotliStreamedAnswer1MB(benchmark::State& state) { stream_answer(state, Coding::Brotli); }
BENCHMARK(BM_BrotliStreamedAnswer1MB)->Arg(1)->Arg(4)->Unit(benchmark::kMillisecond);

}  // namespace
