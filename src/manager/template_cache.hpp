// TemplateCache: Mustache templates from EDRI_TEMPLATE_PATH, parsed once
// and parsed again when their file changes, rendered with JSON data.
#pragma once

#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace edri::manager {

class TemplateCache {
 public:
  explicit TemplateCache(std::string folder);
  ~TemplateCache();

  // Throws std::runtime_error naming the template when it is missing,
  // outside the folder or malformed.
  std::string render(std::string_view name, const nlohmann::json& data);

 private:
  struct Compiled;
  std::string folder_;
  std::unordered_map<std::string, std::unique_ptr<Compiled>> cache_;
};

}  // namespace edri::manager
