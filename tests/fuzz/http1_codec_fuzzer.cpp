// The HTTP/1.1 codec: arbitrary bytes through Http1Reader (fed in two
// pieces the input sizes; a request may pause reading, whose held input is
// resumed later; an upgrade is declined), each request it delivers given
// a slot in Http1Answers and answered in an order the input chooses
// (early, late, streamed in pieces, cut short), written out through the
// OutputQueue. The answers must leave in request order, each once; no
// request may be delivered after the one that closed the connection;
// nothing may crash, leak or read out of bounds.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "http/http1_reader.hpp"
#include "listener/client_socket.hpp"
#include "listener/http1_answers.hpp"

namespace {

using namespace edri;
using namespace edri::listener;

void require(bool ok) {
  if (!ok) __builtin_trap();
}

struct Events final : Http1Answers::Events {
  bool closing = false;
  void output_ready() override {}
  void last_answer_queued() override { closing = true; }
  void stream_cancel(const StreamRef&) override {}
};

// The choices the input makes, one byte at a time (0 once it is spent).
struct Script {
  const std::uint8_t* data;
  std::size_t size;
  std::uint8_t next() {
    if (size == 0) return 0;
    --size;
    return *data++;
  }
};

struct Codec {
  OutputQueue out;
  Events events;
  Http1Answers answers{out, events};
  std::vector<std::uint32_t> open;  // slots not answered yet, in order
  std::vector<std::uint32_t> streaming;

  void respond(std::uint32_t seq, std::uint8_t how) {
    const std::string body = "<" + std::to_string(seq) + ">";
    http::ResponseHead h{200 + how % 3, "text/plain", body.size(), (how & 0x40) == 0};
    if (how & 0x80) {
      h.framing = http::ResponseHead::Framing::Chunked;
      if (answers.open_stream(seq, h, {}, StreamRef{0, seq, false})) {
        (void)answers.stream_piece(seq, body, {}, false, false);
        streaming.push_back(seq);
      }
      return;
    }
    answers.respond(seq, h, "X-A: 1\r\n", std::string_view(body));
  }
  // Answers one open slot, or moves one stream on, as `how` says.
  void act(std::uint8_t how) {
    if (!streaming.empty() && (how & 1)) {
      const auto seq = streaming.front();
      const bool end = how & 2, abort = (how & 6) == 6;
      (void)answers.stream_piece(seq, ".", {}, end, abort);
      if (end || abort) streaming.erase(streaming.begin());
      return;
    }
    if (open.empty()) return;
    const std::size_t at = how % open.size();
    const auto seq = open[at];
    open.erase(open.begin() + static_cast<std::ptrdiff_t>(at));
    respond(seq, how);
  }
  void finish() {
    for (const auto seq : open) respond(seq, 0);
    for (const auto seq : streaming) (void)answers.stream_piece(seq, ".", {}, true, false);
  }
};

// The markers <n> in what was written, in order.
std::vector<std::uint32_t> markers(const std::string& wire) {
  std::vector<std::uint32_t> found;
  for (std::size_t at = wire.find('<'); at != std::string::npos; at = wire.find('<', at + 1)) {
    const auto end = wire.find('>', at);
    if (end == std::string::npos) break;
    found.push_back(static_cast<std::uint32_t>(std::stoul(wire.substr(at + 1, end - at - 1))));
  }
  return found;
}

std::string drain(OutputQueue& out) {
  int fds[2];
  require(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) == 0);
  ClientSocket socket(UniqueFd(fds[0]), nullptr);
  UniqueFd client(fds[1]);
  std::string wire;
  char buf[65536];
  for (;;) {
    bool progress = false;
    const auto w = out.write(socket, progress, [](const StreamRef&, std::uint32_t) {});
    for (ssize_t n; (n = ::recv(client.get(), buf, sizeof buf, MSG_DONTWAIT)) > 0;)
      wire.append(buf, static_cast<std::size_t>(n));
    if (w != OutputQueue::Written::Blocked) return wire;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t script_bytes = data[0] % 32;
  if (size < 1 + script_bytes) return 0;
  Script script{data + 1, script_bytes};
  const char* input = reinterpret_cast<const char*>(data + 1 + script_bytes);
  const std::size_t input_size = size - 1 - script_bytes;

  Codec codec;
  http::ParserLimits limits;
  limits.max_body_bytes = 4096;
  http::Http1Reader reader(limits,
                           [&](http::HttpRequest&) {
                             require(!reader.stopped());  // nothing is read after the last request
                             SlotInfo info;
                             codec.open.push_back(codec.answers.open(std::move(info)));
                             const auto how = script.next();
                             codec.act(how);
                             if (codec.events.closing)
                               reader.stop();
                             else if (how & 0x20)
                               reader.pause();
                           },
                           {}, {});
  using Kind = http::Http1Reader::Outcome::Kind;
  const auto now = http::Http1Reader::Clock::time_point{};
  // Feeds `bytes` as a connection would: held input resumed once answers
  // were given, an upgrade declined (the rest is the next request).
  const auto feed = [&](std::string_view bytes) {
    auto out = reader.feed(bytes, now);
    for (std::size_t turn = 0; turn <= input_size; ++turn) {
      if (out.kind == Kind::Held) {
        codec.act(script.next());
        out = reader.resume(now);
      } else if (out.kind == Kind::Upgrade) {
        reader.decline_upgrade();
        out = reader.feed(out.rest, now);
      } else {
        break;
      }
    }
    if (out.kind == Kind::Refused) require(reader.stopped() && out.status >= 400);
    return out.kind;
  };
  const std::size_t split = script.next() % (input_size + 1);
  const auto first = feed({input, split});
  if (first != Kind::Refused && first != Kind::Ended) (void)feed({input + split, input_size - split});
  for (int i = 0; i < 8; ++i) codec.act(script.next());
  codec.finish();

  const auto seen = markers(drain(codec.out));
  for (std::size_t i = 1; i < seen.size(); ++i) require(seen[i] > seen[i - 1]);  // in order, each once
  if (!codec.events.closing) require(codec.answers.empty());
  return 0;
}
