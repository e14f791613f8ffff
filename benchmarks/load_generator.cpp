#include <utility>

#include "load_generator.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "http_response_parser.hpp"
#include "websocket_frame.hpp"

namespace edri::bench {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

constexpr std::size_t kInitialBuffer = 4096;
// bench-app answers up to 64 MiB (/payload/{bytes}); headers fit beside it.
constexpr std::size_t kMaxBuffer = std::size_t{128} << 20;
// Keeps a client whose server refuses connections from spinning a core that
// the server under test may need.
constexpr auto kRetryDelay = std::chrono::milliseconds(10);
constexpr auto kStopPollInterval = std::chrono::milliseconds(50);
// A paced request sent later than this after its scheduled time counts as
// sent late: the timer's own jitter stays below it.
constexpr auto kLateThreshold = std::chrono::milliseconds(1);

Clock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// State shared by all clients of one run; single-threaded, so no locking.
struct Run {
  tcp::endpoint endpoint;
  std::vector<std::string> requests;  // HTTP requests (one per connection, round robin), or the masked frame
  std::string handshake;              // WebSocket upgrade request; empty for HTTP
  const std::optional<std::string>& expected_body;
  Clock::time_point measure_start;
  Clock::time_point measure_end;
  // With a rate: when connection i's first request is due, and the gap
  // between two of its requests. Zero interval: closed loop.
  Clock::time_point schedule_start;
  Clock::duration interval{0};
  int concurrency = 1;
  bool stopping = false;
  bool body_checked = false;
  LoadResult& result;

  bool in_window(Clock::time_point t) const { return t >= measure_start && t < measure_end; }

  void note_error(Clock::time_point t, std::string_view what) {
    if (result.first_error.empty()) result.first_error = what;
    if (in_window(t)) ++result.errors;
  }

  // Called for responses in the window.
  void check_first_body(Clock::time_point t, std::string_view body, bool chunked) {
    if (!expected_body || body_checked) return;
    body_checked = true;
    if (chunked) return note_error(t, "first response body is chunked; only Content-Length bodies are compared");
    if (body != *expected_body) {
      constexpr std::size_t kShown = 120;
      note_error(t, "first response body is not the expected one: '" + std::string(body.substr(0, kShown)) +
                        (body.size() > kShown ? "...'" : "'"));
    }
  }
};

class Client {
 public:
  Client(asio::io_context& io, Run& run, std::size_t index)
      : socket_(io),
        retry_timer_(io),
        pace_timer_(io),
        run_(run),
        request_(run.requests[index % run.requests.size()]),
        // Connections start a fraction of an interval apart, so that the
        // load arrives evenly rather than in bursts of `concurrency`.
        next_due_(run.schedule_start + run.interval * static_cast<Clock::rep>(index) / run.concurrency) {
    buffer_.resize(kInitialBuffer);
  }

  void start() { connect(); }

  void shut_down() {
    error_code ignored;
    socket_.close(ignored);
    retry_timer_.cancel();
    pace_timer_.cancel();
  }

 private:
  void connect() {
    if (run_.stopping) return;
    used_ = 0;
    socket_.async_connect(run_.endpoint, [this](const error_code& ec) {
      if (run_.stopping) return;
      if (ec) return fail("connect: " + ec.message());
      error_code ignored;
      // Without it small requests wait on Nagle for the previous ACK and the
      // measured latency is the kernel's, not the server's.
      socket_.set_option(tcp::no_delay(true), ignored);
      if (run_.handshake.empty()) return send();
      // WebSocket: the upgrade first, then messages.
      upgraded_ = false;
      asio::async_write(socket_, asio::buffer(run_.handshake), [this](const error_code& wec, std::size_t) {
        if (run_.stopping) return;
        if (wec) return fail("write: " + wec.message());
        read();
      });
    });
  }

  void send() {
    if (run_.stopping) return;
    if (run_.interval.count() == 0) {
      sent_at_ = Clock::now();
      return write();
    }
    // Open loop: the latency counts from when this request was due, so the
    // wait behind a slow earlier answer is part of it.
    sent_at_ = next_due_;
    next_due_ += run_.interval;
    const Clock::time_point now = Clock::now();
    if (now < sent_at_) {
      pace_timer_.expires_at(sent_at_);
      pace_timer_.async_wait([this](const error_code& ec) {
        if (!ec && !run_.stopping) write();
      });
      return;
    }
    if (now - sent_at_ > kLateThreshold && run_.in_window(now)) ++run_.result.sent_late;
    write();
  }

