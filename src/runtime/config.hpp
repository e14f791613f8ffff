// Config: the effective configuration, read from the environment.
//
// Every process reads it from the same inherited environment, so the
// supervisor never ships it to its children. An invalid value throws
// ConfigError naming the variable; start-up then stops. Which variable
// sets which member, its default and its parsing: settings.cpp.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace edri {

// A setting in seconds (Config's *_s fields) as a steady-clock duration.
inline std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

// The exit status of a child that cannot start for what a plugin declared
// (a domain's start hook threw): the supervisor stops start-up with it
// instead of restarting the child (EX_CONFIG, sysexits.h).
inline constexpr int kExitStartFailed = 78;

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// EDRI_LISTENER_WORKERS's upper bound.
inline constexpr std::uint32_t kMaxListenerWorkers = 64;

struct Config {
  std::string host = "127.0.0.1";    // EDRI_HOST
  std::uint16_t port = 8080;         // EDRI_PORT (0: any free port)
  std::vector<std::string> plugins;  // EDRI_PLUGINS (paths, ':' or ',' separated)
  // EDRI_LISTENER_WORKERS, or auto (listener_workers_auto): as many as
  // runtime/placement.hpp decides for the machine, settled by the
  // supervisor before the topology exists; a child reads the count from
  // its topology.
  std::uint32_t listener_workers = 1;
  bool listener_workers_auto = true;
  double api_response_timeout_s = 30.0;              // EDRI_API_RESPONSE_TIMEOUT
  std::size_t max_waiting = 16384;                   // EDRI_MAX_WAITING: coroutine handlers waiting per manager
  double http_client_timeout_s = 30.0;               // EDRI_HTTP_CLIENT_TIMEOUT: a whole outbound call
  double http_client_connect_timeout_s = 5.0;        // EDRI_HTTP_CLIENT_CONNECT_TIMEOUT
  std::size_t http_client_max_response = 16u << 20;  // EDRI_HTTP_CLIENT_MAX_RESPONSE: bytes of an answer body
  std::string http_client_ca_file;                   // EDRI_HTTP_CLIENT_CA_FILE: trusted CAs; empty: the system's
  std::vector<std::pair<std::string, std::string>> databases;  // EDRI_DATABASES: "name=url ..."
  std::size_t database_pool = 4;             // EDRI_DATABASE_POOL: connections per database per manager
  std::size_t database_queue = 4096;         // EDRI_DATABASE_QUEUE: statements pending per database per manager
  double database_timeout_s = 30.0;          // EDRI_DATABASE_TIMEOUT: one statement
  double database_connect_timeout_s = 5.0;   // EDRI_DATABASE_CONNECT_TIMEOUT: one connect
  std::size_t max_body_size = 512 * 1024;    // EDRI_MAX_BODY_SIZE
  std::size_t max_header_bytes = 16 * 1024;  // EDRI_MAX_HEADER_SIZE
  std::size_t max_url_bytes = 8 * 1024;      // EDRI_MAX_URL_SIZE
  std::size_t max_header_count = 100;        // EDRI_MAX_HEADER_COUNT
  double header_timeout_s = 30.0;            // EDRI_HEADER_TIMEOUT: a request's head must arrive within this
  double keepalive_timeout_s = 75.0;         // EDRI_KEEPALIVE_TIMEOUT: an idle connection is closed after this
  std::uint32_t max_connections = 10000;     // EDRI_MAX_CONNECTIONS: open client connections, all listeners
  // Each listener's share of max_connections (the kernel spreads new
  // connections evenly over the listeners).
  std::uint32_t connections_per_listener() const {
    return std::max<std::uint32_t>(1, (max_connections + listener_workers - 1) / listener_workers);
  }
  std::uint32_t max_pipeline = 64;       // EDRI_MAX_PIPELINE (requests in flight per connection)
  std::size_t output_buffer = 1u << 20;  // EDRI_OUTPUT_BUFFER: unsent bytes a connection holds before it stops reading
  double write_timeout_s = 30.0;         // EDRI_WRITE_TIMEOUT: seconds without write progress before a close
  // EDRI_OUTPUT_BUFFER_TOTAL: unsent bytes one listener holds for all its
  // clients together; past it the clients furthest behind are closed.
  std::size_t output_buffer_total = 256u << 20;
  // EDRI_HTTP2_BODY_MEMORY: request bodies one listener's HTTP/2
  // connections hold in memory together; past it a body is refused 503.
  std::size_t http2_body_memory = 256u << 20;
  double body_timeout_s = 60.0;  // EDRI_BODY_TIMEOUT: a request body that stops arriving this long: 408
  // EDRI_LINGERING_TIME, EDRI_LINGERING_TIMEOUT: after an answer that ends
  // a connection early, what the client still sends is read and dropped
  // for at most this long in all, and until it pauses this long.
  double lingering_time_s = 30.0;
  double lingering_timeout_s = 5.0;
  std::uint32_t max_json_depth = 128;  // EDRI_MAX_JSON_DEPTH: nesting of arrays and objects in client JSON
  double reload_grace_s = 10.0;        // EDRI_RELOAD_GRACE: an old generation's WebSockets, event streams
  double shutdown_timeout_s = 30.0;    // EDRI_SHUTDOWN_TIMEOUT: seconds SIGTERM waits for requests in flight
  std::string log_level = "info";      // EDRI_LOG_LEVEL
  std::string log_format = "text";     // EDRI_LOG_FORMAT: "text" or "json"
  // EDRI_ACCESS_LOG: "off", "combined" or "json"; EDRI_ACCESS_LOG_PATH
  // (empty: stderr); EDRI_ACCESS_LOG_BUFFER: bytes of lines a listener
  // holds for its writer thread before it drops lines.
  std::string access_log = "off";
  std::string access_log_path;
  std::size_t access_log_buffer = 4u << 20;
  // Tracing (W3C Trace Context, OTLP JSON): on with an endpoint or a file.
  double trace_sample = 1.0;        // EDRI_TRACE_SAMPLE: of requests without a traceparent
  std::string trace_otlp_endpoint;  // EDRI_TRACE_OTLP_ENDPOINT
  std::string trace_path;           // EDRI_TRACE_PATH
  std::size_t trace_buffer = 8192;  // EDRI_TRACE_BUFFER: spans one process queues
  bool tracing() const { return !trace_otlp_endpoint.empty() || !trace_path.empty(); }
  bool production = false;        // ENVIRONMENT=production
  std::string api_docs = "auto";  // EDRI_API_DOCS: "auto", "on" or "off"
  std::string api_docs_ui;        // EDRI_API_DOCS_UI: Swagger UI's files; empty: share/edri/swagger-ui beside bin/
  bool reload_on_change = false;  // EDRI_RELOAD_ON_CHANGE: a plugin file written anew reloads
  // /openapi.json is served: on, or auto outside production.
  bool serves_api_docs() const { return api_docs == "on" || (api_docs == "auto" && !production); }
  std::size_t ring_bytes = 4u << 20;     // EDRI_RING_BYTES (power of two)
  std::size_t outbox_limit = 16u << 20;  // EDRI_OUTBOX_LIMIT (bytes queued per full channel)
  // EDRI_SPIN: most idle polls before sleeping, or auto (spin_auto): as
  // many as runtime/placement.hpp decides for the machine.
  std::uint32_t spin = 0;
  bool spin_auto = true;
  std::size_t blob_bytes = 256u << 20;     // EDRI_BLOB_BYTES: the blob area (0: none)
  std::size_t blob_threshold = 64u << 10;  // EDRI_BLOB_THRESHOLD: bodies this large travel in the blob area
  // EDRI_STREAM_WINDOW: bytes of a streamed answer made ahead of what its
  // client has taken (docs/decisions/0011).
  std::size_t stream_window = 128u << 10;
  // EDRI_UPLOAD_FILES_PATH: where request bodies larger than
  // EDRI_UPLOAD_THRESHOLD are written while they arrive (docs/decisions/0012).
  std::string upload_path = "/tmp";
  std::size_t upload_threshold = 1u << 20;  // EDRI_UPLOAD_THRESHOLD
  // EDRI_CPUS: where the processes run. "auto" (default): on a machine
  // with cores to spare, wherever the scheduler puts them; else listeners,
  // broker and router on one CPU, the last one this process may use, and
  // managers wherever the scheduler puts them (docs/decisions/0006, 0017); "one":
  // every process on that CPU (docs/decisions/0003); "all": wherever the
  // scheduler puts them; a list: every process pinned to that list.
  enum class Placement { Auto, One, All, List } placement = Placement::Auto;
  std::vector<int> cpus;                     // the list, for Placement::List
  bool sched_batch = true;                   // EDRI_SCHED=batch|other
  bool server_timing = false;                // EDRI_SERVER_TIMING=1
  bool request_id = true;                    // EDRI_REQUEST_ID: X-Request-Id on every response
  std::vector<std::string> trusted_proxies;  // EDRI_TRUSTED_PROXIES: addresses and CIDR blocks
  // EDRI_PROXY_PROTOCOL=on: a connection from a trusted proxy starts with
  // a PROXY protocol header naming the client (docs/security.md).
  bool proxy_protocol = false;
  std::vector<std::string> cors_origins;  // EDRI_CORS_ORIGINS: allowed origins, or "*"; empty: CORS off
  std::string cors_headers = "Content-Type, Authorization, X-Request-Id";  // EDRI_CORS_HEADERS ("*": echo)
  bool cors_credentials = false;                                           // EDRI_CORS_CREDENTIALS
  int cors_max_age = 600;                                                  // EDRI_CORS_MAX_AGE (seconds)
  std::string ssl_certificate;         // EDRI_SSL_CERTIFICATE (PEM chain); with EDRI_SSL_KEY: HTTPS
  std::string ssl_key;                 // EDRI_SSL_KEY (PEM)
  std::string template_path;           // EDRI_TEMPLATE_PATH: folder of Mustache templates
  std::string assets_path;             // EDRI_ASSETS_PATH: a folder served at "/" (after routes and plugin assets)
  std::string websocket_path = "/ws";  // EDRI_WEBSOCKET_PATH (empty: no WebSocket)
  std::size_t websocket_max_message = 512 * 1024;  // EDRI_WEBSOCKET_MAX_MESSAGE (bytes; larger: close 1009)
  std::uint32_t websocket_max_subscriptions = 64;  // EDRI_WEBSOCKET_MAX_SUBSCRIPTIONS per connection
  bool websocket_deflate = false;                  // EDRI_WEBSOCKET_DEFLATE: offer permessage-deflate (RFC 7692)
  // Compressed answers (docs/compression.md, docs/decisions/0034).
  bool compression = true;                        // EDRI_COMPRESSION
  std::size_t compression_min_size = 1024;        // EDRI_COMPRESSION_MIN_SIZE: bytes; smaller bodies go as they are
  std::vector<std::string> compression_types = {  // EDRI_COMPRESSION_TYPES
      "text/*",
      "application/json",
      "application/problem+json",
      "application/ld+json",
      "application/manifest+json",
      "application/javascript",
      "application/xml",
      "application/wasm",
      "image/svg+xml"};
  int compression_gzip_level = 1;             // EDRI_COMPRESSION_GZIP_LEVEL (zlib's 1..9)
  int compression_brotli_quality = 2;         // EDRI_COMPRESSION_BROTLI_QUALITY (0..11)
  std::uint32_t stream_log = 256;             // EDRI_STREAM_LOG: revisions kept per live stream for `since`
  std::size_t stream_max_bytes = 256u << 10;  // EDRI_STREAM_MAX_BYTES: a live stream's state or patch, as JSON
  std::uint32_t stream_send_buffer =
      32u << 10;                       // EDRI_STREAM_SEND_BUFFER: SO_SNDBUF of a stream subscriber (0: the kernel's)
  std::uint32_t manager_replicas = 0;  // EDRI_MANAGER_REPLICAS: processes of a domain that declared none (0: 1)
  std::vector<std::pair<std::string, std::uint32_t>> domain_replicas;  // EDRI_DOMAIN_REPLICAS: "name=n,..."
  std::vector<std::string> listener_domains;  // EDRI_LISTENER_DOMAINS: run inside the listener process
  bool least_loaded = true;  // EDRI_ROUTING=least_loaded (default) or round_robin: how replicas share requests (0007)
  std::string admin_socket;  // EDRI_ADMIN_SOCKET: the built-in endpoints here alone
  std::string health_path = "/health";    // EDRI_HEALTH_PATH (empty: not served)
  double health_stall_s = 10.0;           // EDRI_HEALTH_STALL: a loop turn longer than this is a stuck process
  std::string ready_path = "/ready";      // EDRI_READY_PATH
  std::string metrics_path = "/metrics";  // EDRI_METRICS_PATH
  std::string unix_socket;                // EDRI_UNIX_SOCKET: also serve HTTP (no TLS) on this Unix domain socket
  std::uint32_t worker_threads = 0;  // EDRI_WORKER_THREADS per manager (0: the plugin's choice, else the CPU count)
  std::uint32_t worker_processes =
      0;  // EDRI_WORKER_PROCESSES per domain with tasks (0: the plugin's choice, else the CPU count)
  std::uint32_t worker_queue =
      0;  // EDRI_WORKER_QUEUE jobs waiting per pool, threads or processes (0: the plugin's choice, else 256)

