// The access log's cost in the listener's loop, without sockets: a line
// formatted, in each format, and a whole call (record, line, queue). What the writer thread then costs (a write(2)
// per batch of lines) is the kernel's, measured by `bench accesslog`.
#include <benchmark/benchmark.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <edri/response.hpp>

#include "listener/access_line.hpp"
#include "listener/access_log.hpp"
#include "runtime/span_exporter.hpp"
#include "runtime/trace_context.hpp"
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
void BM_AccessLogCall(benchmark::State& st, bool traced) {
  edri::Config config;
  config.access_log = "json";
  config.access_log_path = "/dev/null";
  if (traced) {
    config.trace_path = "/dev/null";  // every call's span, formatted by the exporter's thread
    config.trace_buffer = 1u << 20;
  }
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
BENCHMARK_CAPTURE(BM_AccessLogCall, untraced, false);
// The same with every request traced: the span's record and its queueing
// are the loop's; the JSON is the exporter's (BM_OtlpJson).
BENCHMARK_CAPTURE(BM_AccessLogCall, traced, true);

// A batch of spans as an exporter thread writes them: 512 listener spans
// (ten attributes each, as AccessLog::span_of makes them) into one OTLP
// JSON request. Per span: the time and the bytes.
void BM_OtlpJson(benchmark::State& st) {
  const AccessRecord model = typical_record();
  edri::SpanRecord span;
  span.context = edri::new_trace(true);
  span.parent = edri::new_span_id();
  span.kind = edri::SpanKind::Server;
  span.name = "GET /items/{id}";
  span.start_ns = edri::unix_now_ns();
  span.end_ns = span.start_ns + 123456;
  span.attributes = {{"network.protocol.name", "http/1.1"},
                     {"http.request.method", "GET"},
                     {"url.path", "/items/12345"},
                     {"http.route", "/items/{id}"},
                     {"http.response.status_code", 200},
                     {"client.address", model.client},
                     {"edri.domain", "items"},
                     {"edri.request_id", model.request_id},
                     {"user_agent.original", model.user_agent}};
  const std::vector<edri::SpanRecord> batch(512, span);
  std::size_t bytes = 0;
  for (auto _ : st) {
    const std::string body = edri::otlp_json(batch, "edri-server", "listener");
    bytes = body.size();
    benchmark::DoNotOptimize(body.data());
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * batch.size()));
  st.counters["bytes_per_span"] = static_cast<double>(bytes) / static_cast<double>(batch.size());
}
BENCHMARK(BM_OtlpJson);

}  // namespace

namespace {

// What every traced request costs each process it crosses, sampled or
// not: its `traceparent` read back (the listener's from the client, a
// manager's from the envelope's Trace section).
// Random ids, a different one each time, as in a server: the same text
// over and over would teach the branch predictor its digits.
void BM_TraceparentParse(benchmark::State& st) {
  std::vector<std::string> texts(4096);
  for (auto& t : texts) t = edri::new_trace(false).text();
  std::size_t i = 0;
  for (auto _ : st) {
    auto parsed = edri::parse_traceparent(texts[i++ & 4095]);
    benchmark::DoNotOptimize(parsed);
  }
}
BENCHMARK(BM_TraceparentParse);

// A new trace's ids and their text: the listener's part for a request
// that comes without a `traceparent`.
void BM_TraceStart(benchmark::State& st) {
  char text[edri::TraceContext::kTextSize];
  for (auto _ : st) {
    edri::new_trace(false).write(text);
    benchmark::DoNotOptimize(text);
  }
}
BENCHMARK(BM_TraceStart);

}  // namespace

namespace {

// The answer's `traceparent` and `X-Request-Id` lines, as a traced
// request's listener adds them (each checked for line breaks).
void BM_AnswerTraceHeaders(benchmark::State& st) {
  const std::string traceparent = edri::new_trace(false).text();
  edri::ResponseHeaders lines;
  for (auto _ : st) {
    lines.clear();
    lines.add("traceparent", traceparent);
    lines.add("X-Request-Id", "9ce876de-0000-000000000001");
    benchmark::DoNotOptimize(lines.lines().data());
  }
}
BENCHMARK(BM_AnswerTraceHeaders);

}  // namespace
