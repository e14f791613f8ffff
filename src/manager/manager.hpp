// Manager: runs the handlers of one domain.
//
// Loads the plugins, keeps the handlers of its domain, subscribes their
// events at the router and answers each request it is sent. A handler that
// throws becomes a 500 (detail hidden when ENVIRONMENT=production); the
// manager keeps running.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>

#include "common/config.hpp"
#include "common/process_loop.hpp"
#include "plugin/plugin_set.hpp"

namespace edri::manager {

class Manager final : public Context {
 public:
  Manager(ProcessLoop& loop, const Config& config, const plugin::PluginSet& plugins, std::string domain);

  void start();
  std::string_view domain() const override { return domain_; }

 private:
  struct Entry {
    const Handler* handler;
    std::string_view event;
  };

  void on_request(std::span<const std::byte> record);
  void subscribe();

  ProcessLoop& loop_;
  const Config& config_;
  std::string domain_;
  transport::Outbox& to_router_;
  std::unordered_map<std::uint64_t, Entry> handlers_;
  Request request_;             // reused across calls
  std::string header_scratch_;  // reused across calls
};

}  // namespace edri::manager
