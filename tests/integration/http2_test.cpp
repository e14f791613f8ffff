// HTTP/2 on the HTTP port (decision 0021): a connection that opens with the
// preface speaks HTTP/2, under TLS where ALPN chose h2; REST routes, the
// built-ins, streamed answers, files and refusals work as over HTTP/1.1;
// streams are answered in any order; the attack shapes end only the
// connection that made them; SIGTERM sends GOAWAY and answers what was
// taken. Clients: curl (as users would) and nghttp2's own client over a
// socket (for frames curl never sends).
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "support/grpc_scenario.hpp"
#include "support/h2_connection.hpp"
#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"
#include "support/tls_client.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {

std::string url(std::uint16_t port, const std::string& path, const char* scheme = "http") {
  return std::string(scheme) + "://127.0.0.1:" + std::to_string(port) + path;
}

}  // namespace

TEST_CASE("HTTP/2 with prior knowledge: routes, built-ins, refusals, and HTTP/1.1 on the same port", "[http2]") {
  ServerProcess server({test_plugin_path("test_app")});
  const auto port = server.port();
  // -w: the protocol curl spoke and the status, after the body.
  const std::string curl = "curl -s --max-time 10 --http2-prior-knowledge -w '\\n%{http_version} %{http_code}' ";
  CHECK(output_of(curl + url(port, "/hello/h2")) == "{\"domain\":\"test\",\"hello\":\"h2\"}\n2 200");
  CHECK(output_of(curl + "-X POST -H 'Content-Type: application/json' -d '{\"a\":[1,2]}' " + url(port, "/echo")) ==
        "{\"a\":[1,2]}\n2 200");
  const auto missing = output_of(curl + url(port, "/nope"));
  CHECK(missing.find("\"status\":404") != std::string::npos);
  CHECK(missing.substr(missing.size() - 5) == "2 404");
  CHECK(output_of(curl + url(port, "/health")).find("\n2 200") != std::string::npos);
  // HEAD: the length of what GET would send, no body.
  const auto head = output_of("curl -s --max-time 10 --http2-prior-knowledge -I " + url(port, "/bytes/1234"));
  CHECK(head.find("HTTP/2 200") == 0);
  CHECK(head.find("content-length: 1234") != std::string::npos);
  CHECK(head.find("server: edri") != std::string::npos);
  CHECK(head.find("date: ") != std::string::npos);
  // A large answer, across many DATA frames and window updates.
  CHECK(output_of(curl + "-o /dev/null " + url(port, "/bytes/3000000")) == "\n2 200");
  // HTTP/1.1 on the same port, as before.
  CHECK(http_get(port, "/hello/one").status == 200);
}

TEST_CASE("HTTP/2: many streams on one connection are answered as each is ready", "[http2]") {
  ServerProcess server({test_plugin_path("test_app")});
  H2Connection h2(server.port());
  // A stream that sends one piece and then stalls, first: over HTTP/1.1
  // everything pipelined behind it would wait for ever.
  const auto stalled = h2.client.request("GET", "/stream-stall");
  std::vector<std::int32_t> quick;
  for (int i = 0; i < 20; ++i) quick.push_back(h2.client.request("GET", "/items/" + std::to_string(i)));
  REQUIRE(h2.run_until([&] {
    for (const auto id : quick)
      if (!h2.finished(id)) return false;
    return h2.client.answers[stalled].body == "first piece";
  }));
  CHECK_FALSE(h2.finished(stalled));
  for (std::size_t i = 0; i < quick.size(); ++i) {
    const auto& a = h2.client.answers[quick[i]];
    CHECK(a.status == 200);
    CHECK(json::parse(a.body)["id"] == i);
  }
  // The client gives up on it: its producer is stopped, the connection goes on.
  h2.client.reset(stalled);
  const auto after = h2.client.request("GET", "/hello/after");
  REQUIRE(h2.run_until([&] { return h2.finished(after); }));
  CHECK(h2.client.answers[after].status == 200);
}

