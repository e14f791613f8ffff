#include "runtime/span_exporter.hpp"

#include <curl/curl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>

#include <spdlog/spdlog.h>

#include "runtime/json_text.hpp"
#include "runtime/line_writer.hpp"

namespace edri {

namespace {

constexpr std::size_t kBatch = 512;
constexpr auto kPace = std::chrono::milliseconds(200);
constexpr long kPostTimeoutMs = 2000;

void quoted(std::string& out, std::string_view text) {
  out += '"';
  append_json_text(out, text);
  out += '"';
}

// `n` in decimal, without a temporary string.
void decimal(std::string& out, std::uint64_t n) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
  out.append(digits, end);
}

void attribute(std::string& out, const SpanAttribute& a) {
  out += R"({"key":)";
  quoted(out, a.key);
  if (a.is_number) {
    // OTLP JSON writes 64-bit integers as strings.
    out += R"(,"value":{"intValue":")";
    if (a.number < 0) out += '-';
    decimal(out, a.number < 0 ? 0 - static_cast<std::uint64_t>(a.number) : static_cast<std::uint64_t>(a.number));
    out += '"';
  } else {
    out += R"(,"value":{"stringValue":)";
    quoted(out, a.text);
  }
  out += "}}";
}

bool is_root(const SpanId& parent) {
  for (const auto b : parent)
    if (b) return false;
  return true;
}

void append_span(std::string& out, const SpanRecord& s) {
  out += R"({"traceId":")";
  append_hex(out, s.context.trace_id);
  out += R"(","spanId":")";
  append_hex(out, s.context.span_id);
  out += '"';
  if (!is_root(s.parent)) {
    out += R"(,"parentSpanId":")";
    append_hex(out, s.parent);
    out += '"';
  }
  out += R"(,"flags":)";
  decimal(out, 256u + s.context.flags);  // 0x100: whether the parent is remote is known
  out += R"(,"name":)";
  quoted(out, s.name);
  out += R"(,"kind":)";
  decimal(out, static_cast<std::uint64_t>(s.kind));
  out += R"(,"startTimeUnixNano":")";
  decimal(out, s.start_ns);
  out += R"(","endTimeUnixNano":")";
  decimal(out, s.end_ns);
  out += R"(","attributes":[)";
  for (std::size_t i = 0; i < s.attributes.size(); ++i) {
    if (i) out += ',';
    attribute(out, s.attributes[i]);
  }
  out += R"(],"status":{"code":)";
  out += s.error ? "2}}" : "0}}";
}

}  // namespace

std::uint64_t unix_now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

std::string otlp_json(const std::vector<SpanRecord>& spans, std::string_view service, std::string_view process) {
  std::string out;
  out.reserve(512 + 1024 * spans.size());
  out += R"({"resourceSpans":[{"resource":{"attributes":[)";
  attribute(out, {"service.name", std::string(service)});
  out += ',';
  attribute(out, {"process.pid", std::int64_t{::getpid()}});
  out += ',';
  attribute(out, {"edri.process", std::string(process)});
  out += R"(]},"scopeSpans":[{"scope":{"name":"edri-server"},"spans":[)";
  for (std::size_t i = 0; i < spans.size(); ++i) {
    if (i) out += ',';
    append_span(out, spans[i]);
  }
  out += "]}]}]}";
  return out;
}

std::unique_ptr<SpanExporter> SpanExporter::open(const Config& config, std::string process) {
  if (config.trace_otlp_endpoint.empty() && config.trace_path.empty()) return nullptr;
  return std::make_unique<SpanExporter>(
      Settings{config.trace_otlp_endpoint, config.trace_path, config.trace_buffer, std::move(process)});
}

SpanExporter::SpanExporter(Settings settings) : settings_(std::move(settings)) {
  if (!settings_.path.empty()) {
    file_ = LineWriter::open_for_append(settings_.path);
    if (!file_) notice("cannot open EDRI_TRACE_PATH " + settings_.path + ": " + std::strerror(errno));
  }
  if (!settings_.endpoint.empty()) {
    // Here, on the owner's thread: curl_global_init is not thread-safe.
    curl_global_init(CURL_GLOBAL_DEFAULT);
    curl_ = curl_easy_init();
  }
  queued_.reserve(kBatch);
  thread_ = std::thread([this] { run(); });
}

SpanExporter::~SpanExporter() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
  if (curl_) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

void SpanExporter::submit(SpanRecord span) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    if (queued_.size() >= settings_.buffer) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    queued_.push_back(std::move(span));
    wake = queued_.size() == kBatch;
  }
  if (wake) wake_.notify_one();
}

std::string SpanExporter::take_notice() {
  std::lock_guard lock(mutex_);
  return std::exchange(notice_, {});
}

void SpanExporter::notice(std::string text) {
  std::lock_guard lock(mutex_);
  if (notice_.empty()) notice_ = std::move(text);  // the first of a burst says enough
}

void SpanExporter::run() {
  std::vector<SpanRecord> taken;
  for (bool last = false; !last;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, kPace, [this] { return stop_ || queued_.size() >= kBatch; });
      last = stop_;
      taken.swap(queued_);
    }
    bool post = curl_ != nullptr;
    for (std::size_t at = 0; at < taken.size(); at += kBatch) {
      const auto end = taken.begin() + static_cast<std::ptrdiff_t>(std::min(taken.size(), at + kBatch));
      export_batch(std::vector<SpanRecord>(std::make_move_iterator(taken.begin() + static_cast<std::ptrdiff_t>(at)),
                                           std::make_move_iterator(end)),
                   post);
    }
    taken.clear();
  }
}

void SpanExporter::export_batch(const std::vector<SpanRecord>& spans, bool& post_it) {
  if (spans.empty()) return;
  std::string body = otlp_json(spans, "edri-server", settings_.process);
  if (curl_ && !(post_it && post(body))) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    post_it = false;
  }
  if (!file_) return;
  body += '\n';
  // One write of whole lines: O_APPEND keeps those of several processes apart.
  if (::write(file_.get(), body.data(), body.size()) != static_cast<ssize_t>(body.size()))
    notice("cannot write EDRI_TRACE_PATH " + settings_.path + ": " + std::strerror(errno));
}

bool SpanExporter::post(const std::string& body) {
  auto* e = static_cast<CURL*>(curl_);
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  curl_easy_setopt(e, CURLOPT_URL, settings_.endpoint.c_str());
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, kPostTimeoutMs);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(
      e, CURLOPT_WRITEFUNCTION, +[](char*, size_t size, size_t n, void*) { return size * n; });
  const CURLcode code = curl_easy_perform(e);
  long status = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  if (code == CURLE_OK && status >= 200 && status <= 299) return true;
  notice("spans not exported to " + settings_.endpoint + ": " +
         (code != CURLE_OK ? std::string(curl_easy_strerror(code)) : "HTTP " + std::to_string(status)));
  return false;
}

void log_trace_notices(SpanExporter& exporter, std::uint64_t& dropped, std::atomic<std::uint64_t>* counted) {
  if (const std::string notice = exporter.take_notice(); !notice.empty()) spdlog::warn("tracing: {}", notice);
  const std::uint64_t now = exporter.dropped();
  if (now != dropped)
    spdlog::warn("tracing: {} spans dropped (past EDRI_TRACE_BUFFER; the exporter is behind)", now - dropped);
  dropped = now;
  if (counted) counted->store(now, std::memory_order_relaxed);
}

}  // namespace edri
