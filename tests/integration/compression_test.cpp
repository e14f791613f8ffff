// Compressed answers (docs/compression.md) through the real server, with
// the clients users have: curl --compressed over HTTP/1.1 and HTTP/2
// (gzip and brotli by Accept-Encoding, streamed answers, static files'
// precompressed siblings) and gRPC, by grpcio and by hand (gzip messages
// both ways, a decompression bomb). One server for each protocol family.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "edri/v1/edri.pb.h"
#include "grpc/framing.hpp"
#include "http/content_coding.hpp"
#include "http/field_text.hpp"
#include "support/grpc_event.hpp"
#include "support/grpc_scenario.hpp"
#include "support/h2_connection.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;
using edri::http::Coding;

namespace {

struct Fetched {
  std::string head;  // status line and header lines, as curl printed them
  std::string body;  // decoded where curl was given --compressed
  // The value of header `name`, or empty.
  std::string header(std::string_view name) const {
    for (std::size_t at = 0; at < head.size();) {
      const auto end = head.find("\r\n", at);
      const std::string_view line = std::string_view(head).substr(at, end - at);
      const auto colon = line.find(':');
      if (colon != std::string_view::npos && edri::http::iequals(line.substr(0, colon), name))
        return std::string(edri::http::trim_ows(line.substr(colon + 1)));
      if (end == std::string::npos) break;
      at = end + 2;
    }
    return {};
  }
};

// GET (or what `options` ask) of `path` with curl.
Fetched fetch(std::uint16_t port, const std::string& options, const std::string& path) {
  const std::string out =
      output_of("curl -s --max-time 10 -D - " + options + " 'http://127.0.0.1:" + std::to_string(port) + path + "'");
  const auto split = out.find("\r\n\r\n");
  REQUIRE(split != std::string::npos);
  return Fetched{out.substr(0, split), out.substr(split + 4)};
}

const char* const kProtocols[] = {"--http1.1", "--http2-prior-knowledge"};

}  // namespace

TEST_CASE("curl gets gzip and brotli answers by Accept-Encoding over HTTP/1.1 and HTTP/2", "[compression]") {
  TempDir assets;
  const std::string script = "function hello() { return 'hello, world'; }\n// " + std::string(4000, '-') + "\n";
  assets.write("app.js", script);
  assets.write("app.js.gz", edri::http::compress(Coding::Gzip, 9, script));
  assets.write("app.js.br", edri::http::compress(Coding::Brotli, 11, script));
  assets.write("plain.js", script);
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_ASSETS_PATH", assets.path.string()}});
  const auto port = server.port();
  const Fetched identity = fetch(port, "", "/text/20000");
  REQUIRE(identity.body.size() == 20000);
  CHECK(identity.header("content-encoding").empty());
  CHECK(identity.header("vary") == "Accept-Encoding");
  CHECK(identity.header("etag") == "\"t1\"");

  for (const char* protocol : kProtocols) {
    for (const char* coding : {"gzip", "br"}) {
      INFO(protocol << " " << coding);
      const std::string ask = std::string(protocol) + " -H 'Accept-Encoding: " + coding + "'";
      const Fetched decoded = fetch(port, ask + " --compressed", "/text/20000");
      CHECK(decoded.header("content-encoding") == coding);
      CHECK(decoded.header("vary") == "Accept-Encoding");
      CHECK(decoded.header("etag") == "W/\"t1\"");
      CHECK(decoded.body == identity.body);
      const Fetched raw = fetch(port, ask, "/text/20000");
      CHECK(raw.body.size() < identity.body.size() / 4);
      CHECK(raw.header("content-length") == std::to_string(raw.body.size()));
      // HEAD: the head GET would send.
      CHECK(fetch(port, ask + " -I", "/text/20000").header("content-length") == std::to_string(raw.body.size()));

      const Fetched stream = fetch(port, ask + " --compressed", "/text-stream/300000");
      CHECK(stream.header("content-encoding") == coding);
      CHECK(stream.body == fetch(port, "", "/text/300000").body);
    }
    INFO(protocol);
    const std::string p = protocol;
    // The client's weights choose; q=0 refuses.
    CHECK(fetch(port, p + " -H 'Accept-Encoding: br;q=0.5, gzip'", "/text/20000").header("content-encoding") == "gzip");
    CHECK(fetch(port, p + " -H 'Accept-Encoding: gzip;q=0.5, br'", "/text/20000").header("content-encoding") == "br");
    const Fetched refused = fetch(port, p + " -H 'Accept-Encoding: gzip;q=0, br;q=0'", "/text/20000");
    CHECK(refused.header("content-encoding").empty());
    CHECK(refused.body == identity.body);
    // Too small, not a compressible type, or encoded by the handler: as
    // they are.
    const std::string gzip = p + " -H 'Accept-Encoding: gzip'";
    const Fetched small = fetch(port, gzip, "/text/500");
    CHECK(small.header("content-encoding").empty());
    CHECK(small.body.size() == 500);
    const Fetched image = fetch(port, gzip, "/png/20000");
    CHECK(image.header("content-encoding").empty());
    CHECK(image.header("vary").empty());
    CHECK(image.body.size() == 20000);
    const Fetched encoded = fetch(port, gzip, "/text-encoded/20000");
    CHECK(encoded.header("content-encoding") == "x-test");
    CHECK(encoded.body == identity.body);
  }

  SECTION("static files: a precompressed sibling in the coding accepted, never for a Range") {
    const Fetched br = fetch(port, "-H 'Accept-Encoding: br, gzip' --compressed", "/app.js");
    CHECK(br.header("content-encoding") == "br");
    CHECK(br.header("content-type") == "text/javascript; charset=utf-8");
    CHECK(br.header("vary") == "Accept-Encoding");
    CHECK(br.body == script);
    const Fetched gz = fetch(port, "-H 'Accept-Encoding: gzip'", "/app.js");
    CHECK(gz.header("content-encoding") == "gzip");
    CHECK(gz.body == edri::http::compress(Coding::Gzip, 9, script));
    CHECK(gz.header("etag") != br.header("etag"));
    const Fetched none = fetch(port, "", "/app.js");
    CHECK(none.header("content-encoding").empty());
    CHECK(none.header("vary") == "Accept-Encoding");
    CHECK(none.body == script);
    const Fetched range = fetch(port, "-H 'Accept-Encoding: br' -H 'Range: bytes=0-7'", "/app.js");
    CHECK(range.head.rfind("HTTP/1.1 206", 0) == 0);
    CHECK(range.header("content-encoding").empty());
    CHECK(range.body == "function");
    const Fetched h2 = fetch(port, "--http2-prior-knowledge -H 'Accept-Encoding: br' --compressed", "/app.js");
    CHECK(h2.header("content-encoding") == "br");
    CHECK(h2.body == script);
    // No sibling: the file as it is, with no Vary.
    const Fetched plain = fetch(port, "-H 'Accept-Encoding: br'", "/plain.js");
    CHECK(plain.header("content-encoding").empty());
    CHECK(plain.header("vary").empty());
  }
}

