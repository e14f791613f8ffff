// CallRows: the calls a listener times besides its routes, one latency row
// each after the routes' in its metrics block (shm_layout.hpp): every
// WebSocket command and unary gRPC method the plugins declare or the
// server answers itself, and per protocol one row, "(none)", for calls
// that name none of them (an unknown command, a malformed message, a
// method no service has). The supervisor sizes the segment by it, and
// every listener makes the same rows from the same plugins.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "plugin/plugin_set.hpp"

namespace edri::plugin {

class CallRows {
 public:
  explicit CallRows(const PluginSet& plugins);

  std::uint32_t size() const { return static_cast<std::uint32_t>(commands_.size() + methods_.size()); }
  // The row of WebSocket command `name`; "(none)"'s when no row has it.
  std::uint32_t command(std::string_view name) const;
  std::uint32_t no_command() const { return static_cast<std::uint32_t>(commands_.size() - 1); }
  // The row of the gRPC method at `path` ("/notes.v1.Notes/CreateNote");
  // "(none)"'s when no row has it.
  std::uint32_t method(std::string_view path) const;
  // The labels: row i is commands()[i], then methods()[i - commands().size()].
  const std::vector<std::string>& commands() const { return commands_; }
  const std::vector<std::string>& methods() const { return methods_; }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Rows = std::unordered_map<std::string, std::uint32_t, Hash, std::equal_to<>>;
  static std::uint32_t find(const Rows& rows, std::string_view key, std::uint32_t otherwise);
  void add(std::vector<std::string>& labels, Rows& rows, const std::string& label, std::uint32_t first_row);

  std::vector<std::string> commands_, methods_;
  Rows command_rows_, method_rows_;
};

}  // namespace edri::plugin
