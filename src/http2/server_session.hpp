// ServerSession: the server side of one HTTP/2 connection, over nghttp2
// (decision 0021). It does no I/O: the connection feeds it what the client
// sent (receive) and writes what it produces (produce), so it runs in the
// listener's own event loop and under a fuzzer alike. Requests come out
// whole, as the same http::HttpRequest an HTTP/1.1 connection parses, so
// what is behind the connection does not know which protocol ran; answers
// go in as a status, header lines and a BodySource.
//
// What a careful server refuses is refused here, with the library's own
// defences where it has them:
//  - more streams at once than max_concurrent_streams: RST_STREAM
//    REFUSED_STREAM (nghttp2);
//  - RST_STREAM faster than a token bucket allows (rapid reset,
//    CVE-2023-44487), more than 8 CONTINUATION frames after a HEADERS
//    (CVE-2024-28182), SETTINGS or PING floods: GOAWAY and the end of the
//    connection (nghttp2);
//  - a header list over max_header_bytes or max_header_count, or a path
//    over max_url_bytes: 431 / 414, the stream only;
//  - a body over max_body_bytes: 413 as soon as it passes, the stream only
//    (what of its DATA is already on the way is read and dropped);
//  - a malformed request (pseudo-headers, content-length against DATA,
//    connection-specific fields: RFC 9113 8.2-8.3): RST_STREAM
//    PROTOCOL_ERROR (nghttp2's HTTP messaging checks);
//  - an error nghttp2 returns without a GOAWAY of its own (a SETTINGS or
//    PING flood, too many CONTINUATIONs): GOAWAY, then the end;
//  - more than Limits::max_resets_per_second resets, the client's or those
//    it makes the server send, or more header bytes decoded in a second
//    than Limits::max_header_bytes_per_second: GOAWAY ENHANCE_YOUR_CALM;
//    a header list past twice max_header_bytes: RST_STREAM at once, the
//    rest of its block decoded for the HPACK table alone;
//  - collected bodies past Limits::body_memory, all sessions of the
//    process together: 503, the stream only; past request.spill_bytes a
//    body goes to the handler's on_spill (a file) instead of memory.
//
// Requests made whole by what one receive() read start once it is all
// read, and so do the body bytes of a streamed request (a gRPC call's
// messages): one the same read reset, or made the server reset, never
// starts.
//
// A stream answered whole while its client is still sending (a refusal, a
// 408, a gRPC call that ended first) is then reset with NO_ERROR, as RFC
// 9113 8.1 provides: the client stops sending what no one will read, and
// keeps the answer. The stream, not the connection, is what ends.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "http/request_parser.hpp"
#include "http2/body_source.hpp"

struct nghttp2_session;

namespace edri::http2 {

struct Limits {
  http::ParserLimits request;  // header bytes and count, URL, body
  std::uint32_t max_concurrent_streams = 128;
  // The window each stream grants the client for its request body, and the
  // connection's (RFC 9113 6.9.2); flow control on answers is the client's.
  std::uint32_t stream_window = 1 << 20;
  std::uint32_t connection_window = 4 << 20;
  // Streams reset in one second, by the client (RST_STREAM) or by the
  // server for what the client did (a bad WINDOW_UPDATE, a refused
  // stream: "MadeYouReset"), past which the connection ends (GOAWAY
  // ENHANCE_YOUR_CALM): each reset stream may have cost work.
  std::size_t max_resets_per_second = 200;
  // Header bytes decoded in one second, over all of a connection's header
  // blocks, past which it ends (GOAWAY ENHANCE_YOUR_CALM): HPACK lets a
  // small block name one large table entry thousands of times. 0: 256 x
  // the request header limit.
  std::size_t max_header_bytes_per_second = 0;
  // Bytes of collected request bodies every session of this process (one
  // listener) may hold together (EDRI_HTTP2_BODY_MEMORY); past it a body
  // is refused 503. 0: no bound but each stream's.
  std::size_t body_memory = 0;
};

class ServerSession {
 public:
  class Handler {
   public:
    virtual ~Handler() = default;
    // A whole request on `stream` (its body within the limits).
    virtual void on_request(std::int32_t stream, http::HttpRequest& req) = 0;
    // The head of a request on `stream` is whole and within the limits.
    // True: its body is not collected but handed to on_body as it comes (a
    // gRPC call), and its window reopens only as consume() says; false:
    // on_request follows with the whole body.
    virtual bool on_head(std::int32_t /*stream*/, http::HttpRequest& /*head*/) { return false; }
    // Bytes of a body on_head took; `end`: the client's side is done.
    virtual void on_body(std::int32_t /*stream*/, std::string_view /*bytes*/, bool /*end*/) {}
    // Bytes of a collected body past request.spill_bytes, to keep out of
    // memory (HttpRequest::spill), as the HTTP/1.1 parser's OnSpill: first
    // what the body held (cleared then), then each new part. False: they
    // could not be kept (500).
    virtual bool on_spill(std::int32_t /*stream*/, http::HttpRequest& /*req*/, std::string_view /*bytes*/) {
      return false;
    }
    // A request the session refused at the edge (`status`: 400 for a bad
    // :authority, 413, 414, 431, 501 for CONNECT or an unknown method):
    // answer it like any other.
    virtual void on_refused(std::int32_t stream, int status, std::string_view reason) = 0;
    // The stream is over: its answer went out whole (`answered`), or it
    // was reset or cut by the connection's end before that. Its
    // BodySource is destroyed after this returns.
    virtual void on_closed(std::int32_t stream, bool answered) = 0;
  };

