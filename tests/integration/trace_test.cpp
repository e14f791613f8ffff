// Tracing (W3C Trace Context, OTLP JSON; docs/operations.md, Traces)
// checked from outside: one request with a client's `traceparent` goes
// through a listener, two domains, an outbound HTTP call and a second
// instance over a real nats-server; every span the two instances export
// to a receiver in the test, and every log line their handlers write,
// has the client's trace id, and each span's parent is the span that
// called it.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/grpc_scenario.hpp"
#include "support/http_client.hpp"
#include "support/nats_server.hpp"
#include "support/otlp_receiver.hpp"
#include "support/server_process.hpp"
#include "support/taken_port.hpp"
#include "support/test_helpers.hpp"
#include "support/ws_client.hpp"

using namespace edri::test;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

using Env = std::map<std::string, std::string>;

constexpr char kTrace[] = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr char kClientSpan[] = "00f067aa0ba902b7";
constexpr char kState[] = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";

struct Span {
  std::string process, name, trace, id, parent;
  int kind = 0;
};

// The spans of OTLP JSON export requests (`bodies`), with the process
// each came from.
std::vector<Span> spans_of(const std::vector<std::string>& bodies) {
  std::vector<Span> out;
  for (const auto& body : bodies) {
    const json j = json::parse(body);
    for (const auto& rs : j.at("resourceSpans")) {
      std::string process;
      for (const auto& a : rs.at("resource").at("attributes"))
        if (a.at("key") == "edri.process") process = a.at("value").at("stringValue");
      for (const auto& ss : rs.at("scopeSpans"))
        for (const auto& s : ss.at("spans"))
          out.push_back({process, s.at("name"), s.at("traceId"), s.at("spanId"), s.value("parentSpanId", ""),
                         s.at("kind").get<int>()});
    }
  }
  return out;
}

// The spans of EDRI_TRACE_PATH's file: an OTLP JSON export request a line.
std::vector<Span> spans_in_file(const std::string& file) {
  std::vector<std::string> lines;
  std::istringstream in(read_file(file));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return spans_of(lines);
}

std::vector<Span> received_spans(const OtlpReceiver& receiver) {
  std::vector<std::string> bodies;
  for (const auto& r : receiver.received())
    if (r.target == "/v1/traces") {
      CHECK(r.method == "POST");
      CHECK(r.headers.at("content-type") == "application/json");
      bodies.push_back(r.body);
    }
  return spans_of(bodies);
}

// "process: name (trace/span <- parent)" a line each, for a failure's message.
std::string described(const std::vector<Span>& spans) {
  std::string out;
  for (const auto& s : spans)
    out += s.process + ": " + s.name + " (" + s.trace + "/" + s.id + " <- " + s.parent + ")\n";
  return out;
}

const Span* find_span(const std::vector<Span>& spans, const std::string& process, const std::string& name) {
  for (const auto& s : spans)
    if (s.process == process && s.name == name && s.trace == kTrace) return &s;
  return nullptr;
}

// A request's header naming the client's span of kTrace, sampled.
std::string client_traceparent() { return std::string("traceparent: 00-") + kTrace + "-" + kClientSpan + "-01\r\n"; }

// trace_app, its spans written to a file of its own (EDRI_TRACE_PATH).
struct TracedApp {
  using Env = std::map<std::string, std::string>;
  TempDir dir;
  std::string file = (dir.path / "spans.jsonl").string();
  ServerProcess server;
  explicit TracedApp(Env env = {}) : server({test_plugin_path("trace_app")}, with_path(std::move(env), file)) {}
  static Env with_path(Env env, const std::string& file) {
    env.emplace("EDRI_TRACE_PATH", file);
    return env;
  }
  // GET `path` as a call of the client's span; then the file's spans once
  // each (process, name) of `wanted` is there: each process exports its
  // own, on its own 200 ms pace, so one span's being there says nothing of
  // another's.
  using Wanted = std::vector<std::pair<std::string, std::string>>;
  std::vector<Span> call(const std::string& path, const Wanted& wanted) {
    HttpClient c(server.port());
    REQUIRE(c.request("GET", path, {}, client_traceparent()).status == 200);
    return spans_with(wanted);
  }
  std::vector<Span> spans_with(const Wanted& wanted) const {
    std::vector<Span> spans;
    const bool all = eventually(
        [&] {
          spans = spans_in_file(file);
          return std::all_of(wanted.begin(), wanted.end(),
                             [&](const auto& w) { return find_span(spans, w.first, w.second) != nullptr; });
        },
        10s);
    INFO("not every span came:\n" << described(spans));
    REQUIRE(all);
    return spans;
  }
};

