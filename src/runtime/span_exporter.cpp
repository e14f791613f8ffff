#include "runtime/span_exporter.hpp"

#include <curl/curl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>

#include <spdlog/spdlog.h>

#include "runtime/json_text.hpp"
#include "runtime/line_writer.hpp"
#include "runtime/placement.hpp"

namespace edri {

namespace {

constexpr std::size_t kBatch = 512;
constexpr auto kPace = std::chrono::milliseconds(200);
constexpr long kPostTimeoutMs = 2000;
// A batch a retryable failure left is tried again at most this many times
// in all, after 0.5 s, then 1, 2, 4 s (OTLP/HTTP's advice: exponential
// backoff); at most this many batches wait, the oldest given up first.
constexpr unsigned kTries = 5;
constexpr auto kFirstBackoff = std::chrono::milliseconds(500);
constexpr auto kMaxBackoff = std::chrono::milliseconds(4000);
constexpr std::size_t kHeldBatches = 8;

// Writes at a position with room enough (span_bound): no check of the
// capacity per piece, which was most of the cost of a span's ~900 bytes.
struct Cursor {
  char* at;
  void put(std::string_view text) { at = std::copy(text.begin(), text.end(), at); }
  void put(char c) { *at++ = c; }
  void quoted(std::string_view text) {
    put('"');
    at = write_json_text(at, text);
    put('"');
  }
  void decimal(std::uint64_t n) { at = std::to_chars(at, at + 20, n).ptr; }
  template <std::size_t N>
  void hex(const std::array<std::uint8_t, N>& bytes) {
    at = write_hex(at, bytes.data(), N);
  }
};

// A key is a semantic-convention name: plain ASCII, written as it is.
void attribute(Cursor& out, const SpanView::Attribute& a) {
  out.put(R"({"key":")");
  out.put(a.key);
  if (a.is_number) {
    // OTLP JSON writes 64-bit integers as strings.
    out.put(R"(","value":{"intValue":")");
    if (a.number < 0) out.put('-');
    out.decimal(a.number < 0 ? 0 - static_cast<std::uint64_t>(a.number) : static_cast<std::uint64_t>(a.number));
    out.put('"');
  } else {
    out.put(R"(","value":{"stringValue":)");
    out.quoted(a.text);
  }
  out.put("}}");
}

// The most bytes a span takes: its fixed text (about 200 bytes: the ids,
// times, names of fields), and each attribute's.
std::size_t attribute_bound(const SpanView::Attribute& a) {
  return 80 + std::string_view(a.key).size() + json_text_bound(a.text);
}

std::size_t span_bound(const SpanView& s) {
  std::size_t n = 320 + json_text_bound(s.name);
  for (const auto& a : s.attributes) n += attribute_bound(a);
  return n;
}

bool is_root(const SpanId& parent) {
  for (const auto b : parent)
    if (b) return false;
  return true;
}

void write_span(Cursor& out, const SpanView& s) {
  out.put(R"({"traceId":")");
  out.hex(s.context.trace_id);
  out.put(R"(","spanId":")");
  out.hex(s.context.span_id);
  out.put('"');
  if (!is_root(s.parent)) {
    out.put(R"(,"parentSpanId":")");
    out.hex(s.parent);
    out.put('"');
  }
  out.put(R"(,"flags":)");
  out.decimal(256u + s.context.flags);  // 0x100: whether the parent is remote is known
  out.put(R"(,"name":)");
  out.quoted(s.name);
  out.put(R"(,"kind":)");
  out.decimal(static_cast<std::uint64_t>(s.kind));
  out.put(R"(,"startTimeUnixNano":")");
  out.decimal(s.start_ns);
  out.put(R"(","endTimeUnixNano":")");
  out.decimal(s.end_ns);
  out.put(R"(","attributes":[)");
  for (std::size_t i = 0; i < s.attributes.size(); ++i) {
    if (i) out.put(',');
    attribute(out, s.attributes[i]);
  }
  out.put(R"(],"status":{"code":)");
  out.put(s.error ? "2}}" : "0}}");
}

// Appends what `write` writes in at most `bound` bytes.
template <typename Write>
void append_bounded(std::string& out, std::size_t bound, Write write) {
  const std::size_t at = out.size();
  out.resize(at + bound);
  Cursor c{out.data() + at};
  write(c);
  out.resize(static_cast<std::size_t>(c.at - out.data()));
}

// One ExportTraceServiceRequest, a span at a time.
class OtlpBody {
  using Attribute = SpanView::Attribute;

 public:
  OtlpBody(std::string_view service, std::string_view process)
      : resource_{Attribute::of_text("service.name", service), Attribute::of_number("process.pid", ::getpid()),
                  Attribute::of_text("edri.process", process)} {}
  void add(const SpanView& s) {
    if (spans_ == 0) open();
    append_bounded(text_, 1 + span_bound(s), [&](Cursor& c) {
      if (spans_) c.put(',');
      write_span(c, s);
    });
    ++spans_;
  }
  std::size_t spans() const { return spans_; }
  // The request: valid until the next add.
  std::string& finish() {
    if (spans_ == 0) open();
    text_ += "]}]}]}";
    spans_ = 0;
    return text_;
  }

 private:
  void open() {
    text_.clear();
    std::size_t bound = 128;
    for (const auto& a : resource_) bound += attribute_bound(a);
    append_bounded(text_, bound, [&](Cursor& c) {
      c.put(R"({"resourceSpans":[{"resource":{"attributes":[)");
      for (std::size_t i = 0; i < std::size(resource_); ++i) {
        if (i) c.put(',');
        attribute(c, resource_[i]);
      }
      c.put(R"(]},"scopeSpans":[{"scope":{"name":"edri-server"},"spans":[)");
    });
  }

  Attribute resource_[3];
  std::string text_;
  std::size_t spans_ = 0;
};

}  // namespace

std::uint64_t unix_now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

std::string otlp_json(const std::vector<SpanRecord>& spans, std::string_view service, std::string_view process) {
  SpanQueue queue;
  for (const auto& s : spans) queue.push(s);
  OtlpBody body(service, process);
  queue.for_each([&](const SpanView& s) { body.add(s); });
  return std::move(body.finish());
}

std::unique_ptr<SpanExporter> SpanExporter::open(const Config& config, std::string process, std::vector<int> cpus) {
  if (config.trace_otlp_endpoint.empty() && config.trace_path.empty()) return nullptr;
  return std::make_unique<SpanExporter>(Settings{config.trace_otlp_endpoint, config.trace_path, config.trace_buffer,
                                                 std::move(process), std::move(cpus)});
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
  thread_ = std::thread([this] { run(); });
  // Off the loop's CPU, as the access log's writer: it should not take
  // turns with a loop pinned to its CPU. (On 2 vCPUs this alone showed no
  // change the host could measure; the cost was elsewhere: SpanQueue.)
  if (!let_thread_float(thread_, settings_.cpus)) notice("the exporter runs where its process runs");
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

void SpanExporter::submit(const SpanView& span) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    if (queued_.size() >= settings_.buffer) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    queued_.push(span);
    wake = queued_.size() == kBatch;
  }
  if (wake) wake_.notify_one();
}

void SpanExporter::submit(const SpanRecord& span) {
  std::vector<SpanView::Attribute> attributes;
  submit(view_of(span, attributes));
}

void SpanExporter::reopen() {
  {
    std::lock_guard lock(mutex_);
    reopen_ = true;
  }
  wake_.notify_one();
}

// On the exporter's thread (the one that writes file_), under the lock.
void SpanExporter::reopen_file() {
  if (settings_.path.empty()) return;
  UniqueFd fresh = LineWriter::open_for_append(settings_.path);
  const std::string what = "EDRI_TRACE_PATH " + settings_.path;
  if (!fresh) {
    notice_locked("cannot reopen " + what + ": " + std::strerror(errno) + "; writing on to the old file");
    return;
  }
  file_ = std::move(fresh);
  notice_locked(what + " reopened");
}

std::string SpanExporter::take_notice() {
  std::lock_guard lock(mutex_);
  return std::exchange(notice_, {});
}

void SpanExporter::notice(std::string text) {
  std::lock_guard lock(mutex_);
  notice_locked(std::move(text));
}

void SpanExporter::notice_locked(std::string text) {
  if (notice_.empty()) notice_ = std::move(text);  // the first of a burst says enough
}

void SpanExporter::run() {
  SpanQueue taken;
  OtlpBody body("edri-server", settings_.process);
  for (bool last = false; !last;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, kPace, [this] { return stop_ || reopen_ || queued_.size() >= kBatch; });
      last = stop_;
      taken.swap(queued_);  // the loop fills the buffer this thread emptied
      if (std::exchange(reopen_, false)) reopen_file();
    }
    bool post = curl_ != nullptr && post_held(last);
    taken.for_each([&](const SpanView& s) {
      body.add(s);
      if (body.spans() == kBatch) export_body(body.finish(), post);
    });
    if (body.spans()) export_body(body.finish(), post);
    taken.clear();
  }
  // Stopped: what could not be posted is given up.
  failed_.fetch_add(held_.size(), std::memory_order_relaxed);
  held_.clear();
}

void SpanExporter::export_body(std::string& body, bool& post_it) {
  if (file_) {
    // One write of whole lines: O_APPEND keeps those of several processes apart.
    const iovec line[] = {{body.data(), body.size()}, {const_cast<char*>("\n"), 1}};
    if (::writev(file_.get(), line, 2) != static_cast<ssize_t>(body.size() + 1))
      notice("cannot write EDRI_TRACE_PATH " + settings_.path + ": " + std::strerror(errno));
  }
  if (!curl_) return;
  const bool tried = post_it;
  const Posted posted = tried ? post(body) : Posted::Retry;
  if (posted == Posted::Ok) return;
  post_it = false;
  if (posted == Posted::Refused) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (backoff_.count() == 0) {
    backoff_ = kFirstBackoff;
    retry_at_ = std::chrono::steady_clock::now() + backoff_;
  }
  hold(std::move(body), tried ? 1 : 0);
}

void SpanExporter::hold(std::string body, unsigned tries) {
  if (held_.size() == kHeldBatches) {
    held_.pop_front();
    failed_.fetch_add(1, std::memory_order_relaxed);
  }
  held_.push_back({std::move(body), tries});
}

bool SpanExporter::post_held(bool now) {
  if (held_.empty()) return true;
  if (!now && std::chrono::steady_clock::now() < retry_at_) return false;
  while (!held_.empty()) {
    Held& h = held_.front();
    const Posted posted = post(h.body);
    if (posted == Posted::Retry && ++h.tries < kTries) {
      backoff_ = std::min(backoff_ * 2, kMaxBackoff);
      retry_at_ = std::chrono::steady_clock::now() + backoff_;
      return false;
    }
    if (posted != Posted::Ok) failed_.fetch_add(1, std::memory_order_relaxed);
    held_.pop_front();
  }
  backoff_ = std::chrono::milliseconds(0);
  return true;
}

SpanExporter::Posted SpanExporter::post(const std::string& body) {
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
  if (code == CURLE_OK && status >= 200 && status <= 299) return Posted::Ok;
  notice("spans not exported to " + settings_.endpoint + ": " +
         (code != CURLE_OK ? std::string(curl_easy_strerror(code)) : "HTTP " + std::to_string(status)));
  const bool retry = code != CURLE_OK || status == 429 || status == 502 || status == 503 || status == 504;
  return retry ? Posted::Retry : Posted::Refused;
}

void log_trace_notices(SpanExporter& exporter, std::uint64_t& dropped, TraceCounts counted) {
  if (const std::string notice = exporter.take_notice(); !notice.empty()) spdlog::warn("tracing: {}", notice);
  const std::uint64_t now = exporter.dropped();
  if (now != dropped)
    spdlog::warn("tracing: {} spans dropped (past EDRI_TRACE_BUFFER; the exporter is behind)", now - dropped);
  dropped = now;
  if (counted.spans_dropped) counted.spans_dropped->store(now, std::memory_order_relaxed);
  if (counted.batches_failed) counted.batches_failed->store(exporter.failed_batches(), std::memory_order_relaxed);
}

}  // namespace edri
