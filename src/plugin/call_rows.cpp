#include "plugin/call_rows.hpp"

namespace edri::plugin {

namespace {

constexpr const char* kNone = "(none)";

}  // namespace

CallRows::CallRows(const PluginSet& plugins) {
  for (const auto& c : plugins.commands()) add(commands_, command_rows_, c.command, 0);
  for (const auto& p : plugins.pushes()) {
    add(commands_, command_rows_, p.subscribe, 0);
    add(commands_, command_rows_, p.unsubscribe, 0);
  }
  // The server's own (docs/streams.md), answered only when refused.
  add(commands_, command_rows_, "stream.subscribe", 0);
  add(commands_, command_rows_, "stream.unsubscribe", 0);
  commands_.emplace_back(kNone);
  // Streaming methods (Connect, reflection) are not timed.
  const auto first = static_cast<std::uint32_t>(commands_.size());
  add(methods_, method_rows_, "/edri.v1.Edri/Call", first);
  add(methods_, method_rows_, "/grpc.health.v1.Health/Check", first);
  for (const auto& service : plugins.grpc_services())
    for (const auto& m : service.methods) add(methods_, method_rows_, "/" + service.service + "/" + m.method, first);
  methods_.emplace_back(kNone);
}

void CallRows::add(std::vector<std::string>& labels, Rows& rows, const std::string& label, std::uint32_t first_row) {
  if (rows.emplace(label, first_row + static_cast<std::uint32_t>(labels.size())).second) labels.push_back(label);
}

std::uint32_t CallRows::find(const Rows& rows, std::string_view key, std::uint32_t otherwise) {
  const auto it = rows.find(key);
  return it == rows.end() ? otherwise : it->second;
}

std::uint32_t CallRows::command(std::string_view name) const { return find(command_rows_, name, no_command()); }

std::uint32_t CallRows::method(std::string_view path) const { return find(method_rows_, path, size() - 1); }

}  // namespace edri::plugin
