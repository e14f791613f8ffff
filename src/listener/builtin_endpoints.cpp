#include "listener/builtin_endpoints.hpp"

#include "plugin/openapi.hpp"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "grpc/status.hpp"
#include "listener/proc_stat.hpp"
#include "plugin/plugin_metrics.hpp"

namespace edri::listener {

namespace {

bool pid_alive(std::uint32_t pid) { return pid != 0 && ::kill(static_cast<pid_t>(pid), 0) == 0; }

// Whether `pid` is stopped (SIGSTOP, a debugger): alive, yet it serves
// nothing, so /health must not say it is well.
bool pid_stopped(std::uint32_t pid) {
  const auto fields = proc_stat_fields(pid);
  return fields && (fields->front() == 'T' || fields->front() == 't');
}

// The switch's list of instances (a JSON array), read under its sequence
// lock; an empty array when it is being written twice over.
nlohmann::json cluster_instances(const transport::ClusterState& c) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    const auto before = c.instances_version.load(std::memory_order_acquire);
    if (before & 1) continue;
    char copy[transport::kClusterInstancesBytes];
    std::memcpy(copy, c.instances, sizeof copy);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (c.instances_version.load(std::memory_order_relaxed) != before) continue;
    copy[sizeof copy - 1] = '\0';
    auto parsed = nlohmann::json::parse(copy, nullptr, false);
    if (parsed.is_array()) return parsed;
  }
  return nlohmann::json::array();
}

}  // namespace

// Prometheus label values escape backslash, quote and newline.
std::string BuiltinEndpoints::label(std::string_view v) { return plugin::prometheus_escaped(v, true); }

BuiltinEndpoints::BuiltinEndpoints(const Config& config, const transport::Segment& segment,
                                   const transport::Topology& topology, const plugin::PluginSet& plugins,
                                   const std::vector<std::string>& manager_domains)
    : config_(config), segment_(segment), topology_(topology), plugins_(plugins), call_rows_(plugins) {
  const auto manager_titles = plugin::manager_titles(manager_domains);
  slot_names_.resize(topology.process_slots());
  slot_names_[transport::Topology::kBroker] = "broker";
  slot_names_[transport::Topology::kRouter] = "router";
  for (std::uint32_t i = 0; i < topology.listeners(); ++i)
    slot_names_[topology.listener_slot(i)] = topology.listeners() == 1 ? "listener" : "listener " + std::to_string(i);
  slot_domains_.resize(topology.process_slots());
  for (std::uint32_t j = 0; j < topology.managers(); ++j) {
    slot_names_[topology.manager_slot(j)] = "manager " + manager_titles.at(j);
    slot_domains_[topology.manager_slot(j)] = manager_domains.at(j);
    if (std::find(domains_.begin(), domains_.end(), manager_domains[j]) == domains_.end())
      domains_.push_back(manager_domains[j]);
  }
  if (topology.has_switch()) slot_names_[topology.switch_slot()] = "switch";
  for (const auto& r : plugins.routes()) route_labels_.push_back(std::string(method_name(r.method)) + " " + r.path);
  route_labels_.push_back("(none)");  // answers given without a route
}

std::optional<BuiltinEndpoints::Answer> BuiltinEndpoints::handle(std::string_view path, bool admin) const {
  // With an admin socket, the public side has no built-in endpoints.
  if (!admin && !config_.admin_socket.empty()) return std::nullopt;
  if (path.empty()) return std::nullopt;
  if (path == config_.health_path) return health(admin);
  if (path == config_.ready_path) return ready();
  if (path == config_.metrics_path) return metrics();
  return std::nullopt;
}

bool BuiltinEndpoints::serves_publicly(const Config& config, std::string_view path) {
  if (config.serves_api_docs() && (path == plugin::kApiDocumentPath || path == "/docs" || path.starts_with("/docs/")))
    return true;
  return config.admin_socket.empty() && !path.empty() &&
         (path == config.health_path || path == config.ready_path || path == config.metrics_path);
}

std::uint64_t BuiltinEndpoints::stalled_for(const transport::DoorbellState& d) const {
  // Asleep in epoll_wait it waits for work, and work wakes it: not stuck.
  if (d.sleeping.load(std::memory_order_relaxed) != 0) return 0;
  const std::uint64_t turn = d.turn_ms.load(std::memory_order_relaxed);
  const std::uint64_t now = transport::turn_clock_ms();
  const std::uint64_t age = now > turn ? now - turn : 0;
  return age > static_cast<std::uint64_t>(config_.health_stall_s * 1000) ? age : 0;
}

