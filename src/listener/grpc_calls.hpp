// GrpcCalls: the gRPC calls of one HTTP/2 connection (docs/grpc.md), kept
// by its Http2Link and driven by the GrpcFront. A call is an HTTP/2 stream
// whose body is a sequence of gRPC messages and whose answer is messages
// then trailers. Each event a call sends gets a sequence number of its own
// (the high bit set, so it never meets an HTTP/2 stream's slot, whose
// number is the stream id below 2^31), and its answer waits in the call
// until the answers before it went: answers leave in the order events came.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grpc/framing.hpp"
#include "grpc/service_catalog.hpp"
#include "grpc/status.hpp"
#include "http/request_parser.hpp"
#include "listener/access_line.hpp"
#include "listener/queued_body.hpp"

namespace edri::listener {

// A call's place among every call's deadline in a listener.
struct CallKey {
  std::uint32_t connection;
  std::uint32_t generation;
  std::int32_t stream;
};
using Deadlines = std::multimap<std::chrono::steady_clock::time_point, CallKey>;

struct GrpcCall {
  // Call and Connect: edri.v1.Edri's; Typed: a plugin's service's unary
  // method; Reflection: ServerReflectionInfo, a stream of questions.
  enum class Method : std::uint8_t { Call, Connect, HealthCheck, Typed, Reflection };
  struct Pending {
    std::uint32_t seq = 0;
    std::uint64_t id = 0;  // the client's Event.id
    std::string type;      // the event's type, echoed
    std::chrono::steady_clock::time_point opened;
    bool ready = false;
    std::string framed;  // the answer, as a framed message, once ready
  };

  GrpcCall(Method m, std::size_t max_message) : method(m), reader(max_message) {}
  // Empty as a new call is, its buffers kept (a large one freed): what an
  // ended call held goes when it ends, not when its node is reused.
  void clear();
  // Many messages each way (Connect, Reflection), or one (the rest).
  bool streams() const { return method == Method::Connect || method == Method::Reflection; }

  Method method;
  std::chrono::steady_clock::time_point started;        // when its HEADERS came (edri_grpc_call_duration_seconds)
  const grpc::ServiceCatalog::Method* typed = nullptr;  // a Typed call's
  std::uint32_t call_row = 0;                           // its latency row (plugin/call_rows.hpp)
  grpc::MessageReader reader;
  http::HttpRequest head;  // the call's metadata: header and cookie fields of its events
  std::deque<Pending> pending;
  std::vector<std::uint64_t> subscriptions;  // notification types subscribed on this call
  std::optional<Deadlines::iterator> deadline;
  std::size_t messages = 0;    // taken from the client so far
  bool client_done = false;    // the client half-closed
  bool gzip_in = false;        // its messages may come gzipped (grpc-encoding: gzip)
  bool gzip_out = false;       // its answers may go gzipped (grpc-accept-encoding names gzip)
  QueuedBody* body = nullptr;  // the answer's body once its head went (owned by the session)
  bool finished = false;       // ended: its trailers queued, or reset or refused (GrpcFront::ended counted it)
  bool taking = false;         // GrpcFront is taking its messages
  // When its body last brought bytes, and whether a message it left
  // unfinished for EDRI_BODY_TIMEOUT reset it.
  std::chrono::steady_clock::time_point last_input{};
  bool stalled = false;
  // It took no event while its connection ran EDRI_MAX_PIPELINE of them:
  // woken when one ends.
  bool starved = false;
  // A message it could not take ends it once the answers to the events
  // before that message went (GrpcFront::fail): its status and message.
  std::optional<std::pair<grpc::Code, std::string>> failure;
  // The access log's record (EDRI_ACCESS_LOG), until its line is written;
  // and the bytes of the messages sent (framed).
  std::unique_ptr<AccessRecord> access;
  std::uint64_t bytes_out = 0;
};

class GrpcCalls {
 public:
  static constexpr std::uint32_t kSeqBit = 0x80000000u;
  static bool is_call_seq(std::uint32_t seq) { return (seq & kSeqBit) != 0; }

  GrpcCall& open(std::int32_t stream, GrpcCall::Method m, std::size_t max_message);
  GrpcCall* find(std::int32_t stream);
  // A new event of `call`'s: its answer's place, in order; its sequence
  // number.
  std::uint32_t open_event(std::int32_t stream, GrpcCall& call, std::uint64_t id, std::string type);
  // Forgets event `seq`, the last one opened on `call` (an event whose
  // answer is not a message of its own).
  void drop_event(GrpcCall& call, std::uint32_t seq);
  // The stream and pending answer of event `seq`, or nulls (an event of
  // a call since gone is forgotten then: its answer has nowhere to go).
  std::pair<GrpcCall*, GrpcCall::Pending*> find_event(std::uint32_t seq, std::int32_t& stream);
  // The answers at the front of `call` that are ready leave it (to
  // `out`), their numbers forgotten.
  void take_ready(GrpcCall& call, std::string& out);
  // Forgets `stream`'s call; its events still running are counted until
  // their answers come (or are overdue): a reset does not stop a handler.
  void close(std::int32_t stream);
  bool waiting() const { return !seqs_.empty() || !gone_.empty(); }
  // Events sent on and not yet answered to the client, their calls reset
  // or not.
  std::size_t running() const { return seqs_.size() + gone_.size(); }
  template <class F>
  void for_each_overdue(std::chrono::steady_clock::time_point cutoff, F&& f) {
    for (auto& [stream, call] : calls_)
      for (const auto& p : call.pending)
        if (!p.ready && p.opened < cutoff) f(p.seq);
    for (const auto& [seq, opened] : gone_)
      if (opened < cutoff) f(seq);
  }
  template <class F>
  void for_each(F&& f) {
    for (auto& [stream, call] : calls_) f(stream, call);
  }

 private:
  using Calls = std::unordered_map<std::int32_t, GrpcCall>;
  // Ended calls' nodes kept for the next ones (as ServerSession keeps its
  // streams'): a unary call then allocates little of its own.
  static constexpr std::size_t kSpareCalls = 4;
  Calls calls_;
  std::vector<Calls::node_type> spare_;
  std::unordered_map<std::uint32_t, std::int32_t> seqs_;  // event -> stream
  // Events of closed calls whose handlers still run -> when they started.
  std::unordered_map<std::uint32_t, std::chrono::steady_clock::time_point> gone_;
  std::uint32_t next_ = 0;
};

}  // namespace edri::listener
