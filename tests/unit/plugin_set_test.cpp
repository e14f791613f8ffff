#include <catch2/catch.hpp>

#include "envelope/envelope.hpp"
#include "plugin/call_rows.hpp"
#include "plugin/direct_routes.hpp"
#include "plugin/plugin_set.hpp"

using edri::envelope::event_type_id;
using edri::plugin::DirectRoutes;
using edri::plugin::PluginError;
using edri::plugin::PluginSet;

namespace {
std::string test_plugin(const std::string& n) { return std::string(EDRI_TEST_PLUGIN_DIR) + "/" + n + ".so"; }
}  // namespace

TEST_CASE("a plugin's domains, events, routes and handlers load in order", "[plugin]") {
  const auto set = PluginSet::load({test_plugin("test_app")});
  CHECK(set.domains() == std::vector<std::string>{"test", "other"});
  std::size_t notifications = 0;
  for (const auto& e : set.events()) {
    CHECK(e.type_id == edri::envelope::event_type_id(e.name));
    CHECK((e.handler >= 0 || e.notification));
    if (e.notification) ++notifications;
  }
  CHECK(notifications == 1);
  // Every event is a route's or a notification, but other.sleep: only
  // another handler asks for it (test.ask_sleep).
  REQUIRE(set.events().size() == set.routes().size() + notifications + 1);
  CHECK(set.event_index("other.sleep") >= 0);
  CHECK(set.events().back().domain == "other");
  REQUIRE(set.subscribers().size() == 1);
  CHECK(set.subscribers()[0].domain == "test");
  CHECK(set.events()[set.subscribers()[0].event].name == "test.happened");
  CHECK(set.domain_index("other") == 1);
  CHECK(set.domain_index("none") == -1);
}

TEST_CASE("plugins that cannot be used are refused with the file and the reason", "[plugin]") {
  CHECK_THROWS_WITH(PluginSet::load({"/no/such.so"}), Catch::Contains("/no/such.so") && Catch::Contains("cannot load"));
  CHECK_THROWS_WITH(PluginSet::load({test_plugin("not_a_plugin")}), Catch::Contains("not an edri plugin"));
  CHECK_THROWS_WITH(PluginSet::load({test_plugin("wrong_abi")}),
                    Catch::Contains("wrong_abi.so") && Catch::Contains("ABI version 999"));
  CHECK_THROWS_WITH(PluginSet::load({test_plugin("other_toolchain")}),
                    Catch::Contains("other_toolchain.so") && Catch::Contains("built with gcc 4") &&
                        Catch::Contains(EDRI_TOOLCHAIN) && Catch::Contains("rebuild the plugin"));
  CHECK_THROWS_WITH(PluginSet::load({test_plugin("bad_route")}), Catch::Contains("undeclared event nowhere"));
  // The same plugin twice declares its events twice.
  CHECK_THROWS_AS(PluginSet::load({test_plugin("test_app"), test_plugin("test_app")}), PluginError);
}

TEST_CASE("WebSocket commands and pushes resolve to events: wrong ones are refused", "[plugin]") {
  const auto set = PluginSet::load({EDRI_PLUGIN_DIR "/notes.so", EDRI_PLUGIN_DIR "/audit.so"});
  REQUIRE(set.commands().size() == 5);
  CHECK(set.commands()[0].command == "notes.create");
  CHECK(set.events()[set.commands()[0].event].name == "notes.create");
  REQUIRE(set.pushes().size() == 1);
  CHECK(set.events()[set.pushes()[0].notification].name == "notes.changed");
  CHECK(set.pushes()[0].subscribe == "notes.subscribe");
  CHECK(set.domains() == std::vector<std::string>{"notes", "audit"});

  for (const auto& [bad, why] :
       std::vector<std::pair<std::string, std::string>>{{"undeclared", "names undeclared event ws.nowhere"},
                                                        {"notification", "names notification ws.changed"},
                                                        {"twice", "ws.a is declared twice"},
                                                        {"push-of-event", "not a declared notification"},
                                                        {"push-clash", "sub is declared twice"},
                                                        {"push-same", "same subscribe and unsubscribe"}}) {
    ::setenv("BAD_WEBSOCKET", bad.c_str(), 1);
    INFO(bad);
    CHECK_THROWS_WITH(PluginSet::load({test_plugin("bad_websocket")}), Catch::Contains(why));
  }
  ::unsetenv("BAD_WEBSOCKET");
  CHECK(PluginSet::load({test_plugin("bad_websocket")}).commands().empty());
}

