#include "listener/grpc_front.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include <edri/problem.hpp>

#include "edri/v1/edri.pb.h"
#include "grpc/framing.hpp"
#include "grpc/health/v1/health.pb.h"
#include "grpc/timeout.hpp"
#include "http/content_coding.hpp"
#include "http/field_text.hpp"
#include "listener/grpc_coding.hpp"
#include "listener/header_lines.hpp"
#include "listener/http2_link.hpp"
#include "listener/json_value.hpp"

namespace edri::listener {

namespace env = edri::envelope;
using grpc::Code;
using Method = GrpcCall::Method;

namespace {

bool is_reflection(std::string_view path) {
  return path == "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo" ||
         path == "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";
}

// Whether `call` sends events on (a health check and reflection are
// answered here).
bool opens_event(const GrpcCall& call) {
  return call.method == GrpcCall::Method::Call || call.method == GrpcCall::Method::Connect ||
         call.method == GrpcCall::Method::Typed;
}

// A handler's response headers as a typed call's metadata, without those
// gRPC keeps for itself (the session lowercases names and drops the
// connection-specific ones, as for any HTTP/2 answer).
std::string metadata_lines(const env::EnvelopeView* v) {
  std::string out;
  if (v)
    append_header_lines(out, *v, [](std::string_view name) {
      return http::iequals(name, "content-type") || http::iequals(name, "content-length") ||
             (name.size() >= 5 && http::iequals(name.substr(0, 5), "grpc-"));
    });
  return out;
}

// What a refusal tells the client in grpc-message: for fields that failed,
// the problem itself (which names them); otherwise its detail.
std::string refusal_message(int status, std::string_view problem) {
  if (status == 400 || status == 422) return std::string(problem);
  const auto j = nlohmann::json::parse(problem, nullptr, false);
  if (j.is_object() && j.contains("detail") && j["detail"].is_string()) return j["detail"].get<std::string>();
  return std::string(problem);
}

}  // namespace

GrpcCall* GrpcFront::find_call(Connection& c, std::int32_t stream) {
  Http2Link* link = c.http2();
  return link ? link->grpc().find(stream) : nullptr;
}

std::string GrpcFront::framed(const google::protobuf::MessageLite& m) {
  const std::size_t n = m.ByteSizeLong();
  std::string out;
  out.reserve(grpc::kPrefixBytes + n);
  grpc::frame_prefix(out, n);
  out.resize(grpc::kPrefixBytes + n);
  m.SerializeWithCachedSizesToArray(reinterpret_cast<std::uint8_t*>(out.data() + grpc::kPrefixBytes));
  return out;
}

GrpcFront::GrpcFront(const Config& config, const grpc::ServiceCatalog& services, Commands& commands, StreamHub& streams,
                     EventLoop& events)
    : config_(config), services_(services), commands_(commands), streams_(streams), timer_(events, [this] {
        on_timer();
      }) {}

void GrpcFront::open(Connection& c, std::int32_t stream, http::HttpRequest& head) {
  Http2Link& link = *c.http2();
  const std::string_view path = head.target;
  const grpc::ServiceCatalog::Method* typed = services_.find(path);
  const Method m = path == "/edri.v1.Edri/Connect"          ? Method::Connect
                   : path == "/grpc.health.v1.Health/Check" ? Method::HealthCheck
                   : is_reflection(path)                    ? Method::Reflection
                   : typed                                  ? Method::Typed
                                                            : Method::Call;
  GrpcCall& call = link.grpc().open(stream, m, config_.max_body_size);
  call.typed = typed;
  call.call_row = commands_.call_rows().method(path);
  if (access_log_) {
    call.access = access_log_->begin("grpc", llhttp_method_name(head.method), path,
                                     commands_.gate().client_address(c.peer(), head), &head);
    if (typed) call.access->domain = access_log_->domain_of(typed->event);
  }
  const Where w{link, stream, call};
  if (m == Method::Call && path != "/edri.v1.Edri/Call")
    return finish(w, Code::Unimplemented, "no method " + std::string(path) + " on this server");
  if (head.method != HTTP_POST) return finish(w, Code::Unimplemented, "gRPC calls are POST requests");
  if (!agree_encodings(config_, head, call))
    return finish(w, Code::Unimplemented,
                  "grpc-encoding " + std::string(head.header("grpc-encoding")) + " is not supported");
  if (const std::string_view t = head.header("grpc-timeout"); !t.empty()) {
    const auto timeout = grpc::parse_timeout(t);
    if (!timeout) return finish(w, Code::InvalidArgument, "a malformed grpc-timeout: " + std::string(t));
    set_deadline(c, stream, call, *timeout);
  }
  // Swapped, not moved: the session's stream keeps the buffers of the
  // head this call's node held before, for its next request.
  std::swap(call.head, head);
}

void GrpcFront::body(Connection& c, std::int32_t stream, std::string_view bytes, bool end) {
  Http2Link& link = *c.http2();
  GrpcCall* call = link.grpc().find(stream);
  if (!call) return;
  if (end) call->client_done = true;
  if (call->access) call->access->bytes_in += bytes.size();
  if (call->finished || call->failure) return link.grpc_consume(stream, bytes.size());  // read and dropped
  call->reader.append(bytes);
  take_messages(c, Where{link, stream, *call});
  // Nothing read and no end: the client took what the call was sent (its
  // body woke it); what its live streams owe goes now.
  if (bytes.empty() && !end) streams_.call_drained(c, stream);
}

void GrpcFront::take_messages(Connection& c, Where w) {
  GrpcCall& call = w.call;
  // A Connect call takes its next event only while fewer than
  // EDRI_MAX_PIPELINE are unanswered; the rest wait in the stream's window.
  // Nor while its answers wait for a client that does not read them
  // (EDRI_OUTPUT_BUFFER): it takes more once they went.
  auto room = [&] {
    if (call.method != Method::Connect) return true;
    if (call.body && call.body->held() > config_.output_buffer) {
      call.body->wake_when_drained = true;
      return false;
    }
    // EDRI_MAX_PIPELINE bounds the connection's events, its reset calls'
    // included: the rest wait in the window until one ends.
    if (w.link.full()) call.starved = true;
    return !draining_ && !call.starved;
  };
  // Re-entered from an answer given while it runs (a refusal is answered
  // at once): the loop already running takes the rest, in order, and the
  // stack stays one level deep however many events wait.
  if (call.taking) return;
  // A call that would start past EDRI_MAX_PIPELINE: as an HTTP/2 request
  // then, REFUSED_STREAM (gRPC clients may retry it).
  if (opens_event(call) && call.messages == 0 && w.link.full()) {
    call.finished = true;
    ended(call, Code::Unavailable);  // what a client makes of REFUSED_STREAM
    return w.link.grpc_refuse(w.stream);
  }
  call.taking = true;
  std::string_view message;
  while (!call.finished && !call.failure && room()) {
    const auto next = call.reader.next(message);
    if (next == grpc::MessageReader::Next::NeedMore) break;
    if (next == grpc::MessageReader::Next::Compressed)
      take_compressed(c, w, message);
    else if (next == grpc::MessageReader::Next::TooLarge)
      fail(w, Code::ResourceExhausted, "a message larger than EDRI_MAX_BODY_SIZE");
    else
      on_message(c, w, message);
  }
  call.taking = false;
  w.link.grpc_consume(w.stream, call.reader.take_consumed());
  if (call.failure) {
    w.link.grpc_consume(w.stream, call.reader.held());  // read and dropped
    call.reader.clear();
    return finish_if_drained(w);
  }
  if (call.finished || !call.client_done) return;
  if (call.reader.held() > 0 && room()) return fail(w, Code::Internal, "the stream ended inside a message");
  if (!call.streams() && call.messages == 0) return finish(w, Code::Internal, "a unary call ended without its message");
  finish_if_drained(w);
}

void GrpcFront::take_compressed(Connection& c, Where w, std::string_view bytes) {
  if (!w.call.gzip_in) return fail(w, Code::Internal, "a compressed message, and no grpc-encoding was agreed");
  // Bounded after inflation: a small message that inflates past the limit
  // costs the limit, no more.
  std::string message;
  switch (http::gunzip(bytes, config_.max_body_size, message)) {
    case http::Inflated::Ok: return on_message(c, w, message);
    case http::Inflated::TooLarge: return fail(w, Code::ResourceExhausted, "a message larger than EDRI_MAX_BODY_SIZE");
    case http::Inflated::Corrupt: break;
  }
  fail(w, Code::Internal, "a compressed message that is not gzip");
}

void GrpcFront::on_message(Connection& c, Where w, std::string_view bytes) {
  GrpcCall& call = w.call;
  if (++call.messages > 1 && !call.streams()) return finish(w, Code::Internal, "a unary call takes one message");
  if (call.method == Method::HealthCheck) return health(w, bytes);
  if (call.method == Method::Reflection) return reflection(w, bytes);
  if (call.method == Method::Typed) return typed(c, w, bytes);
  v1::Event ev;
  if (!ev.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return fail(w, Code::InvalidArgument, "a message that is not an edri.v1.Event");
  event(c, w, ev);
}

void GrpcFront::health(Where w, std::string_view bytes) {
  ::grpc::health::v1::HealthCheckRequest req;
  if (!req.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return finish(w, Code::InvalidArgument, "a message that is not a grpc.health.v1.HealthCheckRequest");
  // The server as a whole (""), or its one service by name.
  if (!req.service().empty() && !services_.serves(req.service()))
    return finish(w, Code::NotFound, "no service " + req.service() + " on this server");
  ::grpc::health::v1::HealthCheckResponse res;
  res.set_status(draining_ ? ::grpc::health::v1::HealthCheckResponse::NOT_SERVING
                           : ::grpc::health::v1::HealthCheckResponse::SERVING);
  send_message(w, framed(res));
  finish(w, Code::Ok, {});
}

void GrpcFront::reflection(Where w, std::string_view bytes) {
  std::string response;
  if (!services_.reflect(bytes, response))
    return finish(w, Code::InvalidArgument, "a message that is not a ServerReflectionRequest");
  std::string out;
  grpc::frame(out, response);
  send_message(w, std::move(out));
}

void GrpcFront::typed(Connection& c, Where w, std::string_view bytes) {
  const grpc::ServiceCatalog::Method& m = *w.call.typed;
  nlohmann::json fields;
  std::string error;
  if (!services_.request_json(m, bytes, config_.max_json_depth, fields, error))
    return finish(w, Code::InvalidArgument, error);
  const std::uint32_t seq = w.link.grpc().open_event(w.stream, w.call, 0, m.event);
  send_command(c, seq, *commands_.for_event(m.event), fields, w.call);
}

bool GrpcFront::send_command(Connection& c, std::uint32_t seq, const Commands::Command& cmd, nlohmann::json& fields,
                             const GrpcCall& call, const http::HttpRequest* from) {
  // grpc-timeout travels with the event: its handler sees it as
  // Request::deadline, and does not start once it passed.
  std::uint64_t budget = 0;
  if (call.deadline) {
    const auto left = (*call.deadline)->first - std::chrono::steady_clock::now();
    budget = static_cast<std::uint64_t>(std::max<std::int64_t>(1, std::chrono::nanoseconds(left).count()));
  }
  const std::string_view trace = call.access && call.access->traced ? call.access->trace_section : std::string_view();
  const Commands::Origin origin{"grpc", call.head.target, from ? *from : call.head, trace};
  auto refused = commands_.send(c, seq, cmd, fields, origin, budget);
  if (refused) deliver(c, seq, refused->status, refused->content_type, refused->problem, nullptr, true);
  return !refused;
}

void GrpcFront::event(Connection& c, Where w, v1::Event& ev) {
  const std::uint32_t seq = w.link.grpc().open_event(w.stream, w.call, ev.id(), ev.type());
  auto refuse = [&](int status, std::string problem) {
    deliver(c, seq, status, "application/problem+json", problem, nullptr, true);
  };
  // The body is the command's fields, as a WebSocket message's are: a
  // JSON object, its depth measured before it is parsed. No body is no
  // fields, made without a parser.
  nlohmann::json fields = nlohmann::json::object();
  if (const std::string_view text = ev.body(); !text.empty()) {
    if (!RequestValidator::depth_ok(text, config_.max_json_depth, "body", validated_))
      return refuse(422, RequestValidator::problem_body(validated_));
    fields = nlohmann::json::parse(text, nullptr, false);
    if (fields.is_discarded() || !fields.is_object())
      return refuse(422, Commands::invalid("body", "must be a JSON object").problem);
  }
  if (ev.type() == "stream.subscribe" || ev.type() == "stream.unsubscribe") {
    w.link.grpc().drop_event(w.call, seq);
    return live_stream(c, w, ev, fields);
  }
  const Commands::Command* cmd = commands_.find(ev.type());
  if (!cmd) return refuse(404, problem_json(404, "unknown command " + ev.type()));
  // A Call's line names the domain of its event (a Connect's events may
  // go to several: its first's).
  if (w.call.access && w.call.access->domain.empty()) w.call.access->domain = access_log_->domain_of(cmd->event);
  const bool subscription = cmd->kind != Commands::Command::Kind::Event;
  if (subscription && w.call.method != Method::Connect)
    return refuse(400, problem_json(400, "subscriptions are made on Connect, where their pushes arrive"));
  // Metadata: the call's, then the Event's own (names lowercased, as
  // HTTP/2 sends them).
  const http::HttpRequest* from = &w.call.head;
  if (!ev.meta().empty()) {
    with_meta_.headers = w.call.head.headers;
    for (const auto& [k, v] : ev.meta()) with_meta_.headers.emplace_back(http::lowered(k), v);
    from = &with_meta_;
  }
  if (!send_command(c, seq, *cmd, fields, w.call, from) || !subscription) return;
  auto& subs = w.call.subscriptions;
  std::erase(subs, cmd->type);
  if (cmd->kind == Commands::Command::Kind::Subscribe) subs.push_back(cmd->type);
}

void GrpcFront::live_stream(Connection& c, Where w, const v1::Event& ev, const nlohmann::json& fields) {
  const std::uint32_t seq = w.link.grpc().open_event(w.stream, w.call, ev.id(), ev.type());
  if (ev.type() == "stream.subscribe")
    if (auto gated = commands_.admit(c, Commands::Origin{"grpc", w.call.head.target, w.call.head}, ev.type(), fields))
      return deliver(c, seq, gated->status, gated->content_type, gated->problem, nullptr, true);
  auto refused = w.call.method == Method::Connect
                     ? streams_.ws_command(c, ev.type(), fields, w.stream)
                     : std::optional<std::pair<int, std::string>>{{400, "live streams are followed on Connect"}};
  if (!refused) return w.link.grpc().drop_event(w.call, seq);
  deliver(c, seq, refused->first, "application/problem+json", problem_json(refused->first, refused->second), nullptr,
          true);
}

void GrpcFront::answer(Connection& c, const env::EnvelopeView& v, std::string_view body) {
  const auto& h = v.header;
  deliver(c, h.origin_stream, h.status, v.text(env::SectionType::ContentType), body, &v,
          (h.flags & env::kFlagProblem) != 0);
}

void GrpcFront::refused(Connection& c, std::uint32_t seq, int status, std::string_view detail) {
  deliver(c, seq, status, "application/problem+json", problem_json(status, detail), nullptr, true);
}

void GrpcFront::deliver(Connection& c, std::uint32_t seq, int status, std::string_view content_type,
                        std::string_view body, const env::EnvelopeView* v, bool refusal) {
  Http2Link* link = c.http2();
  if (!link) return;
  std::int32_t stream = 0;
  auto [call, pending] = link->grpc().find_event(seq, stream);
  link->wake_starved();                    // the event ended: room for another
  if (!pending || call->finished) return;  // a late answer: the call ended
  const Where w{*link, stream, *call};
  if (call->method != Method::Connect && refusal && status >= 400)
    return finish(w, grpc::code_for_refusal(status), refusal_message(status, body));
  if (call->method == Method::Typed) {
    link->grpc().drop_event(*call, seq);
    return typed_answer(w, status, content_type, body, v);
  }
  v1::Event ev;
  ev.set_type(pending->type);
  ev.set_id(pending->id);
  ev.set_status(status);
  // As over WebSocket: JSON as it is, any other body as a JSON string.
  append_json_value(*ev.mutable_body(), content_type, body);
  if (v && v->has(env::SectionType::Headers)) {
    env::KeyValueReader kv(v->section(env::SectionType::Headers));
    std::string_view k, val;
    while (kv.next(k, val)) (*ev.mutable_meta())[std::string(k)] = std::string(val);
  }
  pending->framed = coded_message(config_, *call, framed(ev));
  pending->ready = true;
  std::string out;
  link->grpc().take_ready(*call, out);
  if (!out.empty()) send_message(w, std::move(out));
  if (call->method == Method::Call) return finish(w, Code::Ok, {});
  take_messages(c, w);  // room for the events that waited
  finish_if_drained(w);
}

void GrpcFront::typed_answer(Where w, int status, std::string_view content_type, std::string_view body,
                             const env::EnvelopeView* v) {
  if (status >= 400) return finish(w, grpc::code_for_answer(status), refusal_message(status, body));
  const std::string& output = w.call.typed->output->full_name();
  if (!body.empty() && !is_json_type(content_type))
    return finish(w, Code::Internal,
                  "the handler answered " + std::string(content_type) + ", not the JSON of a " + output);
  std::string message, error;
  if (!services_.answer_message(*w.call.typed, body, message, error)) return finish(w, Code::Internal, error);
  std::string out;
  grpc::frame(out, message);
  send_message(w, coded_message(config_, w.call, std::move(out)), metadata_lines(v));
  finish(w, Code::Ok, {});
}

}  // namespace edri::listener
