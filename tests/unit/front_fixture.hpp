// The listener's fronts without processes: its parts built in-process as
// listener.cpp builds them, around test_app's plugin (its routes, commands,
// declared fields and middleware), one Connection over a socket pair whose
// requests and gRPC calls go to `http_front` and `grpc_front`, and the channels
// of a private segment in place of the broker and the router. What the
// client reads and what reached those channels say what a front did.
#pragma once

#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "envelope/control.hpp"
#include "grpc/service_catalog.hpp"
#include "listener/commands.hpp"
#include "listener/connection_table.hpp"
#include "listener/grpc_front.hpp"
#include "listener/http_front.hpp"
#include "listener/websocket_front.hpp"
#include "plugin/call_rows.hpp"
#include "runtime/asio.hpp"
#include "unit/quiet_tables.hpp"
#include "unit/segment_fixture.hpp"
#include "unit/socket_pair.hpp"

namespace edri::testing {

// What the listener does with a connection's requests, calls and flushes;
// the rest of its tables are quiet.
struct FrontTables final : QuietTables {
  listener::HttpFront* http_front = nullptr;
  listener::GrpcFront* grpc_front = nullptr;
  void request(Connection& c, http::HttpRequest& req) override { http_front->dispatch(c, req); }
  void wants_flush(Connection& c) override { c.dirty = true; }
  void grpc_open(Connection& c, std::int32_t stream, http::HttpRequest& head) override {
    grpc_front->open(c, stream, head);
  }
  void grpc_body(Connection& c, std::int32_t stream, std::string_view bytes, bool end) override {
    grpc_front->body(c, stream, bytes, end);
  }
  void grpc_closed(Connection& c, std::int32_t stream) override { grpc_front->closed(c, stream); }
};

inline plugin::PluginSet test_app() {
  return plugin::PluginSet::load({std::string(EDRI_TEST_PLUGIN_DIR) + "/test_app.so"});
}

// One validator per event that declares fields, as the listener makes them.
inline std::vector<std::shared_ptr<const listener::RequestValidator>> validators_of(const plugin::PluginSet& plugins,
                                                                                    const Config& config) {
  std::vector<std::shared_ptr<const listener::RequestValidator>> out;
  for (const auto& e : plugins.events())
    out.push_back(e.fields.empty() ? nullptr
                                   : std::make_shared<listener::RequestValidator>(e.fields, config.max_json_depth));
  return out;
}

// Over a segment of 1 listener and test_app's 2 managers. Requests and
// commands go to the router (no manager takes them straight: DirectRoutes
// is empty); what tells the broker of a request, subscriptions, and the
// commands of a connection that subscribed, to the broker.
struct FrontFixture {
  using Topology = transport::Topology;

  Config config;
  plugin::PluginSet plugins = test_app();
  const std::uint32_t routes = static_cast<std::uint32_t>(plugins.routes().size());
  SegmentFixture segment{1 << 16, 1, 2, routes, plugin::CallRows(plugins).size()};
  const std::uint32_t listener_slot = segment.topology.listener_slot(0);
  transport::Outbox broker{segment.segment.producer(segment.topology.channel(listener_slot, Topology::kBroker)),
                           transport::Doorbell(&segment.segment.doorbell(Topology::kBroker), -1), 1 << 20};
  transport::Outbox router{segment.segment.producer(segment.topology.channel(listener_slot, Topology::kRouter)),
                           transport::Doorbell(&segment.segment.doorbell(Topology::kRouter), -1), 1 << 20};
  listener::EventSender sender{broker, router, {}, plugin::DirectRoutes{}, 0};
  std::vector<std::shared_ptr<const listener::RequestValidator>> validators = validators_of(plugins, config);
  EventLoop loop;
  asio::io_context io;
  bool draining = false;
  FrontTables tables;
  listener::ConnectionContext context = tables.context(config, loop, io, draining);
  listener::ConnectionTable table{context, config, segment.segment.listener_metrics(0), [] {}};
  listener::Answers answers{config,
                            table,
                            sender,
                            nullptr,
                            plugins.middlewares(),
                            {segment.segment.listener_metrics(0), &segment.segment.request_counter(0, 0, 0), routes,
                             &segment.segment.route_latency(0, 0), &segment.segment.call_latency(0, 0)}};
  listener::StreamHub streams{config, sender};
  grpc::ServiceCatalog services{plugins.grpc_services()};
  listener::Gate gate{config, plugins};
  listener::Commands commands{config, plugins, validators, sender, gate};
  listener::GrpcFront grpc_front{config, services, commands, streams, loop};
  listener::WebSocketFront websocket{config, commands, answers, nullptr, streams};
  listener::BuiltinEndpoints builtins{config, segment.segment, segment.topology, plugins,
                                      plugin::manager_titles(plugins.manager_domains())};
  listener::HttpFront http_front{config,  plugins,  validators, answers, sender,  websocket,
                                 streams, builtins, nullptr,    gate,    nullptr, 0};
  SocketPair pair;
  std::unique_ptr<listener::Connection> c;

