// HTTP/2 frames -> requests -> answers: arbitrary bytes after the client
// preface through the server session (fed in two pieces, split where the
// input says). Every request it delivers, and every refusal, is answered at
// once, half of them with a body given in two pieces, so that HPACK,
// flow control, resets and closes run against the answering side too; the
// frames it writes back are drained. Nothing may crash, leak or read out of
// bounds, and a session the input broke must stay broken, not crash later.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "http2/preface.hpp"
#include "http2/server_session.hpp"

namespace {

using namespace edri;

struct Later final : http2::BodySource {
  int calls = 0;
  Read read(std::uint8_t* buf, std::size_t max) override {
    if (++calls == 1) return {};  // nothing yet: deferred, resumed below
    const std::size_t n = max < 7 ? max : 7;
    for (std::size_t i = 0; i < n; ++i) buf[i] = 'x';
    return {n, true};
  }
};

struct Answering final : http2::ServerSession::Handler {
  http2::ServerSession* session = nullptr;
  std::vector<std::int32_t> later;
  void answer(std::int32_t stream, int status) {
    if (stream % 4 == 1) {
      session->respond(stream, status, "text/plain", 5, "X-A: b\r\nConnection: close\r\n", http2::bytes_body("hello"));
    } else {
      later.push_back(stream);
      session->respond(stream, status, {}, -1, {}, std::make_unique<Later>());
    }
  }
  void on_request(std::int32_t stream, http::HttpRequest& req) override {
    answer(stream, req.body.empty() ? 200 : 201);
  }
  void on_refused(std::int32_t stream, int status, std::string_view) override { answer(stream, status); }
  void on_closed(std::int32_t, bool) override {}
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  http2::Limits limits;
  limits.request.max_body_bytes = 4096;
  limits.request.max_header_bytes = 2048;
  limits.request.max_header_count = 16;
  limits.max_concurrent_streams = 16;
  Answering handler;
  http2::ServerSession session(handler, limits);
  handler.session = &session;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::size_t split = size > 1 ? data[0] % input.size() : 0;
  std::string out;
  bool alive = session.receive(http2::kClientPreface, {}) && session.receive(input.substr(0, split), {});
  session.produce(out);
  if (alive) alive = session.receive(input.substr(split), {});
  for (const auto s : handler.later) session.resume(s);
  session.produce(out);
  if (!alive) session.receive("\x00\x00\x00\x04\x00\x00\x00\x00\x00", {});  // refused, not crashed
  (void)session.done();
  return 0;
}
