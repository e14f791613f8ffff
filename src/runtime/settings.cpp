// The settings table: every environment variable the server reads, in
// the order the docs list them. Each row gives the variable's name, its
// default and its meaning as docs/configuration.md shows them (the table
// there is generated from this one: edri-server --print-config-markdown),
// and the typed parser that reads it into its Config member. A new setting
// is one new row here and a member of Config.
#include "runtime/settings.hpp"

#include <edri/json_depth.hpp>

#include <algorithm>
#include <cctype>

#include "runtime/closest_name.hpp"
#include "runtime/json_text.hpp"

extern char** environ;

namespace edri {
namespace {

constexpr std::size_t kKiB = std::size_t{1} << 10;
constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kGiB = std::size_t{1} << 30;
constexpr std::size_t kTiB = std::size_t{1} << 40;

// "warning" is spdlog's other name for "warn".
Binding log_level() {
  return parse::choice<std::string>(&Config::log_level, {{"trace", "trace"},
                                                         {"debug", "debug"},
                                                         {"info", "info"},
                                                         {"warn", "warn"},
                                                         {"warning", "warn"},
                                                         {"error", "error"},
                                                         {"critical", "critical"},
                                                         {"off", "off"}});
}

std::vector<Setting> make_settings() {
  return {
      {"EDRI_HOST", "`127.0.0.1`", parse::text(&Config::host), "address to listen on (a name, IPv4 or IPv6)"},
      {"EDRI_PORT", "`8080`", parse::integer(&Config::port, 0, 65535),
       "port (0..65535); `0` picks a free one (printed on stdout: `edri: listening on http://HOST:PORT`)"},
      {"EDRI_PLUGINS", "— (required)", parse::path_list(&Config::plugins),
       "plugin files (`.so`), separated by `:` or `,`; loaded in this order"},
      {"EDRI_LISTENER_WORKERS", "`auto`",
       parse::count_or_auto(&Config::listener_workers, &Config::listener_workers_auto, 1, kMaxListenerWorkers),
       "listener processes sharing the port (1..64); `auto`: 1 where the pipeline shares a CPU (`EDRI_CPUS=auto` on "
       "few cores), and where cores are to spare half of those the other processes and two spare CPUs leave "
       "(docs/decisions/0017)"},
      {"EDRI_API_RESPONSE_TIMEOUT", "`30`", parse::seconds(&Config::api_response_timeout_s),
       "seconds a request may wait for its handler before the broker answers 504 (should a process restart lose that "
       "deadline, the listener answers 504 two seconds later)"},
      {"EDRI_MAX_WAITING", "`16384`", parse::integer(&Config::max_waiting, 1, 16 * 1024 * 1024),
       "coroutine handlers (`edri::Async`) one manager holds waiting at once; past it a request of that domain is "
       "answered 503 with `Retry-After: 1` without running (docs/decisions/0030: each holds its request's bytes and "
       "its frames)"},
      {"EDRI_HTTP_CLIENT_TIMEOUT", "`30`", parse::seconds(&Config::http_client_timeout_s),
       "seconds an outbound HTTP call (`Context::fetch`, `http`) may take in all, unless the call says otherwise; "
       "never "
       "past the deadline of the request whose handler makes it"},
      {"EDRI_HTTP_CLIENT_CONNECT_TIMEOUT", "`5`", parse::seconds(&Config::http_client_connect_timeout_s),
       "seconds an outbound HTTP call may take to connect (TLS handshake included)"},
      {"EDRI_HTTP_CLIENT_MAX_RESPONSE", "`16777216`", parse::integer(&Config::http_client_max_response, 1, kTiB),
       "bytes of an outbound call's answer body, unless the call says otherwise; a longer one ends the call with an "
       "error"},
      {"EDRI_HTTP_CLIENT_CA_FILE", "unset (the system's)", parse::regular_file(&Config::http_client_ca_file),
       "a PEM file of the certificate authorities outbound HTTPS calls trust"},
      {"EDRI_DATABASES", "unset", parse::urls_by_name(&Config::databases),
       "the URLs of the databases plugins declare (`Registry::database`), as `name=url` separated by spaces: "
       "`postgresql://user@127.0.0.1:5432/db` (any libpq URL; give the host as an address or a socket directory, "
       "since a host name resolves blocking) or `sqlite:/path/file.db`. Wins over a plugin's default URL; a name no "
       "plugin declares stops start-up (docs/decisions/0032)"},
      {"EDRI_DATABASE_POOL", "`4`", parse::integer(&Config::database_pool, 1, 1024),
       "connections each manager keeps to each Postgres database its domain declared (1..1024; the server must "
       "allow this x managers of the domain x replicas x instances, `max_connections`, 100 by default), or reader "
       "threads for each SQLite database (beside its one writer thread; docs/decisions/0032)"},
      {"EDRI_DATABASE_QUEUE", "`4096`", parse::integer(&Config::database_queue, 1, 1 << 24),
       "statements one manager holds pending on one database (sent or waiting for a connection); past it a "
       "statement fails at once (`Rows::Failure::unavailable`; a handler that does not catch it answers 503)"},
      {"EDRI_DATABASE_TIMEOUT", "`30`", parse::seconds(&Config::database_timeout_s),
       "seconds one statement may take: the server stops it (`statement_timeout`) and the handler sees a timeout "
       "(504); never past the deadline of the request whose handler waits for it"},
      {"EDRI_DATABASE_CONNECT_TIMEOUT", "`5`", parse::seconds(&Config::database_connect_timeout_s),
       "seconds one connect to a database may take (TCP, TLS, authentication)"},
      {"EDRI_MAX_BODY_SIZE", "`524288`", parse::integer(&Config::max_body_size, 1, kTiB),
       "largest request body in bytes (1..1 TiB): a declared `Content-Length` above it is a 413 at the headers, a "
       "chunked body a 413 as soon as it passes it, while reading"},
      {"EDRI_UPLOAD_FILES_PATH", "`/tmp`", parse::text(&Config::upload_path),
       "where request bodies larger than `EDRI_UPLOAD_THRESHOLD` are written while they arrive (`edri-upload-<listener "
       "pid>-<n>`, mode 0600; created if missing, start-up fails if it is not a writable directory). The handler sees "
       "the body mapped (`Request::body`, `Request::body_file`); the file is removed when the response is sent unless "
       "the handler kept it (`Request::keep_body`), and the supervisor removes the files of a listener that died "
       "(docs/decisions/0012)"},
      {"EDRI_UPLOAD_THRESHOLD", "`1048576`", parse::integer(&Config::upload_threshold, 1, kTiB),
       "body size above which a request body goes to a file instead of memory; at most `EDRI_BLOB_BYTES`, or a quarter "
       "of a ring less 4096 bytes when there is no blob area"},
      {"EDRI_MAX_HEADER_SIZE", "`16384`", parse::integer(&Config::max_header_bytes, 256, kMiB),
       "all header names and values of a request together (431 above)"},
      {"EDRI_MAX_URL_SIZE", "`8192`", parse::integer(&Config::max_url_bytes, 16, kMiB),
       "request-target length (414 above)"},
      {"EDRI_MAX_HEADER_COUNT", "`100`", parse::integer(&Config::max_header_count, 1, 10000),
       "header fields in one request (431 above)"},
      {"EDRI_HEADER_TIMEOUT", "`30`", parse::seconds(&Config::header_timeout_s),
       "seconds a request's head (request line and headers) may take to arrive from its first byte: past it, 408 and "
       "close (a slowloris client); also how long a new connection may stay silent before its first request (then "
       "closed without an answer). Over HTTP/2: how long a header block may stay unfinished after the connection's "
       "last input (then a GOAWAY and close)"},
      {"EDRI_KEEPALIVE_TIMEOUT", "`75`", parse::seconds(&Config::keepalive_timeout_s),
       "seconds a connection with nothing in flight may stay silent after a request before it is closed. Over HTTP/2, "
       "nothing in flight means no stream open: a gRPC `Connect` call waiting for pushes keeps its connection"},
      {"EDRI_MAX_CONNECTIONS", "`10000`", parse::integer(&Config::max_connections, 1, 10000000),
       "open client connections, shared evenly by the listeners; past it a new connection gets a 503 (`Retry-After: "
       "1`, not over TLS) and is closed. The supervisor raises the descriptor limit to its hard maximum and warns if "
       "that is below it"},
      {"EDRI_MAX_PIPELINE", "`64`", parse::integer(&Config::max_pipeline, 1, 4096),
       "requests in flight on one connection before the listener stops reading it"},
      {"EDRI_BLOB_BYTES", "`268435456`", parse::integer(&Config::blob_bytes, 0, 64 * kGiB),
       "the blob area (256 MiB, shared memory the processes map; pages are taken as they are first used): request and "
       "response bodies from `EDRI_BLOB_THRESHOLD` on are written into it once and the channels carry a handle; `0`: "
       "no area, bodies must fit a channel record. A response larger than the area is a 500, one that finds it full a "
       "503; `/metrics` reports `edri_blob_bytes`"},
      {"EDRI_BLOB_THRESHOLD", "`65536`", parse::integer(&Config::blob_threshold, 1, kTiB),
       "body size from which a body travels in the blob area rather than in the channel record (docs/decisions/0010)"},
      {"EDRI_STREAM_WINDOW", "`131072`", parse::integer(&Config::stream_window, 4096, kGiB),
       "bytes of a streamed answer (`Response::stream`) its producer may make ahead of what the client has taken "
       "(docs/decisions/0011)"},
      {"EDRI_OUTPUT_BUFFER", "`1048576`", parse::integer(&Config::output_buffer, 4096, kGiB),
       "bytes of answers a connection may hold unsent (4 KiB..1 GiB); beyond it the listener reads no more requests or "
       "WebSocket commands from that client until it has taken them, so a client that does not read makes no more work "
       "and holds at most this plus the answers already in flight. A WebSocket subscriber whose pushes pile up past 8 "
       "times this is closed with 1008 (one publish cannot wait for its slowest subscriber): what it had not begun to "
       "receive is dropped at once, then the close frame goes out"},
      {"EDRI_OUTPUT_BUFFER_TOTAL", "`268435456`", parse::integer(&Config::output_buffer_total, 64 * kKiB, kTiB),
       "bytes one listener holds unsent for all its clients together (64 KiB..1 TiB, at least `EDRI_OUTPUT_BUFFER`; "
       "bodies in the blob area and files are not counted: they have bounds of their own). Past it, the clients "
       "furthest behind are closed (a WebSocket with 1008 and the reason) until the listener is under it again; "
       "`/metrics` shows `edri_client_output_bytes` and `edri_clients_shed_total`. Without it, 300 subscribers that "
       "did not read held 2.4 GB"},
      {"EDRI_HTTP2_BODY_MEMORY", "`268435456`", parse::integer(&Config::http2_body_memory, 64 * kKiB, kTiB),
       "bytes of HTTP/2 request bodies one listener holds in memory for all its connections together (64 KiB..1 TiB); "
       "a body that would pass it is refused 503 (each connection may hold `EDRI_MAX_PIPELINE` bodies of "
       "`EDRI_MAX_BODY_SIZE`: without it, 25 connections held 750 MB)"},
      {"EDRI_WRITE_TIMEOUT", "`30`", parse::seconds(&Config::write_timeout_s),
       "seconds a connection with unsent output may go without taking a byte before it is closed (a client that "
       "stopped reading)"},
      {"EDRI_BODY_TIMEOUT", "`60`", parse::seconds(&Config::body_timeout_s),
       "seconds a request body may go without a byte arriving (nginx's `client_body_timeout`): past it, 408 and close. "
       "Not counted while the listener itself is not reading (backpressure). Over HTTP/2 it is counted per stream, "
       "from that stream's last DATA: a stalled body is answered 408 and its stream reset (`RST_STREAM NO_ERROR`); "
       "the connection and its other streams go on"},
      {"EDRI_LINGERING_TIME", "`30`", parse::seconds(&Config::lingering_time_s),
       "after an answer that ends a connection while the client may still be sending (a 413 before the body, a refused "
       "request with more behind it), seconds at most that the listener goes on reading and dropping what arrives, so "
       "that the client reads its answer rather than a reset (nginx's `lingering_time`); not after a 408, nor over "
       "TLS"},
      {"EDRI_LINGERING_TIMEOUT", "`5`", parse::seconds(&Config::lingering_timeout_s),
       "seconds of silence that end such a lingering close early (nginx's `lingering_timeout`); also how long a "
       "WebSocket client has to answer a close frame of the server's once it is out"},
      {"EDRI_RELOAD_GRACE", "`10`", parse::seconds(&Config::reload_grace_s),
       "seconds a reload leaves the old generation's WebSockets, event streams and gRPC streaming calls open (their "
       "commands answered and their pushes made by the old generation) before a WebSocket closes with 1001, an "
       "event stream ends (EventSource reconnects, to the new one) and a gRPC call ends `UNAVAILABLE`; "
       "`EDRI_SHUTDOWN_TIMEOUT` bounds it"},
      {"EDRI_SHUTDOWN_TIMEOUT", "`30`", parse::seconds(&Config::shutdown_timeout_s),
       "seconds a SIGTERM waits for requests in flight: the port stops accepting at once, idle connections close, the "
       "others close after their last answer (which says `Connection: close`), WebSockets close with 1001, event "
       "streams end; what is still open after this is closed"},
      {"EDRI_LOG_LEVEL", "`info`", log_level(), "`trace`, `debug`, `info`, `warn`, `error`, `critical`, `off`"},
      {"EDRI_LOG_FORMAT", "`text`",
       parse::choice<std::string>(&Config::log_format, {{"text", "text"}, {"json", "json"}}),
       "the server's own log on stderr, times in UTC: `text` (`2026-12-06T07:23:24.408Z info [listener 13960] "
       "...`) or `json` (one object per line: time, level, process, pid, message)"},
      {"EDRI_ACCESS_LOG", "`off`",
       parse::choice<std::string>(&Config::access_log, {{"off", "off"}, {"combined", "combined"}, {"json", "json"}}),
       "a line per HTTP request, WebSocket command and gRPC call, written by each listener: `off`, `combined` "
       "(nginx's combined format, then duration, protocol, route, domain, request id, trace id and gRPC status) or "
       "`json` (one object per line); docs/operations.md"},
      {"EDRI_ACCESS_LOG_PATH", "unset (stderr)", parse::text(&Config::access_log_path),
       "the access log's file, opened for appending (created 0644); SIGUSR1 to the server reopens it, for log "
       "rotation"},
      {"EDRI_ACCESS_LOG_BUFFER", "`4194304`", parse::integer(&Config::access_log_buffer, 4 * kKiB, kGiB),
       "bytes of lines a listener holds for its access log's writer; a slow disk never stalls a listener: past "
       "this, lines are dropped and counted (`edri_access_log_dropped_total`)"},
      {"EDRI_TRACE_OTLP_ENDPOINT", "unset", parse::http_url(&Config::trace_otlp_endpoint),
       "the OTLP/HTTP receiver each process POSTs its spans to, as OTLP JSON (`http://127.0.0.1:4318/v1/traces`, "
       "an OpenTelemetry Collector's); with it or `EDRI_TRACE_PATH` set, tracing is on: a `traceparent` header "
       "(W3C Trace Context) is taken or a trace started, carried to every domain, outbound HTTP call and instance "
       "a request reaches, and answered in the `traceparent` header; docs/operations.md"},
      {"EDRI_TRACE_PATH", "unset", parse::text(&Config::trace_path),
       "a file each process appends its spans to, one OTLP JSON export request per line (the OpenTelemetry "
       "Collector's file format); SIGUSR1 to the server reopens it, for log rotation"},
      {"EDRI_TRACE_SAMPLE", "`1`", parse::fraction(&Config::trace_sample),
       "the share (0..1) of requests without a `traceparent` whose traces are exported; a request with one "
       "follows its sampled flag. An unsampled request still carries its trace id (logs, access log, answer)"},
      {"EDRI_TRACE_BUFFER", "`8192`", parse::integer(&Config::trace_buffer, 64, std::size_t{1} << 24),
       "spans one process holds for its exporter thread; the export never stalls a role: past this, spans are "
       "dropped and counted (logged)"},
      {"ENVIRONMENT", "`development`", parse::named_flag(&Config::production, "production", "development"),
       "`production` hides internal error text (a handler's exception) from clients"},
      {"EDRI_API_DOCS", "`auto`",
       parse::choice<std::string>(&Config::api_docs, {{"auto", "auto"}, {"on", "on"}, {"off", "off"}}),
       "`GET /openapi.json`, the OpenAPI 3.1 document of the plugins' routes made from their declarations, and "
       "`GET /docs`, a page (Swagger UI) where each route can be tried; `auto` serves both outside "
       "`ENVIRONMENT=production`; docs/writing-a-plugin.md"},
      {"EDRI_API_DOCS_UI", "unset", parse::text(&Config::api_docs_ui),
       "the folder of Swagger UI's files (npm `swagger-ui-dist`) that the page at `/docs` loads; unset: "
       "`share/edri/swagger-ui` beside the server's `bin/` folder, where the build and the package put them"},
      {"EDRI_RELOAD_ON_CHANGE", "`off`", parse::choice(&Config::reload_on_change, {{"off", false}, {"on", true}}),
       "`on`, for development: when a plugin file is written anew (a build, a copy, a rename over it), the server "
       "reloads as on `SIGHUP`, 300 ms after the last write; a build that fails to load leaves the old code serving"},
      {"EDRI_RING_BYTES", "`4194304`", parse::power_of_two(&Config::ring_bytes, 4096, kGiB),
       "size of each channel ring (power of two); the largest envelope is a quarter of it"},
      {"EDRI_OUTBOX_LIMIT", "`16777216`", parse::integer(&Config::outbox_limit, 0, 16 * kGiB),
       "bytes of new work (requests, notifications) a process queues locally for one full channel before answering 503 "
       "(a push: its subscribers are closed with 1013). Answers are never refused for room: they belong to requests "
       "already admitted, which this bound and the connection limits bound"},
      {"EDRI_SPIN", "`auto`", parse::count_or_auto(&Config::spin, &Config::spin_auto, 0, 100000000),
       "the most idle loop turns a process polls its channels before sleeping on its doorbell; it polls that many only "
       "while wake-ups come close together, and none after a long sleep. `auto`: 2000 where the processes have cores "
       "of their own and one to spare, else 0 (docs/decisions/0003, 0017)"},
      {"EDRI_CPUS", "`auto`", parse::cpu_placement(),
       "where the processes run: `auto` decides by the CPUs allowed: with at least 6, and 1 more than the server has "
       "processes, or at least 6 and several listeners, wherever the scheduler puts them; else listeners, broker and "
       "router on one CPU (the last one allowed), a manager there too while quiet and, a manager or the broker while "
       "busy, on a CPU it holds for itself, the pipeline's last, or wherever the scheduler puts it once every CPU is "
       "held (docs/decisions/0006, 0017, 0036, 0039); `one` every process on that CPU; `all` wherever the scheduler "
       "puts them; or "
       "a CPU list (`1`, `0-3`, `0,2`) every child is pinned to, "
       "each one the server may use (its affinity: the machine's CPUs, less what `taskset` or a container's cpuset "
       "leaves out): a list naming another stops start-up with the CPUs it may use"},
      {"EDRI_SCHED", "`batch`", parse::choice(&Config::sched_batch, {{"batch", true}, {"other", false}}),
       "`batch`: SCHED_BATCH, a woken process does not preempt the running one; `other`: the default policy"},
      {"EDRI_SERVER_TIMING", "`0`", parse::flag(&Config::server_timing),
       "`1`: every hop stamps the envelope and responses carry `Server-Timing` (broker, router, manager, handler, "
       "return, total)"},
      {"EDRI_REQUEST_ID", "`1`", parse::flag(&Config::request_id),
       "every response carries `X-Request-Id` (the client's, if it sent a sane one, else a new one); the handler sees "
       "it as header `x-request-id`"},
      {"EDRI_CORS_ORIGINS", "unset (CORS off)", parse::origin_list(&Config::cors_origins),
       "allowed origins, comma-separated (`https://app.example`), or `*`"},
      {"EDRI_TRUSTED_PROXIES", "unset (none)", parse::address_ranges(&Config::trusted_proxies),
       "addresses or CIDR blocks (`10.0.0.0/8, ::1`), comma-separated, of proxies whose `X-Forwarded-For` or "
       "`Forwarded` (and, with `EDRI_PROXY_PROTOCOL=on`, PROXY protocol header) names the client "
       "(`Request::client_address`); from any other peer those are ignored"},
      {"EDRI_PROXY_PROTOCOL", "`off`", parse::choice(&Config::proxy_protocol, {{"off", false}, {"on", true}}),
       "`on`: a connection from a peer in `EDRI_TRUSTED_PROXIES` must begin with a PROXY protocol header (HAProxy's, "
       "v1 text or v2 binary; before the TLS handshake on a TLS port), whose source address becomes the client's; "
       "one without a valid header within `EDRI_HEADER_TIMEOUT` is closed unanswered. Other peers are served as "
       "with `off`, their bytes never read as a header. Needs `EDRI_TRUSTED_PROXIES` (docs/security.md)"},
      {"EDRI_CORS_HEADERS", "`Content-Type, Authorization, X-Request-Id`", parse::text(&Config::cors_headers),
       "`Access-Control-Allow-Headers` for preflights; `*` echoes what the browser asked for"},
      {"EDRI_CORS_CREDENTIALS", "`0`", parse::flag(&Config::cors_credentials),
       "`1`: `Access-Control-Allow-Credentials: true` (the origin is then always named, never `*`)"},
      {"EDRI_CORS_MAX_AGE", "`600`", parse::integer(&Config::cors_max_age, 0, 7 * 86400),
       "seconds a browser may cache a preflight; with `EDRI_CORS_ORIGINS` set, a WebSocket handshake whose `Origin` is "
       "not listed is refused (403)"},
      {"EDRI_SSL_CERTIFICATE", "unset", parse::regular_file(&Config::ssl_certificate),
       "PEM certificate chain; with `EDRI_SSL_KEY` the port speaks HTTPS only (TLS 1.2+); a file that does not load, "
       "or a key that does not match, stops start-up"},
      {"EDRI_SSL_KEY", "unset", parse::regular_file(&Config::ssl_key), "PEM private key of that certificate"},
      {"EDRI_TEMPLATE_PATH", "unset", parse::directory(&Config::template_path),
       "folder of Mustache templates for `Context::render`"},
      {"EDRI_ASSETS_PATH", "unset", parse::directory(&Config::assets_path),
       "folder served as static files at `/`, after routes and plugin asset folders (ETag, 304, Range)"},
      {"EDRI_WEBSOCKET_PATH", "`/ws`", parse::endpoint_path(&Config::websocket_path, "no WebSocket"),
       "the WebSocket endpoint (docs/websocket.md); empty: no WebSocket. A plain `GET` of it is answered 426"},
      {"EDRI_WEBSOCKET_MAX_MESSAGE", "`524288`", parse::integer(&Config::websocket_max_message, 125, kTiB),
       "largest WebSocket message in bytes, after reassembly of its frames (larger: close 1009); must fit a quarter of "
       "a ring"},
      {"EDRI_MAX_JSON_DEPTH", "`128`", parse::integer(&Config::max_json_depth, 1, kJsonDepthCeiling),
       "deepest nesting of arrays and objects in a client's JSON (1..10000; `1` and `\"a\"` are 0, `[]` and "
       "`{\"a\":1}` 1), measured before it is parsed: a deeper REST body is a 422 in the listener (declared body "
       "fields) or from `Request::json()` in the manager, a deeper WebSocket message an error 422 (the connection "
       "stays open). Without it, a document some 70,000 levels deep overflowed the stack of whatever process "
       "serialized, compared or copied it (each recurses once per level)"},
      {"EDRI_WEBSOCKET_MAX_SUBSCRIPTIONS", "`64`", parse::integer(&Config::websocket_max_subscriptions, 0, 4096),
       "push subscriptions one WebSocket connection may hold (more: error 429)"},
      {"EDRI_WEBSOCKET_DEFLATE", "`0`", parse::flag(&Config::websocket_deflate),
       "offer permessage-deflate (RFC 7692) to WebSocket clients. The server compresses each message alone "
       "(server_no_context_takeover), so a push or a stream's revision is compressed once for every subscriber that "
       "agreed, and asks for a 1 KiB window for what clients send (client_max_window_bits=10)"},
      {"EDRI_COMPRESSION", "`1`", parse::flag(&Config::compression),
       "compress answers for clients that accept it (docs/compression.md): a handler's body of a compressible type "
       "and at least `EDRI_COMPRESSION_MIN_SIZE` bytes, streamed answers included, by `Accept-Encoding` (brotli or "
       "gzip, with `Vary: Accept-Encoding`), in the manager that made it; a static file's `.br` or `.gz` sibling; "
       "gRPC messages with `grpc-encoding: gzip`. `0`: no answer is compressed and none of these is offered "
       "(docs/decisions/0034)"},
      {"EDRI_COMPRESSION_MIN_SIZE", "`1024`", parse::integer(&Config::compression_min_size, 0, kTiB),
       "bytes below which a body goes uncompressed (a gRPC message too): under about a kilobyte the saving is a "
       "packet or less, and the codings' headers eat part of it"},
      {"EDRI_COMPRESSION_TYPES",
       "`text/*,application/json,application/problem+json,application/ld+json,application/manifest+json,"
       "application/javascript,application/xml,application/wasm,image/svg+xml`",
       parse::media_types(&Config::compression_types),
       "media types whose answers are compressed, comma-separated; `type/*` stands for every subtype. Images, "
       "video, archives and fonts are compressed already: leave them out"},
      {"EDRI_COMPRESSION_GZIP_LEVEL", "`1`", parse::integer(&Config::compression_gzip_level, 1, 9),
       "zlib's level for gzip answers (1..9): level 1 compresses a 1 MB JSON answer at about 155 MB/s of input on "
       "one core of a 2-vCPU VM (3.85:1), level 4 at 85 MB/s, level 6 at 41 MB/s (4.76:1); a manager serves no "
       "other request of its domain meanwhile (docs/decisions/0034)"},
      {"EDRI_COMPRESSION_BROTLI_QUALITY", "`2`", parse::integer(&Config::compression_brotli_quality, 0, 11),
       "brotli's quality for br answers (0..11): quality 2 compresses that answer at about 155 MB/s (4.44:1), 4 at "
       "70 MB/s; 11 is for files compressed ahead of time (a static file's `.br` sibling), never on the fly"},
      {"EDRI_STREAM_LOG", "`256`", parse::integer(&Config::stream_log, 0, 65536),
       "revisions of each live stream the broker keeps for a subscriber that resumes (`since`, `Last-Event-ID`); one "
       "from further back gets a snapshot"},
      {"EDRI_STREAM_MAX_BYTES", "`262144`", parse::integer(&Config::stream_max_bytes, 1024, 512u << 10),
       "largest live-stream state (and patch) as JSON text; a publish that would pass it is refused with 413"},
      {"EDRI_STREAM_SEND_BUFFER", "`32768`", parse::integer(&Config::stream_send_buffer, 0, 64u << 20),
       "socket send buffer (SO_SNDBUF) of a connection once it subscribes to a live stream; `0` keeps the kernel's "
       "(autotuned up to megabytes). Coalescing starts where the socket stops taking bytes: with the kernel's "
       "buffer a client that stops reading would hold megabytes of frames there before it got one composed patch"},
      {"EDRI_MANAGER_REPLICAS", "unset", parse::integer(&Config::manager_replicas, 1, 64),
       "manager processes of each domain that declared none (`Registry::replicas`) and is not named in "
       "`EDRI_DOMAIN_REPLICAS` (1..64); unset: 1. Requests of a domain are shared among its replicas "
       "(`EDRI_ROUTING`); each notification reaches one replica of every subscribed domain. Only for domains that "
       "keep no state in the process: a domain that does declares `replicas(1)` and stays single"},
      {"EDRI_DOMAIN_REPLICAS", "unset", parse::counts_by_name(&Config::domain_replicas, 1, 64),
       "manager processes of the named domains, `name=count,...` (1..64 each), over what the plugins declared and "
       "`EDRI_MANAGER_REPLICAS`; an unknown domain stops start-up"},
      {"EDRI_LISTENER_DOMAINS", "unset", parse::subject_token_list(&Config::listener_domains),
       "comma-separated domains whose handlers run inside the listener process, on its loop, instead of in a manager "
       "process of their own: a request to them crosses no process, no wake-up between processes (on few cores the "
       "gain is largest at moderate load: docs/decisions/0038). The price is the isolation: a handler that crashes "
       "takes "
       "the listener and every client connection with it (all restarted), and one that blocks stalls every "
       "connection. Only for trusted handlers that keep no state the listener's restarts would lose; needs one "
       "listener (`EDRI_LISTENER_WORKERS=1`, which `auto` then chooses) and one replica of each named domain. Unset: "
       "every domain has its own process"},
      {"EDRI_ROUTING", "`least_loaded`",
       parse::choice(&Config::least_loaded, {{"round_robin", false}, {"least_loaded", true}}),
       "how the router shares a domain's requests among its replicas: `least_loaded` (the replica with the fewest "
       "requests in flight; ties round robin; docs/decisions/0007) or `round_robin`"},
      {"EDRI_ADMIN_SOCKET", "unset", parse::socket_path(&Config::admin_socket),
       "a Unix domain socket path where the built-in endpoints answer in full (`/health` with every pid), and then "
       "only there: on the public port and `EDRI_UNIX_SOCKET` their paths are the application's (middleware, routes, "
       "404); replaced and removed like `EDRI_UNIX_SOCKET`'s"},
      {"EDRI_HEALTH_PATH", "`/health`", parse::endpoint_path(&Config::health_path, "not served"),
       "the path of the built-in health endpoint; on the public port it names no pids"},
      {"EDRI_HEALTH_STALL", "`10`", parse::seconds(&Config::health_stall_s),
       "seconds a process may spend in one turn of its loop (a handler that does not return, a loop that never ends) "
       "before `/health` and `/ready` name it `stalled` and answer 503; an idle process waiting for work is never "
       "stalled"},
      {"EDRI_READY_PATH", "`/ready`", parse::endpoint_path(&Config::ready_path, "not served"),
       "the path of the built-in readiness endpoint"},
      {"EDRI_METRICS_PATH", "`/metrics`", parse::endpoint_path(&Config::metrics_path, "not served"),
       "the path of the built-in Prometheus metrics"},
      {"EDRI_UNIX_SOCKET", "unset", parse::socket_path(&Config::unix_socket),
       "also serve plain HTTP (and WebSocket) on this Unix domain socket path, for a reverse proxy on the same host; a "
       "socket file left by a dead instance is replaced, anything else at the path stops start-up; removed on exit"},
      {"EDRI_WORKER_THREADS", "unset", parse::integer(&Config::worker_threads, 1, 1024),
       "threads of each manager's worker pool (`Context::in_thread`); unset: what the plugin asked for "
       "(`Registry::worker_threads`), else one per CPU the server may use. Worker threads may run on all those CPUs, "
       "even when `EDRI_CPUS` pins the manager's loop to one"},
      {"EDRI_WORKER_PROCESSES", "unset", parse::integer(&Config::worker_processes, 1, 256),
       "worker processes of each manager whose domain registered tasks (`Registry::task`, `Context::in_process`), "
       "1..256; unset: what the plugin asked for (`Registry::worker_processes`), else one per CPU the server may use. "
       "They start with the manager, run on all those CPUs, and a dead one is replaced"},
      {"EDRI_WORKER_QUEUE", "unset", parse::integer(&Config::worker_queue, 1, kMiB),
       "jobs that may wait for a worker, per pool (thread or process); one more is answered 503 with `Retry-After: 1`; "
       "unset: the plugin's choice, else 256"},
      {"EDRI_NATS_URL", "unset", parse::nats_urls(&Config::nats_url),
       "NATS server URLs, comma separated (`nats://127.0.0.1:4222`): join the instances of `EDRI_CLUSTER` through "
       "them (docs/cluster.md). Requests whose domain runs on no local manager cross to an instance that runs it; "
       "notifications and WebSocket pushes reach every instance. Unset: one host, and no NATS code runs"},
      {"EDRI_CLUSTER", "`edri`", parse::subject_token(&Config::cluster),
       "the app's name: instances with the same name form one app, and it prefixes every subject, so two apps on one "
       "NATS never see each other's events"},
      {"EDRI_DOMAINS", "every domain", parse::subject_token_list(&Config::domains),
       "comma-separated domains this instance runs managers for (each must be a domain of the plugins); the others "
       "are served by the instances that run them. Every instance loads every plugin and serves every route"},
      {"EDRI_NATS_USER", "unset", parse::text(&Config::nats_user), "user name for NATS (with `EDRI_NATS_PASSWORD`)"},
      {"EDRI_NATS_PASSWORD", "unset", parse::secret(&Config::nats_password),
       "password for NATS (`--print-config` shows `(set)`)"},
      {"EDRI_NATS_TOKEN", "unset", parse::secret(&Config::nats_token), "token for NATS"},
      {"EDRI_NATS_TLS", "`0`", parse::flag(&Config::nats_tls),
       "require TLS to NATS (also implied by a `tls://` URL); the server's certificate is verified"},
      {"EDRI_NATS_CA", "unset", parse::regular_file(&Config::nats_ca),
       "PEM file of the certificate authorities that sign the NATS server's certificate (unset: the system's)"},
      {"EDRI_NATS_CERTIFICATE", "unset", parse::regular_file(&Config::nats_certificate),
       "client certificate chain (PEM) for NATS servers that verify clients (with `EDRI_NATS_KEY`)"},
      {"EDRI_NATS_KEY", "unset", parse::regular_file(&Config::nats_key), "the client certificate's key (PEM)"},
      {"EDRI_NATS_MAX_MESSAGE", "`1048576`", parse::integer(&Config::nats_max_message, 4096, 64 * kMiB),
       "largest request or answer, envelope and body, that crosses to another instance (also capped by the NATS "
       "server's `max_payload`): a larger request is answered 413, a larger answer 502, never cut"},
  };
}

}  // namespace

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = make_settings();
  return table;
}

