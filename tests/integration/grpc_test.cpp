// gRPC on the HTTP port (../shared/specs/grpc.md, docs/grpc.md): the
// generic service edri.v1.Edri and the health check, through the real
// server. Python grpcio (Debian python3-grpcio) is the client for what
// users do (tests/grpc/grpc_client.py); nghttp2's client over a socket
// sends what grpcio never would (compressed flags, torn messages, floods).
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <future>
#include <nlohmann/json.hpp>
#include <string>

#include "edri/v1/edri.pb.h"
#include "grpc/framing.hpp"
#include "support/grpc_event.hpp"
#include "support/grpc_scenario.hpp"
#include "support/h2_connection.hpp"
#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {

std::vector<std::pair<std::string, std::string>> grpc_fields(
    std::vector<std::pair<std::string, std::string>> more = {}) {
  std::vector<std::pair<std::string, std::string>> f{{"content-type", "application/grpc"}, {"te", "trailers"}};
  f.insert(f.end(), more.begin(), more.end());
  return f;
}

// The messages of a gRPC answer body.
std::vector<edri::v1::Event> events_of(const std::string& body) {
  std::vector<edri::v1::Event> out;
  edri::grpc::MessageReader reader(1 << 30);
  reader.append(body);
  std::string_view m;
  while (reader.next(m) == edri::grpc::MessageReader::Next::Message) {
    out.emplace_back();
    out.back().ParseFromArray(m.data(), static_cast<int>(m.size()));
  }
  return out;
}

}  // namespace

TEST_CASE("gRPC Call reaches what the WebSocket command reaches, with the status mapping, metadata and health",
          "[grpc]") {
  ServerProcess server({test_plugin_path("test_app")});
  const json r = run_scenario(server.port(), "unary");
  INFO(r.dump(2));
  CHECK(r["hello"]["code"] == "OK");
  CHECK(r["hello"]["status"] == 200);
  CHECK(r["hello"]["id"] == 41);
  CHECK(r["hello"]["type"] == "hello");
  CHECK(r["hello"]["body"] == json{{"domain", "test"}, {"hello", "grpc"}});
  // The handler's status and headers are the Event's.
  CHECK(r["created"]["code"] == "OK");
  CHECK(r["created"]["status"] == 201);
  CHECK(r["created"]["meta"]["Location"] == "/things/1");
  // Checked at the edge as the WebSocket command is: INVALID_ARGUMENT with
  // the problem, which names the field.
  CHECK(r["invalid"]["code"] == "INVALID_ARGUMENT");
  const json problem = json::parse(r["invalid"]["details"].get<std::string>());
  CHECK(problem["status"] == 422);
  CHECK(problem["errors"][0]["field"] == "title");
  CHECK(r["missing_param"]["code"] == "INVALID_ARGUMENT");
  CHECK(r["missing_param"]["details"].get<std::string>().find("\"name\"") != std::string::npos);
  CHECK(r["not_object"]["code"] == "INVALID_ARGUMENT");
  CHECK(r["unknown"]["code"] == "UNIMPLEMENTED");
  CHECK(r["unknown"]["details"] == "unknown command no.such.command");
  CHECK(r["no_method"]["code"] == "UNIMPLEMENTED");
  // A handler's 404 is an answer, not a gRPC error.
  CHECK(r["handler_404"]["code"] == "OK");
  CHECK(r["handler_404"]["status"] == 404);
  CHECK(r["handler_404"]["body"] == "status");
  CHECK(r["subscribe_on_call"]["code"] == "INVALID_ARGUMENT");
  // Declared header and cookie fields from the call's metadata, or from
  // the Event's own.
  CHECK(r["metadata"]["body"]["key"] == "from-metadata");
  CHECK(r["metadata"]["body"]["session"] == "s1");
  CHECK(r["event_meta"]["body"]["key"] == "from-event");
  CHECK(r["health"] == "SERVING");
  CHECK(r["health_unknown"] == "NOT_FOUND");
}

