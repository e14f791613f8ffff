#include "manager/traces.hpp"

#include <chrono>

namespace edri::manager {

namespace {

constexpr auto kNoticePace = std::chrono::seconds(1);
// Handler spans kept for answers: past this many, those older than
// kStale go (a request dropped unanswered, a deadline that passed).
constexpr std::size_t kOpenLimit = 1u << 16;
constexpr std::uint64_t kStale = 600'000'000'000;  // 10 minutes, in ns

}  // namespace

Traces::Traces(EventLoop& loop, const Config& config, std::string title, TraceCounts counted,
               std::vector<int> exporter_cpus)
    : exporter_(SpanExporter::open(config, std::move(title), std::move(exporter_cpus))),
      counted_(counted),
      notices_(loop, [this] {
        log_trace_notices(*exporter_, dropped_, counted_);
        notices_.expires_after(kNoticePace);
      }) {
  if (exporter_) notices_.expires_after(kNoticePace);
}

std::string_view Traces::begin(const envelope::EnvelopeHeader& h, std::string_view section, std::string_view event,
                               std::string_view domain) {
  if (!exporter_ || section.empty()) return {};
  const auto sender = parse_traceparent(section.substr(0, TraceContext::kTextSize));
  if (!sender) return {};
  // An unsampled trace makes no span here, so it is carried on as it
  // came: no span id of its own to draw and write (W3C Trace Context
  // lets a participant that records nothing pass the parent on).
  if (!sender->sampled()) {
    section.copy(text_, TraceContext::kTextSize);
    return {text_, TraceContext::kTextSize};
  }
  const TraceContext mine = sender->child();
  mine.write(text_);
  if (open_.size() >= kOpenLimit) forget_stale();
  open_.insert_or_assign(key_of(h), Open{mine, sender->span_id, unix_now_ns(), std::string(event), domain});
  return {text_, TraceContext::kTextSize};
}

void Traces::end(const envelope::EnvelopeHeader& h, int status) {
  if (open_.empty()) return;
  const auto it = open_.find(key_of(h));
  if (it == open_.end()) return;
  const Open& o = it->second;
  using A = SpanView::Attribute;
  const A attributes[] = {A::of_text("edri.domain", o.domain), A::of_text("edri.event", o.name),
                          A::of_number("http.response.status_code", status)};
  exporter_->submit(
      SpanView{o.context, o.parent, SpanKind::Server, status >= 500, o.start_ns, unix_now_ns(), o.name, attributes});
  open_.erase(it);
}

std::optional<Traces::Call> Traces::call(std::string_view parent, std::string_view state) const {
  if (!exporter_ || parent.empty()) return std::nullopt;
  const auto p = parse_traceparent(parent);
  if (!p) return std::nullopt;
  return Call{p->child(), p->span_id, unix_now_ns(), std::string(state)};
}

void Traces::finish(const Call& call, std::string name, bool error, std::vector<SpanAttribute> attributes,
                    SpanKind kind) {
  if (!exporter_ || !call.context.sampled()) return;
  exporter_->submit(SpanRecord{call.context, call.parent, kind, std::move(name), call.start_ns, unix_now_ns(), error,
                               std::move(attributes)});
}

void Traces::forget_stale() {
  const std::uint64_t now = unix_now_ns();
  std::erase_if(open_, [&](const auto& entry) { return now - entry.second.start_ns > kStale; });
}

}  // namespace edri::manager
