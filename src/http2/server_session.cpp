#include "http2/server_session.hpp"

#include <nghttp2/nghttp2.h>

#include "http/field_text.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <vector>

namespace edri::http2 {
namespace {

// What every session of this process holds of collected bodies: one
// listener's, since each listener is a process of its own.
std::size_t g_bodies_held = 0;

// The method a request names, as llhttp's enumeration (what HttpRequest
// carries); nullopt for one it does not know.
std::optional<llhttp_method_t> method_of(std::string_view name) {
#define EDRI_METHOD(num, id, text) \
  if (name == #text) return static_cast<llhttp_method_t>(num);
  HTTP_METHOD_MAP(EDRI_METHOD)
#undef EDRI_METHOD
  return std::nullopt;
}

// RFC 9113 8.2.2: fields that name a connection's hops have no place in
// HTTP/2; an HTTP/1.1 answer's header lines may hold them.
bool connection_specific(std::string_view name) {
  for (std::string_view f : {"connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection"})
    if (http::iequals(name, f)) return true;
  return false;
}

nghttp2_nv field(std::string_view name, std::string_view value) {
  return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

}  // namespace

// The fields of an answer as nghttp2 takes them, and the text they point
// into (numbers, lowercased names): nghttp2 copies both on submit.
struct ServerSession::Scratch {
  std::vector<nghttp2_nv> nv;
  std::string text;
};

// The C callbacks, each a line that hands over to the session.
struct Callbacks {
  static ServerSession& of(void* user) { return *static_cast<ServerSession*>(user); }

  static int begin_headers(nghttp2_session*, const nghttp2_frame* f, void* user) {
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) of(user).on_begin(f->hd.stream_id);
    return 0;
  }
  static int header(nghttp2_session*, const nghttp2_frame* f, const std::uint8_t* name, std::size_t namelen,
                    const std::uint8_t* value, std::size_t valuelen, std::uint8_t, void* user) {
    // Trailers too: decoding them costs the same.
    if (!of(user).count_header_bytes(namelen + valuelen)) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;  // trailers: dropped
    return of(user).on_header(f->hd.stream_id, {reinterpret_cast<const char*>(name), namelen},
                              {reinterpret_cast<const char*>(value), valuelen});
  }
  static int data_chunk(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data, std::size_t len,
                        void* user) {
    return of(user).on_data(id, {reinterpret_cast<const char*>(data), len});
  }
  static int frame_recv(nghttp2_session*, const nghttp2_frame* f, void* user) {
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) of(user).on_head_end(f->hd.stream_id);
    const bool request_side = f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA;
    if (request_side && (f->hd.flags & NGHTTP2_FLAG_END_STREAM)) of(user).on_request_end(f->hd.stream_id);
    if (f->hd.type == NGHTTP2_RST_STREAM) of(user).count_reset();
    return 0;
  }
  static int frame_send(nghttp2_session*, const nghttp2_frame* f, void* user) {
    const bool answer_side = f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA;
    if (answer_side && (f->hd.flags & NGHTTP2_FLAG_END_STREAM)) of(user).on_answer_end(f->hd.stream_id);
    // A reset the client made the server send (a bad WINDOW_UPDATE, a
    // refused stream) costs as one it sent itself.
    if (f->hd.type == NGHTTP2_RST_STREAM && f->rst_stream.error_code != NGHTTP2_NO_ERROR) of(user).count_reset();
    return 0;
  }
  static int invalid_frame(nghttp2_session*, const nghttp2_frame* f, int, void* user) {
    // A stream error (a window past 2^31 - 1...): its RST_STREAM is queued,
    // and the stream lasts until it is sent; its request must not start.
    if (auto* s = of(user).find(f->hd.stream_id)) s->doomed = true;
    return 0;
  }
  static int frame_not_send(nghttp2_session* session, const nghttp2_frame* f, int error, void*) {
    // An answer's head or trailers nghttp2 could not pack (past the header
    // block it sends, 64 KiB): the stream would wait for ever. (Not one
    // whose stream is closed already.)
    const bool unpacked = error == NGHTTP2_ERR_FRAME_SIZE_ERROR || error == NGHTTP2_ERR_HEADER_COMP;
    if (f->hd.type == NGHTTP2_HEADERS && unpacked)
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_INTERNAL_ERROR);
    return 0;
  }
  static int stream_close(nghttp2_session*, std::int32_t id, std::uint32_t error_code, void* user) {
    of(user).on_stream_close(id, error_code == NGHTTP2_NO_ERROR);
    return 0;
  }
  static ssize_t read_body(nghttp2_session*, std::int32_t id, std::uint8_t* buf, std::size_t len, std::uint32_t* flags,
                           nghttp2_data_source*, void* user) {
    auto* st = of(user).find(id);
    if (!st || !st->body) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // resets the stream
    const auto r = st->body->read(buf, len);
    if (r.failed) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // RST_STREAM INTERNAL_ERROR
    if (r.end) *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (r.end && r.trailers) {
      // The stream ends with the trailers' HEADERS, not this DATA.
      *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      if (of(user).submit_trailer(id, st->body->trailer_lines()) != 0) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    if (r.bytes == 0 && !r.end) return NGHTTP2_ERR_DEFERRED;
    return static_cast<ssize_t>(r.bytes);
  }
};

ServerSession::ServerSession(Handler& handler, const Limits& limits)
    : handler_(handler), limits_(limits), scratch_(std::make_unique<Scratch>()) {
  nghttp2_session_callbacks* cb = nullptr;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, &Callbacks::begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, &Callbacks::header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, &Callbacks::data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &Callbacks::frame_recv);
  nghttp2_session_callbacks_set_on_frame_send_callback(cb, &Callbacks::frame_send);
  nghttp2_session_callbacks_set_on_frame_not_send_callback(cb, &Callbacks::frame_not_send);
  nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cb, &Callbacks::invalid_frame);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, &Callbacks::stream_close);
  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  // Windows are reopened by consume(): a collected body's bytes at once, a
  // streamed one's as its reader takes them, so that a client streaming
  // faster than its messages are served waits (flow control) instead of
  // filling memory. The connection's window reopens as bytes arrive: what
  // holds a connection back is the output bound and each stream's window.
  nghttp2_option_set_no_auto_window_update(opt, 1);
  // No server push: nothing here would use it, and RFC 9113 lets a server
  // keep it off.
  nghttp2_session_server_new2(&session_, cb, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
  // RFC 9218 2.1: no RFC 7540 priority tree (RFC 9113 5.3 deprecates it).
  // nghttp2 then keeps no tree and no closed streams for it, work it did
  // on every stream; RFC 9218's priority field orders answers instead.
  const std::array<nghttp2_settings_entry, 4> settings{{
      {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limits_.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, limits_.stream_window},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<std::uint32_t>(limits_.request.max_header_bytes)},
  }};
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                        static_cast<std::int32_t>(limits_.connection_window));
}