TEST_CASE("HTTP/2: streamed answers and files go out as the window allows", "[http2]") {
  TempDir dir;
  std::string big(1500000, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 23);
  std::ofstream(dir.path / "big.bin", std::ios::binary) << big;
  ServerProcess server({test_plugin_path("test_app")}, {{"TEST_APP_FILES", dir.path.string()}});
  H2Connection h2(server.port());
  const auto file = h2.client.request("GET", "/file/big.bin");
  const auto range = h2.client.request("GET", "/file/big.bin", {}, {{"range", "bytes=10-19"}});
  const auto chunked = h2.client.request("GET", "/stream/50000/1000");
  const auto sized = h2.client.request("GET", "/stream-length/300000");
  const auto cut = h2.client.request("GET", "/stream-short/1000");
  REQUIRE(h2.run_until([&] {
    return h2.finished(chunked) && h2.finished(sized) && h2.finished(cut) && h2.finished(file) && h2.finished(range);
  }));
  CHECK(h2.client.answers[file].status == 200);
  CHECK(h2.client.answers[file].body == big);
  CHECK(h2.client.answers[range].status == 206);
  CHECK(h2.client.answers[range].body == big.substr(10, 10));
  CHECK(h2.client.answers[chunked].status == 200);
  CHECK(h2.client.answers[chunked].body.size() == 50000);
  CHECK(h2.client.answers[chunked].field("x-streamed") == "yes");
  CHECK(h2.client.answers[chunked].error_code == 0);
  CHECK(h2.client.answers[sized].body.size() == 300000);
  CHECK(h2.client.answers[sized].field("content-length") == "300000");
  // A stream that ends short of its length is cut: the client sees a reset.
  CHECK(h2.client.answers[cut].error_code != 0);
  // A stream the client resets mid-way stops its producer.
  const auto endless = h2.client.request("GET", "/stream/1000000000/1000");
  REQUIRE(h2.run_until([&] { return h2.client.answers[endless].body.size() > 100000; }));
  h2.client.reset(endless);
  h2.run_until([] { return false; }, 300);
  auto pieces = [&] { return json::parse(http_get(server.port(), "/stream-pieces").body)["pieces"].get<long>(); };
  const long after_reset = pieces();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(pieces() == after_reset);
  // The connection goes on.
  const auto after = h2.client.request("GET", "/hello/after");
  REQUIRE(h2.run_until([&] { return h2.finished(after); }));
  CHECK(h2.client.answers[after].status == 200);
}

TEST_CASE("HTTP/2 over TLS: ALPN h2 selects it, http/1.1 stays HTTP/1.1", "[http2][tls]") {
  SelfSignedCertificate cert;
  ServerProcess server({test_plugin_path("test_app")},
                       {{"EDRI_SSL_CERTIFICATE", cert.certificate}, {"EDRI_SSL_KEY", cert.key}});
  const std::string curl = "curl -s -k --max-time 10 -w '\\n%{http_version} %{http_code}' ";
  CHECK(output_of(curl + "--http2 " + url(server.port(), "/hello/tls", "https")) ==
        "{\"domain\":\"test\",\"hello\":\"tls\"}\n2 200");
  CHECK(output_of(curl + "--http1.1 " + url(server.port(), "/hello/tls", "https")) ==
        "{\"domain\":\"test\",\"hello\":\"tls\"}\n1.1 200");
  TlsClient plain(server.port());  // no ALPN at all
  CHECK(plain.request("GET", "/hello/x").status == 200);
}

TEST_CASE("HTTP/2: streams past EDRI_MAX_PIPELINE at once are refused, the rest answered", "[http2][hostile]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_MAX_PIPELINE", "8"}});
  H2Connection h2(server.port(), 1000);  // it opens them before it hears the limit
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 12; ++i) ids.push_back(h2.client.request("GET", "/sleep/200"));
  REQUIRE(h2.run_until([&] {
    for (const auto id : ids)
      if (!h2.finished(id)) return false;
    return true;
  }));
  int answered = 0, refused = 0;
  for (const auto id : ids) {
    const auto& a = h2.client.answers[id];
    if (a.status == 200) ++answered;
    if (a.error_code == NGHTTP2_REFUSED_STREAM) ++refused;
  }
  CHECK(answered == 8);
  CHECK(refused == 4);
}

TEST_CASE("HTTP/2 hostile shapes end their stream or their connection, never the server", "[http2][hostile]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_WRITE_TIMEOUT", "1"}});
  const auto port = server.port();
  SECTION("an oversize header list is answered 431; the connection serves on") {
    H2Connection h2(port);
    const auto big = h2.client.request("GET", "/hello/x", {}, {{"x-big", std::string(20000, 'h')}});
    const auto next = h2.client.request("GET", "/hello/y");
    REQUIRE(h2.run_until([&] { return h2.finished(big) && h2.finished(next); }));
    CHECK(h2.client.answers[big].status == 431);
    CHECK(h2.client.answers[next].status == 200);
  }
  SECTION("rapid reset: a GOAWAY, and other clients are served meanwhile") {
    H2Connection h2(port, 100000);
    for (int round = 0; round < 40 && !h2.client.goaway && !h2.closed(); ++round) {
      std::vector<std::int32_t> ids;
      for (int i = 0; i < 100; ++i) ids.push_back(h2.client.request("GET", "/hello/r"));
      h2.run_until([] { return false; }, 1);
      for (const auto id : ids) h2.client.reset(id);
      h2.run_until([] { return false; }, 1);
    }
    h2.run_until([&] { return h2.client.goaway; }, 2000);
    CHECK((h2.client.goaway || h2.closed()));
    CHECK(http_get(port, "/hello/other").status == 200);
  }
  SECTION("a window that never opens: the head, never the body, others served; closed at EDRI_WRITE_TIMEOUT") {
    H2Connection h2(port);
    h2.client.set_initial_window(0);  // no DATA may come until a WINDOW_UPDATE that never comes
    const auto held = h2.client.request("GET", "/bytes/200000");
    h2.run_until([&] { return h2.client.answers[held].status != 0; });
    h2.run_until([] { return false; }, 500);
    CHECK(h2.client.answers[held].status == 200);
    CHECK(h2.client.answers[held].body.empty());
    CHECK(http_get(port, "/hello/meanwhile").status == 200);
    h2.run_until([] { return false; }, 4000);
    CHECK(h2.closed());
  }
  CHECK(server.child("listener") > 0);
  CHECK(http_get(port, "/hello/still").status == 200);
}

