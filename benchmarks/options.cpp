#include "options.hpp"

#include <sched.h>

#include <charconv>
#include <string_view>
#include <utility>

namespace edri::bench {
namespace {

// BENCH_MIDDLEWARES is clamped to this by bench_app; refusing more here keeps
// a table row from claiming a count the server did not install.
constexpr int kMaxMiddlewares = 64;

std::optional<double> parse_seconds(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < 0 || value > 86400) return std::nullopt;
  return value;
}

std::optional<int> parse_int(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// "1,8,32"; with ranges ("0-3") when `allow_ranges`.
std::optional<std::vector<int>> parse_int_list(std::string_view text, bool allow_ranges) {
  std::vector<int> out;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const std::size_t dash = allow_ranges ? item.find('-') : std::string_view::npos;
    if (dash == std::string_view::npos) {
      const auto value = parse_int(item);
      if (!value) return std::nullopt;
      out.push_back(*value);
    } else {
      const auto first = parse_int(item.substr(0, dash));
      const auto last = parse_int(item.substr(dash + 1));
      if (!first || !last || *first > *last) return std::nullopt;
      for (int v = *first; v <= *last; ++v) out.push_back(v);
    }
  }
  if (out.empty()) return std::nullopt;
  return out;
}

bool all_within(const std::vector<int>& values, int low, int high) {
  for (int v : values) {
    if (v < low || v > high) return false;
  }
  return true;
}

}  // namespace

void print_options_help(std::FILE* to) {
  std::fprintf(to,
               "options:\n"
               "  --duration S         measured seconds per run (default 5)\n"
               "  --warmup S           unmeasured seconds before each run (default 1)\n"
               "  --concurrency LIST   connections, e.g. 1,8,32 (the default; 32 for middleware)\n"
               "  --middlewares LIST   middleware scenario: BENCH_MIDDLEWARES values (default 0,1,4,8)\n"
               "  --quick              --duration 1 --warmup 0.3 unless given\n"
               "  --client-cpu N       pin the load generator to CPU N\n"
               "  --server-cpus LIST   CPUs for the server: EDRI_CPUS for edri, affinity for\n"
               "                       the references (e.g. 0 or 0,1 or 0-3)\n"
               "  --verbose            server logs to stderr\n"
               "  --runs N             run N times; the report shows each cell's range\n"
               "  --rate R             open loop: R requests/s in all per run, spread over the\n"
               "                       connections, each request's latency counted from its\n"
               "                       scheduled send (no coordinated omission); default: closed\n"
               "                       loop, each connection sends when its answer is in\n"
               "  --reference-command CMD\n"
               "                       fanout: also measure the server CMD starts (sh -c), which\n"
               "                       speaks docs/streams.md's protocol and POST /stream-burst on\n"
               "                       the port in $PORT (and in place of {port}); stopped by\n"
               "                       SIGTERM to its process group\n"
               "  --reference-name N   its name in the tables (default: reference)\n"
               "  --record             also append the report to BENCHMARKS.md and draw\n"
               "                       docs/charts/<scenario>.svg (gnuplot); every run but --quick\n"
               "                       ones writes benchmarks/results/<date>-<scenario>.json\n");
}