  void write() {
    asio::async_write(socket_, asio::buffer(request_), [this](const error_code& ec, std::size_t) {
      if (run_.stopping) return;
      if (ec) return fail("write: " + ec.message());
      read();
    });
  }

  void read() {
    if (used_ == buffer_.size()) {
      if (buffer_.size() >= kMaxBuffer) return fail("response larger than 128 MiB");
      buffer_.resize(buffer_.size() * 2);
    }
    socket_.async_read_some(asio::buffer(buffer_.data() + used_, buffer_.size() - used_),
                            [this](const error_code& ec, std::size_t n) { on_read(ec, n); });
  }

  void on_read(const error_code& ec, std::size_t n) {
    if (run_.stopping) return;
    if (ec) {
      return fail(ec == asio::error::eof ? "server closed the connection mid-request" : "read: " + ec.message());
    }
    used_ += n;
    if (!run_.handshake.empty()) return on_websocket_bytes();
    const ParsedResponse response = parse_http_response({buffer_.data(), used_});
    switch (response.state) {
      case ParsedResponse::State::kIncomplete: return read();
      case ParsedResponse::State::kMalformed: return fail("malformed response");
      case ParsedResponse::State::kComplete: break;
    }
    const std::string_view bytes(buffer_.data(), used_);
    if (!answered(response.status, bytes.substr(response.body_offset, response.total_size - response.body_offset),
                  response.chunked))
      return;
    // We never pipeline, so anything past this response is not ours to keep.
    used_ = 0;
    if (response.connection_close) {
      error_code ignored;
      socket_.close(ignored);
      return connect();
    }
    send();
  }

  void on_websocket_bytes() {
    if (!upgraded_) {
      const ParsedResponse response = parse_http_response({buffer_.data(), used_});
      if (response.state == ParsedResponse::State::kIncomplete) return read();
      if (response.state == ParsedResponse::State::kMalformed || response.status != 101)
        return fail("WebSocket handshake refused (HTTP " + std::to_string(response.status) + ")");
      upgraded_ = true;
      used_ = 0;
      return send();
    }
    const ParsedFrame frame = parse_server_frame({buffer_.data(), used_});
    switch (frame.state) {
      case ParsedFrame::State::kIncomplete: return read();
      case ParsedFrame::State::kMalformed: return fail("malformed WebSocket frame");
      case ParsedFrame::State::kComplete: break;
    }
    if (frame.opcode != 0x1) return fail("the server sent WebSocket opcode " + std::to_string(frame.opcode));
    const std::string_view payload(buffer_.data() + frame.payload_offset, frame.total_size - frame.payload_offset);
    const bool ok = payload.find("\"response\"") != std::string_view::npos;
    if (!answered(ok ? 200 : 500, payload, false)) return;
    used_ = 0;
    send();
  }

  // Counts one answer; false when the run is over for this connection.
  bool answered(int status, std::string_view body, bool chunked) {
    const Clock::time_point now = Clock::now();
    if (now >= run_.measure_end) {
      // Past the window: this connection has done its part.
      shut_down();
      return false;
    }
    if (run_.in_window(now)) {
      LoadResult& r = run_.result;
      ++r.completed;
      if (status < 200 || status > 299) ++r.non_2xx;
      r.latency.record(
          static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - sent_at_).count()));
      run_.check_first_body(now, body, chunked);
    }
    return true;
  }

  void fail(const std::string& what) {
    run_.note_error(Clock::now(), what);
    error_code ignored;
    socket_.close(ignored);
    retry_timer_.expires_after(kRetryDelay);
    retry_timer_.async_wait([this](const error_code& ec) {
      if (ec || run_.stopping) return;
      connect();
    });
  }

  tcp::socket socket_;
  asio::steady_timer retry_timer_;
  asio::steady_timer pace_timer_;
  Run& run_;
  const std::string& request_;
  Clock::time_point next_due_;  // with a rate: when the next request is due
  std::vector<char> buffer_;
  std::size_t used_ = 0;
  bool upgraded_ = false;
  Clock::time_point sent_at_{};
};

}  // namespace