TEST_CASE("HTTP/2: a request that stops arriving times out, and an open stream is not idleness", "[http2][hostile]") {
  ServerProcess server({test_plugin_path("test_app")},
                       {{"EDRI_HEADER_TIMEOUT", "1"}, {"EDRI_BODY_TIMEOUT", "1"}, {"EDRI_KEEPALIVE_TIMEOUT", "1"}});
  const auto port = server.port();
  SECTION("a body that stops arriving: 408 and RST_STREAM NO_ERROR on its stream, though others stay busy") {
    H2Connection h2(port);
    const auto stalled =
        h2.client.request_left_open("POST", "/echo", "{\"a\":", {{"content-type", "application/json"}});
    REQUIRE(h2.run_until([&] { return h2.client.body_sent(stalled) > 0; }));
    // Requests beside it every 200 ms: the connection never idles, the
    // stalled stream still times out on its own clock.
    const auto started = std::chrono::steady_clock::now();
    int served = 0;
    while (!h2.finished(stalled) && std::chrono::steady_clock::now() - started < std::chrono::seconds(5)) {
      const auto busy = h2.client.request("GET", "/hello/busy");
      REQUIRE(h2.run_until([&] { return h2.finished(busy); }));
      served += h2.client.answers[busy].status == 200;
      h2.run_until([&] { return h2.finished(stalled); }, 200);
    }
    const auto waited = std::chrono::steady_clock::now() - started;
    REQUIRE(h2.finished(stalled));
    CHECK(waited > std::chrono::milliseconds(800));  // not before EDRI_BODY_TIMEOUT
    CHECK(h2.client.answers[stalled].status == 408);
    CHECK(h2.client.answers[stalled].error_code == NGHTTP2_NO_ERROR);
    CHECK(served >= 4);
    CHECK_FALSE(h2.client.goaway);
    const auto after = h2.client.request("GET", "/hello/after");
    REQUIRE(h2.run_until([&] { return h2.finished(after); }));
    CHECK(h2.client.answers[after].status == 200);
  }
  SECTION("a header block never finished: closed at EDRI_HEADER_TIMEOUT") {
    H2Connection h2(port);
    REQUIRE(h2.run_until([&] { return h2.bytes_in > 0; }));
    h2.run_until([] { return false; }, 300);  // the SETTINGS exchange settles: nothing may follow the HEADERS
    // HEADERS on stream 1 without END_HEADERS: its CONTINUATION never comes.
    const std::string headers("\x00\x00\x01\x01\x00\x00\x00\x00\x01\x82", 10);
    REQUIRE(h2.send_raw(headers));
    CHECK_FALSE(h2.run_until([&] { return h2.closed(); }, 600));
    CHECK(h2.run_until([&] { return h2.closed(); }, 4000));
  }
  SECTION("a gRPC call answered whole while its client still sends: RST_STREAM NO_ERROR, the connection serves on") {
    H2Connection h2(port);
    const auto call = h2.client.request_left_open("POST", "/edri.v1.Edri/Nope", {},
                                                  {{"content-type", "application/grpc"}, {"te", "trailers"}});
    REQUIRE(h2.run_until([&] { return h2.finished(call); }));
    CHECK(h2.client.answers[call].field("grpc-status") == "12");  // UNIMPLEMENTED, kept
    CHECK(h2.client.answers[call].error_code == NGHTTP2_NO_ERROR);
    const auto next = h2.client.request("GET", "/hello/next");
    REQUIRE(h2.run_until([&] { return h2.finished(next); }));
    CHECK(h2.client.answers[next].status == 200);
    CHECK_FALSE(h2.client.goaway);
  }
  SECTION("a Connect call that waits for pushes outlives EDRI_KEEPALIVE_TIMEOUT; its connection serves on") {
    H2Connection h2(port);
    const auto connect = h2.client.request_left_open("POST", "/edri.v1.Edri/Connect", {},
                                                     {{"content-type", "application/grpc"}, {"te", "trailers"}});
    CHECK_FALSE(h2.run_until([&] { return h2.closed(); }, 2500));
    const auto next = h2.client.request("GET", "/hello/later");
    REQUIRE(h2.run_until([&] { return h2.finished(next); }));
    CHECK(h2.client.answers[next].status == 200);
    CHECK_FALSE(h2.finished(connect));
  }
  SECTION("with no stream open, EDRI_KEEPALIVE_TIMEOUT closes it") {
    H2Connection h2(port);
    const auto one = h2.client.request("GET", "/hello/once");
    REQUIRE(h2.run_until([&] { return h2.finished(one); }));
    CHECK(h2.run_until([&] { return h2.closed(); }, 4000));
  }
  CHECK(http_get(port, "/hello/still").status == 200);
}

