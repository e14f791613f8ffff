// The access log's cost in the listener's loop, without sockets: a line
// formatted, in each format, and a whole call (record, line, queue). What the writer thread then costs (a write(2)
// per batch of lines) is the kernel's, measured by `bench accesslog`.
#include <benchmark/benchmark.h>

#include <atomic>
#include <memory>
#include <string>

#include "listener/access_line.hpp"
#include "listener/access_log.hpp"
#include "support/access_record_sample.hpp"

namespace {

using edri::listener::AccessFormat;
using edri::listener::AccessFormatter;
using edri::listener::AccessOutcome;
using edri::listener::AccessRecord;

// The unit tests' record, with a browser's user agent.
AccessRecord typical_record() {
  AccessRecord r = edri::test::sample_access_record();
  r.target = "/items/12345?expand=owner";
  r.request_id = "9ce876de-0000-000000000001";
  r.user_agent = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
  return r;
}

void BM_AccessLine(benchmark::State& st, AccessFormat format) {
  const AccessRecord r = typical_record();
  AccessFormatter f(format);
  std::string out;
  for (auto _ : st) {
    out.clear();
    f.append(out, r, AccessOutcome{200, -1, 1234, std::chrono::steady_clock::now()});
    benchmark::DoNotOptimize(out.data());
  }
  st.counters["bytes"] = static_cast<double>(out.size());
}
BENCHMARK_CAPTURE(BM_AccessLine, combined, AccessFormat::Combined);
BENCHMARK_CAPTURE(BM_AccessLine, json, AccessFormat::Json);

// A whole call as the listener's loop pays for it: the record taken (and
// reused), the line formatted and queued. The writer thread writes to
// /dev/null here, off the measured thread.
void BM_AccessLogCall(benchmark::State& st) {
  edri::Config config;
  config.access_log = "json";
  config.access_log_path = "/dev/null";
  const auto plugins = edri::plugin::PluginSet::load({});
  std::atomic<std::uint64_t> lines{0}, dropped{0};
  edri::listener::AccessLog log(config, plugins, {lines, dropped});
  const AccessRecord model = typical_record();
  edri::http::HttpRequest head;
  head.headers = {{"user-agent", model.user_agent}, {"x-request-id", model.request_id}};
  for (auto _ : st) {
    auto r = log.begin("http/1.1", "GET", model.target, model.client, &head);
    r->request_id = model.request_id;
    r->route = model.route;
    log.end(std::move(r), 200, 1234);
  }
  st.counters["dropped"] = static_cast<double>(dropped.load());
}
BENCHMARK(BM_AccessLogCall);

}  // namespace
