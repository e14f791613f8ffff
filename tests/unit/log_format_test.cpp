// The server's own log lines (EDRI_LOG_FORMAT), as the formatter writes
// them: UTC with its zone, the process named, JSON that stays one valid
// object whatever the message holds.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "runtime/log.hpp"

namespace {

std::string formatted(const std::string& format, std::string_view message) {
  const spdlog::details::log_msg msg("manager notes", spdlog::level::warn, message);
  spdlog::memory_buf_t out;
  edri::log_formatter(format)->format(msg, out);
  return std::string(out.data(), out.size());
}

}  // namespace

TEST_CASE("log format: text lines in UTC with the zone and the process named", "[log]") {
  const auto line = formatted("text", "a message");
  INFO(line);
  CHECK(std::regex_match(
      line, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z warning \[manager notes \d+\] a message\n)")));
}

TEST_CASE("log format: json lines are one object each whatever the message holds", "[log]") {
  const auto line = formatted("json", "quote \" backslash \\ and\na newline");
  INFO(line);
  REQUIRE(line.back() == '\n');
  CHECK(line.find('\n') == line.size() - 1);
  const auto j = nlohmann::json::parse(line);
  CHECK(std::regex_match(j["time"].get<std::string>(), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));
  CHECK(j["level"] == "warning");
  CHECK(j["process"] == "manager notes");
  CHECK(j["pid"].is_number_integer());
  CHECK(j["message"] == "quote \" backslash \\ and\na newline");
}

TEST_CASE("log format: json lines stay valid UTF-8 whatever bytes a message holds", "[log]") {
  const auto line = formatted("json", "a client sent \xff\xfe and \xc3\xa9");
  INFO(line);
  const auto j = nlohmann::json::parse(line);  // throws on invalid UTF-8
  CHECK(j["message"] == "a client sent \xef\xbf\xbd\xef\xbf\xbd and \xc3\xa9");
}