TEST_CASE("gRPC Connect: 1,000 events answered in order, refusals among them, the stream going on", "[grpc]") {
  ServerProcess server({test_plugin_path("test_app")});
  const json r = run_scenario(server.port(), "bidi");
  INFO(r.dump(2));
  CHECK(r["count"] == 1000);
  CHECK(r["ids_in_order"] == true);
  CHECK(r["bodies_ok"] == true);
  CHECK(r["refused_422"] == 10);
  CHECK(r["refused_404"] == 10);
  CHECK(r["statuses"] == json{200, 404, 422});
}

TEST_CASE("gRPC Connect: pushes of a subscription made on it arrive on it", "[grpc]") {
  ServerProcess server({test_plugin_path("test_app")});
  const json r = run_scenario(server.port(), "push");
  INFO(r.dump(2));
  CHECK(r["subscribed"] == json{{"id", 1}, {"status", 200}});
  CHECK(r["published"] == 200);
  REQUIRE(r["pushes"].size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(r["pushes"][i]["type"] == "push");
    CHECK(r["pushes"][i]["body"]["command"] == "test.happened");
    CHECK(r["pushes"][i]["body"]["event"]["i"] == i + 1);
  }
  CHECK(r["unsubscribed"] == json{{"id", 2}, {"status", 200}});
  // After the unsubscription the next message is the answer, not a push.
  CHECK(r["after"] == 200);
  CHECK(r["last"]["id"] == 3);
  CHECK(r["last"]["body"]["hello"] == "last");
  CHECK(r["rest"].empty());
}

TEST_CASE("gRPC: cancelled calls and deadlines", "[grpc][alone]") {
  ServerProcess server({test_plugin_path("test_app")});
  const json c = run_scenario(server.port(), "cancel");
  INFO(c.dump(2));
  CHECK(c["cancelled"] == true);
  CHECK(c["after"]["code"] == "OK");
  const json d = run_scenario(server.port(), "deadline");
  INFO(d.dump(2));
  CHECK(d["short"] == "DEADLINE_EXCEEDED");
  CHECK(d["took"].get<double>() < 1.2);
  CHECK(d["fast"]["code"] == "OK");

  // The server keeps grpc-timeout itself: a client that waits past it
  // hears DEADLINE_EXCEEDED from the server, in the trailers.
  H2Connection h2(server.port());
  const auto slow = h2.client.request("POST", "/edri.v1.Edri/Call", event_message("sleep", R"({"ms":1500})", 1),
                                      grpc_fields({{"grpc-timeout", "200m"}}));
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(h2.run_until([&] { return h2.finished(slow); }, 5000));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1200));
  CHECK(h2.client.answers[slow].status == 200);
  CHECK(h2.client.answers[slow].field("grpc-status") == "4");
  // A grpc-timeout that breaks the grammar is refused, not ignored.
  const auto bad = h2.client.request("POST", "/edri.v1.Edri/Call", event_message("hello", R"({"name":"x"})", 2),
                                     grpc_fields({{"grpc-timeout", "12parsecs"}}));
  REQUIRE(h2.run_until([&] { return h2.finished(bad); }));
  CHECK(h2.client.answers[bad].field("grpc-status") == "3");
}

