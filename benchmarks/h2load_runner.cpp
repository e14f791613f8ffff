#include "h2load_runner.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "server_process.hpp"

namespace edri::bench {
namespace {

constexpr const char* kH2load = "/usr/bin/h2load";
// Beyond warm-up and duration: h2load's start, and its wait for the answers
// still in flight when the duration ends.
constexpr double kFinishSlackSeconds = 30;

// h2load takes durations with a unit; milliseconds keep --quick's 0.3 s.
std::string milliseconds(double seconds, long at_least) {
  return std::to_string(std::max(at_least, std::lround(seconds * 1000))) + "ms";
}

std::vector<std::string> h2load_args(const H2loadOptions& options) {
  // By default one stream per connection at a time, all connections on
  // one thread.
  const int threads = std::clamp(options.threads, 1, std::max(1, options.concurrency));
  std::vector<std::string> args{
      "-c", std::to_string(options.concurrency), "-m", std::to_string(options.streams), "-t", std::to_string(threads)};
  if (options.http1) args.emplace_back("--h1");
  args.push_back("--duration=" + milliseconds(options.duration_seconds, 1));
  if (options.warmup_seconds > 0) args.push_back("--warm-up-time=" + milliseconds(options.warmup_seconds, 0));
  if (options.rate > 0) {
    char per_client[64];
    std::snprintf(per_client, sizeof per_client, "--rps=%.6g", options.rate / options.concurrency);
    args.emplace_back(per_client);
  }
  args.push_back("http://127.0.0.1:" + std::to_string(options.port) + options.path);
  return args;
}

// The line of `output` that starts with `prefix`, or an empty view.
std::string_view line_starting(std::string_view output, std::string_view prefix) {
  for (std::size_t at = 0; at < output.size();) {
    const std::size_t end = std::min(output.find('\n', at), output.size());
    const std::string_view line = output.substr(at, end - at);
    if (line.starts_with(prefix)) return line;
    at = end + 1;
  }
  return {};
}

// The count written just before `label` in `line` ("12 failed" -> 12); 0
// when there is none.
std::uint64_t count_before(std::string_view line, std::string_view label) {
  const std::size_t at = line.find(label);
  if (at == std::string_view::npos) return 0;
  std::size_t digits_start = at;
  while (digits_start > 0 && std::isdigit(static_cast<unsigned char>(line[digits_start - 1])) != 0) --digits_start;
  std::uint64_t count = 0;
  std::from_chars(line.data() + digits_start, line.data() + at, count);
  return count;
}

// Reads h2load's stdout to its end; false (with `result` saying why) when
// it was interrupted or did not finish in time.
bool read_output(ServerProcess& process, const H2loadOptions& options, std::string& output, H2loadResult& result) {
  using Clock = std::chrono::steady_clock;
  const double limit = options.warmup_seconds + options.duration_seconds + kFinishSlackSeconds;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit));
  for (;;) {
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    std::string line;
    switch (process.read_stdout_line(left, options.stop_requested, line)) {
      case ServerProcess::LineStatus::kLine: output.append(line).push_back('\n'); continue;
      case ServerProcess::LineStatus::kClosed: return true;
      case ServerProcess::LineStatus::kInterrupted:
        result.outcome = H2loadResult::Outcome::kInterrupted;
        result.message = "interrupted";
        return false;
      case ServerProcess::LineStatus::kTimeout:
        result.message = "h2load did not finish within " + std::to_string(static_cast<int>(limit)) + " s";
        return false;
    }
  }
}

}  // namespace

bool h2load_installed() { return ::access(kH2load, X_OK) == 0; }

bool parse_h2load_summary(std::string_view output, H2loadResult& result) {
  const std::string_view finished = line_starting(output, "finished in ");
  const std::size_t comma = finished.find(", ");
  if (comma == std::string_view::npos) return false;
  result.requests_per_second = std::strtod(std::string(finished.substr(comma + 2)).c_str(), nullptr);
  const std::string_view requests = line_starting(output, "requests: ");
  result.succeeded = count_before(requests, " succeeded");
  result.errors =
      count_before(requests, " failed") + count_before(requests, " errored") + count_before(requests, " timeout");
  const std::string_view codes = line_starting(output, "status codes: ");
  result.non_2xx = count_before(codes, " 3xx") + count_before(codes, " 4xx") + count_before(codes, " 5xx");
  return true;
}

H2loadResult run_h2load(const H2loadOptions& options) {
  H2loadResult result;
  if (!h2load_installed()) {
    result.outcome = H2loadResult::Outcome::kNotInstalled;
    result.message = std::string(kH2load) + " not found (nghttp2-client)";
    return result;
  }
  const ProcessSpec spec{.program = kH2load,
                         .args = h2load_args(options),
                         .env = {},
                         .working_dir = {},
                         .cpus = options.cpu ? std::vector<int>{*options.cpu} : std::vector<int>{},
                         .stdout_to = OutputTo::kPipe,
                         .stderr_to = options.verbose ? OutputTo::kStderr : OutputTo::kDevNull};
  std::string error;
  const auto process = ServerProcess::start(spec, error);
  if (!process) {
    result.message = error;
    return result;
  }
  std::string output;
  if (!read_output(*process, options, output, result)) return result;  // the process is stopped as it goes
  if (!process->wait_for_exit(5.0)) {
    result.message = "h2load closed its output but did not exit";
    return result;
  }
  const int status = process->wait();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    result.message = "h2load " + process->exit_description().value_or("failed");
  } else if (!parse_h2load_summary(output, result)) {
    result.message = "h2load printed no \"finished in\" line";
  } else if (result.succeeded == 0) {
    // h2load counts a refused connection as no request at all.
    result.message = "no request succeeded (connection refused?)";
  } else {
    result.outcome = H2loadResult::Outcome::kDone;
  }
  return result;
}

}  // namespace edri::bench