  ServerSession(Handler& handler, const Limits& limits);
  ~ServerSession();
  ServerSession(const ServerSession&) = delete;
  ServerSession& operator=(const ServerSession&) = delete;

  using Clock = std::chrono::steady_clock;

  // What the client sent, from the preface on, read at `now` (the
  // caller's clock: the session reads none, and a stream's body timeout
  // counts from it). False: read no more (a connection error, an attack
  // shape, or a GOAWAY with every stream done); what produce() still gives
  // (a GOAWAY) goes out, then the socket closes. Some errors only queue a
  // GOAWAY that ends the session once it is sent: done() after produce()
  // says so.
  bool receive(std::string_view bytes, Clock::time_point now);
  // Appends the frames that may go now (flow control permitting) to
  // `out`, stopping once it holds `max` bytes or more.
  void produce(std::string& out, std::size_t max = SIZE_MAX);
  // True when there is something produce() would give now.
  bool wants_write() const;
  // Nothing more to read or write (after a GOAWAY both ways, or once every
  // stream is done after shutdown()): the connection may close.
  bool done() const;

  // Answers `stream`: `status`, then `header_lines` ("Name: value\r\n"...,
  // as an HTTP/1.1 answer would carry them; names are lowercased, and the
  // fields HTTP/2 forbids, Connection, Keep-Alive, Transfer-Encoding,
  // Upgrade and Proxy-Connection, are left out), then the body: `body`
  // (null: none, for HEAD, 204, 304). `content_length` < 0: not known (a
  // streamed body). False when the stream is gone.
  bool respond(std::int32_t stream, int status, std::string_view content_type, std::int64_t content_length,
               std::string_view header_lines, std::unique_ptr<BodySource> body);
  // The body of `stream` has more to give (it had said nothing now).
  void resume(std::int32_t stream);
  // `bytes` of a body handed to on_body were taken: the client may send
  // as many more on that stream.
  void consume(std::int32_t stream, std::size_t bytes);
  // Ends `stream` at once with RST_STREAM `error_code` (RFC 9113 7).
  void reset(std::int32_t stream, std::uint32_t error_code);
  // The server is stopping: a GOAWAY names the last stream taken; those
  // are answered, newer ones refused; done() once they are.
  void shutdown();

  // Streams open now (requests in flight or answers going out).
  std::size_t open_streams() const;
  // A header block is not yet whole: nothing else may come on the
  // connection until it is (RFC 9113 6.10), so its delay is the
  // connection's.
  bool head_owed() const;
  // The streams whose collected body is not yet whole, not answered, and
  // had nothing new since `cutoff`: each stream's own delay, not the
  // connection's, so that a busy stream beside it does not keep a stalled
  // one alive. A body handed to on_body as it comes is its taker's to
  // bound (a gRPC call: its deadline).
  std::vector<std::int32_t> bodies_stalled(Clock::time_point cutoff) const;
  // The client's window for `stream`, or the connection's, is shut: its
  // answer cannot go on until the client sends a WINDOW_UPDATE.
  bool send_window_shut(std::int32_t stream) const;

