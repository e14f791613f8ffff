#include "grpc_load.hpp"

#include <poll.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "edri/v1/edri.pb.h"
#include "grpc/framing.hpp"
#include "h2_client_link.hpp"

namespace edri::bench {
namespace {

using Clock = std::chrono::steady_clock;

// noop's answer is about 20 bytes; a message anywhere near this is not it.
constexpr std::size_t kMaxAnswer = 64 * 1024;
// Keeps a client whose server refuses connections from spinning a core that
// the server under test may need.
constexpr auto kRetryDelay = std::chrono::milliseconds(10);
constexpr auto kStopPollInterval = std::chrono::milliseconds(50);
// A paced round trip started later than this after its scheduled time
// counts as sent late (as in the HTTP load generator).
constexpr auto kLateThreshold = std::chrono::milliseconds(1);
constexpr std::string_view kCallPath = "/edri.v1.Edri/Call";
constexpr std::string_view kConnectPath = "/edri.v1.Edri/Connect";
constexpr std::string_view kNoopType = "noop";
constexpr std::string_view kNoopBody = R"({"ok":true})";

Clock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// What the connections of one run share; single-threaded, so no locking.
// Never moved once built: `headers` points into `authority`.
struct Run {
  sockaddr_in peer{};
  GrpcMode mode = GrpcMode::kUnary;
  std::string authority;
  std::vector<nghttp2_nv> headers;  // every request's, Call or Connect by mode
  std::string call_message;         // unary: the framed Event, the same every call
  Clock::time_point measure_start;
  Clock::time_point measure_end;
  // With a rate: when connection i's first round trip is due, and the gap
  // between two of its round trips. Zero interval: closed loop.
  Clock::time_point schedule_start;
  Clock::duration interval{0};
  int concurrency = 1;
  LoadResult& result;

  bool in_window(Clock::time_point t) const { return t >= measure_start && t < measure_end; }

  void note_error(Clock::time_point t, std::string_view what) {
    if (result.first_error.empty()) result.first_error = what;
    if (in_window(t)) ++result.errors;
  }

  void count_answer(Clock::time_point sent_at, Clock::time_point now) {
    if (!in_window(now)) return;
    ++result.completed;
    result.latency.record(
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - sent_at).count()));
  }
};

std::vector<nghttp2_nv> request_headers(const Run& run) {
  const std::string_view path = run.mode == GrpcMode::kUnary ? kCallPath : kConnectPath;
  return {static_header(":method", "POST"),
          static_header(":scheme", "http"),
          static_header(":path", path),
          static_header(":authority", run.authority),
          static_header("content-type", "application/grpc"),
          static_header("te", "trailers")};
}

std::string framed_noop_call() {
  edri::v1::Event event;
  event.set_type(std::string(kNoopType));
  std::string framed;
  grpc::frame(framed, event.SerializeAsString());
  return framed;
}

// One connection. Unary: one Call at a time, each on a new stream. Bidi:
// one Connect stream with exactly one Event in flight on it.
class GrpcClient final : public H2ClientLink::Events {
 public:
  GrpcClient(Run& run, std::size_t index)
      : run_(run),
        link_(*this),
        retry_at_(run.schedule_start),
        // Connections start a fraction of an interval apart, so that a paced
        // load arrives evenly rather than in bursts of `concurrency`.
        next_due_(run.schedule_start + run.interval * static_cast<Clock::rep>(index) / run.concurrency) {
    request_.set_type(std::string(kNoopType));
  }
  GrpcClient(const GrpcClient&) = delete;
  GrpcClient& operator=(const GrpcClient&) = delete;
  // The session goes while the members its callbacks touch are still here.
  ~GrpcClient() override {
    stream_ = 0;
    link_.close();
  }