// The JSON log lines of `log` whose message is `message`.
std::vector<json> lines_saying(const std::string& log, const std::string& message) {
  std::vector<json> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;
    const json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("message", "") == message) out.push_back(j);
  }
  return out;
}

Env traced(const std::string& nats, const std::string& domains, const OtlpReceiver& receiver) {
  return {{"EDRI_NATS_URL", nats},
          {"EDRI_DOMAINS", domains},
          {"EDRI_TRACE_OTLP_ENDPOINT", receiver.url("/v1/traces")},
          {"EDRI_LOG_FORMAT", "json"}};
}

bool joined(std::uint16_t port, std::size_t instances) {
  return eventually(
      [&] {
        HttpClient c(port);
        const auto cluster = json::parse(c.get("/health").body).at("cluster");
        return cluster["nats"] == "up" && cluster["instances"].size() == instances;
      },
      10s);
}

}  // namespace

TEST_CASE("one trace through a listener, two domains, an HTTP call and another instance", "[trace]") {
  NatsServer nats;
  OtlpReceiver receiver;
  ServerProcess front({test_plugin_path("trace_app")}, traced(nats.url(), "front,back", receiver));
  ServerProcess far({test_plugin_path("trace_app")}, traced(nats.url(), "far", receiver));
  REQUIRE(joined(front.port(), 2));

  HttpClient c(front.port());
  const auto r =
      c.request("GET", "/trace/" + std::to_string(receiver.port()), {},
                std::string("traceparent: 00-") + kTrace + "-" + kClientSpan + "-01\r\ntracestate: " + kState + "\r\n");
  REQUIRE(r.status == 200);
  const json answer = json::parse(r.body);
  CHECK(answer["back"] == 200);
  CHECK(answer["outbound"] == 200);
  CHECK(answer["far"] == 200);
  // The answer's traceparent: the client's trace, the listener's span.
  const std::string tp = r.header("traceparent");
  REQUIRE(tp.size() == 55);
  CHECK(tp.substr(3, 32) == kTrace);

  // Seven spans: listener, front's handler and its three calls, back's
  // and far's handlers.
  std::vector<Span> spans;
  const bool all = eventually(
      [&] {
        spans = received_spans(receiver);
        return find_span(spans, "listener", "GET /trace/{port:int}") && find_span(spans, "front", "front.trace") &&
               find_span(spans, "front", "ask back.work") && find_span(spans, "front", "GET") &&
               find_span(spans, "front", "ask far.work") && find_span(spans, "back", "back.work") &&
               find_span(spans, "far", "far.work");
      },
      10s);
  INFO(described(spans));
  REQUIRE(all);
  for (const auto& s : spans)
    if (s.name != "GET /health") CHECK(s.trace == kTrace);  // nothing else was asked
  const Span* listener = find_span(spans, "listener", "GET /trace/{port:int}");
  const Span* handler = find_span(spans, "front", "front.trace");
  const Span* ask_back = find_span(spans, "front", "ask back.work");
  const Span* http_call = find_span(spans, "front", "GET");
  const Span* ask_far = find_span(spans, "front", "ask far.work");
  CHECK(listener->parent == kClientSpan);
  CHECK(listener->kind == 2);
  CHECK(listener->id == tp.substr(36, 16));
  CHECK(handler->parent == listener->id);
  for (const Span* call : {ask_back, http_call, ask_far}) {
    CHECK(call->parent == handler->id);
    CHECK(call->kind == 3);
  }
  CHECK(find_span(spans, "back", "back.work")->parent == ask_back->id);
  CHECK(find_span(spans, "far", "far.work")->parent == ask_far->id);
  // The far handler, two hops and an instance away, saw its own span's
  // traceparent and the client's tracestate.
  const json far_body = json::parse(answer["far_body"].get<std::string>());
  CHECK(far_body["traceparent"].get<std::string>().substr(3, 32) == kTrace);
  CHECK(far_body["tracestate"] == kState);

  // The outbound call carried the HTTP client span's context.
  bool outbound = false;
  for (const auto& got : receiver.received())
    if (got.target == "/outbound") {
      outbound = true;
      CHECK(got.headers.at("traceparent") == std::string("00-") + kTrace + "-" + http_call->id + "-01");
      CHECK(got.headers.at("tracestate") == kState);
    }
  CHECK(outbound);

  // Each handler's log line about the request has the trace id.
  const auto front_lines = lines_saying(front.log(), "front handling");
  const auto back_lines = lines_saying(front.log(), "back handling");
  const auto far_lines = lines_saying(far.log(), "far handling");
  REQUIRE(front_lines.size() == 1);
  REQUIRE(back_lines.size() == 1);
  REQUIRE(far_lines.size() == 1);
  for (const auto& line : {front_lines[0], back_lines[0], far_lines[0]}) CHECK(line.value("trace_id", "") == kTrace);
}

