// GrpcFront: what goes out on a call once it runs (pushes, live-stream
// frames, messages, the trailers that end it), and the ends of calls and
// their connections, with deadlines. The calls' opening and their events'
// answers are in grpc_front.cpp.
#include <spdlog/spdlog.h>

#include "edri/v1/edri.pb.h"
#include "grpc/framing.hpp"
#include "grpc/timeout.hpp"
#include "listener/grpc_coding.hpp"
#include "listener/grpc_front.hpp"
#include "listener/http2_link.hpp"

namespace edri::listener {

using grpc::Code;

void GrpcFront::push(Connection& c, std::uint64_t type, std::string_view json) {
  Http2Link* link = c.http2();
  if (!link) return;
  std::string message;
  link->grpc().for_each([&](std::int32_t stream, GrpcCall& call) {
    const auto& subs = call.subscriptions;
    if (call.finished || std::find(subs.begin(), subs.end(), type) == subs.end()) return;
    if (message.empty()) {
      v1::Event ev;
      ev.set_type("push");
      ev.set_body(std::string(json));
      message = framed(ev);
    }
    send_unordered(c, Where{*link, stream, call}, message);
  });
}

void GrpcFront::send_unordered(Connection& c, Where w, const std::string& message) {
  GrpcCall& call = w.call;
  // As a WebSocket subscriber's: past 8 x EDRI_OUTPUT_BUFFER not taken,
  // the call ends rather than hold more for a client that does not read.
  if (call.body && call.body->held() > 8 * config_.output_buffer) {
    spdlog::info("ending gRPC call {} on connection {}: its client is too far behind on pushes", w.stream, c.id());
    call.finished = true;
    forget_deadline(call);
    ended(call, Code::Cancelled);
    return w.link.grpc_reset(w.stream);
  }
  send_message(w, message);
}

void GrpcFront::stream_frame(Connection& c, std::int32_t call_stream, std::string_view json) {
  GrpcCall* call = find_call(c, call_stream);
  if (!call || call->finished) return;
  v1::Event ev;
  ev.set_type("stream");
  ev.set_body(std::string(json));
  send_unordered(c, Where{*c.http2(), call_stream, *call}, framed(ev));
}

bool GrpcFront::stream_behind(Connection& c, std::int32_t call_stream) {
  const GrpcCall* call = find_call(c, call_stream);
  return call && call->body && call->body->held() > 0;
}

void GrpcFront::want_drain(Connection& c, std::int32_t call_stream) {
  GrpcCall* call = find_call(c, call_stream);
  if (!call) return;
  if (call->body && call->body->held() > 0) {
    call->body->wake_when_drained = true;
    return;
  }
  // Nothing waits: woken on the connection's next turn, as a WebSocket's
  // drain is.
  c.http2()->woken().push_back(call_stream);
  c.h2_output();
}

void GrpcFront::send_message(Where w, std::string framed_messages, std::string_view metadata) {
  w.call.bytes_out += framed_messages.size();
  if (w.call.body) {
    w.call.body->add(std::move(framed_messages));
    return w.link.grpc_resume(w.stream);
  }
  auto body = std::make_unique<QueuedBody>(w.stream, w.link.woken());
  body->add(std::move(framed_messages));
  w.call.body = body.get();
  w.link.grpc_respond(w.stream, grpc_head_lines(config_, w.call).append(metadata), std::move(body));
}

void GrpcFront::fail(Where w, Code code, std::string_view message) {
  GrpcCall& call = w.call;
  // The events taken before this message ran, or run: their answers go
  // first, as a Connect client is promised one per event.
  if (call.pending.empty() || call.failure) return finish(w, code, message);
  call.failure.emplace(code, std::string(message));
}

void GrpcFront::finish_if_drained(Where w) {
  GrpcCall& call = w.call;
  if (call.finished || !call.streams() || !call.pending.empty()) return;
  if (call.failure) return finish(w, call.failure->first, call.failure->second);
  // A client done sending that holds subscriptions still reads their
  // pushes and frames: the call lasts until it cancels.
  const bool subscribed = !call.subscriptions.empty() || streams_.call_subscribed(w.link.connection(), w.stream);
  if (call.client_done && call.reader.held() == 0 && !subscribed) return finish(w, Code::Ok, {});
  if (draining_) finish(w, Code::Unavailable, "the server is stopping; reconnect");
}

void GrpcFront::finish(Where w, Code code, std::string_view message) {
  GrpcCall& call = w.call;
  if (call.finished) return;
  call.finished = true;
  forget_deadline(call);
  // Before ended() hands the access record (and its trace) to the log.
  const std::string trace = call.body ? std::string() : grpc_trace_line(call);
  ended(call, code);
  std::string trailers = "grpc-status: " + std::to_string(static_cast<int>(code)) + "\r\n";
  if (!message.empty()) trailers.append("grpc-message: ").append(grpc::percent_encode(message)).append("\r\n");
  // What the client still sends is read and dropped from here on.
  w.link.grpc_consume(w.stream, call.reader.held());
  if (call.body) {
    call.body->end(std::move(trailers));
    return w.link.grpc_resume(w.stream);
  }
  // Trailers-Only: one HEADERS frame that ends the stream.
  w.link.grpc_respond(w.stream, std::string(grpc_accept_line(config_)) + trace + trailers, nullptr);
}

void GrpcFront::ended(GrpcCall& call, Code code) {
  const auto n = static_cast<std::size_t>(code);
  if (metrics_ && n < transport::kGrpcCodes) transport::bump_owned(metrics_->grpc_calls[n]);
  if (call_latency_ && !call.streams())
    transport::observe_latency_us(call_latency_ + std::size_t{call.call_row} * transport::kRouteLatencyCells,
                                  static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                                 std::chrono::steady_clock::now() - call.started)
                                                                 .count()));
  if (call.access && access_log_) access_log_->end(std::move(call.access), 200, call.bytes_out, static_cast<int>(code));
}