TEST_CASE("gRPC: what grpcio never sends is refused with a status, the server unharmed", "[grpc]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_MAX_BODY_SIZE", "4096"}});
  H2Connection h2(server.port());
  auto call = [&](std::string body, std::vector<std::pair<std::string, std::string>> more = {},
                  const char* path = "/edri.v1.Edri/Call") {
    return h2.client.request("POST", path, std::move(body), grpc_fields(std::move(more)));
  };
  const std::string hello = event_message("hello", R"({"name":"x"})", 9);
  std::string compressed = hello;
  compressed[0] = 1;  // the compressed flag, with no grpc-encoding agreed
  const auto s_compressed = call(compressed);
  const auto s_torn = call(hello.substr(0, hello.size() - 3));  // the stream ends inside the message
  const auto s_two = call(hello + hello);                       // a unary call with two messages
  const auto s_none = call("");
  const auto s_large = call(event_message("hello", std::string(5000, ' ') + R"({"name":"x"})", 1));
  const auto s_gzip = call(hello, {{"grpc-encoding", "deflate"}});  // gzip is taken (compression_test.cpp)
  const auto s_garbage = call(std::string("\0\0\0\0\3abc", 8));     // not an Event
  const auto s_ok = call(hello);
  const std::vector<std::int32_t> all{s_compressed, s_torn, s_two, s_none, s_large, s_gzip, s_garbage, s_ok};
  REQUIRE(h2.run_until([&] {
    for (const auto s : all)
      if (!h2.finished(s)) return false;
    return true;
  }));
  auto status = [&](std::int32_t s) { return h2.client.answers[s].field("grpc-status"); };
  CHECK(status(s_compressed) == "13");
  CHECK(status(s_torn) == "13");
  CHECK(status(s_two) == "13");
  CHECK(status(s_none) == "13");
  CHECK(status(s_large) == "8");
  CHECK(status(s_gzip) == "12");
  CHECK(h2.client.answers[s_gzip].field("grpc-accept-encoding") == "identity, gzip");
  CHECK(status(s_garbage) == "3");
  CHECK(status(s_ok) == "0");
  const auto ok = events_of(h2.client.answers[s_ok].body);
  REQUIRE(ok.size() == 1);
  CHECK(ok[0].id() == 9);
  CHECK(ok[0].status() == 200);

  // 20,000 events a Connect refuses at once (an unknown command), in one
  // body: each is answered, in order, and the server lives.
  std::string flood;
  for (int i = 0; i < 20000; ++i) flood += event_message("nope", "", static_cast<std::uint64_t>(i));
  H2Connection h2b(server.port());
  const auto s_flood = h2b.client.request("POST", "/edri.v1.Edri/Connect", flood, grpc_fields());
  REQUIRE(h2b.run_until([&] { return h2b.finished(s_flood); }, 30000));
  const auto answers = events_of(h2b.client.answers[s_flood].body);
  REQUIRE(answers.size() == 20000);
  bool in_order = true;
  for (std::size_t i = 0; i < answers.size(); ++i)
    in_order = in_order && answers[i].id() == i && answers[i].status() == 404;
  CHECK(in_order);
  CHECK(h2b.client.answers[s_flood].field("grpc-status") == "0");
  const json after = run_scenario(server.port(), "deadline");
  CHECK(after["fast"]["code"] == "OK");
}

TEST_CASE("gRPC: SIGTERM answers the calls in flight", "[grpc]") {
  ServerProcess server({test_plugin_path("test_app")});
  std::future<int> stopped;
  const json r = run_scenario(server.port(), "stop", [&](const std::string& line) {
    if (line.rfind("started", 0) == 0) stopped = std::async(std::launch::async, [&] { return server.stop(); });
  });
  INFO(r.dump(2));
  CHECK(r["code"] == "OK");
  CHECK(r["status"] == 200);
  REQUIRE(stopped.valid());
  CHECK(stopped.get() == 0);
}

TEST_CASE("gRPC: grpc-timeout is the event's deadline, seen by its handler, and no handler starts past it", "[grpc]") {
  ServerProcess server({test_plugin_path("test_app")});
  const json r = run_scenario(server.port(), "budget");
  INFO(r.dump(2));
  CHECK(r["with"]["body"]["deadline"] == true);
  // The client's timeout was 5 s. grpcio may send a little more: gRPC core
  // counts it from a cached clock and rounds it up to three significant
  // figures, so 5.001 s goes as "5010m" and a handler has seen 5009 ms left.
  // What is checked is that the handler sees the client's timeout.
  CHECK(r["with"]["body"]["left_ms"].get<int>() > 4000);
  CHECK(r["with"]["body"]["left_ms"].get<int>() <= 5100);
  CHECK(r["without"]["body"]["deadline"] == false);
  // The create waited behind an 800 ms handler, past its 200 ms: the
  // client got DEADLINE_EXCEEDED, and the manager did not run it.
  CHECK(r["late"]["code"] == "DEADLINE_EXCEEDED");
  CHECK(r["busy"] == 200);
  CHECK(r["created"]["created"] == 0);
}