std::string settings_markdown() {
  std::string out = "| variable | default | meaning |\n|---|---|---|\n";
  for (const auto& s : settings())
    out += std::string("| `") + s.name + "` | " + s.default_text + " | " + s.meaning + " |\n";
  return out;
}

}  // namespace edri

namespace edri {

std::string toml_string(std::string_view text) {
  // JSON's escapes are TOML's: \", \\, \n, \uXXXX.
  std::string out = "\"";
  append_json_text(out, text);
  return out + "\"";
}

std::string settings_toml(const Config& c) {
  std::string out =
      "# edri-server --config FILE: every setting as in effect, those left at their default commented out\n"
      "# (docs/configuration.md says what each means). The environment wins over this file, the command\n"
      "# line over both.\n";
  const Config defaults;
  for (const auto& s : settings()) {
    const std::string text = s.binding.show(c);
    const std::string line = setting_key(s) + " = " + toml_string(text);
    if (s.binding.secret && !text.empty())
      out += "# " + setting_key(s) + " = (set, not shown)\n";
    else if (text == s.binding.show(defaults))
      out += "# " + line + "  (default)\n";
    else
      out += line + "\n";
  }
  return out;
}

std::string setting_key(const Setting& s) {
  std::string_view name = s.name;
  if (name.rfind("EDRI_", 0) == 0) name.remove_prefix(5);
  std::string key(name);
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  return key;
}

const Setting* setting_by_key(const std::string& key) {
  for (const auto& s : settings())
    if (setting_key(s) == key) return &s;
  return nullptr;
}

std::vector<std::string> setting_keys() {
  std::vector<std::string> out;
  for (const auto& s : settings()) out.push_back(setting_key(s));
  return out;
}

std::vector<std::string> setting_names() {
  std::vector<std::string> out;
  for (const auto& s : settings()) out.emplace_back(s.name);
  return out;
}

void check_setting_value(const Setting& s, const std::string& where, const std::string& text) {
  Config scratch;
  s.binding.read(scratch, EnvValue{where.c_str(), text});
}

void check_unknown_variables(const std::vector<std::string>& also_known) {
  std::vector<std::string> known = setting_names();
  known.insert(known.end(), also_known.begin(), also_known.end());
  std::string unknown;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry = *e;
    const std::string name(entry.substr(0, entry.find('=')));
    if (name.rfind("EDRI_", 0) != 0 || name.rfind("EDRI_INTERNAL_", 0) == 0) continue;
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    unknown += (unknown.empty() ? "" : "; ") + name + did_you_mean(name, known);
  }
  if (!unknown.empty())
    throw ConfigError("not a setting of the server or of a plugin: " + unknown +
                      ". Every setting: edri-server --print-config-markdown; a plugin's: --print-config");
}

}  // namespace edri