TEST_CASE("a trace is started, kept unsampled or refused as the standard says", "[trace]") {
  TempDir dir;
  const std::string file = (dir.path / "spans.jsonl").string();
  ServerProcess server({test_plugin_path("trace_app")},
                       {{"EDRI_TRACE_PATH", file}, {"EDRI_TRACE_SAMPLE", "1"}, {"EDRI_LOG_FORMAT", "json"}});
  HttpClient c(server.port());
  auto traceparent_of = [&](const std::string& sent) {
    const auto r = c.request("GET", "/chain", {}, sent.empty() ? "" : "traceparent: " + sent + "\r\n");
    REQUIRE(r.status == 200);
    return r.header("traceparent");
  };
  // Not sampled by the client: carried (the same trace back), not exported.
  const std::string quiet = "11111111111111111111111111111111";
  CHECK(traceparent_of("00-" + quiet + "-" + kClientSpan + "-00").substr(3, 32) == quiet);
  CHECK(traceparent_of("00-" + quiet + "-" + kClientSpan + "-00").substr(52) == "-00");
  // And into the other domain: its handler's traceparent is of the same
  // trace, unsampled still.
  const auto chained = c.request("GET", "/chain", {}, "traceparent: 00-" + quiet + "-" + kClientSpan + "-00\r\n");
  const std::string back_tp = nlohmann::json::parse(chained.body).value("traceparent", "");
  REQUIRE(back_tp.size() == 55);
  CHECK(back_tp.substr(3, 32) == quiet);
  CHECK(back_tp.substr(52) == "-00");
  // Invalid (uppercase hex, all-zero trace, version ff, version 00 too
  // long) or absent: a trace of the server's own, sampled at rate 1.
  std::set<std::string> started;
  const std::vector<std::string> refused{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                                         "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                                         std::string("ff-") + kTrace + "-00f067aa0ba902b7-01",
                                         std::string("00-") + kTrace + "-00f067aa0ba902b7-01-extra", ""};
  for (const std::string& bad : refused) {
    const std::string tp = traceparent_of(bad);
    REQUIRE(tp.size() == 55);
    CHECK(tp.substr(3, 32) != kTrace);
    CHECK(tp.substr(52) == "-01");
    started.insert(tp.substr(3, 32));
  }
  CHECK(started.size() == 5);
  // A later version may be longer: its trace is taken.
  CHECK(traceparent_of(std::string("01-") + kTrace + "-00f067aa0ba902b7-01-later").substr(3, 32) == kTrace);
  // A WebSocket command continues its handshake's trace.
  {
    WsClient ws(server.port(), "/ws", {{"traceparent", std::string("00-") + kTrace + "-" + kClientSpan + "-01"}});
    const json answer = ws.command({{"command", "back.work"}});
    INFO(answer.dump());
    CHECK(answer.at("response").at("traceparent").get<std::string>().substr(3, 32) == kTrace);
  }

  // A gRPC call's answer carries its trace back too, in its head, or in
  // its one HEADERS frame when it is Trailers-Only.
  {
    const json g = run_scenario(server.port(), "traced");
    INFO(g.dump());
    CHECK(g.at("answered").at("code") == "OK");
    CHECK(g.at("answered").at("traceparent").get<std::string>().substr(0, 35) == std::string("00-") + kTrace);
    CHECK(g.at("refused").at("code") == "UNIMPLEMENTED");
    CHECK(g.at("refused").at("traceparent").get<std::string>().substr(0, 35) == std::string("00-") + kTrace);
    CHECK(g.at("answered").at("traceparent") != g.at("refused").at("traceparent"));  // each call its own span
  }

  // The file: one OTLP export request per line. The started traces' spans
  // (listener, handler, its call, back's handler) are there; the
  // unsampled trace's are not.
  std::vector<Span> spans;
  REQUIRE(eventually(
      [&] {
        spans = spans_in_file(file);
        std::size_t whole = 0;
        for (const auto& t : started) {
          std::set<std::string> names;
          for (const auto& s : spans)
            if (s.trace == t) names.insert(s.process + " " + s.name);
          whole += names == std::set<std::string>{"listener GET /chain", "front front.chain", "front ask back.work",
                                                  "back back.work"};
        }
        return whole == started.size() && find_span(spans, "listener", "websocket back.work");
      },
      10s));
  for (const auto& s : spans) CHECK(s.trace != quiet);
  CHECK(find_span(spans, "listener", "websocket back.work")->parent == kClientSpan);
}

