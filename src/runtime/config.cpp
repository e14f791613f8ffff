#include "runtime/config.hpp"

#include <sys/stat.h>

#include <sys/un.h>
#include <charconv>

#include <cstdlib>
#include <sstream>

#include <edri/json_depth.hpp>

namespace edri {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

template <class T>
T parse_integer(const char* name, const char* text, T min, T max) {
  T value{};
  std::string_view s(text);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || p != s.data() + s.size())
    throw ConfigError(std::string(name) + "=" + text + ": not an integer");
  if (value < min || value > max)
    throw ConfigError(std::string(name) + "=" + text + ": must be between " + std::to_string(min) + " and " +
                      std::to_string(max));
  return value;
}

double parse_seconds(const char* name, const char* text) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v > 0) || v > 86400)
    throw ConfigError(std::string(name) + "=" + text + ": must be a number of seconds in (0, 86400]");
  return v;
}

bool parse_bool(const char* name, const char* text) {
  std::string s(text);
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  throw ConfigError(std::string(name) + "=" + text + ": must be 1/0, true/false, yes/no or on/off");
}

std::vector<std::string> split_paths_on(const std::string& text, char only) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (c == only) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::vector<std::string> split_paths(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (c == ':' || c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (part.empty()) throw std::invalid_argument("empty element");
    const auto dash = part.find('-');
    int lo = 0, hi = 0;
    auto num = [](const std::string& s) {
      int v = 0;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc() || p != s.data() + s.size() || v < 0 || v > 1023)
        throw std::invalid_argument("bad CPU number '" + s + "'");
      return v;
    };
    if (dash == std::string::npos) {
      lo = hi = num(part);
    } else {
      lo = num(part.substr(0, dash));
      hi = num(part.substr(dash + 1));
      if (hi < lo) throw std::invalid_argument("bad range '" + part + "'");
    }
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
  }
  if (cpus.empty()) throw std::invalid_argument("empty list");
  return cpus;
}

