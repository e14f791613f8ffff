#include "manager/http_client.hpp"

#include <curl/curl.h>
#include <sys/epoll.h>

#include <algorithm>
#include <mutex>

#include "http/field_text.hpp"

namespace edri::manager {

namespace {

std::once_flag g_curl_init;

// A header line's value: without its CRLF and optional whitespace.
std::string_view field_value(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return http::trim_ows(s);
}

}  // namespace

struct HttpClient::Transfer {
  std::uint64_t id;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  HttpReply reply;
  Done done;
  std::size_t max_bytes;
  bool too_large = false;
  char error[CURL_ERROR_SIZE] = {};
  ~Transfer() {
    if (easy) curl_easy_cleanup(easy);
    if (headers) curl_slist_free_all(headers);
  }

  static std::size_t on_body(char* data, std::size_t size, std::size_t n, void* self) {
    auto& t = *static_cast<Transfer*>(self);
    if (t.reply.body.size() + n > t.max_bytes) {
      t.too_large = true;
      return 0;  // CURLE_WRITE_ERROR: the call ends
    }
    t.reply.body.append(data, size * n);
    return size * n;
  }
  static std::size_t on_header(char* data, std::size_t size, std::size_t n, void* self) {
    auto& t = *static_cast<Transfer*>(self);
    const std::string_view line(data, size * n);
    // A new status line (after a 100 Continue): the fields start over.
    if (line.rfind("HTTP/", 0) == 0) t.reply.headers.clear();
    if (const auto colon = line.find(':'); colon != std::string_view::npos && colon > 0)
      t.reply.headers.emplace_back(http::lowered(line.substr(0, colon)),
                                   std::string(field_value(line.substr(colon + 1))));
    return size * n;
  }
};

HttpClient::HttpClient(EventLoop& loop, Settings settings)
    : loop_(loop), settings_(std::move(settings)), timer_(loop, [this] { on_timeout(); }) {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  multi_ = curl_multi_init();
  curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &HttpClient::on_socket);
  curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &HttpClient::on_timer);
  curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
}

HttpClient::~HttpClient() {
  for (auto& [id, t] : transfers_) curl_multi_remove_handle(multi_, t->easy);
  transfers_.clear();
  for (CURL* e : spare_) curl_easy_cleanup(e);
  curl_multi_cleanup(multi_);
  for (const int fd : watched_) loop_.unwatch(fd);
}

std::chrono::milliseconds HttpClient::budget(const HttpCall& call,
                                             std::chrono::steady_clock::time_point deadline) const {
  auto total = call.timeout.count() > 0 ? call.timeout : settings_.timeout;
  if (deadline != std::chrono::steady_clock::time_point::max())
    total = std::min(
        total, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
  return std::max(total, std::chrono::milliseconds(1));
}

std::function<void()> HttpClient::start(HttpCall call, std::chrono::steady_clock::time_point deadline, Done done) {
  auto t = std::make_unique<Transfer>();
  t->id = next_++;
  t->done = std::move(done);
  t->max_bytes = call.max_response_bytes ? call.max_response_bytes : settings_.max_response_bytes;
  t->easy = take_easy();
  CURL* e = t->easy;
  curl_easy_setopt(e, CURLOPT_URL, call.url.c_str());
  // No file://, ftp:// or the rest a URL from a client could name.
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, call.method.c_str());
  if (call.method == "HEAD") curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  if (!call.body.empty() || call.method == "POST" || call.method == "PUT" || call.method == "PATCH") {
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(call.body.size()));
    curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, call.body.c_str());
  }
  for (const auto& [k, v] : call.headers) t->headers = curl_slist_append(t->headers, (k + ": " + v).c_str());
  // curl would send "Expect: 100-continue" with a large body and wait.
  t->headers = curl_slist_append(t->headers, "Expect:");
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(budget(call, deadline).count()));
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(settings_.connect_timeout.count()));
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
  if (!settings_.ca_file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, settings_.ca_file.c_str());
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Transfer::on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &Transfer::on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t.get());
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
  curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
  const std::uint64_t id = t->id;
  if (curl_multi_add_handle(multi_, e) != CURLM_OK) {
    HttpReply failed;
    failed.error = "the call could not be started";
    t->done(std::move(failed));
    return [] {};
  }
  transfers_.emplace(id, std::move(t));
  return [this, id] { stop(id); };
}

