#include "manager/manager.hpp"

#include <spdlog/spdlog.h>

#include <vector>

#include "envelope/envelope.hpp"
#include "envelope/problem.hpp"
#include "router/router.hpp"

namespace edri::manager {

namespace env = edri::envelope;
using transport::Topology;

namespace {
struct PairKey {
  std::string_view operator()(const std::pair<std::string, std::string>& p) const { return p.first; }
};
struct PairValue {
  std::string_view operator()(const std::pair<std::string, std::string>& p) const { return p.second; }
};

bool read_params(std::span<const std::byte> section, std::vector<Param>& out) {
  out.clear();
  env::KeyValueReader kv(section);
  std::string_view k, v;
  while (kv.next(k, v)) out.push_back(Param{k, v});
  return kv.ok();
}
}  // namespace

Manager::Manager(ProcessLoop& loop, const Config& config, const plugin::PluginSet& plugins, std::string domain)
    : loop_(loop), config_(config), domain_(std::move(domain)), to_router_(loop.outbox_to(Topology::kRouter)) {
  for (const auto& e : plugins.events()) {
    if (e.domain != domain_ || e.handler < 0) continue;
    handlers_.emplace(e.type_id, Entry{&plugins.handlers()[static_cast<std::size_t>(e.handler)], e.name});
  }
  loop.on_records_from(Topology::kRouter, [this](std::span<const std::byte> rec) { on_request(rec); });
}

void Manager::start() { subscribe(); }

void Manager::subscribe() {
  std::vector<std::uint64_t> ids;
  for (const auto& [id, _] : handlers_) ids.push_back(id);
  auto h = env::make_header(env::Kind::Control, router::kControlSubscribe, 0);
  env::EnvelopeWriter w(h);
  w.raw(env::SectionType::Control, std::as_bytes(std::span<const std::uint64_t>(ids)));
  if (!to_router_.emplace(w.size(), [&](std::byte* p) { w.write(p); }))
    spdlog::error("cannot subscribe: the router channel is full");
  spdlog::debug("domain {}: subscribed {} events", domain_, handlers_.size());
}

void Manager::on_request(std::span<const std::byte> record) {
  env::EnvelopeView v;
  if (auto e = env::decode(record, v); e != env::DecodeError::None) {
    spdlog::error("dropping a malformed envelope: {}", env::to_string(e));
    // Answer if the header at least is sound, so the client does not wait.
    env::EnvelopeHeader h;
    if (env::peek_header(record, h) == env::DecodeError::None &&
        h.kind == static_cast<std::uint8_t>(env::Kind::Request))
      (void)env::send_problem(to_router_, h, 400, "malformed request envelope");
    return;
  }
  auto& h = v.header;
  env::stamp(h, env::kStampManagerIn);
  if (h.kind == static_cast<std::uint8_t>(env::Kind::Control) && h.event_type == router::kControlResubscribe) {
    subscribe();
    return;
  }
  if (h.kind != static_cast<std::uint8_t>(env::Kind::Request)) {
    spdlog::error("dropping an envelope of kind {}", h.kind);
    return;
  }
  auto it = handlers_.find(h.event_type);
  if (it == handlers_.end()) {
    (void)env::send_problem(to_router_, h, 404, "this manager has no handler for the event");
    return;
  }
  request_.event = it->second.event;
  request_.query = v.text(env::SectionType::Query);
  request_.body = v.text(env::SectionType::Body);
  if (!read_params(v.section(env::SectionType::PathParams), request_.path_params) ||
      !read_params(v.section(env::SectionType::QueryParams), request_.query_params) ||
      !read_params(v.section(env::SectionType::Headers), request_.headers) ||
      !read_params(v.section(env::SectionType::Cookies), request_.cookies)) {
    (void)env::send_problem(to_router_, h, 400, "malformed request envelope");
    return;
  }

  Response resp;
  try {
    resp = (*it->second.handler)(request_, *this);
  } catch (const std::exception& e) {
    spdlog::error("handler for {} threw: {}", it->second.event, e.what());
    resp = Response::problem(500, "Internal Server Error",
                             config_.production ? "the handler failed" : std::string("handler threw: ") + e.what());
  } catch (...) {
    spdlog::error("handler for {} threw a non-exception", it->second.event);
    resp = Response::problem(500, "Internal Server Error", "the handler failed");
  }

  auto rh = env::response_header_for(h, resp.status);
  env::stamp(rh, env::kStampManagerOut);
  env::EnvelopeWriter w(rh);
  w.text(env::SectionType::ContentType, resp.content_type);
  if (!resp.headers.empty()) w.key_values(env::SectionType::Headers, resp.headers, PairKey{}, PairValue{});
  w.text(env::SectionType::Body, resp.body);
  if (w.size() > to_router_.max_record()) {
    (void)env::send_problem(to_router_, h, 500, "the response is too large for a channel record");
    return;
  }
  if (!to_router_.emplace(w.size(), [&](std::byte* p) { w.write(p); }))
    spdlog::error("router channel full: response {} lost", h.request_id);
}

}  // namespace edri::manager