Config Config::from_env() {
  Config c;
  if (auto v = env("EDRI_HOST")) c.host = v;
  if (auto v = env("EDRI_PORT")) c.port = parse_integer<std::uint16_t>("EDRI_PORT", v, 0, 65535);
  if (auto v = env("EDRI_PLUGINS")) c.plugins = split_paths(v);
  if (auto v = env("EDRI_LISTENER_WORKERS"))
    c.listener_workers = parse_integer<std::uint32_t>("EDRI_LISTENER_WORKERS", v, 1, 64);
  if (auto v = env("EDRI_API_RESPONSE_TIMEOUT"))
    c.api_response_timeout_s = parse_seconds("EDRI_API_RESPONSE_TIMEOUT", v);
  if (auto v = env("EDRI_MAX_BODY_SIZE"))
    c.max_body_size = parse_integer<std::size_t>("EDRI_MAX_BODY_SIZE", v, 0, std::size_t{1} << 40);
  if (auto v = env("EDRI_MAX_HEADER_SIZE"))
    c.max_header_bytes = parse_integer<std::size_t>("EDRI_MAX_HEADER_SIZE", v, 256, 1u << 20);
  if (auto v = env("EDRI_MAX_URL_SIZE"))
    c.max_url_bytes = parse_integer<std::size_t>("EDRI_MAX_URL_SIZE", v, 16, 1u << 20);
  if (auto v = env("EDRI_MAX_HEADER_COUNT"))
    c.max_header_count = parse_integer<std::size_t>("EDRI_MAX_HEADER_COUNT", v, 1, 10000);
  if (auto v = env("EDRI_HEADER_TIMEOUT")) c.header_timeout_s = parse_seconds("EDRI_HEADER_TIMEOUT", v);
  if (auto v = env("EDRI_KEEPALIVE_TIMEOUT")) c.keepalive_timeout_s = parse_seconds("EDRI_KEEPALIVE_TIMEOUT", v);
  if (auto v = env("EDRI_MAX_CONNECTIONS"))
    c.max_connections = parse_integer<std::uint32_t>("EDRI_MAX_CONNECTIONS", v, 1, 10000000);
  if (auto v = env("EDRI_MAX_PIPELINE")) c.max_pipeline = parse_integer<std::uint32_t>("EDRI_MAX_PIPELINE", v, 1, 4096);
  if (auto v = env("EDRI_BLOB_BYTES"))
    c.blob_bytes = parse_integer<std::size_t>("EDRI_BLOB_BYTES", v, 0, std::size_t{64} << 30);
  if (auto v = env("EDRI_BLOB_THRESHOLD"))
    c.blob_threshold = parse_integer<std::size_t>("EDRI_BLOB_THRESHOLD", v, 1, std::size_t{1} << 40);
  if (auto v = env("EDRI_STREAM_WINDOW"))
    c.stream_window = parse_integer<std::size_t>("EDRI_STREAM_WINDOW", v, 4096, std::size_t{1} << 30);
  if (auto v = env("EDRI_UPLOAD_FILES_PATH")) {
    c.upload_path = v;
    if (c.upload_path.empty()) throw ConfigError("EDRI_UPLOAD_FILES_PATH: must name a directory");
  }
  if (auto v = env("EDRI_UPLOAD_THRESHOLD"))
    c.upload_threshold = parse_integer<std::size_t>("EDRI_UPLOAD_THRESHOLD", v, 1, std::size_t{1} << 40);
  if (auto v = env("EDRI_OUTPUT_BUFFER"))
    c.output_buffer = parse_integer<std::size_t>("EDRI_OUTPUT_BUFFER", v, 4096, std::size_t{1} << 30);
  if (auto v = env("EDRI_WRITE_TIMEOUT")) c.write_timeout_s = parse_seconds("EDRI_WRITE_TIMEOUT", v);
  if (auto v = env("EDRI_OUTPUT_BUFFER_TOTAL"))
    c.output_buffer_total =
        parse_integer<std::size_t>("EDRI_OUTPUT_BUFFER_TOTAL", v, std::size_t{64} << 10, std::size_t{1} << 40);
  if (auto v = env("EDRI_BODY_TIMEOUT")) c.body_timeout_s = parse_seconds("EDRI_BODY_TIMEOUT", v);
  if (auto v = env("EDRI_LINGERING_TIME")) c.lingering_time_s = parse_seconds("EDRI_LINGERING_TIME", v);
  if (auto v = env("EDRI_LINGERING_TIMEOUT")) c.lingering_timeout_s = parse_seconds("EDRI_LINGERING_TIMEOUT", v);
  if (auto v = env("EDRI_MAX_JSON_DEPTH"))
    c.max_json_depth = parse_integer<std::uint32_t>("EDRI_MAX_JSON_DEPTH", v, 1, kJsonDepthCeiling);
  if (auto v = env("EDRI_SHUTDOWN_TIMEOUT")) c.shutdown_timeout_s = parse_seconds("EDRI_SHUTDOWN_TIMEOUT", v);
  if (auto v = env("EDRI_LOG_LEVEL")) {
    std::string s = v;
    if (s != "trace" && s != "debug" && s != "info" && s != "warn" && s != "warning" && s != "error" &&
        s != "critical" && s != "off")
      throw ConfigError("EDRI_LOG_LEVEL=" + s + ": must be trace, debug, info, warn, error, critical or off");
    c.log_level = s == "warning" ? "warn" : s;
  }
  if (auto v = env("ENVIRONMENT")) c.production = std::string(v) == "production";
  if (auto v = env("EDRI_RING_BYTES")) {
    c.ring_bytes = parse_integer<std::size_t>("EDRI_RING_BYTES", v, 4096, std::size_t{1} << 30);
    if (c.ring_bytes & (c.ring_bytes - 1))
      throw ConfigError(std::string("EDRI_RING_BYTES=") + v + ": must be a power of two");
  }
  if (auto v = env("EDRI_OUTBOX_LIMIT"))
    c.outbox_limit = parse_integer<std::size_t>("EDRI_OUTBOX_LIMIT", v, 0, std::size_t{1} << 34);
  if (auto v = env("EDRI_SPIN")) c.spin = parse_integer<std::uint32_t>("EDRI_SPIN", v, 0, 100000000);
  if (auto v = env("EDRI_CPUS")) {
    try {
      const std::string text = v;
      if (text == "auto") {
        c.placement = Placement::Auto;
      } else if (text == "all") {
        c.placement = Placement::All;
      } else if (text == "one") {
        c.placement = Placement::One;
      } else {
        c.placement = Placement::List;
        c.cpus = parse_cpu_list(v);
      }
    } catch (const std::invalid_argument& e) {
      throw ConfigError(std::string("EDRI_CPUS=") + v + ": " + e.what());
    }
  }
  if (auto v = env("EDRI_SCHED")) {
    std::string s = v;
    if (s != "batch" && s != "other") throw ConfigError("EDRI_SCHED=" + s + ": must be batch or other");
    c.sched_batch = s == "batch";
  }
  if (auto v = env("EDRI_SERVER_TIMING")) c.server_timing = parse_bool("EDRI_SERVER_TIMING", v);
  if (auto v = env("EDRI_REQUEST_ID")) c.request_id = parse_bool("EDRI_REQUEST_ID", v);
  if (auto v = env("EDRI_CORS_ORIGINS")) {
    for (auto& o : split_paths_on(v, ',')) {
      while (!o.empty() && o.front() == ' ') o.erase(0, 1);
      while (!o.empty() && o.back() == ' ') o.pop_back();
      if (o.empty()) continue;
      if (o != "*" && o.find("://") == std::string::npos)
        throw ConfigError("EDRI_CORS_ORIGINS: '" + o + "' is not an origin (scheme://host[:port]) or *");
      c.cors_origins.push_back(o);
    }
  }
  if (auto v = env("EDRI_CORS_HEADERS")) c.cors_headers = v;
  if (auto v = env("EDRI_SSL_CERTIFICATE")) c.ssl_certificate = v;
  if (auto v = env("EDRI_SSL_KEY")) c.ssl_key = v;
  if (c.ssl_certificate.empty() != c.ssl_key.empty())
    throw ConfigError(c.ssl_key.empty() ? "EDRI_SSL_KEY is not set but EDRI_SSL_CERTIFICATE is"
                                        : "EDRI_SSL_CERTIFICATE is not set but EDRI_SSL_KEY is");
  for (const auto& [name, file] :
       {std::pair<const char*, const std::string&>{"EDRI_SSL_CERTIFICATE", c.ssl_certificate},
        {"EDRI_SSL_KEY", c.ssl_key}}) {
    if (file.empty()) continue;
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      throw ConfigError(std::string(name) + "=" + file + ": not a readable file");
  }
  if (auto v = env("EDRI_TEMPLATE_PATH")) {
    struct stat st {};
    if (::stat(v, &st) != 0 || !S_ISDIR(st.st_mode))
      throw ConfigError(std::string("EDRI_TEMPLATE_PATH=") + v + ": not a directory");
    c.template_path = v;
  }
  if (auto v = env("EDRI_ASSETS_PATH")) {
    struct stat st {};
    if (::stat(v, &st) != 0 || !S_ISDIR(st.st_mode))
      throw ConfigError(std::string("EDRI_ASSETS_PATH=") + v + ": not a directory");
    c.assets_path = v;
  }
  if (auto v = env("EDRI_CORS_CREDENTIALS")) c.cors_credentials = parse_bool("EDRI_CORS_CREDENTIALS", v);
  if (auto v = env("EDRI_CORS_MAX_AGE")) c.cors_max_age = parse_integer<int>("EDRI_CORS_MAX_AGE", v, 0, 86400 * 7);
  if (auto v = std::getenv("EDRI_WEBSOCKET_PATH")) {  // set but empty: no WebSocket
    c.websocket_path = v;
    if (!c.websocket_path.empty() && c.websocket_path.front() != '/')
      throw ConfigError("EDRI_WEBSOCKET_PATH=" + c.websocket_path +
                        ": must start with '/' (or be empty: no WebSocket)");
  }
  if (auto v = env("EDRI_WEBSOCKET_MAX_MESSAGE"))
    c.websocket_max_message = parse_integer<std::size_t>("EDRI_WEBSOCKET_MAX_MESSAGE", v, 125, std::size_t{1} << 40);
  if (auto v = env("EDRI_WEBSOCKET_MAX_SUBSCRIPTIONS"))
    c.websocket_max_subscriptions = parse_integer<std::uint32_t>("EDRI_WEBSOCKET_MAX_SUBSCRIPTIONS", v, 0, 4096);
  if (auto v = env("EDRI_MANAGER_REPLICAS"))
    c.manager_replicas = parse_integer<std::uint32_t>("EDRI_MANAGER_REPLICAS", v, 1, 64);
  if (auto v = env("EDRI_ROUTING")) {
    const std::string r = v;
    if (r != "round_robin" && r != "least_loaded")
      throw ConfigError("EDRI_ROUTING=" + r + ": must be round_robin or least_loaded");
    c.least_loaded = r == "least_loaded";
  }
  if (auto v = env("EDRI_UNIX_SOCKET")) {
    c.unix_socket = v;
    if (c.unix_socket.size() >= sizeof(sockaddr_un{}.sun_path))
      throw ConfigError("EDRI_UNIX_SOCKET=" + c.unix_socket + ": longer than a socket path may be (107 bytes)");
  }
  if (auto v = env("EDRI_WORKER_THREADS"))
    c.worker_threads = parse_integer<std::uint32_t>("EDRI_WORKER_THREADS", v, 1, 1024);
  if (auto v = env("EDRI_WORKER_PROCESSES"))
    c.worker_processes = parse_integer<std::uint32_t>("EDRI_WORKER_PROCESSES", v, 1, 256);
  if (auto v = env("EDRI_WORKER_QUEUE"))
    c.worker_queue = parse_integer<std::uint32_t>("EDRI_WORKER_QUEUE", v, 1, 1u << 20);
  if (c.websocket_max_message + 4096 > c.ring_bytes / 4)
    throw ConfigError("EDRI_WEBSOCKET_MAX_MESSAGE=" + std::to_string(c.websocket_max_message) +
                      ": too large for EDRI_RING_BYTES=" + std::to_string(c.ring_bytes) +
                      " (a message must fit a quarter of a ring, less 4096 bytes)");
  if (c.output_buffer_total < c.output_buffer)
    throw ConfigError("EDRI_OUTPUT_BUFFER_TOTAL=" + std::to_string(c.output_buffer_total) +
                      ": smaller than one connection's EDRI_OUTPUT_BUFFER=" + std::to_string(c.output_buffer));
  // A request body up to EDRI_UPLOAD_THRESHOLD travels in the blob area
  // when there is one, else in a channel record; a larger one in its file.
  const std::size_t in_memory = std::min(c.max_body_size, c.upload_threshold);
  if (c.blob_bytes > 0 && in_memory > c.blob_bytes)
    throw ConfigError("EDRI_UPLOAD_THRESHOLD=" + std::to_string(c.upload_threshold) +
                      ": larger than the blob area, EDRI_BLOB_BYTES=" + std::to_string(c.blob_bytes));
  if (c.blob_bytes == 0 && in_memory + 4096 > c.ring_bytes / 4)
    throw ConfigError("EDRI_UPLOAD_THRESHOLD=" + std::to_string(c.upload_threshold) +
                      ": too large for EDRI_RING_BYTES=" + std::to_string(c.ring_bytes) +
                      " without a blob area (a body must fit a quarter of a ring, less 4096 bytes)");
  return c;
}

