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

Traces::Traces(EventLoop& loop, const Config& config, std::string title, std::atomic<std::uint64_t>* drops_counted)
    : exporter_(SpanExporter::open(config, std::move(title))), drops_counted_(drops_counted), notices_(loop, [this] {
        log_trace_notices(*exporter_, dropped_, drops_counted_);
        notices_.expires_after(kNoticePace);
      }) {
  if (exporter_) notices_.expires_after(kNoticePace);
}

std::string_view Traces::begin(const envelope::EnvelopeHeader& h, std::string_view section, std::string_view event,
                               std::string_view domain) {
  if (!exporter_ || section.empty()) return {};
  const auto sender = parse_traceparent(section.substr(0, TraceContext::kTextSize));
  if (!sender) return {};
  const TraceContext mine = sender->child();
  mine.write(text_);
  if (mine.sampled()) {
    if (open_.size() >= kOpenLimit) forget_stale();
    open_.insert_or_assign(key_of(h), Open{mine, sender->span_id, unix_now_ns(), std::string(event), domain});
  }
  return {text_, TraceContext::kTextSize};
}

void Traces::end(const envelope::EnvelopeHeader& h, int status) {
  if (open_.empty()) return;
  const auto it = open_.find(key_of(h));
  if (it == open_.end()) return;
  Open& o = it->second;
  SpanRecord s{o.context, o.parent, SpanKind::Server, std::move(o.name), o.start_ns, unix_now_ns(), status >= 500, {}};
  s.attributes.push_back({"edri.domain", std::string(o.domain)});
  s.attributes.push_back({"edri.event", s.name});
  s.attributes.push_back({"http.response.status_code", std::int64_t{status}});
  open_.erase(it);
  exporter_->submit(std::move(s));
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
