#include "manager/template_cache.hpp"

#include <sys/stat.h>

#include <fstream>
#include <kainjow/mustache.hpp>
#include <sstream>
#include <stdexcept>

namespace edri::manager {

namespace mustache = kainjow::mustache;

struct TemplateCache::Compiled {
  std::timespec mtime;
  mustache::mustache tmpl;
};

namespace {

mustache::data to_data(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object: {
      mustache::data d{mustache::data::type::object};
      for (auto it = j.begin(); it != j.end(); ++it) d.set(it.key(), to_data(it.value()));
      return d;
    }
    case nlohmann::json::value_t::array: {
      mustache::data d{mustache::data::type::list};
      for (const auto& v : j) d.push_back(to_data(v));
      return d;
    }
    case nlohmann::json::value_t::string: return mustache::data(j.get<std::string>());
    case nlohmann::json::value_t::boolean:
      return j.get<bool>() ? mustache::data::type::bool_true : mustache::data::type::bool_false;
    case nlohmann::json::value_t::null: return mustache::data::type::bool_false;
    default: return mustache::data(j.dump());  // numbers
  }
}

}  // namespace

TemplateCache::TemplateCache(std::string folder) : folder_(std::move(folder)) {}
TemplateCache::~TemplateCache() = default;

std::string TemplateCache::render(std::string_view name, const nlohmann::json& data) {
  const std::string key(name);
  if (folder_.empty()) throw std::runtime_error("template " + key + ": EDRI_TEMPLATE_PATH is not set");
  if (key.empty() || key.front() == '/' || key.find("..") != std::string::npos)
    throw std::runtime_error("template " + key + ": not a name inside EDRI_TEMPLATE_PATH");
  const std::string path = folder_ + "/" + key;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    throw std::runtime_error("template " + key + ": no such file in " + folder_);
  auto& entry = cache_[key];
  if (!entry || entry->mtime.tv_sec != st.st_mtim.tv_sec || entry->mtime.tv_nsec != st.st_mtim.tv_nsec) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    auto compiled = std::make_unique<Compiled>(Compiled{st.st_mtim, mustache::mustache(text.str())});
    if (!compiled->tmpl.is_valid()) {
      const std::string why = compiled->tmpl.error_message();
      cache_.erase(key);
      throw std::runtime_error("template " + key + ": " + why);
    }
    entry = std::move(compiled);
  }
  return entry->tmpl.render(to_data(data));
}

}  // namespace edri::manager
