// H2Client: an HTTP/2 client over nghttp2 that does no I/O, for driving a
// server session in memory (unit tests) or over a socket (integration
// tests read and write its bytes). Each request's answer is collected: the
// status, the fields, the body, and how the stream ended.
#pragma once

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace edri::test {

class H2Client {
 public:
  struct Answer {
    int status = 0;
    std::vector<std::pair<std::string, std::string>> fields;
    std::string body;
    bool closed = false;
    std::uint32_t error_code = 0;  // RST_STREAM's, or 0
    std::string field(std::string_view name) const {
      for (const auto& [k, v] : fields)
        if (k == name) return v;
      return {};
    }
  };

  // `peer_max_streams`: how many streams it opens before it has the
  // server's SETTINGS (nghttp2's default is 100).
  explicit H2Client(std::uint32_t peer_max_streams = 100) {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, &H2Client::on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, &H2Client::on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, &H2Client::on_close);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &H2Client::on_frame);
    nghttp2_option* opt = nullptr;
    nghttp2_option_new(&opt);
    nghttp2_option_set_peer_max_concurrent_streams(opt, peer_max_streams);
    nghttp2_session_client_new2(&session_, cb, this, opt);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cb);
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
  }
  ~H2Client() { nghttp2_session_del(session_); }
  H2Client(const H2Client&) = delete;
  H2Client& operator=(const H2Client&) = delete;

  // Submits a request; returns its stream id. `fields`: regular fields.
  std::int32_t request(std::string_view method, std::string_view path, std::string body = {},
                       std::vector<std::pair<std::string, std::string>> fields = {},
                       std::string_view authority = "localhost") {
    std::vector<nghttp2_nv> nv{nvf(":method", method), nvf(":scheme", "http"), nvf(":path", path)};
    if (!authority.empty()) nv.push_back(nvf(":authority", authority));
    for (const auto& [k, v] : fields) nv.push_back(nvf(k, v));
    auto& slot = bodies_[next_body_++];
    slot = std::move(body);
    nghttp2_data_provider dp{};
    dp.source.ptr = &slot;
    dp.read_callback = &H2Client::read_body;
    const bool has_body = method == "POST" || method == "PUT" || method == "PATCH";
    const auto id = nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(), has_body ? &dp : nullptr, nullptr);
    if (id > 0) answers[id];
    return id;
  }
  // A request whose body starts with `start` and never ends: the client's
  // side stays open (a slow or stalled client).
  std::int32_t request_left_open(std::string_view method, std::string_view path, std::string start = {},
                                 std::vector<std::pair<std::string, std::string>> fields = {}) {
    const auto id = request(method, path, std::move(start), std::move(fields));
    left_open_.insert(id);
    return id;
  }
  // SETTINGS_INITIAL_WINDOW_SIZE: what the server may send on each stream
  // before a WINDOW_UPDATE.
  void set_initial_window(std::uint32_t bytes) {
    const nghttp2_settings_entry e{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, bytes};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, &e, 1);
  }
  // Bytes of `stream`'s request body sent so far (flow control allowing).
  std::size_t body_sent(std::int32_t stream) const {
    const auto it = sent_.find(stream);
    return it == sent_.end() ? 0 : it->second;
  }
  void reset(std::int32_t stream, std::uint32_t code = NGHTTP2_CANCEL) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream, code);
  }
  // Bytes for the server: the preface first, then frames.
  std::string produce() {
    std::string out;
    for (;;) {
      const std::uint8_t* data = nullptr;
      const auto n = nghttp2_session_mem_send(session_, &data);
      if (n <= 0) return out;
      out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
    }
  }
  // A setting the server's SETTINGS gave (or its default).
  std::uint32_t server_setting(nghttp2_settings_id id) const {
    return nghttp2_session_get_remote_settings(session_, id);
  }
  // What the server sent; false on a connection error.
  bool receive(std::string_view bytes) {
    return nghttp2_session_mem_recv(session_, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()) >= 0;
  }

  std::map<std::int32_t, Answer> answers;
  bool goaway = false;
  std::int32_t goaway_last_stream = -1;
  std::uint32_t goaway_error = 0;

 private:
  static nghttp2_nv nvf(std::string_view k, std::string_view v) {
    return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(k.data())),
            reinterpret_cast<std::uint8_t*>(const_cast<char*>(v.data())), k.size(), v.size(), NGHTTP2_NV_FLAG_NONE};
  }
  static H2Client& of(void* u) { return *static_cast<H2Client*>(u); }
  static int on_header(nghttp2_session*, const nghttp2_frame* f, const std::uint8_t* n, std::size_t nl,
                       const std::uint8_t* v, std::size_t vl, std::uint8_t, void* u) {
    auto& a = of(u).answers[f->hd.stream_id];
    const std::string name(reinterpret_cast<const char*>(n), nl), value(reinterpret_cast<const char*>(v), vl);
    if (name == ":status")
      a.status = std::stoi(value);
    else
      a.fields.emplace_back(name, value);
    return 0;
  }
  static int on_data(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* d, std::size_t n, void* u) {
    of(u).answers[id].body.append(reinterpret_cast<const char*>(d), n);
    return 0;
  }
  static int on_close(nghttp2_session*, std::int32_t id, std::uint32_t code, void* u) {
    auto& a = of(u).answers[id];
    a.closed = true;
    a.error_code = code;
    return 0;
  }
  static int on_frame(nghttp2_session*, const nghttp2_frame* f, void* u) {
    if (f->hd.type != NGHTTP2_GOAWAY) return 0;
    of(u).goaway = true;
    of(u).goaway_last_stream = f->goaway.last_stream_id;
    of(u).goaway_error = f->goaway.error_code;
    return 0;
  }
  static ssize_t read_body(nghttp2_session*, std::int32_t id, std::uint8_t* buf, std::size_t len, std::uint32_t* flags,
                           nghttp2_data_source* src, void* u) {
    auto& body = *static_cast<std::string*>(src->ptr);
    const std::size_t n = std::min(len, body.size());
    of(u).sent_[id] += n;
    std::copy_n(body.data(), n, buf);
    body.erase(0, n);
    if (body.empty() && of(u).left_open_.count(id))
      return n > 0 ? static_cast<ssize_t>(n) : ssize_t{NGHTTP2_ERR_DEFERRED};
    if (body.empty()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }

  nghttp2_session* session_ = nullptr;
  std::map<int, std::string> bodies_;         // node-based: stable while their streams send
  std::map<std::int32_t, std::size_t> sent_;  // body bytes sent, by stream
  int next_body_ = 0;
  std::set<std::int32_t> left_open_;  // streams whose body never ends
};

}  // namespace edri::test