std::vector<BuiltinEndpoints::ProcessView> BuiltinEndpoints::processes() const {
  std::vector<ProcessView> out;
  const auto supervisor = static_cast<std::uint32_t>(segment_.header().supervisor_pid);
  out.push_back({"supervisor", supervisor, pid_alive(supervisor), 0});
  out.back().stopped = out.back().alive && pid_stopped(supervisor);
  for (std::uint32_t s = 1; s < topology_.process_slots(); ++s) {
    const auto& d = segment_.doorbell(s);
    const auto pid = d.pid.load(std::memory_order_acquire);
    out.push_back({slot_names_[s], pid, pid_alive(pid), d.restarts.load(std::memory_order_relaxed),
                   d.failures.load(std::memory_order_relaxed), d.restart_delay_ms.load(std::memory_order_relaxed)});
    out.back().stopped = out.back().alive && pid_stopped(pid);
    out.back().stalled_ms = out.back().alive ? stalled_for(d) : 0;
  }
  return out;
}

BuiltinEndpoints::Answer BuiltinEndpoints::health(bool pids) const {
  bool all = true;
  auto list = nlohmann::json::array();
  const auto views = processes();
  for (const auto& p : views) {
    all = all && p.serving();
    nlohmann::json entry{{"name", p.name}, {"alive", p.alive}, {"restarts", p.restarts}};
    // A domain run inside the listener (EDRI_LISTENER_DOMAINS) has its pid.
    const auto host = std::find_if(views.begin(), views.end(), [&](const ProcessView& v) { return v.pid == p.pid; });
    if (p.pid != 0 && host != views.end() && &*host != &p) entry["inside"] = host->name;
    if (p.stopped) entry["stopped"] = true;
    if (p.stalled_ms) entry["stalled_ms"] = p.stalled_ms;
    if (pids) entry["pid"] = p.pid;  // the admin socket's alone: a pid helps whoever would signal it
    // A process that keeps dying soon after each start: the supervisor
    // waits longer before each restart (up to 5 s).
    if (p.failures >= transport::kCrashLoopFailures) entry["crash_loop"] = true;
    if (p.failures > 0) entry["quick_deaths"] = p.failures;
    if (p.restart_delay_ms > 0) entry["restart_delay_ms"] = p.restart_delay_ms;
    list.push_back(std::move(entry));
  }
  nlohmann::json j{{"status", all ? "ok" : "degraded"},
                   {"processes", list},
                   {"placement",
                    {{"spread", placement_.spread},
                     {"spin", placement_.spin},
                     {"listeners", topology_.listeners()},
                     {"summary", placement_.summary}}}};
  if (topology_.has_switch()) {
    // A NATS outage leaves the local domains served: named, not a 503.
    const auto& c = segment_.header().cluster;
    j["cluster"] = {{"nats", c.nats_up.load(std::memory_order_relaxed) ? "up" : "down"},
                    {"instances", cluster_instances(c)}};
  }
  return {all ? 200 : 503, "application/json", j.dump()};
}

BuiltinEndpoints::Answer BuiltinEndpoints::ready() const {
  const auto& h = segment_.header();
  const auto subscribed = h.managers_subscribed.load(std::memory_order_acquire);
  const auto managers = h.manager_count.load(std::memory_order_relaxed);
  bool alive = true;
  for (const auto& p : processes()) alive = alive && p.serving();
  const bool ready = alive && subscribed >= managers;
  nlohmann::json j{{"status", ready ? "ready" : "not ready"},
                   {"managers", managers},
                   {"managers_subscribed", subscribed},
                   {"processes_alive", alive}};
  return {ready ? 200 : 503, "application/json", j.dump()};
}

// One route's histogram, the listeners' cells summed; nothing for a route
// no request took.
void BuiltinEndpoints::latency(std::ostringstream& o, std::string_view name, const std::string& labels,
                               const CellsOf& cells_of) const {
  using namespace transport;
  const auto listeners = segment_.header().listener_count;
  std::uint64_t cells[kRouteLatencyCells] = {};
  for (std::uint32_t l = 0; l < listeners; ++l) {
    const auto* first = cells_of(l);
    for (std::size_t i = 0; i < kRouteLatencyCells; ++i) cells[i] += first[i].load(std::memory_order_relaxed);
  }
  const std::uint64_t count = cells[kLatencyBuckets + 1];
  if (count == 0) return;
  const std::string open = labels.empty() ? "{" : "{" + labels + ",";
  const std::string only = labels.empty() ? "" : "{" + labels + "}";
  std::uint64_t cumulative = 0;
  for (std::size_t b = 0; b < kLatencyBuckets; ++b) {
    cumulative += cells[b];
    o << name << "_bucket" << open << "le=\"";
    if (b < std::size(kLatencyBucketsUs))
      o << static_cast<double>(kLatencyBucketsUs[b]) / 1e6;
    else
      o << "+Inf";
    o << "\"} " << cumulative << '\n';
  }
  o << name << "_sum" << only << ' ' << static_cast<double>(cells[kLatencyBuckets]) / 1e6 << '\n'
    << name << "_count" << only << ' ' << count << '\n';
}