  // Fills `p` for poll, and brings `wake` forward to when this client next
  // has something to do that no I/O will tell it about.
  void prepare(pollfd& p, Clock::time_point& wake) const {
    p = pollfd{link_.fd(), link_.is_open() ? link_.wanted_events() : short{0}, 0};
    if (!link_.is_open()) {
      wake = std::min(wake, retry_at_);
    } else if (!in_flight_) {
      wake = std::min(wake, next_due_);
    }
  }

  // After poll: takes in what arrived, and starts the next round trip when
  // it is due.
  void step(short revents, Clock::time_point now) {
    std::string error;
    if (!link_.is_open()) {
      if (now < retry_at_) return;
      if (!link_.open(run_.peer, error)) return fail(now, error);
    } else if (revents != 0 && !link_.on_ready(revents, error)) {
      return fail(now, error);
    }
    if (!stream_error_.empty()) return fail(now, std::exchange(stream_error_, {}));
    if (!in_flight_ && is_due(now) && !begin_round_trip(now, error)) return fail(now, error);
    if (!link_.flush(error)) fail(now, error);
  }

  void on_header(std::int32_t stream, std::string_view name, std::string_view value) override {
    if (stream != stream_) return;
    if (name == ":status") {
      std::from_chars(value.data(), value.data() + value.size(), http_status_);
    } else if (name == "grpc-status") {
      grpc_status_ = value;
    } else if (name == "grpc-message") {
      grpc_message_ = value;
    }
  }

  void on_data(std::int32_t stream, std::string_view bytes) override {
    if (stream != stream_) return;
    reader_.append(bytes);
    if (run_.mode == GrpcMode::kBidi) take_bidi_answers();
  }

  void on_stream_close(std::int32_t stream, std::uint32_t error_code) override {
    if (stream != stream_) return;
    stream_ = 0;
    if (run_.mode == GrpcMode::kUnary) return finish_call(error_code);
    // Connect lives as long as the run; its end is the server's doing.
    stream_error_ = "the server ended the Connect stream (" + stream_end_text(error_code) + ")";
  }

 private:
  bool is_due(Clock::time_point now) const { return run_.interval.count() == 0 || now >= next_due_; }

  void fail(Clock::time_point now, const std::string& what) {
    run_.note_error(now, what);
    // Before the close, so that a stream nghttp2 closes on the way out is
    // not taken for one the server ended.
    stream_ = 0;
    link_.close();
    stream_error_.clear();
    in_flight_ = false;
    outbound_.clear();
    retry_at_ = now + kRetryDelay;
  }

  bool begin_round_trip(Clock::time_point now, std::string& error) {
    sent_at_ = now;
    if (run_.interval.count() != 0) {
      // Open loop: counted from when it was due, so that a wait behind a
      // slow answer is part of its latency.
      sent_at_ = next_due_;
      if (now - next_due_ > kLateThreshold && run_.in_window(now)) ++run_.result.sent_late;
      next_due_ += run_.interval;
    }
    in_flight_ = true;
    return run_.mode == GrpcMode::kUnary ? start_call(error) : send_event(error);
  }

  bool start_call(std::string& error) {
    outbound_ = run_.call_message;
    return open_stream(error);
  }

  bool send_event(std::string& error) {
    if (stream_ == 0 && !open_stream(error)) return false;
    request_.set_id(++last_id_);
    request_.SerializeToString(&scratch_);
    grpc::frame(outbound_, scratch_);
    // The stream's DATA was deferred for want of bytes. Before nghttp2 has
    // first asked (a stream just opened) there is nothing to resume, and
    // it will ask anyway: that error is harmless.
    nghttp2_session_resume_data(link_.session(), stream_);
    return true;
  }