TEST_CASE("manager processes: every domain, each repeated for its replicas", "[plugin]") {
  const auto set = PluginSet::load({EDRI_PLUGIN_DIR "/notes.so", EDRI_PLUGIN_DIR "/audit.so"});
  CHECK(set.manager_domains() == std::vector<std::string>{"notes", "audit"});
  const auto three = set.manager_domains(3);
  CHECK(three == std::vector<std::string>{"notes", "notes", "notes", "audit", "audit", "audit"});
  CHECK(edri::plugin::manager_titles(three) ==
        std::vector<std::string>{"notes", "notes 2", "notes 3", "audit", "audit 2", "audit 3"});
}

TEST_CASE("a request goes straight to the one manager that handles its event, else through the router", "[listener]") {
  const auto set = PluginSet::load({test_plugin("test_app")});
  REQUIRE(set.manager_domains() == std::vector<std::string>{"test", "other"});
  const DirectRoutes routes(set, set.manager_domains());
  CHECK(routes.manager_for(event_type_id("test.hello")) == 0u);
  CHECK(routes.manager_for(event_type_id("other.pid")) == 1u);
  // A replayed event is the router's to hand to a dead manager's successor.
  CHECK_FALSE(routes.manager_for(event_type_id("test.replayed_sleep")));
  // A notification is published, never a client's request.
  CHECK_FALSE(routes.manager_for(event_type_id("test.happened")));
  CHECK_FALSE(routes.manager_for(event_type_id("no.such.event")));
  // Every event with a handler goes straight but the replayed ones.
  std::size_t straight = 0;
  for (const auto& e : set.events()) straight += e.handler >= 0 && !e.replay;
  CHECK(routes.size() == straight);

  // Replicas: the router balances them, so nothing goes straight.
  CHECK(DirectRoutes(set, set.manager_domains(2)).size() == 0);
  // EDRI_DOMAINS: the managers run here are the ones counted.
  const DirectRoutes only_other(set, set.manager_domains(0, {"other"}));
  CHECK(only_other.manager_for(event_type_id("other.pid")) == 0u);
  CHECK_FALSE(only_other.manager_for(event_type_id("test.hello")));
  CHECK(DirectRoutes().size() == 0);
}

TEST_CASE("a plugin's settings are declared, each read after the loader's hook", "[plugin][config]") {
  ::unsetenv("EDRI_TEST_GATE");
  std::vector<std::string> hooked;
  const auto set = PluginSet::load({test_plugin("gate")}, [&](const std::string& plugin, const edri::SettingDecl& s) {
    hooked.push_back(plugin + "." + s.key);
    ::setenv(s.variable.c_str(), "deny", 0);  // what a config file's section would put there
  });
  CHECK(hooked == std::vector<std::string>{"gate.mode"});
  REQUIRE(set.settings().size() == 1);
  CHECK(set.settings()[0].plugin == "gate");
  CHECK(set.settings()[0].decl.variable == "EDRI_TEST_GATE");
  CHECK(set.settings()[0].decl.default_value == "key");
  REQUIRE(set.middlewares().size() >= 1);
  CHECK(set.middlewares()[0].name == "deny");  // the value the hook put in the environment
  CHECK(set.names() == std::vector<std::string>{"gate"});
  ::unsetenv("EDRI_TEST_GATE");
}

TEST_CASE("latency rows: each command and unary gRPC method once, then (none) for the rest", "[plugin]") {
  const auto set = PluginSet::load({test_plugin("test_app")});
  const edri::plugin::CallRows rows(set);
  const auto& commands = rows.commands();
  const auto& methods = rows.methods();
  REQUIRE(commands.size() == set.commands().size() + 2 * set.pushes().size() + 3);
  CHECK(commands.back() == "(none)");
  CHECK(rows.no_command() == commands.size() - 1);
  CHECK(commands[rows.command("hello")] == "hello");
  CHECK(commands[rows.command("watch")] == "watch");  // a push's subscribe
  CHECK(commands[rows.command("unwatch")] == "unwatch");
  CHECK(commands[rows.command("stream.subscribe")] == "stream.subscribe");
  CHECK(rows.command("no.such") == rows.no_command());
  // Methods come after the commands; test_app has no typed service.
  CHECK(methods == std::vector<std::string>{"/edri.v1.Edri/Call", "/grpc.health.v1.Health/Check", "(none)"});
  CHECK(rows.method("/edri.v1.Edri/Call") == commands.size());
  CHECK(rows.method("/grpc.health.v1.Health/Check") == commands.size() + 1);
  CHECK(rows.method("/edri.v1.Edri/Connect") == rows.size() - 1);
  CHECK(rows.method("/x.Y/Z") == rows.size() - 1);
  CHECK(rows.size() == commands.size() + methods.size());
}
