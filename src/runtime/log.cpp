#include "runtime/log.hpp"

#include <spdlog/sinks/stdout_sinks.h>

namespace edri {

void init_logging(const std::string& role, const std::string& level) {
  auto logger = spdlog::stderr_logger_st(role);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%n %P] %v");
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace edri