  bool open_stream(std::string& error) {
    reader_ = grpc::MessageReader(kMaxAnswer);
    http_status_ = 0;
    grpc_status_.clear();
    grpc_message_.clear();
    nghttp2_data_provider body{};
    body.source.ptr = this;
    body.read_callback = &GrpcClient::read_outbound;
    const std::int32_t id =
        nghttp2_submit_request(link_.session(), nullptr, run_.headers.data(), run_.headers.size(), &body, nullptr);
    if (id < 0) {
      error = std::string("HTTP/2 submit: ") + nghttp2_strerror(id);
      return false;
    }
    stream_ = id;
    return true;
  }

  static ssize_t read_outbound(nghttp2_session*, std::int32_t, std::uint8_t* buffer, std::size_t length,
                               std::uint32_t* flags, nghttp2_data_source* source, void*) {
    return static_cast<GrpcClient*>(source->ptr)->copy_outbound(buffer, length, *flags);
  }

  // A Call's one message then the end of the stream; a Connect stream's
  // Events as they are queued, deferred while there is none.
  ssize_t copy_outbound(std::uint8_t* buffer, std::size_t length, std::uint32_t& flags) {
    const std::size_t n = std::min(length, outbound_.size());
    std::memcpy(buffer, outbound_.data(), n);
    outbound_.erase(0, n);
    if (!outbound_.empty()) return static_cast<ssize_t>(n);
    if (run_.mode == GrpcMode::kUnary) {
      flags |= NGHTTP2_DATA_FLAG_EOF;
      return static_cast<ssize_t>(n);
    }
    if (n == 0) return NGHTTP2_ERR_DEFERRED;  // until the next Event is queued
    return static_cast<ssize_t>(n);
  }

  void finish_call(std::uint32_t error_code) {
    const Clock::time_point now = Clock::now();
    in_flight_ = false;
    const std::string problem = call_problem(error_code);
    if (problem.empty()) {
      run_.count_answer(sent_at_, now);
    } else {
      run_.note_error(now, problem);
    }
  }

  // Why a finished Call is not noop's answer; empty when it is.
  std::string call_problem(std::uint32_t error_code) {
    if (error_code != 0 || http_status_ != 200 || grpc_status_ != "0") return stream_end_text(error_code);
    std::string_view message;
    if (reader_.next(message) != grpc::MessageReader::Next::Message) return "the Call answered no whole message";
    std::string problem = answer_problem(message, std::nullopt);
    if (problem.empty() && reader_.held() != 0) problem = "the Call answered more than one message";
    return problem;
  }

  void take_bidi_answers() {
    std::string_view message;
    for (;;) {
      const auto next = reader_.next(message);
      if (next == grpc::MessageReader::Next::NeedMore) return;
      if (next != grpc::MessageReader::Next::Message) {
        stream_error_ = "a Connect answer is compressed or too large";
        return;
      }
      if (!in_flight_) {
        stream_error_ = "a Connect answer with no Event in flight";
        return;
      }
      const Clock::time_point now = Clock::now();
      in_flight_ = false;
      const std::string problem = answer_problem(message, last_id_);
      if (problem.empty()) {
        run_.count_answer(sent_at_, now);
      } else {
        run_.note_error(now, problem);
      }
    }
  }

  // Why `message` is not noop's answer (to the Event of `id`, in bidi);
  // empty when it is.
  std::string answer_problem(std::string_view message, std::optional<std::uint64_t> id) {
    if (!answer_.ParseFromArray(message.data(), static_cast<int>(message.size()))) return "an answer is not an Event";
    if (answer_.type() != kNoopType || answer_.status() != 200 || answer_.body() != kNoopBody) {
      return "an answer is not noop's: type '" + answer_.type() + "', status " + std::to_string(answer_.status()) +
             ", body '" + answer_.body().substr(0, 80) + "'";
    }
    if (id && answer_.id() != *id) {
      return "an answer carries id " + std::to_string(answer_.id()) + ", not " + std::to_string(*id);
    }
    return {};
  }