std::string Config::describe() const {
  std::ostringstream o;
  auto join = [](const auto& v) {
    std::string s;
    for (const auto& x : v) {
      if (!s.empty()) s += ',';
      if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::string>)
        s += x;
      else
        s += std::to_string(x);
    }
    return s;
  };
  o << "EDRI_HOST=" << host << '\n'
    << "EDRI_PORT=" << port << '\n'
    << "EDRI_PLUGINS=" << join(plugins) << '\n'
    << "EDRI_LISTENER_WORKERS=" << listener_workers << '\n'
    << "EDRI_API_RESPONSE_TIMEOUT=" << api_response_timeout_s << '\n'
    << "EDRI_MAX_BODY_SIZE=" << max_body_size << '\n'
    << "EDRI_MAX_HEADER_SIZE=" << max_header_bytes << '\n'
    << "EDRI_MAX_URL_SIZE=" << max_url_bytes << '\n'
    << "EDRI_MAX_HEADER_COUNT=" << max_header_count << '\n'
    << "EDRI_HEADER_TIMEOUT=" << header_timeout_s << '\n'
    << "EDRI_KEEPALIVE_TIMEOUT=" << keepalive_timeout_s << '\n'
    << "EDRI_MAX_CONNECTIONS=" << max_connections << '\n'
    << "EDRI_MAX_PIPELINE=" << max_pipeline << '\n'
    << "EDRI_OUTPUT_BUFFER=" << output_buffer << '\n'
    << "EDRI_BLOB_BYTES=" << blob_bytes << '\n'
    << "EDRI_BLOB_THRESHOLD=" << blob_threshold << '\n'
    << "EDRI_STREAM_WINDOW=" << stream_window << '\n'
    << "EDRI_UPLOAD_FILES_PATH=" << upload_path << '\n'
    << "EDRI_UPLOAD_THRESHOLD=" << upload_threshold << '\n'
    << "EDRI_WRITE_TIMEOUT=" << write_timeout_s << '\n'
    << "EDRI_OUTPUT_BUFFER_TOTAL=" << output_buffer_total << '\n'
    << "EDRI_BODY_TIMEOUT=" << body_timeout_s << '\n'
    << "EDRI_LINGERING_TIME=" << lingering_time_s << '\n'
    << "EDRI_LINGERING_TIMEOUT=" << lingering_timeout_s << '\n'
    << "EDRI_MAX_JSON_DEPTH=" << max_json_depth << '\n'
    << "EDRI_SHUTDOWN_TIMEOUT=" << shutdown_timeout_s << '\n'
    << "EDRI_LOG_LEVEL=" << log_level << '\n'
    << "ENVIRONMENT=" << (production ? "production" : "development") << '\n'
    << "EDRI_RING_BYTES=" << ring_bytes << '\n'
    << "EDRI_OUTBOX_LIMIT=" << outbox_limit << '\n'
    << "EDRI_SPIN=" << spin << '\n'
    << "EDRI_CPUS="
    << (placement == Placement::Auto  ? "auto"
        : placement == Placement::All ? "all"
        : placement == Placement::One ? "one"
                                      : join(cpus))
    << '\n'
    << "EDRI_SCHED=" << (sched_batch ? "batch" : "other") << '\n'
    << "EDRI_SERVER_TIMING=" << (server_timing ? 1 : 0) << '\n'
    << "EDRI_REQUEST_ID=" << (request_id ? 1 : 0) << '\n'
    << "EDRI_CORS_ORIGINS=" << join(cors_origins) << '\n'
    << "EDRI_CORS_HEADERS=" << cors_headers << '\n'
    << "EDRI_CORS_CREDENTIALS=" << (cors_credentials ? 1 : 0) << '\n'
    << "EDRI_CORS_MAX_AGE=" << cors_max_age << '\n'
    << "EDRI_ASSETS_PATH=" << assets_path << '\n'
    << "EDRI_TEMPLATE_PATH=" << template_path << '\n'
    << "EDRI_SSL_CERTIFICATE=" << ssl_certificate << '\n'
    << "EDRI_SSL_KEY=" << ssl_key << '\n'
    << "EDRI_WEBSOCKET_PATH=" << websocket_path << '\n'
    << "EDRI_WEBSOCKET_MAX_MESSAGE=" << websocket_max_message << '\n'
    << "EDRI_WEBSOCKET_MAX_SUBSCRIPTIONS=" << websocket_max_subscriptions << '\n'
    << "EDRI_MANAGER_REPLICAS=" << manager_replicas << '\n'
    << "EDRI_ROUTING=" << (least_loaded ? "least_loaded" : "round_robin") << '\n'
    << "EDRI_UNIX_SOCKET=" << unix_socket << '\n'
    << "EDRI_WORKER_THREADS=" << worker_threads << '\n'
    << "EDRI_WORKER_PROCESSES=" << worker_processes << '\n'
    << "EDRI_WORKER_QUEUE=" << worker_queue << '\n';
  return o.str();
}

}  // namespace edri