  FrontFixture() {
    tables.http_front = &http_front;
    tables.grpc_front = &grpc_front;
    answers.set_grpc(grpc_front);
    grpc_front.set_table(table);
    websocket.set_table(table);
    c = std::make_unique<listener::Connection>(context, std::move(pair.server), 1, 1, nullptr);
    c->start();
  }
  // Sends `bytes` as the client; one turn of the listener's loop reads
  // them, dispatches what they make and writes what was answered. What the
  // client reads.
  std::string exchange(std::string_view bytes) {
    if (!bytes.empty() &&
        ::send(pair.client.get(), bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size()))
      throw std::runtime_error("the client could not send");
    loop.poll(0);
    if (c->dirty) c->flush();
    return pair.read_all();
  }
  // The records on this listener's channel to `slot`, taken off it.
  std::vector<std::vector<std::byte>> sent_to(std::uint32_t slot) {
    std::vector<std::vector<std::byte>> records;
    segment.segment.consumer(segment.topology.channel(listener_slot, slot))
        .drain([&](std::span<const std::byte> r, std::uint32_t) { records.emplace_back(r.begin(), r.end()); });
    return records;
  }
  // Whether the broker's records are one notice of a request sent without
  // it (kControlSent), as it hears of every request that goes straight.
  bool broker_told_of_one() {
    const auto told = sent_to(Topology::kBroker);
    envelope::EnvelopeView notice;
    return told.size() == 1 && envelope::decode(told[0], notice) == envelope::DecodeError::None &&
           notice.header.event_type == envelope::kControlSent;
  }
  // Whether nothing left for the broker or the router.
  bool nothing_sent() { return sent_to(Topology::kBroker).empty() && sent_to(Topology::kRouter).empty(); }
  // The one record sent to `slot`, a request of this connection, decoded;
  // its bytes are kept until the next call.
  envelope::EnvelopeView one_request_to(std::uint32_t slot) {
    auto records = sent_to(slot);
    REQUIRE(records.size() == 1);
    kept_ = std::move(records[0]);
    envelope::EnvelopeView v;
    REQUIRE(envelope::decode(kept_, v) == envelope::DecodeError::None);
    CHECK(v.header.kind == static_cast<std::uint8_t>(envelope::Kind::Request));
    CHECK(v.header.origin_connection == c->id());
    CHECK(v.header.origin_generation == c->generation());
    return v;
  }

 private:
  std::vector<std::byte> kept_;
};

// The entries of a key/value section of `v`.
inline std::vector<std::pair<std::string, std::string>> key_values(const envelope::EnvelopeView& v,
                                                                   envelope::SectionType type) {
  std::vector<std::pair<std::string, std::string>> out;
  envelope::KeyValueReader r(v.section(type));
  std::string_view k, value;
  while (r.next(k, value)) out.emplace_back(k, value);
  return out;
}

}  // namespace edri::testing
