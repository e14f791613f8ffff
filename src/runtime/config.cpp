#include "runtime/config.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "runtime/settings.hpp"

namespace edri {
namespace {

// A setting's value in the environment, if it has one: an empty variable
// counts as unset, except where empty is a value of its own.
std::optional<EnvValue> env_value(const Setting& s) {
  const char* text = std::getenv(s.name);
  if (!text || (!*text && !s.binding.empty_is_a_value)) return std::nullopt;
  return EnvValue{s.name, text};
}

// The checks that span settings, once each has been read on its own.

// A WebSocket message travels whole in one channel record.
void check_message_fits_ring(const Config& c) {
  if (c.websocket_max_message + 4096 > c.ring_bytes / 4)
    throw ConfigError("EDRI_WEBSOCKET_MAX_MESSAGE=" + std::to_string(c.websocket_max_message) +
                      ": too large for EDRI_RING_BYTES=" + std::to_string(c.ring_bytes) +
                      " (a message must fit a quarter of a ring, less 4096 bytes)");
}

void check_output_bounds(const Config& c) {
  if (c.output_buffer_total < c.output_buffer)
    throw ConfigError("EDRI_OUTPUT_BUFFER_TOTAL=" + std::to_string(c.output_buffer_total) +
                      ": smaller than one connection's EDRI_OUTPUT_BUFFER=" + std::to_string(c.output_buffer));
}

// A request body up to EDRI_UPLOAD_THRESHOLD travels in the blob area
// when there is one, else in a channel record; a larger one in its file.
void check_upload_threshold(const Config& c) {
  const std::size_t in_memory = std::min(c.max_body_size, c.upload_threshold);
  if (c.blob_bytes > 0 && in_memory > c.blob_bytes)
    throw ConfigError("EDRI_UPLOAD_THRESHOLD=" + std::to_string(c.upload_threshold) +
                      ": larger than the blob area, EDRI_BLOB_BYTES=" + std::to_string(c.blob_bytes));
  if (c.blob_bytes == 0 && in_memory + 4096 > c.ring_bytes / 4)
    throw ConfigError("EDRI_UPLOAD_THRESHOLD=" + std::to_string(c.upload_threshold) +
                      ": too large for EDRI_RING_BYTES=" + std::to_string(c.ring_bytes) +
                      " without a blob area (a body must fit a quarter of a ring, less 4096 bytes)");
}

void check_tls_pair(const Config& c) {
  if (c.ssl_certificate.empty() != c.ssl_key.empty())
    throw ConfigError(c.ssl_key.empty() ? "EDRI_SSL_KEY is not set but EDRI_SSL_CERTIFICATE is"
                                        : "EDRI_SSL_CERTIFICATE is not set but EDRI_SSL_KEY is");
}

// The PROXY protocol is read from trusted proxies alone: with none, every
// connection would be served as if it were off, which is not what was
// asked for.
void check_proxy_protocol(const Config& c) {
  if (c.proxy_protocol && c.trusted_proxies.empty())
    throw ConfigError(
        "EDRI_PROXY_PROTOCOL=on needs EDRI_TRUSTED_PROXIES: the PROXY protocol is read only from the proxies listed "
        "there");
}

// Settings of several hosts mean nothing on one.
void check_cluster(const Config& c) {
  if (c.nats_certificate.empty() != c.nats_key.empty())
    throw ConfigError("EDRI_NATS_CERTIFICATE and EDRI_NATS_KEY go together: set both or neither");
  if (c.clustered()) return;
  if (!c.domains.empty())
    throw ConfigError("EDRI_DOMAINS is set but EDRI_NATS_URL is not: the other domains would run nowhere");
}

// "0-3,6": sorted CPUs as EDRI_CPUS writes them.
std::string cpu_ranges(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(cpus[j]);
    }
    i = j + 1;
  }
  return out;
}

}  // namespace

void Config::check_cpus_allowed(const std::vector<int>& allowed) const {
  if (placement != Placement::List || allowed.empty()) return;
  std::vector<int> others;
  for (int c : cpus)
    if (std::find(allowed.begin(), allowed.end(), c) == allowed.end()) others.push_back(c);
  if (others.empty()) return;
  std::sort(others.begin(), others.end());
  others.erase(std::unique(others.begin(), others.end()), others.end());
  throw ConfigError("EDRI_CPUS=" + cpu_ranges(cpus) + ": the server may use CPUs " + cpu_ranges(allowed) +
                    " only, not " + cpu_ranges(others));
}

bool Config::runs_domain(const std::string& domain) const {
  return domains.empty() || std::find(domains.begin(), domains.end(), domain) != domains.end();
}

Config Config::from_env() {
  Config c;
  for (const auto& s : settings())
    if (const auto v = env_value(s)) s.binding.read(c, *v);
  check_tls_pair(c);
  check_message_fits_ring(c);
  check_output_bounds(c);
  check_upload_threshold(c);
  check_cluster(c);
  check_proxy_protocol(c);
  return c;
}

std::string Config::describe() const {
  std::string out;
  for (const auto& s : settings()) out += std::string(s.name) + "=" + s.binding.show(*this) + "\n";
  return out;
}

}  // namespace edri