ServerSession::~ServerSession() {
  for (auto& [id, s] : streams_) release_body(s);
  nghttp2_session_del(session_);
}

bool ServerSession::hold_body(Stream& s, std::size_t n) {
  if (limits_.body_memory != 0 && g_bodies_held + n > limits_.body_memory) return false;
  g_bodies_held += n;
  s.held += n;
  return true;
}

bool ServerSession::spill(std::int32_t id, Stream& s, std::string_view bytes) {
  auto& req = s.req;
  if (!req.spill && !req.body.empty()) {
    if (!handler_.on_spill(id, req, req.body)) return false;
    req.body.clear();
    release_body(s);
  }
  if (!handler_.on_spill(id, req, bytes)) return false;
  req.body_size += bytes.size();
  return true;
}

void ServerSession::release_body(Stream& s) {
  g_bodies_held -= s.held;
  s.held = 0;
}

bool ServerSession::receive(std::string_view bytes, Clock::time_point now) {
  now_ = now;
  const auto n = nghttp2_session_mem_recv(session_, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  if (n < 0) fail(n);
  dispatch_ready();
  // Some errors (a bad first frame, rapid reset) queue a GOAWAY that ends
  // the session once sent, and return success: want_read says so.
  return n >= 0 && nghttp2_session_want_read(session_) != 0;
}

void ServerSession::fail(long error) {
  // A flood, too many CONTINUATIONs, a failed callback: nghttp2 returns
  // the error and queues nothing, and the client would be left with a
  // silent connection until a timeout. GOAWAY, then the session is done.
  const bool attack = error == NGHTTP2_ERR_FLOODED || error == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS;
  const std::uint32_t code = attack                                  ? NGHTTP2_ENHANCE_YOUR_CALM
                             : error == NGHTTP2_ERR_CALLBACK_FAILURE ? NGHTTP2_INTERNAL_ERROR
                                                                     : NGHTTP2_PROTOCOL_ERROR;
  nghttp2_session_terminate_session(session_, code);
}

void ServerSession::calm_down() { nghttp2_session_terminate_session(session_, NGHTTP2_ENHANCE_YOUR_CALM); }

bool ServerSession::PerSecond::add(Clock::time_point now, std::size_t n, std::size_t limit) {
  if (now - start >= std::chrono::seconds(1)) start = now, count = 0;
  count += n;
  return count <= limit;
}

bool ServerSession::count_reset() {
  if (resets_.add(now_, 1, limits_.max_resets_per_second)) return true;
  calm_down();
  return false;
}

bool ServerSession::count_header_bytes(std::size_t bytes) {
  const std::size_t limit = limits_.max_header_bytes_per_second != 0 ? limits_.max_header_bytes_per_second
                                                                     : 256 * limits_.request.max_header_bytes;
  if (header_bytes_.add(now_, bytes, limit)) return true;
  calm_down();
  return false;
}

void ServerSession::dispatch_ready() {
  if (ready_.empty()) return;
  // Not while the session ends: what starts now could not be answered.
  const bool serving = nghttp2_session_want_read(session_) != 0;
  for (const Ready& r : ready_) {
    Stream* s = find(r.id);
    if (!s || !serving || s->doomed) continue;
    if (r.what == Ready::What::Request)
      handler_.on_request(r.id, s->req);
    else
      handler_.on_body(r.id, std::string_view(ready_bytes_).substr(r.offset, r.size), r.what == Ready::What::BodyEnd);
  }
  ready_.clear();
  ready_bytes_.clear();
}

void ServerSession::produce(std::string& out, std::size_t max) {
  while (out.size() < max) {
    const std::uint8_t* data = nullptr;
    const auto n = nghttp2_session_mem_send(session_, &data);
    if (n <= 0) return;
    out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
}

bool ServerSession::wants_write() const { return nghttp2_session_want_write(session_) != 0; }

bool ServerSession::done() const {
  return nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0;
}

std::size_t ServerSession::open_streams() const { return streams_.size(); }

bool ServerSession::head_owed() const {
  return std::any_of(streams_.begin(), streams_.end(), [](const auto& kv) { return !kv.second.head_done; });
}

std::vector<std::int32_t> ServerSession::bodies_stalled(Clock::time_point cutoff) const {
  std::vector<std::int32_t> ids;
  for (const auto& [id, s] : streams_) {
    const bool collecting = s.head_done && !s.request_done && !s.streamed && !s.refusal_told && !s.responded;
    if (collecting && s.last_input < cutoff) ids.push_back(id);
  }
  return ids;
}

bool ServerSession::send_window_shut(std::int32_t stream) const {
  return nghttp2_session_get_remote_window_size(session_) <= 0 ||
         nghttp2_session_get_stream_remote_window_size(session_, stream) <= 0;
}

ServerSession::Stream* ServerSession::find(std::int32_t id) {
  // The callbacks of one frame (a header field each) name one stream in a
  // row: the last one found answers them without a lookup.
  if (id == last_id_) return last_;
  const auto it = streams_.find(id);
  if (it == streams_.end()) return nullptr;
  last_id_ = id;
  return last_ = &it->second;
}

void ServerSession::Stream::reset() {
  constexpr std::size_t kKeptBody = 16 * 1024;
  req.clear();
  if (req.body.capacity() > kKeptBody) std::string().swap(req.body);
  header_bytes = 0;
  refusal = 0;
  refusal_reason = "";
  refusal_told = false;
  authority.clear();
  cookie.clear();
  body.reset();
  responded = false;
  streamed = false;
  head_done = false;
  request_done = false;
  doomed = false;
}

void ServerSession::on_begin(std::int32_t id) {
  if (spare_.empty()) {
    streams_.try_emplace(id).first->second.last_input = now_;
    return;
  }
  auto node = std::move(spare_.back());
  spare_.pop_back();
  node.key() = id;
  node.mapped().last_input = now_;
  streams_.insert(std::move(node));
}

void ServerSession::refuse(Stream& s, int status, const char* reason) {
  if (s.refusal == 0) s.refusal = status, s.refusal_reason = reason;
}

void ServerSession::tell_refusal(std::int32_t id, Stream& s) {
  if (s.refusal_told) return;
  s.refusal_told = true;
  release_body(s);
  s.req.body.clear();
  s.req.body.shrink_to_fit();
  handler_.on_refused(id, s.refusal, s.refusal_reason);
}

void ServerSession::on_head_end(std::int32_t id) {
  Stream* s = find(id);
  if (!s) return;
  s->head_done = true;
  if (!s->refusal && !http::is_valid_host(s->authority)) refuse(*s, 400, "the :authority is not a valid host");
  // A refused head is answered now, before a body the client may still
  // send (which is then read and dropped).
  if (s->refusal) return tell_refusal(id, *s);
  complete_head(*s);
  s->streamed = handler_.on_head(id, s->req);
}

void ServerSession::complete_head(Stream& s) {
  auto& req = s.req;
  req.http_major = 2;
  req.http_minor = 0;
  // :authority stands for Host (RFC 9113 8.3.1); the crumbs of a cookie
  // are one field again for what reads it as HTTP/1.1 sent it.
  if (!s.authority.empty()) {
    std::erase_if(req.headers, [](const auto& h) { return http::iequals(h.first, "host"); });
    req.headers.emplace_back("host", std::move(s.authority));
  }
  if (!s.cookie.empty()) req.headers.emplace_back("cookie", std::move(s.cookie));
}

int ServerSession::on_header(std::int32_t id, std::string_view name, std::string_view value) {
  Stream* s = find(id);
  if (!s) return 0;
  s->header_bytes += name.size() + value.size();
  // Well past the limit the 431 answers nothing more: the stream is reset
  // (RST_STREAM INTERNAL_ERROR) and nghttp2 decodes the rest of the block
  // for its table alone, without checking or handing over each field.
  if (s->header_bytes > 2 * limits_.request.max_header_bytes) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  if (s->header_bytes > limits_.request.max_header_bytes) refuse(*s, 431, "request header fields too large");
  if (s->refusal) return 0;  // decoded (HPACK state needs it), not kept
  auto& req = s->req;
  if (name == ":method") {
    const auto m = method_of(value);
    if (!m || *m == HTTP_CONNECT) return refuse(*s, 501, "method not implemented"), 0;
    req.method = *m;
  } else if (name == ":path") {
    if (value.size() > limits_.request.max_url_bytes) return refuse(*s, 414, "request-target too long"), 0;
    req.target.assign(value);
  } else if (name == ":authority") {
    s->authority.assign(value);
  } else if (name == "cookie") {
    if (!s->cookie.empty()) s->cookie += "; ";
    s->cookie.append(value);
  } else if (name.front() != ':') {
    if (req.headers.size() >= limits_.request.max_header_count) return refuse(*s, 431, "too many header fields"), 0;
    req.headers.emplace_back(name, value);
  }
  return 0;
}

int ServerSession::on_data(std::int32_t id, std::string_view bytes) {
  nghttp2_session_consume_connection(session_, bytes.size());
  Stream* s = find(id);
  if (s && s->streamed && !s->refusal) {
    // Copied: a reset later in this read must find it not yet taken.
    ready_.push_back({id, Ready::What::Body, ready_bytes_.size(), bytes.size()});
    ready_bytes_.append(bytes);
    return 0;
  }
  nghttp2_session_consume_stream(session_, id, bytes.size());
  if (!s || s->refusal) return 0;  // read and dropped: the window stays open
  s->last_input = now_;
  collect(id, *s, bytes);
  return 0;
}

void ServerSession::collect(std::int32_t id, Stream& s, std::string_view bytes) {
  auto& req = s.req;
  auto refuse_now = [&](int status, const char* reason) {
    refuse(s, status, reason);
    tell_refusal(id, s);
  };
  if (req.body_size + bytes.size() > limits_.request.max_body_bytes) return refuse_now(413, "request body too large");
  // Past EDRI_UPLOAD_THRESHOLD, to a file as it arrives, as over HTTP/1.1.
  if (req.spill || req.body.size() + bytes.size() > limits_.request.spill_bytes) {
    if (!spill(id, s, bytes)) refuse_now(500, "the request body cannot be stored");
    return;
  }
  // Each connection may hold EDRI_MAX_PIPELINE bodies of EDRI_MAX_BODY_SIZE:
  // 25 connections held 750 MB.
  if (!hold_body(s, bytes.size()))
    return refuse_now(503, "request bodies in memory reached EDRI_HTTP2_BODY_MEMORY; retry later");
  req.body.append(bytes);
  req.body_size += bytes.size();
}

void ServerSession::on_request_end(std::int32_t id) {
  Stream* s = find(id);
  if (!s) return;
  s->request_done = true;
  if (s->refusal) return tell_refusal(id, *s);
  ready_.push_back({id, s->streamed ? Ready::What::BodyEnd : Ready::What::Request});
}

void ServerSession::on_answer_end(std::int32_t id) {
  // RFC 9113 8.1: a complete answer before the whole request may ask the
  // client, with NO_ERROR, to stop sending; it keeps the answer. The
  // stream closes once the RST_STREAM is out.
  const Stream* s = find(id);
  if (s && !s->request_done) nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_NO_ERROR);
}

void ServerSession::on_stream_close(std::int32_t id, bool clean) {
  Stream* s = find(id);
  if (!s) return;
  handler_.on_closed(id, s->responded && clean);
  last_id_ = 0;  // 0 names no stream (RFC 9113 5.1.1)
  last_ = nullptr;
  auto node = streams_.extract(id);
  release_body(node.mapped());
  node.mapped().reset();  // its BodySource goes now, as the handler was told
  if (spare_.size() < kSpareStreams) spare_.push_back(std::move(node));
}

bool ServerSession::respond(std::int32_t stream, int status, std::string_view content_type, std::int64_t content_length,
                            std::string_view header_lines, std::unique_ptr<BodySource> body) {
  Stream* s = find(stream);
  if (!s || s->responded) return false;
  // The text is reserved first, so that the views into it stay put.
  auto& text = scratch_->text;
  auto& nv = scratch_->nv;
  text.clear();
  text.reserve(48 + header_lines.size());
  nv.clear();
  auto keep = [&](std::string_view bytes) {
    const std::size_t at = text.size();
    text.append(bytes);
    return std::string_view(text).substr(at);
  };
  auto number = [&](std::int64_t v) {
    char buf[24];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return keep({buf, static_cast<std::size_t>(end - buf)});
  };
  nv.push_back(field(":status", number(status)));
  if (!content_type.empty()) nv.push_back(field("content-type", content_type));
  if (content_length >= 0) nv.push_back(field("content-length", number(content_length)));
  add_fields(header_lines);
  s->body = std::move(body);
  s->responded = true;
  nghttp2_data_provider provider{};
  provider.read_callback = &Callbacks::read_body;
  const int rv = nghttp2_submit_response(session_, stream, nv.data(), nv.size(), s->body ? &provider : nullptr);
  return rv == 0;
}

void ServerSession::add_fields(std::string_view header_lines) {
  auto& text = scratch_->text;
  while (!header_lines.empty()) {
    const auto eol = header_lines.find("\r\n");
    const std::string_view line = header_lines.substr(0, eol);
    header_lines.remove_prefix(eol == std::string_view::npos ? header_lines.size() : eol + 2);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0 || connection_specific(line.substr(0, colon))) continue;
    const std::size_t at = text.size();
    for (const char ch : line.substr(0, colon)) text.push_back(http::ascii_lower(ch));  // HTTP/2 names are lowercase
    scratch_->nv.push_back(field(std::string_view(text).substr(at), http::trim_ows(line.substr(colon + 1))));
  }
}

int ServerSession::submit_trailer(std::int32_t id, std::string_view lines) {
  scratch_->text.clear();
  scratch_->text.reserve(lines.size());  // the names' copies: the views stay put
  scratch_->nv.clear();
  add_fields(lines);
  return nghttp2_submit_trailer(session_, id, scratch_->nv.data(), scratch_->nv.size());
}

void ServerSession::resume(std::int32_t stream) { nghttp2_session_resume_data(session_, stream); }

void ServerSession::consume(std::int32_t stream, std::size_t bytes) {
  if (bytes > 0) nghttp2_session_consume_stream(session_, stream, bytes);
}

void ServerSession::reset(std::int32_t stream, std::uint32_t error_code) {
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream, error_code);
}

void ServerSession::shutdown() {
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(session_),
                        NGHTTP2_NO_ERROR, nullptr, 0);
}

}  // namespace edri::http2
