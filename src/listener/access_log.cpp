#include "listener/access_log.hpp"

#include <cerrno>
#include <cstring>

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
  if (format_of(config.access_log) == AccessFormat::Off) return nullptr;
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
      writer_("access log", config.access_log_path, config.access_log_buffer, counters, writer_cpus) {
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
  r->trace_id = head ? trace_id_of(head->header("traceparent")) : std::string_view();
  return r;
}

std::chrono::system_clock::time_point AccessLog::wall_time(std::chrono::steady_clock::time_point t) {
  if (t - synced_ >= std::chrono::seconds(1)) {
    synced_ = std::chrono::steady_clock::now();
    wall_offset_ = std::chrono::system_clock::now().time_since_epoch() -
                   std::chrono::duration_cast<std::chrono::system_clock::duration>(synced_.time_since_epoch());
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
  line_.clear();
  formatter_.append(line_, *r, o);
  constexpr std::size_t kSpareRecords = 1024;
  if (spare_.size() < kSpareRecords) spare_.push_back(std::move(r));
  writer_.write_line(line_);
}

}  // namespace edri::listener