CURL* HttpClient::take_easy() {
  if (spare_.empty()) return curl_easy_init();
  CURL* e = spare_.back();
  spare_.pop_back();
  return e;
}

void HttpClient::give_back(CURL* easy) {
  // A handle made again for each call was a tenth of a call's CPU here
  // (curl_easy_init allocates and clears several KB); a reset one keeps
  // its buffers. Only after a call that went well: a failed one's state
  // is not carried over.
  if (spare_.size() >= kSpareHandles) return curl_easy_cleanup(easy);
  curl_easy_reset(easy);
  spare_.push_back(easy);
}

void HttpClient::stop(std::uint64_t id) {
  const auto it = transfers_.find(id);
  if (it == transfers_.end()) return;
  curl_multi_remove_handle(multi_, it->second->easy);
  transfers_.erase(it);
}

int HttpClient::on_socket(void*, int socket, int what, void* self, void*) {
  auto& c = *static_cast<HttpClient*>(self);
  if (what == CURL_POLL_REMOVE) {
    if (c.watched_.erase(socket)) c.loop_.unwatch(socket);
    return 0;
  }
  const std::uint32_t events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
  if (c.watched_.insert(socket).second)
    c.loop_.watch_level(socket, events, [&c, socket](std::uint32_t ev) { c.on_ready(socket, ev); });
  else
    c.loop_.rewatch_level(socket, events);
  return 0;
}

int HttpClient::on_timer(CURLM*, long timeout_ms, void* self) {
  auto& c = *static_cast<HttpClient*>(self);
  // -1: none wanted. 0: at once, which is at the end of the loop's turn
  // (run_due; curl asks that socket_action not be called from here). Else
  // the timerfd, set only when the time comes sooner than it is set for:
  // curl moves its next timeout at nearly every call, and a
  // timerfd_settime each time was 29 % of a manager's CPU per call (perf,
  // ledger 2026-12-05). A timerfd that fires early costs one
  // socket_action, and is set again for what curl wants then.
  c.due_ = timeout_ms == 0;
  c.wanted_ = timeout_ms <= 0 ? std::chrono::steady_clock::time_point::max()
                              : std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  if (c.wanted_ < c.armed_) c.arm(c.wanted_);
  return 0;
}

void HttpClient::arm(std::chrono::steady_clock::time_point at) {
  armed_ = at;
  timer_.expires_after(std::max(at - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration(1)));
}

void HttpClient::on_ready(int socket, std::uint32_t events) {
  int mask = 0;
  if (events & EPOLLIN) mask |= CURL_CSELECT_IN;
  if (events & EPOLLOUT) mask |= CURL_CSELECT_OUT;
  if (events & (EPOLLERR | EPOLLHUP)) mask |= CURL_CSELECT_ERR;
  int running = 0;
  curl_multi_socket_action(multi_, socket, mask, &running);
  collect();
}

void HttpClient::on_timeout() {
  armed_ = std::chrono::steady_clock::time_point::max();
  run_timeouts();
  // Early (curl's timeout moved later since): curl says nothing new.
  if (wanted_ < armed_) arm(wanted_);
}

bool HttpClient::run_due() {
  if (!due_) return false;
  run_timeouts();
  return true;
}

void HttpClient::run_timeouts() {
  due_ = false;
  int running = 0;
  curl_multi_socket_action(multi_, CURL_SOCKET_TIMEOUT, 0, &running);
  collect();
}

void HttpClient::collect() {
  int left = 0;
  while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
    if (m->msg != CURLMSG_DONE) continue;
    Transfer* raw = nullptr;
    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &raw);
    const CURLcode result = m->data.result;
    curl_multi_remove_handle(multi_, m->easy_handle);
    auto node = transfers_.extract(raw->id);
    std::unique_ptr<Transfer> t = std::move(node.mapped());
    if (result == CURLE_OK) {
      long status = 0;
      curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
      t->reply.status = static_cast<int>(status);
      give_back(std::exchange(t->easy, nullptr));
    } else {
      t->reply.timed_out = result == CURLE_OPERATION_TIMEDOUT;
      t->reply.body.clear();
      t->reply.headers.clear();
      t->reply.error = t->too_large ? "the answer passed " + std::to_string(t->max_bytes) + " bytes"
                                    : std::string(t->error[0] ? t->error : curl_easy_strerror(result));
    }
    t->done(std::move(t->reply));
  }
}

}  // namespace edri::manager