std::optional<Options> parse_options(int argc, char** argv) {
  Options options;
  std::optional<double> duration;
  std::optional<double> warmup;
  bool quick = false;

  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::optional<std::string_view> inline_value;
    if (arg.starts_with("--")) {
      if (const auto eq = arg.find('='); eq != std::string_view::npos) {
        inline_value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
      }
    }
    auto value = [&]() -> std::optional<std::string_view> {
      if (inline_value) return inline_value;
      if (i + 1 < argc) return std::string_view(argv[++i]);
      std::fprintf(stderr, "bench: %.*s needs a value\n", static_cast<int>(arg.size()), arg.data());
      return std::nullopt;
    };
    auto invalid = [&](std::string_view v) {
      std::fprintf(stderr, "bench: invalid value for %.*s: '%.*s'\n", static_cast<int>(arg.size()), arg.data(),
                   static_cast<int>(v.size()), v.data());
      return std::nullopt;
    };

    if (arg == "--duration" || arg == "--warmup") {
      const auto v = value();
      if (!v) return std::nullopt;
      const auto seconds = parse_seconds(*v);
      if (!seconds || (arg == "--duration" && *seconds <= 0)) return invalid(*v);
      (arg == "--duration" ? duration : warmup) = *seconds;
    } else if (arg == "--concurrency") {
      const auto v = value();
      if (!v) return std::nullopt;
      auto list = parse_int_list(*v, false);
      if (!list || !all_within(*list, 1, 10000)) return invalid(*v);
      options.concurrencies = std::move(*list);
    } else if (arg == "--middlewares") {
      const auto v = value();
      if (!v) return std::nullopt;
      auto list = parse_int_list(*v, false);
      if (!list || !all_within(*list, 0, kMaxMiddlewares)) return invalid(*v);
      options.middleware_counts = std::move(*list);
    } else if (arg == "--quick") {
      quick = true;
    } else if (arg == "--client-cpu") {
      const auto v = value();
      if (!v) return std::nullopt;
      const auto cpu = parse_int(*v);
      if (!cpu || *cpu < 0 || *cpu >= CPU_SETSIZE) return invalid(*v);
      options.client_cpu = *cpu;
    } else if (arg == "--server-cpus") {
      const auto v = value();
      if (!v) return std::nullopt;
      auto list = parse_int_list(*v, true);
      if (!list || !all_within(*list, 0, CPU_SETSIZE - 1)) return invalid(*v);
      options.server_cpus = std::string(*v);
      options.server_cpu_list = std::move(*list);
    } else if (arg == "--verbose") {
      options.verbose = true;
    } else if (arg == "--record") {
      options.record = true;
    } else if (arg == "--rate") {
      const auto v = value();
      if (!v) return std::nullopt;
      double rate = 0;
      auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), rate);
      if (ec != std::errc{} || end != v->data() + v->size() || !(rate > 0) || rate > 1e7) return invalid(*v);
      options.rate = rate;
    } else if (arg == "--runs") {
      const auto v = value();
      if (!v) return std::nullopt;
      const auto n = parse_int(*v);
      if (!n || *n < 1 || *n > 100) return invalid(*v);
      options.runs = *n;
    } else if (arg == "--reference-command" || arg == "--reference-name") {
      const auto v = value();
      if (!v) return std::nullopt;
      if (v->empty() || v->find_first_not_of(" \t") == std::string_view::npos) return invalid(*v);
      (arg == "--reference-command" ? options.reference_command : options.reference_name) = std::string(*v);
    } else if (!arg.starts_with("-") && options.scenario.empty()) {
      options.scenario = std::string(arg);
    } else {
      std::fprintf(stderr, "bench: unexpected argument '%s'\n", argv[i]);
      return std::nullopt;
    }
  }

  if (!options.reference_command.empty() && options.scenario != "fanout") {
    std::fprintf(stderr, "bench: --reference-command applies to the fanout scenario only\n");
    return std::nullopt;
  }
  if (!options.middleware_counts.empty() && options.scenario != "middleware") {
    std::fprintf(stderr, "bench: --middlewares applies to the middleware scenario only\n");
    return std::nullopt;
  }
  options.quick = quick;
  if (quick && options.record) {
    std::fprintf(stderr, "bench: --quick runs are smoke runs; they are not recorded\n");
    return std::nullopt;
  }
  options.duration_seconds = duration.value_or(quick ? 1.0 : 5.0);
  options.warmup_seconds = warmup.value_or(quick ? 0.3 : 1.0);
  // Where the machine has cores to spare, the load generator (one thread)
  // keeps off the servers' cores unless told otherwise.
  const auto cpus = allowed_cpus();
  if (!options.client_cpu && options.server_cpus.empty() && cpus.size() >= 4) {
    options.default_split = true;
    options.client_cpu = cpus.front();
    options.server_cpu_list.assign(cpus.begin() + 1, cpus.end());
  }
  return options;
}

std::vector<int> allowed_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) out.push_back(c);
  if (out.empty()) out.push_back(0);
  return out;
}

std::vector<int> doubling_up_to(int n) {
  std::vector<int> out{1, 2};
  for (int k = 4; k <= n; k *= 2) out.push_back(k);
  return out;
}

}  // namespace edri::bench
