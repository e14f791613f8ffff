// WebSocketCommands alone: command answers leave in the order the commands
// came, as {"command":..,"response":..} or {"command":..,"error":..}; what a
// message cannot carry (a file, a stream, an event stream) is answered with
// a problem instead.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "listener/websocket_commands.hpp"

using edri::listener::AnswerSink;
using edri::listener::SlotInfo;
using edri::listener::StreamRef;
using edri::listener::WebSocketCommands;

namespace {
struct Recorder final : WebSocketCommands::Events {
  std::vector<std::string> messages;
  int changes = 0;
  void command_answered(std::string_view message) override { messages.emplace_back(message); }
  void commands_changed() override { ++changes; }
};

void answer(WebSocketCommands& w, std::uint32_t seq, int status, std::string_view type, std::string_view body) {
  w.respond(seq, edri::http::ResponseHead{status, type, body.size()}, "X-Ignored: 1\r\n", body);
}
}  // namespace

TEST_CASE("websocket command answers leave in command order", "[listener][websocket]") {
  Recorder r;
  WebSocketCommands w(r);
  const auto a = w.open_command(R"("first")", 0), b = w.open_command(R"("second")", 0);
  CHECK(w.pending() == 2);
  answer(w, b, 200, "application/json", R"({"n":2})");
  CHECK(r.messages.empty());
  answer(w, a, 200, "text/plain", "one");
  CHECK(r.messages == std::vector<std::string>{R"({"command":"first","response":"one"})",
                                               R"({"command":"second","response":{"n":2}})"});
  CHECK(w.pending() == 0);
  CHECK(w.slot(a) == nullptr);
}

TEST_CASE("websocket command errors carry the problem", "[listener][websocket]") {
  Recorder r;
  WebSocketCommands w(r);
  const auto a = w.open_command(R"("x")", 0);
  answer(w, a, 404, "application/problem+json", R"({"status":404})");
  const auto b = w.open_command("null", 0);
  answer(w, b, 500, "text/plain", "broken");
  REQUIRE(r.messages.size() == 2);
  CHECK(r.messages[0] == R"({"command":"x","error":{"status":404}})");
  CHECK(r.messages[1].starts_with(R"({"command":null,"error":{)"));
  CHECK(r.messages[1].find("broken") != std::string::npos);
}

TEST_CASE("websocket commands refuse a stream or an event stream", "[listener][websocket]") {
  Recorder r;
  WebSocketCommands w(r);
  const auto a = w.open_command(R"("s")", 0);
  CHECK_FALSE(w.open_stream(a, edri::http::ResponseHead{}, {}, StreamRef{}));
  REQUIRE(r.messages.size() == 1);
  CHECK(r.messages[0].find(R"("error":)") != std::string::npos);
  CHECK(r.messages[0].find("streamed answer") != std::string::npos);
  const auto b = w.open_command(R"("e")", 0);
  CHECK(w.open_events(b, {}) == AnswerSink::EventsCarrier::Refused);
  SlotInfo* info = w.slot(b);
  REQUIRE(info != nullptr);
  CHECK(info->route == SlotInfo::kUncounted);  // commands are not in the request metrics
}
