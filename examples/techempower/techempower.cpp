// The TechEmpower Framework Benchmarks' seven test types on edri
// (benchmarks/techempower/README.md): JSON, plaintext, single query,
// multiple queries, fortunes, updates and cached queries, against the
// Postgres database that TFB_DATABASE_URL names (its tables World and
// Fortune as TechEmpower defines them). Fortunes are rendered by the
// Mustache template in EDRI_TEMPLATE_PATH (build/plugins/techempower_templates).
#include <edri/plugin.hpp>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

constexpr int kWorldRows = 10000;
constexpr const char* kWorldById = "SELECT id, randomnumber FROM world WHERE id = $1";

int random_id() {
  thread_local std::minstd_rand engine{std::random_device{}()};
  return std::uniform_int_distribution<int>(1, kWorldRows)(engine);
}

// TechEmpower's clamp: `name` missing or not an integer is 1; below 1 is
// 1; above 500 is 500.
int count_in_query(std::string_view query, std::string_view name) {
  for (std::size_t at = 0; at <= query.size();) {
    const auto end = std::min(query.find('&', at), query.size());
    const auto pair = query.substr(at, end - at);
    if (pair.starts_with(name) && pair.size() > name.size() && pair[name.size()] == '=') {
      const auto digits = pair.substr(name.size() + 1);
      int n = 1;
      const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
      if (ec != std::errc() || p != digits.data() + digits.size()) return 1;
      return std::clamp(n, 1, 500);
    }
    at = end + 1;
  }
  return 1;
}

nlohmann::json world(const edri::Row& row) { return {{"id", row.int64(0)}, {"randomNumber", row.int64(1)}}; }

// Statements reading `n` random rows, each on its own (TechEmpower's
// rule), sent together.
std::vector<edri::Statement> random_reads(int n) {
  std::vector<edri::Statement> reads;
  reads.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) reads.push_back(edri::Statement{kWorldById, {random_id()}});
  return reads;
}

edri::Async<> single_query(const edri::Request&, edri::Context& ctx) {
  edri::SqlParams id{random_id()};
  edri::Rows rows = co_await ctx.database("world").query(kWorldById, std::move(id));
  co_return edri::Response::json(world(rows.at(0)));
}

edri::Async<> multiple_queries(const edri::Request& req, edri::Context& ctx) {
  // Named, not a temporary inside the co_await (GCC 12).
  std::vector<edri::Statement> reads = random_reads(count_in_query(req.query, "queries"));
  std::vector<edri::Rows> all = co_await ctx.database("world").query_all(std::move(reads));
  auto out = nlohmann::json::array();
  for (const auto& rows : all) out.push_back(world(rows.at(0)));
  co_return edri::Response::json(out);
}

// One UPDATE for all the rows, ordered by id so that concurrent requests
// take their row locks in the same order and never deadlock.
edri::Statement update_of(std::vector<std::pair<std::int64_t, std::int64_t>> rows) {
  std::sort(rows.begin(), rows.end());
  std::string sql = "UPDATE world SET randomnumber = v.r FROM (VALUES ";
  edri::SqlParams params;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    sql += (i ? ", ($" : "($") + std::to_string(2 * i + 1) + "::int, $" + std::to_string(2 * i + 2) + "::int)";
    params.emplace_back(rows[i].first);
    params.emplace_back(rows[i].second);
  }
  sql += ") AS v(id, r) WHERE world.id = v.id";
  return edri::Statement{std::move(sql), std::move(params)};
}

edri::Async<> updates(const edri::Request& req, edri::Context& ctx) {
  edri::Database& db = ctx.database("world");
  std::vector<edri::Statement> reads = random_reads(count_in_query(req.query, "queries"));
  std::vector<edri::Rows> read = co_await db.query_all(std::move(reads));
  // A row read twice by one request gets one new number, so that the
  // answer says what the table holds.
  std::unordered_map<std::int64_t, std::int64_t> new_number;
  auto out = nlohmann::json::array();
  for (const auto& rows : read) {
    const auto id = rows.at(0).int64(0);
    const auto [it, first] = new_number.try_emplace(id, random_id());
    out.push_back({{"id", id}, {"randomNumber", it->second}});
  }
  std::vector<edri::Statement> write;
  write.push_back(update_of({new_number.begin(), new_number.end()}));
  co_await db.query_all(std::move(write));
  co_return edri::Response::json(out);
}

edri::Async<> fortunes(const edri::Request&, edri::Context& ctx) {
  edri::Rows rows = co_await ctx.database("world").query("SELECT id, message FROM fortune");
  std::vector<std::pair<std::int64_t, std::string>> all;
  all.reserve(rows.size() + 1);
  for (std::size_t i = 0; i < rows.size(); ++i) all.emplace_back(rows[i].int64(0), std::string(rows[i].text(1)));
  all.emplace_back(0, "Additional fortune added at request time.");
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  auto list = nlohmann::json::array();
  for (auto& [id, message] : all) list.push_back({{"id", id}, {"message", std::move(message)}});
  const nlohmann::json data = {{"fortunes", std::move(list)}};
  co_return edri::Response::html(ctx.render("fortunes.mustache", data));
}

// The cached queries' World, per manager, read once at start.
std::vector<nlohmann::json> cache;

edri::Async<> cached_queries(const edri::Request& req, edri::Context& ctx) {
  if (cache.empty()) {
    edri::Rows rows = co_await ctx.database("world").query("SELECT id, randomnumber FROM world ORDER BY id");
    if (cache.empty())
      for (std::size_t i = 0; i < rows.size(); ++i) cache.push_back(world(rows[i]));
  }
  auto out = nlohmann::json::array();
  for (int n = count_in_query(req.query, "count"); n > 0; --n)
    out.push_back(cache.at(static_cast<std::size_t>(random_id() - 1) % cache.size()));
  co_return edri::Response::json(out);
}

void reg(edri::Registry& r) {
  r.domain("tfb");
  r.database("world", r.setting({.key = "database_url",
                                 .variable = "TFB_DATABASE_URL",
                                 .meaning = "the world database (EDRI_DATABASES naming `world` wins)"}));
  r.get("/json", "tfb.json", [](const edri::Request&, edri::Context&) {
    return edri::Response::json({{"message", "Hello, World!"}});
  });
  r.get("/plaintext", "tfb.plaintext",
        [](const edri::Request&, edri::Context&) { return edri::Response::bytes("Hello, World!", "text/plain"); });
  r.get("/db", "tfb.db", single_query);
  r.get("/queries", "tfb.queries", multiple_queries);
  r.get("/fortunes", "tfb.fortunes", fortunes);
  r.get("/updates", "tfb.updates", updates);
  r.get("/cached-queries", "tfb.cached_queries", cached_queries);
}

}  // namespace

EDRI_PLUGIN("techempower", reg)