  // How a stream ended, for an error message.
  std::string stream_end_text(std::uint32_t error_code) const {
    if (error_code != 0) return "stream reset, HTTP/2 error " + std::to_string(error_code);
    if (http_status_ != 200) return "HTTP status " + std::to_string(http_status_);
    if (grpc_status_.empty()) return "no grpc-status";
    return "grpc-status " + grpc_status_ + (grpc_message_.empty() ? "" : ": " + grpc_message_);
  }

  Run& run_;
  H2ClientLink link_;
  Clock::time_point retry_at_;  // while disconnected: when to connect again
  Clock::time_point next_due_;  // with a rate: when the next round trip is due
  Clock::time_point sent_at_{};
  bool in_flight_ = false;
  std::int32_t stream_ = 0;  // the Call or Connect stream; 0 when none is open
  std::string outbound_;     // message bytes the stream has yet to send
  grpc::MessageReader reader_{kMaxAnswer};
  int http_status_ = 0;
  std::string grpc_status_;
  std::string grpc_message_;
  std::string stream_error_;  // set in a callback; the connection fails after it
  std::uint64_t last_id_ = 0;
  edri::v1::Event request_;
  edri::v1::Event answer_;
  std::string scratch_;
};

void wait_for_io(std::vector<pollfd>& fds, Clock::duration timeout) {
  const auto ns = std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count());
  // ppoll, not poll: a paced load needs sub-millisecond wake-ups.
  const timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  ::ppoll(fds.data(), fds.size(), &ts, nullptr);
}

// The poll loop, until the measured window closes; true when a stop was
// requested first.
bool drive(Run& run, std::vector<std::unique_ptr<GrpcClient>>& clients, const volatile std::sig_atomic_t* stop) {
  std::vector<pollfd> fds(clients.size());
  Clock::time_point now = Clock::now();
  while (now < run.measure_end) {
    if (stop != nullptr && *stop != 0) return true;
    Clock::time_point wake = std::min(now + kStopPollInterval, run.measure_end);
    for (std::size_t i = 0; i < clients.size(); ++i) clients[i]->prepare(fds[i], wake);
    wait_for_io(fds, wake - now);
    now = Clock::now();
    for (std::size_t i = 0; i < clients.size(); ++i) clients[i]->step(fds[i].revents, now);
  }
  return false;
}

}  // namespace

LoadResult run_grpc_load(const GrpcLoadOptions& options) {
  LoadResult result;
  const auto peer = ipv4_address(options.host, options.port);
  if (!peer) {
    result.first_error = "bad host address: " + options.host;
    return result;
  }
  const Clock::time_point start = Clock::now();
  Run run{.peer = *peer,
          .mode = options.mode,
          .authority = options.host + ":" + std::to_string(options.port),
          .headers = {},
          .call_message = framed_noop_call(),
          .measure_start = start + to_duration(options.warmup_seconds),
          .measure_end = start + to_duration(options.warmup_seconds + options.duration_seconds),
          .schedule_start = start,
          .interval = options.rate > 0 ? to_duration(options.concurrency / options.rate) : Clock::duration{0},
          .concurrency = options.concurrency,
          .result = result};
  run.headers = request_headers(run);
  // A rate so high that one connection's interval rounds to nothing is a
  // closed loop in all but name; a nanosecond keeps it open.
  if (options.rate > 0 && run.interval.count() == 0) run.interval = Clock::duration{1};

  std::vector<std::unique_ptr<GrpcClient>> clients;
  clients.reserve(static_cast<std::size_t>(options.concurrency));
  for (int i = 0; i < options.concurrency; ++i)
    clients.push_back(std::make_unique<GrpcClient>(run, static_cast<std::size_t>(i)));

  result.interrupted = drive(run, clients, options.stop_requested);
  result.measured_seconds = options.duration_seconds;
  if (result.interrupted) {
    result.measured_seconds = std::max(0.0, std::chrono::duration<double>(Clock::now() - run.measure_start).count());
  }
  return result;
}

}  // namespace edri::bench
