// bench_micro: what edri itself costs per request, without sockets or
// processes (Google Benchmark). `bench serialization` and `bench inprocess`
// run it and print its figures as tables; it runs alone too
// (build/bin/bench_micro --benchmark_filter=...).
#include <benchmark/benchmark.h>

#include <edri/plugin.hpp>
#include <string>
#include <vector>

#include "edri/v1/edri.pb.h"
#include "envelope/envelope.hpp"
#include "grpc/service_catalog.hpp"
#include "http/request_parser.hpp"
#include "http/response_writer.hpp"
#include "http/route_table.hpp"
#include "http2/server_session.hpp"
#include "listener/request_validator.hpp"
#include "manager/coroutines.hpp"
#include "notes_descriptor.hpp"
#include "runtime/event_loop.hpp"
#include "support/h2_client.hpp"

namespace {

namespace env = edri::envelope;

// An envelope as the listener makes one: header, two path parameters, a
// query and a body of `size` bytes.
std::vector<std::byte> encoded_request(std::size_t size) {
  const std::string body(size, 'b');
  const std::vector<std::pair<std::string, std::string>> params{{"id", "12345"}, {"slug", "a-note"}};
  env::EnvelopeWriter w(env::make_header(env::Kind::Request, env::event_type_id("notes.get"), 1));
  w.key_values(env::SectionType::PathParams, params, env::StringPairKey{}, env::StringPairValue{});
  w.text(env::SectionType::Query, "limit=20");
  w.text(env::SectionType::Body, body);
  std::vector<std::byte> out(w.size());
  w.write(out.data());
  return out;
}

void BM_EnvelopeEncode(benchmark::State& state) {
  const std::string body(static_cast<std::size_t>(state.range(0)), 'b');
  const std::vector<std::pair<std::string, std::string>> params{{"id", "12345"}, {"slug", "a-note"}};
  std::vector<std::byte> out(body.size() + 4096);
  const auto header = env::make_header(env::Kind::Request, env::event_type_id("notes.get"), 1);
  for (auto _ : state) {
    env::EnvelopeWriter w(header);
    w.key_values(env::SectionType::PathParams, params, env::StringPairKey{}, env::StringPairValue{});
    w.text(env::SectionType::Query, "limit=20");
    w.text(env::SectionType::Body, body);
    w.write(out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_EnvelopeEncode)->Arg(64)->Arg(1024)->Arg(16384)->Arg(262144);

void BM_EnvelopeDecode(benchmark::State& state) {
  const auto record = encoded_request(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    env::EnvelopeView v;
    const auto e = env::decode(record, v);
    benchmark::DoNotOptimize(e);
    env::KeyValueReader kv(v.section(env::SectionType::PathParams));
    std::string_view k, val;
    while (kv.next(k, val)) benchmark::DoNotOptimize(val);
    benchmark::DoNotOptimize(v.text(env::SectionType::Body));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_EnvelopeDecode)->Arg(64)->Arg(1024)->Arg(16384)->Arg(262144);

// A 300-route table (100 resources x list, item, item action), looked up
// for a route with two parameters near its end.
void BM_RouteLookup300(benchmark::State& state) {
  edri::http::RouteTable table;
  std::uint32_t target = 0;
  for (int i = 0; i < 100; ++i) {
    const std::string base = "/api/v1/resource" + std::to_string(i);
    table.add(edri::Method::Get, base, target++);
    table.add(edri::Method::Get, base + "/{id:int}", target++);
    table.add(edri::Method::Post, base + "/{id:int}/actions/{name}", target++);
  }
  for (auto _ : state) {
    auto m = table.find(edri::Method::Post, "/api/v1/resource97/12345/actions/publish");
    benchmark::DoNotOptimize(m);
  }
}
BENCHMARK(BM_RouteLookup300);

// Binding and checking a JSON body with three declared fields and a query
// field, as the listener does before a request leaves it.
void BM_ParamBinding(benchmark::State& state) {
  edri::listener::RequestValidator validator(
      {edri::Field("title").string().length(1, 200), edri::Field("body").string().optional(),
       edri::Field("priority").integer().range(0, 10), edri::Field("limit").in_query().integer().default_to(20)});
  edri::http::HttpRequest req;
  req.body = R"({"title":"a note","body":"some text for the note","priority":3})";
  // Without it the body is refused 415 before any field is read.
  req.headers = {{"Content-Type", "application/json"}};
  edri::listener::ValidatedFields out;
  for (auto _ : state) {
    out.clear();
    validator.check("limit=50", req, out);
    if (out.status != 0) state.SkipWithError("refused");
    benchmark::DoNotOptimize(out.status);
  }
}
BENCHMARK(BM_ParamBinding);

// JSON Schema's rules at the edge: an enum, a pattern (RE2), a nested
// object and an array of three objects, all valid.
void BM_NestedRules(benchmark::State& state) {
  using edri::Field;
  edri::listener::RequestValidator validator(
      {Field("state").string().one_of({"open", "paid"}), Field("sku").string().pattern("^[A-Z]{3}-[0-9]{4}$"),
       Field("buyer").object({Field("name").string().length(1, 40), Field("email").string().optional()}),
       Field("lines").array(Field("").object({Field("qty").integer().range(1, 99)})).length(1, 50)});
  edri::http::HttpRequest req;
  req.body = R"({"state":"open","sku":"ABC-1234","buyer":{"name":"Ada","email":"ada@example.org"},)"
             R"("lines":[{"qty":1},{"qty":2},{"qty":3}]})";
  req.headers = {{"Content-Type", "application/json"}};
  edri::listener::ValidatedFields out;
  for (auto _ : state) {
    out.clear();
    validator.check("", req, out);
    if (out.status != 0) state.SkipWithError("refused");
    benchmark::DoNotOptimize(out.status);
  }
}
BENCHMARK(BM_NestedRules);

// A handler's JSON answer: an object of five members, serialized.
void BM_JsonResponse(benchmark::State& state) {
  for (auto _ : state) {
    auto r = edri::Response::json(
        {{"id", 12345}, {"title", "a note"}, {"body", "some text"}, {"done", false}, {"tags", {"a", "b"}}}, 200);
    benchmark::DoNotOptimize(r.body_bytes().data());
  }
}
BENCHMARK(BM_JsonResponse);

// One middleware layer as the listener runs it: on_request, which adds a
// header, and on_response.
void BM_MiddlewareLayer(benchmark::State& state) {
  edri::MiddlewareDecl m{"tag", 0,
                         [](const edri::Request&, edri::ResponseHeaders& h) -> std::optional<edri::Response> {
                           h.add("X-Tag", "1");
                           return std::nullopt;
                         },
                         [](int, edri::ResponseHeaders& h) { h.add("X-Seen", "1"); }};
  edri::Request view;
  view.path = "/notes/1";
  edri::Admission req_headers;
  edri::ResponseHeaders resp_headers;
  for (auto _ : state) {
    req_headers.clear();
    resp_headers.clear();
    auto early = m.on_request(view, req_headers);
    benchmark::DoNotOptimize(early);
    m.on_response(200, resp_headers);
    benchmark::DoNotOptimize(resp_headers.lines().data());
  }
}
BENCHMARK(BM_MiddlewareLayer);

// What the manager does per request, without its channel: decode the
// envelope, bind the Request, call the handler, encode its answer. The
// handler is `handler`; the two below differ only in how it writes JSON.
void manager_dispatch(benchmark::State& state, const edri::Handler& handler) {
  const auto record = encoded_request(40);
  struct NoContext : edri::Context {
    std::string_view domain() const override { return "bench"; }
    void log(edri::LogLevel, std::string_view, const edri::Request*) override {}
    bool publish(std::string_view, const nlohmann::json&) override { return false; }
    bool request_for(const edri::Request*, std::string_view, const nlohmann::json&,
                     std::function<void(const edri::Response&)>) override {
      return false;
    }
    bool publish_patch(std::string_view, const nlohmann::json&, std::function<void(const edri::Response&)>) override {
      return false;
    }
    void read_stream(std::string_view, std::function<void(const edri::Response&)>) override {}
    void after(std::chrono::milliseconds, std::function<void()>) override {}
    edri::Responder defer() override { return edri::Responder(nullptr); }
    std::string render(std::string_view, const nlohmann::json&) override { return {}; }
    edri::Reply in_thread(std::function<edri::Response()>) override { return edri::Deferred{}; }
    edri::Reply in_process(std::string_view, std::string,
                           std::function<edri::Response(const edri::TaskResult&)>) override {
      return edri::Deferred{};
    }
    // A coroutine handler runs as the manager runs it: its request copied,
    // its frame and flow made, started; one that awaits nothing returns.
    edri::Reply start(const edri::AsyncHandler& h, const edri::Request& r) override {
      const env::EnvelopeHeader header{};
      return coroutines.start(h, r, *this, &header, std::chrono::steady_clock::time_point::max());
    }
    edri::EventLoop loop;
    edri::manager::Coroutines coroutines{loop, 16384, false, [](const env::EnvelopeHeader&, edri::Response) {}};
    void start(const edri::AsyncSubscriber&, const edri::Request&) override {}
    bool run_on_thread(const edri::Request*, std::function<void()>, std::function<void()>) override { return false; }
    void run_task(const edri::Request*, std::string_view, std::string,
                  std::function<void(const edri::TaskResult&)>) override {}
    edri::Database& database(std::string_view) override { throw std::invalid_argument("no database"); }
    std::function<void()> http(edri::HttpCall, std::chrono::steady_clock::time_point,
                               std::function<void(edri::HttpReply)>) override {
      return [] {};
    }
  } ctx;
  edri::Request req;
  std::vector<std::byte> out(4096);
  for (auto _ : state) {
    env::EnvelopeView v;
    if (env::decode(record, v) != env::DecodeError::None) state.SkipWithError("decode");
    req.path_params.clear();
    env::KeyValueReader kv(v.section(env::SectionType::PathParams));
    std::string_view k, val;
    while (kv.next(k, val)) req.path_params.push_back(edri::Param{k, val});
    req.body = v.text(env::SectionType::Body);
    const auto reply = handler(req, ctx);
    const auto& resp = std::get<edri::Response>(reply);
    env::EnvelopeWriter w(env::make_header(env::Kind::Response, v.header.event_type, v.header.request_id));
    w.text(env::SectionType::ContentType, resp.content_type);
    w.text(env::SectionType::Body, resp.body_bytes());
    w.write(out.data());
    benchmark::DoNotOptimize(out.data());
  }
}

// The handler answers a braced list of members, as most handlers do: since
// decision 0025 it is written as text without a DOM (json_members.hpp).
void BM_ManagerDispatch(benchmark::State& state) {
  manager_dispatch(state, [](const edri::Request& r, edri::Context&) {
    return edri::Response::json({{"id", r.int_param("id")}, {"ok", true}});
  });
}
BENCHMARK(BM_ManagerDispatch);

// The same handler as a coroutine that awaits nothing (decision 0030):
// what Async costs where nothing waits (issue 36's target: <= 1.1x).
void BM_ManagerDispatchCoroutine(benchmark::State& state) {
  manager_dispatch(state, edri::from_async([](const edri::Request& r, edri::Context&) -> edri::Async<> {
                     co_return edri::Response::json({{"id", r.int_param("id")}, {"ok", true}});
                   }));
}
BENCHMARK(BM_ManagerDispatchCoroutine);

// The same answer built as an nlohmann DOM and serialized: what the braced
// list cost before 0025, and what a handler that builds a json value pays.
void BM_ManagerDispatchDom(benchmark::State& state) {
  manager_dispatch(state, [](const edri::Request& r, edri::Context&) {
    return edri::Response::json(nlohmann::json{{"id", r.int_param("id")}, {"ok", true}});
  });
}
BENCHMARK(BM_ManagerDispatchDom);

// The same answer written as text (Response::raw_json): what the manager
// itself costs around a handler.
void BM_ManagerDispatchRawJson(benchmark::State& state) {
  manager_dispatch(state, [](const edri::Request& r, edri::Context&) {
    std::string body = "{\"id\":";
    body += std::to_string(r.int_param("id"));
    body += ",\"ok\":true}";
    return edri::Response::raw_json(std::move(body));
  });
}
BENCHMARK(BM_ManagerDispatchRawJson);

// What the listener's protocol costs per request, at each end of a GET
// /noop and its 11-byte answer: HTTP/1.1 parsed by llhttp and written by
// ResponseWriter, against HTTP/2 through the nghttp2 session (HPACK both
// ways, frames in and out), 1,000 requests per connection. Decision 0021.
void BM_Http1Exchange(benchmark::State& state) {
  const std::string request = "GET /noop HTTP/1.1\r\nHost: localhost\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n";
  edri::http::ResponseWriter writer;
  std::string out;
  std::size_t served = 0;
  edri::http::RequestParser parser({}, [&](edri::http::HttpRequest&) {
    writer.write(out, edri::http::ResponseHead{200, "application/json", 11}, {}, R"({"ok":true})");
    ++served;
  });
  for (auto _ : state) {
    out.clear();
    parser.feed(request.data(), request.size());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(served));
}
BENCHMARK(BM_Http1Exchange);

void BM_Http2Exchange(benchmark::State& state) {
  constexpr int kPerConnection = 1000;
  // The client's bytes for a whole connection, made once: its HPACK state
  // depends on what it sent before, not on what the server answers.
  edri::test::H2Client client(kPerConnection + 1);
  std::vector<std::string> frames{client.produce()};
  for (int i = 0; i < kPerConnection; ++i) {
    client.request("GET", "/noop", {}, {{"user-agent", "bench"}, {"accept", "*/*"}});
    frames.push_back(client.produce());
  }
  struct Answering final : edri::http2::ServerSession::Handler {
    edri::http2::ServerSession* session = nullptr;
    std::size_t served = 0;
    void on_request(std::int32_t stream, edri::http::HttpRequest&) override {
      session->respond(stream, 200, "application/json", 11, {}, edri::http2::bytes_body(R"({"ok":true})"));
      ++served;
    }
    void on_refused(std::int32_t, int, std::string_view) override {}
    void on_closed(std::int32_t, bool) override {}
  } handler;
  edri::http2::Limits limits;
  std::string out;
  while (state.KeepRunningBatch(kPerConnection)) {
    edri::http2::ServerSession session(handler, limits);
    handler.session = &session;
    // The arrival time is the connection's, which reads the clock anyway.
    const auto arrived = std::chrono::steady_clock::now();
    session.receive(frames[0], arrived);
    for (int i = 1; i <= kPerConnection; ++i) {
      out.clear();
      session.receive(frames[static_cast<std::size_t>(i)], arrived);
      session.produce(out);
      benchmark::DoNotOptimize(out.data());
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(handler.served));
}
BENCHMARK(BM_Http2Exchange);

// A gRPC message in and out as the listener handles it, for notes.get and
// the note it answers: the generic service's Event (JSON carried as
// bytes) against the typed notes.v1.Notes (each message transcoded to and
// from the handler's JSON).
constexpr std::string_view kNoteJson =
    R"({"id":7,"title":"a note","body":"what it says","created_at":"2026-12-02T03:04:05.678Z",)"
    R"("updated_at":"2026-12-02T03:04:05.678Z"})";

void BM_GrpcGenericEvent(benchmark::State& state) {
  edri::v1::Event in;
  in.set_type("notes.get");
  in.set_body(R"({"id":7})");
  const std::string request = in.SerializeAsString();
  for (auto _ : state) {
    edri::v1::Event ev;
    ev.ParseFromString(request);
    nlohmann::json fields = nlohmann::json::parse(ev.body());
    benchmark::DoNotOptimize(fields.dump());
    edri::v1::Event answer;
    answer.set_type(ev.type());
    answer.set_status(200);
    answer.set_body(std::string(kNoteJson));
    benchmark::DoNotOptimize(answer.SerializeAsString());
  }
}
BENCHMARK(BM_GrpcGenericEvent);

void BM_GrpcTypedTranscode(benchmark::State& state) {
  const edri::grpc::ServiceCatalog catalog({{"notes.v1.Notes",
                                             std::string(notes_descriptor, sizeof notes_descriptor),
                                             {{"GetNote", "notes.get"},
                                              {"CreateNote", "notes.create"},
                                              {"ListNotes", "notes.list"},
                                              {"UpdateNote", "notes.update"},
                                              {"DeleteNote", "notes.delete"}}}});
  const auto& m = *catalog.find("/notes.v1.Notes/GetNote");
  std::string request, error;
  // GetNoteRequest{id: 7} (field 1, varint).
  request = std::string("\x08\x07", 2);
  for (auto _ : state) {
    nlohmann::json fields;
    catalog.request_json(m, request, 128, fields, error);
    benchmark::DoNotOptimize(fields.dump());
    std::string out;
    catalog.answer_message(m, kNoteJson, out, error);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_GrpcTypedTranscode);

}  // namespace

BENCHMARK_MAIN();
