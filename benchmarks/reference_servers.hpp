#pragma once

#include <csignal>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server_process.hpp"

namespace edri::bench {

// Response sizes of `bench payload` (bench-app /payload/{bytes}, nginx files).
inline constexpr std::size_t kPayloadSizes[] = {1024, 102400, 1048576, 16777216};

// kTechEmpowerFastApi: the FastAPI app of the TechEmpower test types
// (techempower/fastapi_app.py, asyncpg and Jinja2), on the database that
// TFB_DATABASE_URL in extra_env names.
// kNodeStreams: the Node.js `ws` server of `bench fanout`
// (reference/streams_node): live streams' wire protocol, no coalescing.
// kNginxHttp2: nginx with `listen ... http2` (cleartext, prior knowledge
// only), for REST over HTTP/2. kGrpcio: a no-op servicer of edri's gRPC
// service on Python's grpcio (reference/grpc_noop_server.py).
// kCommand: whatever ServerSettings::command starts (`bench fanout
// --reference-command`), told its port in $PORT and in place of `{port}`.
enum class ServerKind { kEdri, kFastApi, kNginx, kNodeStreams, kNginxHttp2, kGrpcio, kTechEmpowerFastApi, kCommand };

std::string_view display_name(ServerKind kind);

struct ServerSettings {
  std::string server_cpus;           // as the user wrote it; handed to edri as EDRI_CPUS
  std::vector<int> server_cpu_list;  // the same, expanded, for pinning the references
  bool verbose = false;
  int workers = 1;  // FastAPI's uvicorn workers, nginx's worker processes
  // grpcio's handler threads; 0: the script's default. A Connect stream
  // holds one for as long as it is open.
  int handler_threads = 0;
  const volatile std::sig_atomic_t* stop_requested = nullptr;
  // Added to this start's environment last, so they win over bench's own
  // settings; e.g. BENCH_MIDDLEWARES, which bench_app reads at start.
  std::vector<std::pair<std::string, std::string>> extra_env;
  // What start_server waits for: this path answering 200 (edri also has
  // /ready, for the startup scenario).
  std::string ready_path = "/noop";
  std::string command = {};  // kCommand's shell command
};

// A directory under /tmp removed, with its contents, on destruction.
class TempDir {
 public:
  static std::unique_ptr<TempDir> create(const std::string& name_prefix, std::string& error);
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  explicit TempDir(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

struct StartedServer {
  enum class Outcome { kRunning, kNotInstalled, kFailed, kInterrupted };

  Outcome outcome = Outcome::kFailed;
  std::string message;  // why it is not running
  std::uint16_t port = 0;
  // Declared before `process` so the server is stopped before its files go.
  std::unique_ptr<TempDir> temp_dir;
  std::unique_ptr<ServerProcess> process;
};

// Starts the server and waits until GET ready_path (/noop) answers 200 on
// 127.0.0.1 (over HTTP/2 for kNginxHttp2), probing every 2 ms; grpcio, which
// has no such path, until it prints that it is listening.
StartedServer start_server(ServerKind kind, const ServerSettings& settings);

}  // namespace edri::bench
