#include "listener/access_log.hpp"

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

namespace edri::listener {

namespace {

AccessFormat format_of(const std::string& setting) {
  if (setting == "combined") return AccessFormat::Combined;
  if (setting == "json") return AccessFormat::Json;
  return AccessFormat::Off;
}

}  // namespace

std::unique_ptr<AccessLog> AccessLog::open(const Config& config, const plugin::PluginSet& plugins, Counters counters,
                                           const std::vector<int>& writer_cpus) {
  if (format_of(config.access_log) == AccessFormat::Off && !config.tracing()) return nullptr;
  return std::make_unique<AccessLog>(config, plugins, counters, writer_cpus);
}

void AccessLog::check(const Config& config) {
  if (format_of(config.access_log) == AccessFormat::Off || config.access_log_path.empty()) return;
  if (!LineWriter::open_for_append(config.access_log_path))
    throw ConfigError("EDRI_ACCESS_LOG_PATH: cannot open " + config.access_log_path +
                      " for appending: " + std::strerror(errno));
}

AccessLog::AccessLog(const Config& config, const plugin::PluginSet& plugins, Counters counters,
                     const std::vector<int>& writer_cpus)
    : formatter_(format_of(config.access_log)),
      trace_sample_(config.trace_sample),
      tracer_(SpanExporter::open(config, "listener", writer_cpus)) {
  if (format_of(config.access_log) != AccessFormat::Off)
    writer_ = std::make_unique<LineWriter>("access log", config.access_log_path, config.access_log_buffer, counters,
                                           writer_cpus);
  for (const auto& r : plugins.routes()) {
    route_paths_.push_back(r.path);
    route_domains_.push_back(plugins.events()[r.event].domain);
  }
  // In the listener's order of route targets: the plugins' routes, then
  // their Server-Sent Events routes (served by the listener: no domain).
  for (const auto& path : plugins.stream_event_routes()) {
    route_paths_.push_back(path);
    route_domains_.emplace_back();
  }
  for (const auto& ev : plugins.events()) event_domains_.emplace(ev.name, ev.domain);
}

std::unique_ptr<AccessRecord> AccessLog::begin(std::string_view protocol, std::string_view method,
                                               std::string_view target, std::string_view client,
                                               const http::HttpRequest* head) {
  std::unique_ptr<AccessRecord> r;
  if (spare_.empty()) {
    r = std::make_unique<AccessRecord>();
  } else {
    r = std::move(spare_.back());
    spare_.pop_back();
  }
  r->started = std::chrono::steady_clock::now();
  r->received = wall_time(r->started);
  r->protocol = protocol;
  r->method = method;
  r->target = target;
  r->route = {};
  r->domain = {};
  r->client = client;
  r->request_id.clear();
  r->bytes_in = 0;
  r->user_agent = head ? head->header("user-agent") : std::string_view();
  r->referer = head ? head->header("referer") : std::string_view();
  r->traced = false;
  if (tracer_)
    start_trace(*r, head);
  else
    r->trace_id = head ? trace_id_of(head->header("traceparent")) : std::string_view();
  return r;
}

void AccessLog::start_trace(AccessRecord& r, const http::HttpRequest* head) {
  const std::string_view given = head ? head->header("traceparent") : std::string_view();
  const auto client = given.empty() ? std::nullopt : parse_traceparent(given);
  r.traced = true;
  r.span = client ? client->child() : new_trace(sample(trace_sample_));
  r.parent = client ? client->span_id : SpanId{};
  // Into the record's own strings, kept from call to call: no allocation.
  char text[TraceContext::kTextSize];
  r.span.write(text);
  r.trace_id.assign(text + 3, 32);
  r.trace_section.assign(text, sizeof text);
  // A vendor's state goes on only with the trace it belongs to.
  const std::string_view state = client ? head->header("tracestate") : std::string_view();
  if (!state.empty() && state.size() <= 512 && state.find('\n') == std::string_view::npos)
    r.trace_section.append("\n").append(state);
}

std::chrono::system_clock::time_point AccessLog::wall_time(std::chrono::steady_clock::time_point t) {
  if (t - synced_ >= std::chrono::seconds(1)) {
    synced_ = std::chrono::steady_clock::now();
    wall_offset_ = std::chrono::system_clock::now().time_since_epoch() -
                   std::chrono::duration_cast<std::chrono::system_clock::duration>(synced_.time_since_epoch());
    if (tracer_) log_trace_notices(*tracer_, trace_dropped_, trace_counted_);
  }
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(t.time_since_epoch()) + wall_offset_);
}