TEST_CASE("a handler's database statements and worker jobs are spans of its trace", "[trace]") {
  TracedApp app;
  const auto& file = app.file;
  HttpClient c(app.server.port());
  const auto r = c.request("GET", "/store", {}, client_traceparent());
  REQUIRE(r.status == 200);
  CHECK(json::parse(r.body)["rows"] == 4);
  std::vector<Span> spans;
  auto statements = [&] {
    std::vector<const Span*> out;
    for (const auto& s : spans)
      if (s.process == "store" && s.kind == 3) out.push_back(&s);
    return out;
  };
  REQUIRE(eventually(
      [&] {
        spans = spans_in_file(file);
        return find_span(spans, "store", "store.work") && statements().size() == 5;
      },
      10s));
  INFO(described(spans));
  const Span* handler = find_span(spans, "store", "store.work");
  std::multiset<std::string> names;
  for (const Span* s : statements()) {
    names.insert(s->name);
    CHECK(s->trace == kTrace);
    CHECK(s->parent == handler->id);  // the first and the ones after the handler resumed alike
  }
  // The transaction's BEGIN and COMMIT are statements' spans too.
  CHECK(names ==
        std::multiset<std::string>{"SELECT traces", "BATCH traces", "BEGIN traces", "SELECT traces", "COMMIT traces"});

  // Work on a worker thread (an internal span) and a task in a worker
  // process (a client span), both children of their handler's.
  const auto w = c.request("GET", "/work", {}, client_traceparent());
  REQUIRE(w.status == 200);
  CHECK(json::parse(w.body) == json{{"sum", 4}, {"upper", "ABC"}});
  spans = app.spans_with({{"store", "thread"}, {"store", "task upper"}, {"store", "store.busy"}});
  const Span* busy = find_span(spans, "store", "store.busy");
  REQUIRE(busy);
  CHECK(find_span(spans, "store", "thread")->parent == busy->id);
  CHECK(find_span(spans, "store", "thread")->kind == 1);
  CHECK(find_span(spans, "store", "task upper")->parent == busy->id);
  CHECK(find_span(spans, "store", "task upper")->kind == 3);
}

TEST_CASE("a notification's subscribers continue its publisher's trace", "[trace]") {
  TracedApp app(TracedApp::Env{{"EDRI_LOG_FORMAT", "json"}});
  const auto spans = app.call("/announce", {{"front", "front.announce"},
                                            {"front", "publish news.told"},
                                            {"back", "process news.told"},
                                            {"far", "far.work"},
                                            {"far", "far.later"}});
  INFO(described(spans));
  const Span* handler = find_span(spans, "front", "front.announce");
  const Span* published = find_span(spans, "front", "publish news.told");
  const Span* processed = find_span(spans, "back", "process news.told");
  REQUIRE(handler);
  REQUIRE(published);
  CHECK(published->kind == 4);  // PRODUCER
  CHECK(published->parent == handler->id);
  CHECK(processed->kind == 5);  // CONSUMER
  CHECK(processed->parent == published->id);
  // The subscriber's own call, and its log line, are on the trace too.
  const Span* asked = find_span(spans, "back", "ask far.work");
  REQUIRE(asked);
  CHECK(asked->parent == processed->id);
  CHECK(find_span(spans, "far", "far.work")->parent == asked->id);
  // And a coroutine subscriber's call after it waited.
  const Span* later = find_span(spans, "back", "ask far.later");
  REQUIRE(later);
  CHECK(later->parent == processed->id);
  CHECK(find_span(spans, "far", "far.later")->parent == later->id);
  const auto heard = lines_saying(app.server.log(), "back heard");
  REQUIRE(heard.size() == 1);
  CHECK(heard[0].value("trace_id", "") == kTrace);
}