TEST_CASE("EDRI_COMPRESSION=0 compresses nothing and offers nothing", "[compression]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_COMPRESSION", "0"}});
  const Fetched f = fetch(server.port(), "-H 'Accept-Encoding: gzip, br'", "/text/20000");
  CHECK(f.header("content-encoding").empty());
  CHECK(f.header("vary").empty());
  CHECK(f.body.size() == 20000);
}

TEST_CASE("gRPC messages gzipped both ways: grpcio, and by hand with a bomb", "[compression][grpc]") {
  ServerProcess server({test_plugin_path("test_app")});
  // grpcio with gzip on its channel: its messages come compressed, and it
  // takes the server's compressed answers.
  const auto out = run_scenario(server.port(), "compression");
  CHECK(out["hello"]["code"] == "OK");
  CHECK(out["hello"]["body"]["hello"] == std::string(3000, 'x'));
  CHECK(out["counted"]["code"] == "OK");
  CHECK(out["counted"]["body"] == std::string(20000, 'c'));

  H2Connection h2(server.port());
  auto call = [&](std::string body, std::vector<std::pair<std::string, std::string>> fields) {
    fields.insert(fields.begin(), {{"content-type", "application/grpc"}, {"te", "trailers"}});
    return h2.client.request("POST", "/edri.v1.Edri/Call", std::move(body), std::move(fields));
  };
  const std::string name(3000, 'y');
  const auto s_gzip = call(event_message("hello", R"({"name":")" + name + "\"}", 1, true),
                           {{"grpc-encoding", "gzip"}, {"grpc-accept-encoding", "identity, gzip"}});
  // 10 MB of spaces in 10 KB: past EDRI_MAX_BODY_SIZE once inflated.
  const auto s_bomb = call(event_message("hello", std::string(10'000'000, ' '), 2, true), {{"grpc-encoding", "gzip"}});
  const auto s_deflate = call(event_message("hello", "{}", 3, true), {{"grpc-encoding", "deflate"}});
  REQUIRE(h2.run_until([&] { return h2.finished(s_gzip) && h2.finished(s_bomb) && h2.finished(s_deflate); }, 10000));
  const auto& answer = h2.client.answers[s_gzip];
  CHECK(answer.field("grpc-status") == "0");
  CHECK(answer.field("grpc-encoding") == "gzip");
  CHECK(answer.field("grpc-accept-encoding") == "identity, gzip");
  REQUIRE(answer.body.size() > edri::grpc::kPrefixBytes);
  CHECK(answer.body[0] == 1);  // the compressed flag
  std::string message;
  REQUIRE(edri::http::gunzip(answer.body.substr(edri::grpc::kPrefixBytes), 1 << 20, message) ==
          edri::http::Inflated::Ok);
  edri::v1::Event ev;
  REQUIRE(ev.ParseFromString(message));
  CHECK(ev.status() == 200);
  CHECK(ev.body().find(name) != std::string::npos);
  CHECK(h2.client.answers[s_bomb].field("grpc-status") == "8");
  CHECK(h2.client.answers[s_deflate].field("grpc-status") == "12");
  CHECK(h2.client.answers[s_deflate].field("grpc-accept-encoding") == "identity, gzip");
}