TEST_CASE("gRPC: a call whose manager dies with it ends UNAVAILABLE, a handler's own 503 is OK", "[grpc]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient http(server.port());
  const auto pid = json::parse(http.get("/pid").body)["pid"].get<pid_t>();
  const json r = run_scenario(server.port(), "lost", [&](const std::string& line) {
    if (line.rfind("started", 0) == 0) ::kill(pid, SIGKILL);
  });
  INFO(r.dump(2));
  CHECK(r["code"] == "UNAVAILABLE");
  CHECK(r["details"].get<std::string>().find("stopped; it is being restarted") != std::string::npos);
  CHECK(r["own"]["code"] == "OK");
  CHECK(r["own"]["status"] == 503);
}

TEST_CASE("gRPC Connect: a client that reads no answers holds the server to its bound, then gets them all", "[grpc]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_OUTPUT_BUFFER", "65536"}});
  H2Connection h2(server.port());
  h2.client.set_initial_window(0);  // the server may send no answer's bytes
  std::string events;
  const std::string name(200, 'n');
  const int count = 20000;  // about 4.6 MB of events, 5 MB of answers
  for (int i = 0; i < count; ++i)
    events += event_message("hello", R"({"name":")" + name + "\"}", static_cast<std::uint64_t>(i));
  const auto stream = h2.client.request("POST", "/edri.v1.Edri/Connect", events, grpc_fields());
  // The server stops taking events once its answers pass the bound: the
  // stream's window stays shut and most of the body is never sent.
  h2.run_until([] { return false; }, 1500);
  const std::size_t sent_early = h2.client.body_sent(stream);
  CHECK(sent_early < events.size() / 2);
  CHECK_FALSE(h2.finished(stream));
  // The client reads again: every answer comes, in order.
  h2.client.set_initial_window(1 << 20);
  REQUIRE(h2.run_until([&] { return h2.finished(stream); }, 60000));
  const auto answers = events_of(h2.client.answers[stream].body);
  REQUIRE(answers.size() == static_cast<std::size_t>(count));
  bool in_order = true;
  for (std::size_t i = 0; i < answers.size(); ++i) in_order = in_order && answers[i].id() == i;
  CHECK(in_order);
  CHECK(h2.client.answers[stream].field("grpc-status") == "0");
}

TEST_CASE("gRPC Connect: live streams followed on it, as a WebSocket follows them", "[grpc]") {
  ServerProcess server({plugin_path("bench_app")});
  const json r = run_scenario(server.port(), "live");
  INFO(r.dump(2));
  CHECK(r["snapshot"]["type"] == "stream");
  CHECK(r["snapshot"]["body"] ==
        json{{"stream", "doc"}, {"revision", 1}, {"state", {{"title", "a"}}}, {"ts", r["snapshot"]["body"]["ts"]}});
  CHECK(r["patch"]["type"] == "stream");
  CHECK(r["patch"]["body"]["from"] == 1);
  CHECK(r["patch"]["body"]["revision"] == 2);
  CHECK(r["patch"]["body"]["patch"] == json{{"n", 1}});
  CHECK(r["refused"]["id"] == 2);
  CHECK(r["refused"]["status"] == 422);
  // Unsubscribed: the next message is the answer, and revision 3 (published
  // after it) sends no frame: what comes next is the snapshot of a new
  // subscription.
  CHECK(r["answer"]["id"] == 4);
  CHECK(r["answer"]["status"] == 200);
  CHECK(r["again"]["body"]["revision"] == 3);
  CHECK(r["again"]["body"]["state"] == json{{"title", "a"}, {"n", 2}});
  // The client half-closed; its subscription still delivers.
  CHECK(r["after_close"]["body"]["revision"] == 4);
}

