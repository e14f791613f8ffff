#include "runtime/log.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include "runtime/json_text.hpp"

namespace edri {

namespace {

// The request id of the line being formatted: set by log_about_request
// around its call (the logger is synchronous, and one thread's).
thread_local std::string_view current_request_id;
thread_local std::string_view current_trace_id;

// %* and %&: the message and the logger's name as the inside of a JSON
// string, so that a message with quotes or newlines stays one object.
class JsonMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    append(std::string_view(msg.payload.data(), msg.payload.size()), dest);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JsonMessage>(); }

  static void append(std::string_view text, spdlog::memory_buf_t& dest) {
    std::string escaped;
    append_json_text(escaped, text);
    dest.append(escaped.data(), escaped.data() + escaped.size());
  }
};

class JsonName final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    JsonMessage::append(std::string_view(msg.logger_name.data(), msg.logger_name.size()), dest);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JsonName>(); }
};

// %Q: the line's request id and trace id, where it has them:
// `,"request_id":"...","trace_id":"..."` in JSON, `request=... trace=... `
// in text.
template <bool Json>
class RequestId final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg&, const std::tm&, spdlog::memory_buf_t& dest) override {
    field(Json ? R"(,"request_id":")" : "request=", current_request_id, dest);
    field(Json ? R"(,"trace_id":")" : "trace=", current_trace_id, dest);
  }
  static void field(std::string_view head, std::string_view value, spdlog::memory_buf_t& dest) {
    if (value.empty()) return;
    dest.append(head.data(), head.data() + head.size());
    JsonMessage::append(value, dest);  // an id needs no escape; a header's may
    const std::string_view tail = Json ? "\"" : " ";
    dest.append(tail.data(), tail.data() + tail.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<RequestId>(); }
};

}  // namespace

void log_about_request(spdlog::level::level_enum level, std::string_view request_id, std::string_view message,
                       std::string_view trace_id) {
  current_request_id = request_id;
  current_trace_id = trace_id;
  spdlog::log(level, "{}", message);
  current_request_id = {};
  current_trace_id = {};
}

std::unique_ptr<spdlog::formatter> log_formatter(const std::string& format) {
  auto f = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  if (format == "json") {
    f->add_flag<JsonMessage>('*').add_flag<JsonName>('&').add_flag<RequestId<true>>('Q').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","process":"%&","pid":%P%Q,"message":"%*"})");
  } else {
    f->add_flag<RequestId<false>>('Q').set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ [%n %P] %Q%v");
  }
  return f;
}

void init_logging(const std::string& role, const std::string& level, const std::string& format) {
  auto logger = spdlog::stderr_logger_st(role);
  logger->set_formatter(log_formatter(format));
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace edri