BuiltinEndpoints::Answer BuiltinEndpoints::metrics() const {
  using namespace transport;
  const auto& h = segment_.header();
  std::ostringstream o;
  o << "# HELP edri_requests_total Responses sent, by route and status.\n"
       "# TYPE edri_requests_total counter\n";
  for (std::uint32_t row = 0; row <= h.route_count; ++row) {
    for (std::size_t col = 0; col < kStatusColumns; ++col) {
      std::uint64_t n = 0;
      for (std::uint32_t l = 0; l < h.listener_count; ++l)
        n += segment_.request_counter(l, row, col).load(std::memory_order_relaxed);
      if (!n) continue;
      o << "edri_requests_total{route=\"" << label(route_labels_.at(row)) << "\",status=\""
        << (col < std::size(kTrackedStatuses) ? std::to_string(kTrackedStatuses[col]) : std::string("other")) << "\"} "
        << n << '\n';
    }
  }
  o << "# HELP edri_request_duration_seconds Time from a request's arrival in the listener to its response, by "
       "route.\n"
       "# TYPE edri_request_duration_seconds histogram\n";
  for (std::uint32_t row = 0; row <= h.route_count; ++row)
    latency(o, "edri_request_duration_seconds", "route=\"" + label(route_labels_.at(row)) + "\"",
            [&](std::uint32_t l) { return &segment_.route_latency(l, row); });

  o << "# HELP edri_client_output_bytes Bytes a listener holds unsent for its clients (EDRI_OUTPUT_BUFFER_TOTAL).\n"
       "# TYPE edri_client_output_bytes gauge\n";
  for (std::uint32_t l = 0; l < h.listener_count; ++l)
    o << "edri_client_output_bytes{listener=\"" << l << "\"} "
      << segment_.listener_metrics(l).output_held_bytes.load(std::memory_order_relaxed) << '\n';
  // A counter each listener keeps, summed.
  auto listeners_counter = [&](const char* name, const char* help,
                               std::atomic<std::uint64_t> ListenerMetricsHeader::*v) {
    std::uint64_t n = 0;
    for (std::uint32_t l = 0; l < h.listener_count; ++l)
      n += (segment_.listener_metrics(l).*v).load(std::memory_order_relaxed);
    o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " counter\n" << name << ' ' << n << '\n';
  };
  listeners_counter("edri_clients_shed_total", "Clients closed for falling too far behind their output.",
                    &ListenerMetricsHeader::clients_shed);
  listeners_counter("edri_proxy_headers_refused_total",
                    "Connections from trusted proxies closed without a valid PROXY protocol header.",
                    &ListenerMetricsHeader::proxy_headers_refused);
  listeners_counter("edri_access_log_lines_total", "Access log lines queued for writing (EDRI_ACCESS_LOG).",
                    &ListenerMetricsHeader::access_log_lines);
  listeners_counter("edri_access_log_dropped_total",
                    "Access log lines dropped: the writer's buffer was full (a slow disk), or a write failed.",
                    &ListenerMetricsHeader::access_log_dropped);
  listeners_counter("edri_sse_streams_total", "Server-Sent Events streams opened on live streams.",
                    &ListenerMetricsHeader::sse_streams);
  listeners_counter("edri_stream_frames_total",
                    "Live-stream frames sent to subscribers (WebSocket, Server-Sent Events and gRPC).",
                    &ListenerMetricsHeader::stream_frames);
  // A column of a counter array each listener keeps, summed.
  auto listeners_column = [&](auto array, std::size_t column) {
    std::uint64_t n = 0;
    for (std::uint32_t l = 0; l < h.listener_count; ++l)
      n += (segment_.listener_metrics(l).*array)[column].load(std::memory_order_relaxed);
    return n;
  };
  o << "# HELP edri_websocket_commands_total WebSocket commands answered, by status.\n"
       "# TYPE edri_websocket_commands_total counter\n";
  for (std::size_t col = 0; col < kStatusColumns; ++col)
    if (const auto n = listeners_column(&ListenerMetricsHeader::websocket_commands, col))
      o << "edri_websocket_commands_total{status=\""
        << (col < std::size(kTrackedStatuses) ? std::to_string(kTrackedStatuses[col]) : std::string("other")) << "\"} "
        << n << '\n';
  o << "# HELP edri_grpc_calls_total gRPC calls ended, by status code.\n"
       "# TYPE edri_grpc_calls_total counter\n";
  for (std::size_t code = 0; code < kGrpcCodes; ++code)
    if (const auto n = listeners_column(&ListenerMetricsHeader::grpc_calls, code))
      o << "edri_grpc_calls_total{code=\"" << grpc::code_name(static_cast<grpc::Code>(code)) << "\"} " << n << '\n';
  o << "# HELP edri_websocket_command_duration_seconds Time from a WebSocket command's arrival to its answer, by "
       "command.\n"
       "# TYPE edri_websocket_command_duration_seconds histogram\n";
  const auto& commands = call_rows_.commands();
  for (std::uint32_t row = 0; row < commands.size(); ++row)
    latency(o, "edri_websocket_command_duration_seconds", "command=\"" + label(commands[row]) + "\"",
            [&](std::uint32_t l) { return &segment_.call_latency(l, row); });
  o << "# HELP edri_grpc_call_duration_seconds Time from a unary gRPC call's arrival to its end, by method "
       "(streaming calls are not counted).\n"
       "# TYPE edri_grpc_call_duration_seconds histogram\n";
  const auto& methods = call_rows_.methods();
  for (std::uint32_t i = 0; i < methods.size(); ++i)
    latency(o, "edri_grpc_call_duration_seconds", "method=\"" + label(methods[i]) + "\"", [&](std::uint32_t l) {
      return &segment_.call_latency(l, static_cast<std::uint32_t>(commands.size()) + i);
    });

  o << "# HELP edri_channel_depth_bytes Bytes written to a channel and not yet read.\n"
       "# TYPE edri_channel_depth_bytes gauge\n";
  const auto& specs = topology_.channels();
  for (std::uint32_t c = 0; c < specs.size(); ++c) {
    const auto& ctl = segment_.control(c);
    const auto depth = ctl.tail.load(std::memory_order_relaxed) - ctl.head.load(std::memory_order_relaxed);
    o << "edri_channel_depth_bytes{from=\"" << label(slot_names_[specs[c].producer]) << "\",to=\""
      << label(slot_names_[specs[c].consumer]) << "\"} " << depth << '\n';
  }
  o << "# HELP edri_process_up Whether a process of the server is running.\n"
       "# TYPE edri_process_up gauge\n";
  const auto procs = processes();
  for (const auto& p : procs) o << "edri_process_up{process=\"" << label(p.name) << "\"} " << (p.alive ? 1 : 0) << '\n';
  o << "# HELP edri_process_restarts_total Times the supervisor restarted a process.\n"
       "# TYPE edri_process_restarts_total counter\n";
  for (const auto& p : procs)
    if (p.name != "supervisor")
      o << "edri_process_restarts_total{process=\"" << label(p.name) << "\"} " << p.restarts << '\n';
  if (blobs_) {
    o << "# HELP edri_blob_bytes Bytes of the blob area (large bodies): in use, and in all.\n"
         "# TYPE edri_blob_bytes gauge\n"
      << "edri_blob_bytes{state=\"used\"} " << blobs_->used_bytes() << '\n'
      << "edri_blob_bytes{state=\"capacity\"} " << blobs_->capacity() << '\n';
  }
  loop_metrics(o);
  domain_metrics(o);
  if (topology_.has_switch()) cluster_metrics(o);
  plugin::write_plugin_metrics(o, segment_, plugins_);
  return {200, "text/plain; version=0.0.4; charset=utf-8", o.str()};
}