TEST_CASE("gRPC typed service: notes.v1.Notes listed and described by reflection, called with its own messages",
          "[grpc]") {
  TempDir dir;
  ServerProcess server({plugin_path("notes")}, {{"EDRI_NOTES_DB", (dir.path / "notes.db").string()}});
  const json r = run_scenario(server.port(), "notes", {}, EDRI_GRPC_TYPED_CLIENT);
  INFO(r.dump(2));
  const json services = {"edri.v1.Edri", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
                         "grpc.reflection.v1alpha.ServerReflection", "notes.v1.Notes"};
  CHECK(r["services_v1"] == services);
  CHECK(r["services_v1alpha"] == services);
  // The service's file comes with what it imports, imports first.
  CHECK(r["symbol_files"] == json{"google/protobuf/empty.proto", "notes.proto"});
  CHECK(r["unknown_symbol"] == 5);  // NOT_FOUND, in the stream's answer
  CHECK(r["by_filename"] == 1);
  CHECK(r["extensions_base"] == "notes.v1.Note");
  CHECK(r["methods"] == json{"CreateNote", "DeleteNote", "GetNote", "ListNotes", "UpdateNote"});
  // One handler: what gRPC created, REST reads.
  const json& created = r["created"];
  REQUIRE(created["code"] == "OK");
  CHECK(created["message"]["title"] == "from grpc");
  CHECK(created["metadata"]["location"] == "/notes/" + created["message"]["id"].get<std::string>());
  CHECK(r["got"]["message"] == created["message"]);
  CHECK(std::to_string(r["rest"]["id"].get<std::int64_t>()) == created["message"]["id"]);
  CHECK(r["rest"]["title"] == "from grpc");
  CHECK(r["rest"]["body"] == "");
  // An unset optional field takes the event's default (limit 20).
  CHECK(r["listed"]["message"]["items"].size() == 1);
  CHECK(r["listed"]["message"]["total"] == "1");
  CHECK(r["listed_one"]["message"]["items"].size() == 1);
  CHECK(r["updated"]["message"]["title"] == "renamed");
  CHECK(r["updated"]["message"]["body"] == "b");
  // The edge's checks, as for REST: INVALID_ARGUMENT with the problem.
  CHECK(r["list_invalid"]["code"] == "INVALID_ARGUMENT");
  CHECK(json::parse(r["list_invalid"]["details"].get<std::string>())["errors"][0]["field"] == "limit");
  CHECK(r["invalid"]["code"] == "INVALID_ARGUMENT");
  CHECK(json::parse(r["invalid"]["details"].get<std::string>())["errors"][0]["field"] == "title");
  CHECK(r["not_a_message"]["code"] == "INVALID_ARGUMENT");
  // A handler's 404 is NOT_FOUND; a 64-bit id reaches it as a number.
  CHECK(r["far_id"]["code"] == "NOT_FOUND");
  CHECK(r["far_id"]["details"] == "note 1099511627776 does not exist");
  CHECK(r["deleted"]["code"] == "OK");
  CHECK(r["after_delete"]["code"] == "NOT_FOUND");
  CHECK(r["health"] == "SERVING");
  // Each unary method has its latency; the reflection streams are not timed.
  const auto m = http_get(server.port(), "/metrics").body;
  const auto calls = [&](const std::string& method) {
    return metric_value(m, "edri_grpc_call_duration_seconds_count{method=\"" + method + "\"}");
  };
  CHECK(calls("/notes.v1.Notes/CreateNote") == 3);
  CHECK(calls("/notes.v1.Notes/GetNote") == 3);
  CHECK(calls("/notes.v1.Notes/ListNotes") == 3);
  CHECK(calls("/notes.v1.Notes/DeleteNote") == 1);
  CHECK(calls("/grpc.health.v1.Health/Check") == 1);
  CHECK(m.find("edri_grpc_call_duration_seconds_count{method=\"/grpc.reflection") == std::string::npos);
}
