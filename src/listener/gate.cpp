#include "listener/gate.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "http/field_text.hpp"

namespace edri::listener {

namespace env = edri::envelope;

namespace {

// A Forwarded "for" value as a bare address: quotes, brackets and a port
// taken off ("[2001:db8::1]:4711" -> "2001:db8::1", "1.2.3.4:80" -> "1.2.3.4").
std::string_view bare_node(std::string_view v) {
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  if (!v.empty() && v.front() == '[') {
    const auto close = v.find(']');
    return close == std::string_view::npos ? std::string_view() : v.substr(1, close - 1);
  }
  if (std::count(v.begin(), v.end(), ':') == 1) v = v.substr(0, v.find(':'));
  return v;
}

// The `for` parameter of one Forwarded element ("for=x;proto=https").
std::string_view forwarded_for_param(std::string_view element) {
  while (!element.empty()) {
    const auto semi = element.find(';');
    const auto pair = http::trim_ows(element.substr(0, semi));
    if (pair.size() > 4 && http::iequals(pair.substr(0, 4), "for=")) return bare_node(pair.substr(4));
    if (semi == std::string_view::npos) break;
    element.remove_prefix(semi + 1);
  }
  return {};
}

// The list entries of every header named `name`, in order
// (comma-separated, each trimmed).
std::vector<std::string_view> entries(const http::HttpRequest& head, std::string_view name) {
  std::vector<std::string_view> out;
  for (const auto& [k, v] : head.headers) {
    if (!http::iequals(k, name)) continue;
    std::string_view rest = v;
    for (;;) {
      const auto comma = rest.find(',');
      out.push_back(http::trim_ows(rest.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return out;
}

}  // namespace

Gate::Gate(const Config& config, const plugin::PluginSet& plugins)
    : production_(config.production), trusted_(parse_ranges(config.trusted_proxies)) {
  for (const auto& mw : plugins.middlewares())
    if (mw.on_request) middlewares_.push_back(mw);
  view_.max_json_depth = config.max_json_depth;  // a middleware's req.json() too
}

bool Gate::applies(const MiddlewareDecl& m, const Call& call) const {
  if (!m.events.empty() && std::find(m.events.begin(), m.events.end(), call.event) == m.events.end()) return false;
  if (m.paths.empty()) return true;
  return std::any_of(m.paths.begin(), m.paths.end(),
                     [&](const std::string& prefix) { return call.path.substr(0, prefix.size()) == prefix; });
}

void Gate::fill_view(const Call& call) {
  view_.protocol = call.protocol;
  view_.method = call.method;
  view_.path = call.path;
  view_.query = call.query;
  view_.event = call.event;
  view_.client_address = call.client;
  view_.body = call.body;
  view_.headers.clear();
  for (const auto& [k, v] : call.head->headers) view_.headers.push_back(Param{k, v});
}

std::optional<Response> Gate::admit(const Call& call, Admission& admission) {
  bool filled = false;
  for (const auto& mw : middlewares_) {
    if (!applies(mw, call)) continue;
    if (!filled) fill_view(call);
    filled = true;
    try {
      if (auto refusal = mw.on_request(view_, admission)) return refusal;
    } catch (const std::exception& e) {
      spdlog::error("middleware {} threw: {}", mw.name, e.what());
      return Response::problem(500, "Internal Server Error",
                               production_ ? "the request failed" : std::string("middleware threw: ") + e.what());
    }
  }
  return std::nullopt;
}

std::string_view Gate::client_address(std::string_view peer, const http::HttpRequest& head) const {
  if (trusted_.empty()) return peer;
  const auto address = parse_ip(peer);
  if (!address || !any_contains(trusted_, *address)) return peer;
  return forwarded_for(head).value_or(peer);
}

std::optional<std::string_view> Gate::forwarded_for(const http::HttpRequest& head) const {
  auto hops = entries(head, "x-forwarded-for");
  const bool forwarded = hops.empty();
  if (forwarded) hops = entries(head, "forwarded");
  std::optional<std::string_view> client;
  // From the nearest hop back: each trusted proxy names the one before
  // it; the first that is no trusted proxy is the client. A hop that is
  // no address ends the walk at what was read so far.
  for (auto it = hops.rbegin(); it != hops.rend(); ++it) {
    const std::string_view node = forwarded ? forwarded_for_param(*it) : *it;
    const auto address = parse_ip(node);
    if (!address) break;
    client = node;
    if (!any_contains(trusted_, *address)) break;
  }
  return client;
}

void Gate::write_identity(env::EnvelopeWriter& w, const Call& call, const Admission& admission,
                          std::string& claims_text) {
  if (!call.client.empty()) w.text(env::SectionType::Client, call.client);
  w.text(env::SectionType::Protocol, call.protocol);
  if (!admission.has_principal()) return;
  w.text(env::SectionType::Principal, admission.principal());
  claims_text = admission.claims().is_null()
                    ? std::string()
                    : admission.claims().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!claims_text.empty()) w.text(env::SectionType::Claims, claims_text);
}

}  // namespace edri::listener