void BuiltinEndpoints::cluster_metrics(std::ostringstream& o) const {
  const auto& c = segment_.header().cluster;
  auto counter = [&](const char* name, const char* help, const std::atomic<std::uint64_t>& v) {
    o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " counter\n"
      << name << ' ' << v.load(std::memory_order_relaxed) << '\n';
  };
  o << "# HELP edri_cluster_nats_up Whether the switch is connected to NATS.\n# TYPE edri_cluster_nats_up gauge\n"
    << "edri_cluster_nats_up " << c.nats_up.load(std::memory_order_relaxed) << '\n'
    << "# HELP edri_cluster_instances Instances of this app seen on NATS in the last 3 s, this one included.\n"
       "# TYPE edri_cluster_instances gauge\n"
    << "edri_cluster_instances " << cluster_instances(c).size() << '\n';
  counter("edri_cluster_requests_sent_total", "Requests sent to other instances.", c.requests_sent);
  counter("edri_cluster_requests_served_total", "Requests served for other instances.", c.requests_served);
  counter("edri_cluster_requests_refused_total",
          "Requests for other instances answered at once (NATS down, no instance runs the domain, too large).",
          c.requests_refused);
  counter("edri_cluster_requests_expired_total", "Requests sent to other instances and not answered in time.",
          c.requests_expired);
  counter("edri_cluster_notifications_sent_total", "Notifications published for other instances.",
          c.notifications_sent);
  counter("edri_cluster_notifications_received_total", "Notifications received from other instances.",
          c.notifications_received);
  counter("edri_cluster_reconnects_total", "Times NATS came back after it was lost.", c.reconnects);
}

}  // namespace edri::listener
