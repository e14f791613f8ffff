// Logging: one spdlog logger per process, named after its role, to stderr.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace edri {

void init_logging(const std::string& role, const std::string& level);

}  // namespace edri