void GrpcFront::closed(Connection& c, std::int32_t stream) {
  Http2Link& link = *c.http2();
  GrpcCall* call = link.grpc().find(stream);
  if (!call) return;
  forget_deadline(*call);
  if (!call->finished) {  // the client went first
    call->finished = true;
    ended(*call, Code::Cancelled);
  }
  drop_subscriptions(c, link, *call);
  streams_.call_closed(c, stream);
}

void GrpcFront::connection_closed(Connection& c) {
  if (Http2Link* link = c.http2()) link->grpc().for_each([&](std::int32_t, GrpcCall& call) { forget_deadline(call); });
}

void GrpcFront::drop_subscriptions(Connection& c, Http2Link& link, GrpcCall& call) {
  for (const std::uint64_t type : call.subscriptions) {
    bool kept = false;
    link.grpc().for_each([&](std::int32_t, GrpcCall& other) {
      if (&other != &call &&
          std::find(other.subscriptions.begin(), other.subscriptions.end(), type) != other.subscriptions.end())
        kept = true;
    });
    if (!kept) commands_.unsubscribe(c, type);
  }
  call.subscriptions.clear();
}

void GrpcFront::drain(Connection& c) {
  draining_ = true;
  Http2Link* link = c.http2();
  if (!link) return;
  link->grpc().for_each([&](std::int32_t stream, GrpcCall& call) { finish_if_drained(Where{*link, stream, call}); });
}

void GrpcFront::set_deadline(Connection& c, std::int32_t stream, GrpcCall& call, std::chrono::nanoseconds timeout) {
  const auto at = std::chrono::steady_clock::now() + timeout;
  const bool earliest = deadlines_.empty() || at < deadlines_.begin()->first;
  call.deadline = deadlines_.emplace(at, CallKey{c.id(), c.generation(), stream});
  if (earliest) arm_timer();
}

void GrpcFront::forget_deadline(GrpcCall& call) {
  if (!call.deadline) return;
  deadlines_.erase(*call.deadline);
  call.deadline.reset();
}

void GrpcFront::arm_timer() {
  if (deadlines_.empty()) return timer_.cancel();
  const auto wait = deadlines_.begin()->first - std::chrono::steady_clock::now();
  timer_.expires_after(std::max(std::chrono::nanoseconds(1), std::chrono::nanoseconds(wait)));
}

void GrpcFront::on_timer() {
  const auto now = std::chrono::steady_clock::now();
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    const CallKey key = deadlines_.begin()->second;
    Connection* c = table_ ? table_->find(key.connection, key.generation) : nullptr;
    Http2Link* link = c ? c->http2() : nullptr;
    GrpcCall* call = link ? link->grpc().find(key.stream) : nullptr;
    if (!call || !call->deadline) {
      deadlines_.erase(deadlines_.begin());  // its call is gone
      continue;
    }
    finish(Where{*link, key.stream, *call}, Code::DeadlineExceeded, "the deadline (grpc-timeout) passed");
  }
  arm_timer();
}

}  // namespace edri::listener