TEST_CASE("HTTP/2: SIGTERM sends GOAWAY, and the streams taken are answered", "[http2][shutdown]") {
  ServerProcess server({test_plugin_path("test_app")});
  H2Connection h2(server.port());
  const auto inflight = h2.client.request("GET", "/sleep/800");
  REQUIRE(h2.run_until([&] { return h2.bytes_in > 0; }));  // the server's SETTINGS: the request went
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // One SIGTERM, and the wait for the exit beside it: a second SIGTERM
  // (a kill here, then stop()'s own) would race the graceful stop.
  auto exit_status = std::async(std::launch::async, [&] { return server.stop(20000); });
  REQUIRE(h2.run_until([&] { return h2.finished(inflight); }, 10000));
  CHECK(h2.client.goaway);
  CHECK(h2.client.goaway_error == 0);
  CHECK(h2.client.answers[inflight].status == 200);
  CHECK(exit_status.get() == 0);
}

TEST_CASE("HTTP/2: Server-Sent Events on a stream of their own, beside the connection's other streams", "[http2]") {
  ServerProcess server({plugin_path("bench_app")});
  const auto port = server.port();
  auto publish = [&](const std::string& patch) {
    HttpClient c(port);
    return c.request("POST", "/stream/doc", patch, "Content-Type: application/json\r\n").status;
  };
  REQUIRE(publish(R"({"title":"a"})") == 200);
  H2Connection h2(port);
  const auto events = h2.client.request("GET", "/sse/doc", {}, {{"accept", "text/event-stream"}});
  auto body = [&](std::int32_t s) -> const std::string& { return h2.client.answers[s].body; };
  REQUIRE(h2.run_until([&] { return body(events).find("\n\n") != std::string::npos; }));
  CHECK(h2.client.answers[events].status == 200);
  CHECK(h2.client.answers[events].field("content-type") == "text/event-stream");
  CHECK(body(events).rfind("id: 1\nevent: snapshot\ndata: {\"stream\":\"doc\",\"revision\":1,", 0) == 0);
  // The connection's other streams are answered while it stays open.
  const auto noop = h2.client.request("GET", "/noop");
  REQUIRE(h2.run_until([&] { return h2.finished(noop); }));
  CHECK(h2.client.answers[noop].status == 200);
  // A patch arrives as its event.
  REQUIRE(publish(R"({"n":1})") == 200);
  REQUIRE(h2.run_until([&] { return body(events).find("event: patch") != std::string::npos; }));
  CHECK(body(events).find(
            "id: 2\nevent: patch\ndata: {\"stream\":\"doc\",\"from\":1,\"revision\":2,\"patch\":{\"n\":1}") !=
        std::string::npos);
  CHECK_FALSE(h2.finished(events));
  // Reset by the client, the stream ends its subscription; a second one on
  // the same connection follows on, and SIGTERM ends it cleanly.
  h2.client.reset(events);
  const auto second = h2.client.request("GET", "/sse/doc", {}, {{"last-event-id", "2"}});
  REQUIRE(publish(R"({"n":2})") == 200);
  REQUIRE(h2.run_until([&] { return body(second).find("id: 3\nevent: patch") != std::string::npos; }));
  CHECK(body(second).find("event: snapshot") == std::string::npos);  // resumed from 2
  std::future<int> stopped = std::async(std::launch::async, [&] { return server.stop(); });
  REQUIRE(h2.run_until([&] { return h2.finished(second); }, 10000));
  CHECK(h2.client.answers[second].error_code == 0);
  CHECK(stopped.get() == 0);
}