TEST_CASE("a call a callback makes after its handler returned continues the handler's trace", "[trace]") {
  TracedApp app;
  const auto spans =
      app.call("/chain-on", {{"far", "far.work"}, {"front", "ask far.work"}, {"front", "front.chain_on"}});
  INFO(described(spans));
  const Span* handler = find_span(spans, "front", "front.chain_on");
  REQUIRE(handler);
  CHECK(find_span(spans, "front", "ask back.work")->parent == handler->id);
  // Asked from the first answer's callback: the handler's child too.
  const Span* second = find_span(spans, "front", "ask far.work");
  CHECK(second->trace == kTrace);
  CHECK(second->parent == handler->id);
  CHECK(find_span(spans, "far", "far.work")->parent == second->id);
}

TEST_CASE("a call a timer's callback makes continues the trace of the handler that set it", "[trace]") {
  TracedApp app;
  const auto spans = app.call("/later", {{"far", "far.work"}, {"front", "ask far.work"}, {"front", "front.later"}});
  INFO(described(spans));
  const Span* handler = find_span(spans, "front", "front.later");
  REQUIRE(handler);
  const Span* asked = find_span(spans, "front", "ask far.work");
  CHECK(asked->parent == handler->id);
  CHECK(find_span(spans, "far", "far.work")->parent == asked->id);
}

TEST_CASE("SIGUSR1 reopens the trace file in the listener and the managers", "[trace]") {
  TracedApp app;
  const auto& file = app.file;
  auto& server = app.server;
  HttpClient c(server.port());
  const std::string traced = client_traceparent();
  REQUIRE(c.request("GET", "/store", {}, traced).status == 200);
  // Both processes' spans of it, each exported on its own pace: one
  // written after the count below would be taken for a late write.
  REQUIRE(eventually(
      [&] {
        const auto spans = spans_in_file(file);
        return find_span(spans, "store", "store.work") && find_span(spans, "listener", "GET /store");
      },
      10s));
  // Rotation as logrotate does it: rename, then SIGUSR1 to the server.
  const std::string rotated = file + ".1";
  std::filesystem::rename(file, rotated);
  const auto before = spans_in_file(rotated).size();
  REQUIRE(::kill(server.pid(), SIGUSR1) == 0);
  // Each process opens the path again before its next write.
  std::vector<Span> spans;
  CHECK(eventually(
      [&] {
        REQUIRE(c.request("GET", "/store", {}, traced).status == 200);
        spans = std::filesystem::exists(file) ? spans_in_file(file) : std::vector<Span>{};
        return find_span(spans, "store", "store.work") && find_span(spans, "listener", "GET /store");
      },
      10s));
  INFO(described(spans));
  CHECK(spans_in_file(rotated).size() == before);  // nothing more written to the old file
  // Said in the log, by each process at its next look (once a second).
  CHECK(eventually(
      [&] {
        c.get("/health");
        return server.log().find("EDRI_TRACE_PATH " + file + " reopened") != std::string::npos;
      },
      5s));
}