void AccessLog::set_route(AccessRecord& r, std::uint32_t row) const {
  if (row >= route_paths_.size()) return;
  r.route = route_paths_[row];
  r.domain = route_domains_[row];
}

std::string_view AccessLog::domain_of(std::string_view event) const {
  const auto it = event_domains_.find(event);
  return it == event_domains_.end() ? std::string_view() : std::string_view(it->second);
}

void AccessLog::end(std::unique_ptr<AccessRecord> r, int status, std::uint64_t bytes_out, int grpc_status) {
  end(std::move(r), AccessOutcome{status, grpc_status, bytes_out, std::chrono::steady_clock::now()});
}

void AccessLog::end(std::unique_ptr<AccessRecord> r, const AccessOutcome& o) {
  if (r->traced && r->span.sampled()) submit_span(*r, o);
  if (writer_) {
    line_.clear();
    formatter_.append(line_, *r, o);
    writer_->write_line(line_);
  }
  constexpr std::size_t kSpareRecords = 1024;
  if (spare_.size() < kSpareRecords) spare_.push_back(std::move(r));
}

// OpenTelemetry's names: an HTTP server span "GET /notes/{id}", a gRPC
// one "pkg.Service/Method", a command "websocket notes.create".
void AccessLog::submit_span(const AccessRecord& r, const AccessOutcome& o) {
  const std::string_view path = std::string_view(r.target).substr(0, r.target.find('?'));
  if (r.protocol == "grpc") {
    span_name_.assign(path.substr(path.empty() ? 0 : 1));
  } else {
    span_name_.assign(r.protocol == "websocket" ? std::string_view("websocket") : std::string_view(r.method));
    span_name_.append(" ").append(r.protocol == "websocket" ? std::string_view(r.method)
                                  : r.route.empty()         ? path
                                                            : r.route);
  }
  const auto start_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(r.received.time_since_epoch()).count());
  const auto took_ns =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(o.ended - r.started).count());
  const bool error =
      o.status >= 500 || (o.grpc_status > 0 && o.grpc_status != 1 && o.grpc_status != 3 && o.grpc_status != 5);
  using A = SpanView::Attribute;
  A a[10];
  std::size_t n = 0;
  a[n++] = A::of_text("network.protocol.name", r.protocol);
  a[n++] = A::of_text("http.request.method", r.method);
  a[n++] = A::of_text("url.path", path);
  if (!r.route.empty()) a[n++] = A::of_text("http.route", r.route);
  a[n++] = A::of_number("http.response.status_code", o.status);
  if (o.grpc_status >= 0) a[n++] = A::of_number("rpc.grpc.status_code", o.grpc_status);
  a[n++] = A::of_text("client.address", r.client);
  if (!r.domain.empty()) a[n++] = A::of_text("edri.domain", r.domain);
  if (!r.request_id.empty()) a[n++] = A::of_text("edri.request_id", r.request_id);
  if (!r.user_agent.empty()) a[n++] = A::of_text("user_agent.original", r.user_agent);
  tracer_->submit(SpanView{r.span, r.parent, SpanKind::Server, error, start_ns, start_ns + took_ns, span_name_,
                           std::span<const A>(a, n)});
}

}  // namespace edri::listener