 private:
  // Counts what happens within a second; past `limit`, true.
  struct PerSecond {
    Clock::time_point start{};
    std::size_t count = 0;
    bool add(Clock::time_point now, std::size_t n, std::size_t limit);
  };
  struct Stream {
    http::HttpRequest req;
    std::size_t header_bytes = 0;
    int refusal = 0;  // a status the stream was refused with at the edge, or 0
    const char* refusal_reason = "";
    bool refusal_told = false;
    std::string authority;
    std::string cookie;  // RFC 9113 8.2.3: crumbs joined with "; "
    std::unique_ptr<BodySource> body;
    bool responded = false;
    bool streamed = false;           // on_head took its body
    bool head_done = false;          // its header block is whole
    bool request_done = false;       // the client's side ended
    Clock::time_point last_input{};  // its head or its body's last bytes
    std::size_t held = 0;            // its body's bytes counted in the process's total
    bool doomed = false;             // a frame on it was invalid: nghttp2 resets it
    // Ready for the next stream, its buffers kept (a body's only while
    // small).
    void reset();
  };
  using Streams = std::unordered_map<std::int32_t, Stream>;
  // Closed streams' nodes kept for the next ones, as an HTTP/1.1
  // connection keeps its one request: each request then reuses a node,
  // its header vector and strings instead of allocating them. A few only:
  // most clients send one request at a time per connection or a handful.
  static constexpr std::size_t kSpareStreams = 4;
  friend struct Callbacks;

  Stream* find(std::int32_t id);
  // The fields nghttp2 takes for header lines ("Name: value\r\n"...), after
  // what scratch_ holds.
  void add_fields(std::string_view header_lines);
  // A stream's head is whole: :authority for Host, cookie crumbs joined.
  void complete_head(Stream& s);
  int submit_trailer(std::int32_t id, std::string_view lines);
  void refuse(Stream& s, int status, const char* reason);
  void tell_refusal(std::int32_t id, Stream& s);
  void on_begin(std::int32_t id);
  void on_head_end(std::int32_t id);
  int on_header(std::int32_t id, std::string_view name, std::string_view value);
  int on_data(std::int32_t id, std::string_view bytes);
  // `bytes` of `id`'s collected body: kept (in memory or its file), or
  // the stream refused (413, 500, 503).
  void collect(std::int32_t id, Stream& s, std::string_view bytes);
  void on_request_end(std::int32_t id);
  // Requests made whole by what receive() read, and streamed bodies'
  // bytes, go on once it is all read: nothing of a stream the same read
  // reset starts.
  void dispatch_ready();
  // nghttp2 failed the connection (`error`) without a GOAWAY: queue one.
  void fail(long error);
  // The connection ends: GOAWAY ENHANCE_YOUR_CALM.
  void calm_down();
  // A stream was reset; false once too many were within a second.
  bool count_reset();
  // `bytes` of header fields decoded; false once too many this second.
  bool count_header_bytes(std::size_t bytes);
  // Counts `n` more bytes of `s`'s body in the process's total; false
  // past Limits::body_memory.
  bool hold_body(Stream& s, std::size_t n);
  // `bytes` of `id`'s body go to its file; false when they cannot.
  bool spill(std::int32_t id, Stream& s, std::string_view bytes);
  void release_body(Stream& s);
  // A frame that ends `id`'s answer went out.
  void on_answer_end(std::int32_t id);
  // `clean`: closed with NO_ERROR.
  void on_stream_close(std::int32_t id, bool clean);

  Handler& handler_;
  Limits limits_;
  nghttp2_session* session_ = nullptr;
  Streams streams_;
  std::vector<Streams::node_type> spare_;
  Clock::time_point now_{};  // when what receive() reads arrived
  // What receive() read, for dispatch_ready(), in the order it came: a
  // whole request (`bytes` unused), or a streamed body's bytes (a span of
  // ready_bytes_) and whether the client's side ended with them.
  struct Ready {
    std::int32_t id;
    enum class What : std::uint8_t { Request, Body, BodyEnd } what;
    std::size_t offset = 0;
    std::size_t size = 0;
  };
  std::vector<Ready> ready_;
  std::string ready_bytes_;
  PerSecond resets_;
  PerSecond header_bytes_;
  std::int32_t last_id_ = 0;  // find()'s last answer
  Stream* last_ = nullptr;
  struct Scratch;  // respond()'s, kept across answers
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace edri::http2