TEST_CASE("spans past EDRI_TRACE_BUFFER are dropped, counted in /metrics and logged", "[trace]") {
  // A receiver that takes the connection and never answers: each POST
  // waits out its timeout while spans pile up.
  const TakenPort silent(16);
  const std::string endpoint = "http://127.0.0.1:" + std::to_string(silent.port) + "/v1/traces";
  ServerProcess server({test_plugin_path("trace_app")},
                       {{"EDRI_TRACE_OTLP_ENDPOINT", endpoint}, {"EDRI_TRACE_BUFFER", "64"}});
  HttpClient c(server.port());
  for (int i = 0; i < 400; ++i) REQUIRE(c.get("/chain").status == 200);
  auto dropped = [&](const std::string& process) {
    return metric_value(c.get("/metrics").body, "edri_trace_spans_dropped_total{process=\"" + process + "\"} ");
  };
  CHECK(eventually([&] { return dropped("listener") > 0 && dropped("manager front") > 0; }, 5s));
  CHECK(dropped("manager far") == 0);  // it made no span
  // Each POST timed out: its batch is lost to the endpoint, and counted.
  CHECK(eventually(
      [&] {
        return metric_value(c.get("/metrics").body, "edri_trace_batches_failed_total{process=\"listener\"} ") > 0;
      },
      10s));
  CHECK(server.log().find("spans dropped (past EDRI_TRACE_BUFFER") != std::string::npos);
}

TEST_CASE("a batch the receiver could not take is posted again, and one it refused is given up", "[trace]") {
  // The first two POSTs (whichever processes make them) get 503.
  OtlpReceiver busy(2, 503);
  ServerProcess server({test_plugin_path("trace_app")}, {{"EDRI_TRACE_OTLP_ENDPOINT", busy.url("/v1/traces")}});
  HttpClient c(server.port());
  const std::string traced = client_traceparent();
  REQUIRE(c.request("GET", "/chain", {}, traced).status == 200);
  REQUIRE(c.request("GET", "/chain", {}, traced).status == 200);
  // Taken at last: each refused body again, byte for byte, and every
  // span of the calls once.
  const auto accepted = [&] {
    std::vector<std::string> bodies;
    const auto got = busy.received();
    for (std::size_t i = 2; i < got.size(); ++i) bodies.push_back(got[i].body);
    return bodies;
  };
  CHECK(eventually(
      [&] {
        const auto spans = spans_of(accepted());
        return find_span(spans, "listener", "GET /chain") && find_span(spans, "front", "front.chain") &&
               find_span(spans, "back", "back.work");
      },
      15s));
  const auto got = busy.received();
  REQUIRE(got.size() >= 3);
  const auto bodies = accepted();
  for (std::size_t i = 0; i < 2; ++i) CHECK(std::find(bodies.begin(), bodies.end(), got[i].body) != bodies.end());
  const auto spans = spans_of(bodies);
  INFO(described(spans));
  std::set<std::string> ids;
  for (const auto& s : spans) CHECK(ids.insert(s.id).second);
  for (const std::string process : {"listener", "manager front", "manager back"})
    CHECK(metric_value(c.get("/metrics").body, "edri_trace_batches_failed_total{process=\"" + process + "\"} ") == 0);
  // Logged by each process at its next look (once a second).
  CHECK(eventually([&] { return server.log().find("HTTP 503") != std::string::npos; }, 5s));

  // 400: the receiver will never take it; given up at once, and counted.
  OtlpReceiver refusing(1000, 400);
  ServerProcess refused({test_plugin_path("trace_app")}, {{"EDRI_TRACE_OTLP_ENDPOINT", refusing.url("/v1/traces")}});
  HttpClient r(refused.port());
  REQUIRE(r.request("GET", "/chain", {}, traced).status == 200);
  CHECK(eventually(
      [&] {
        return metric_value(r.get("/metrics").body, "edri_trace_batches_failed_total{process=\"listener\"} ") >= 1;
      },
      10s));
  std::this_thread::sleep_for(1500ms);  // past a retry's first backoff: none came
  std::size_t from_listener = 0;
  for (const auto& posted : refusing.received())
    from_listener += find_span(spans_of({posted.body}), "listener", "GET /chain") != nullptr;
  CHECK(from_listener == 1);
}

TEST_CASE("a wrong tracing setting stops start-up with a message", "[trace]") {
  const auto bad_url = run_server_to_exit({}, {{"EDRI_TRACE_OTLP_ENDPOINT", "ftp://127.0.0.1/v1/traces"}});
  CHECK(bad_url.status == 2);
  CHECK(bad_url.err.find("EDRI_TRACE_OTLP_ENDPOINT") != std::string::npos);
  const auto bad_rate = run_server_to_exit({}, {{"EDRI_TRACE_SAMPLE", "1.5"}});
  CHECK(bad_rate.status == 2);
  CHECK(bad_rate.err.find("from 0 to 1") != std::string::npos);
}