LoadResult run_load(const LoadOptions& options) {
  LoadResult result;
  asio::io_context io(1);

  error_code ec;
  const auto address = asio::ip::make_address(options.host, ec);
  if (ec) {
    result.first_error = "bad host address: " + options.host;
    return result;
  }

  const Clock::time_point start = Clock::now();
  Run run{
      .endpoint = tcp::endpoint(address, options.port),
      .requests = {},
      .handshake = options.websocket_path ? websocket_upgrade(*options.websocket_path, options.host) : std::string(),
      .expected_body = options.expected_body,
      .measure_start = start + to_duration(options.warmup_seconds),
      .measure_end = start + to_duration(options.warmup_seconds + options.duration_seconds),
      .schedule_start = start,
      .interval = options.rate > 0 ? to_duration(options.concurrency / options.rate) : Clock::duration{0},
      .concurrency = options.concurrency,
      .result = result};
  // A rate so high that one connection's interval rounds to nothing is a
  // closed loop in all but name; a nanosecond keeps it open.
  if (options.rate > 0 && run.interval.count() == 0) run.interval = Clock::duration{1};

  if (options.websocket_path)
    run.requests.push_back(masked_text_frame(options.request.body));
  else if (options.requests.empty())
    run.requests.push_back(serialize_request(options.request, options.host));
  else
    for (const auto& r : options.requests) run.requests.push_back(serialize_request(r, options.host));

  std::vector<std::unique_ptr<Client>> clients;
  clients.reserve(static_cast<std::size_t>(options.concurrency));
  for (int i = 0; i < options.concurrency; ++i) {
    clients.push_back(std::make_unique<Client>(io, run, static_cast<std::size_t>(i)));
  }

  asio::steady_timer window_start(io);
  asio::steady_timer deadline(io);
  asio::steady_timer stop_poll(io);
  auto stop_all = [&] {
    if (run.stopping) return;
    run.stopping = true;
    window_start.cancel();
    deadline.cancel();
    stop_poll.cancel();
    for (auto& client : clients) client->shut_down();
  };

  if (options.on_window_start) {
    window_start.expires_at(run.measure_start);
    window_start.async_wait([&](const error_code& wait_ec) {
      if (!wait_ec && !run.stopping) options.on_window_start();
    });
  }
  deadline.expires_at(run.measure_end);
  deadline.async_wait([&](const error_code& wait_ec) {
    if (wait_ec) return;
    if (options.on_window_end) options.on_window_end();
    stop_all();
  });

  // Polling rather than asio::signal_set: the flag is owned by bench's own
  // sigaction handler, which must also cover the phases where no io_context
  // is running (server start-up, readiness probing).
  std::function<void(const error_code&)> poll_stop = [&](const error_code& wait_ec) {
    if (wait_ec || run.stopping) return;
    if (options.stop_requested != nullptr && *options.stop_requested != 0) {
      result.interrupted = true;
      stop_all();
      return;
    }
    stop_poll.expires_after(kStopPollInterval);
    stop_poll.async_wait(poll_stop);
  };
  poll_stop(error_code{});

  for (auto& client : clients) client->start();
  io.run();

  result.measured_seconds = options.duration_seconds;
  if (result.interrupted) {
    result.measured_seconds = std::chrono::duration<double>(Clock::now() - run.measure_start).count();
    if (result.measured_seconds < 0) result.measured_seconds = 0;
  }
  return result;
}

bool probe_http_ok(const std::string& host, std::uint16_t port, const std::string& path, double timeout_seconds) {
  asio::io_context io(1);
  error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) return false;

  tcp::socket socket(io);
  HttpRequest get;
  get.target = path;
  const std::string request = serialize_request(get, host);
  std::vector<char> buffer(kInitialBuffer);
  std::size_t used = 0;
  bool ok = false;

  std::function<void()> read_more = [&] {
    if (used == buffer.size()) return;  // no answer a probe cares about is this big
    socket.async_read_some(asio::buffer(buffer.data() + used, buffer.size() - used),
                           [&](const error_code& read_ec, std::size_t n) {
                             if (read_ec) return;
                             used += n;
                             const ParsedResponse r = parse_http_response({buffer.data(), used});
                             if (r.state == ParsedResponse::State::kIncomplete) return read_more();
                             ok = r.state == ParsedResponse::State::kComplete && r.status == 200;
                           });
  };

  socket.async_connect(tcp::endpoint(address, port), [&](const error_code& connect_ec) {
    if (connect_ec) return;
    asio::async_write(socket, asio::buffer(request), [&](const error_code& write_ec, std::size_t) {
      if (!write_ec) read_more();
    });
  });

  io.run_for(to_duration(timeout_seconds));
  return ok;
}

}  // namespace edri::bench