  // Several instances joined over NATS (docs/cluster.md). Empty nats_url:
  // one host, and no NATS code runs.
  std::string nats_url;                     // EDRI_NATS_URL (comma separated)
  std::string cluster = "edri";             // EDRI_CLUSTER: prefixes every subject
  std::vector<std::string> domains;         // EDRI_DOMAINS: the domains this instance runs (empty: all)
  std::string nats_user;                    // EDRI_NATS_USER
  std::string nats_password;                // EDRI_NATS_PASSWORD
  std::string nats_token;                   // EDRI_NATS_TOKEN
  bool nats_tls = false;                    // EDRI_NATS_TLS
  std::string nats_ca;                      // EDRI_NATS_CA: PEM of the CAs to trust
  std::string nats_certificate;             // EDRI_NATS_CERTIFICATE: client certificate chain (PEM)
  std::string nats_key;                     // EDRI_NATS_KEY
  std::size_t nats_max_message = 1u << 20;  // EDRI_NATS_MAX_MESSAGE: largest request or answer that crosses
  bool clustered() const { return !nats_url.empty(); }
  // Whether this instance runs managers of `domain`.
  bool runs_domain(const std::string& domain) const;

  // Reads the environment; throws ConfigError on an invalid value.
  static Config from_env();
  // Throws ConfigError unless EDRI_CPUS, as a list, names only CPUs in
  // `allowed` (those the supervisor may use). Checked once at start rather
  // than in from_env, whose answer must not depend on the machine: pinned
  // to a CPU it may not use, a child only warned and ran anywhere.
  void check_cpus_allowed(const std::vector<int>& allowed) const;
  // One line per variable, NAME=value as in effect, in the settings' order.
  std::string describe() const;
};

}  // namespace edri
