// StreamHub: live streams in a listener (docs/streams.md, decision 0018).
//
// The broker orders each stream's revisions and sends each one here once
// (a listener that has subscribers of the stream follows it). The hub
// keeps the stream's state and every subscriber's revision, and at the
// end of each loop turn sends what arrived in it: the patches of the turn
// composed into one, encoded once, the same bytes written to every
// subscriber that is current. A subscriber whose socket has not taken
// what it was sent before (its connection has a backlog) gets nothing
// then: the patch is composed into the one it already waits for, and sent
// when its output drains (Connection::live_want_drain). So a slow client
// costs one pending patch per stream whatever the rate, and the pace of
// its frames is the pace it reads at: no timer per connection.
//
// A subscriber's frames are contiguous: each patch's `from` is the
// revision it holds. Where no patch can take it there (a gap, a patch that
// does not compose, a broker that restarted with another state) it gets a
// snapshot, and contiguity starts again from that.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "envelope/envelope.hpp"
#include "envelope/stream_record.hpp"
#include "listener/connection.hpp"
#include "listener/event_sender.hpp"
#include "listener/websocket_deflate.hpp"
#include "runtime/config.hpp"
#include "transport/shm_layout.hpp"

namespace edri::listener {

class StreamHub {
 public:
  StreamHub(const Config& config, EventSender& sender) : config_(config), sender_(sender) {}
  // Set once, before any connection: where frames sent and Server-Sent
  // Events streams opened are counted.
  void set_metrics(transport::ListenerMetricsHeader& metrics) { metrics_ = &metrics; }

  // {"command":"stream.subscribe","stream":S[,"since":R]} and
  // {"command":"stream.unsubscribe","stream":S}: nullopt when taken, else
  // (status, detail) of the error answer. `call`: the gRPC Connect call
  // that sent it, or 0 for the WebSocket itself.
  std::optional<std::pair<int, std::string>> ws_command(Connection& c, std::string_view command,
                                                        const nlohmann::json& msg, std::int32_t call = 0);
  // The client of an HTTP/2 stream that subscribes (a gRPC Connect call,
  // Server-Sent Events) took all it was sent; the stream ended.
  void call_drained(Connection& c, std::int32_t call);
  void call_closed(Connection& c, std::int32_t call);
  // Whether Connect call `call` of `c` holds a subscription.
  bool call_subscribed(const Connection& c, std::int32_t call) const;
  // A Server-Sent Events client of `name`, its response head already out;
  // `call`: its HTTP/2 stream, or 0 (the connection is the stream).
  void subscribe_events(Connection& c, std::string_view name, std::optional<std::uint64_t> since,
                        std::int32_t call = 0);
  void closed(Connection& c);
  // `c` took all its output: what waits for it goes out.
  void drained(Connection& c);
  // kControlStream* from the broker.
  void on_control(const envelope::EnvelopeView& v);
  // End of the loop turn: each stream's patches of the turn go out. While
  // the listener is `behind` the broker (a full batch read, more waiting)
  // they wait, composed, for a later turn's, kHoldTurns in a row at most:
  // one frame per stream rather than one per revision is how the listener
  // catches up (decision 0043).
  void end_turn(bool behind);

 private:
  struct Subscriber {
    Subscriber(Connection* c, bool events, std::int32_t on_call) : conn(c), sse(events), call(on_call) {}
    Connection* conn;
    bool sse;
    std::int32_t call;     // the gRPC Connect call it is, or 0
    bool awaiting = true;  // its first frame is not out yet
    std::optional<std::uint64_t> since;
    std::uint64_t revision = 0;  // the revision its client holds (after what was sent)
    // Behind: what it missed, composed; or a snapshot is owed.
    bool owes_snapshot = false;
    bool has_pending = false;
    nlohmann::json pending;
    std::uint64_t pending_to = 0;
  };
  struct Stream {
    bool following = false;  // false: asked the broker, no state yet
    nlohmann::json state = nlohmann::json::object();
    std::uint64_t revision = 0;
    std::int64_t ts = 0;
    // The turn's patches, not yet sent: from `emitted` to `revision`.
    std::uint64_t emitted = 0;
    bool dirty = false;
    bool batch_exact = true;
    nlohmann::json batch;
    // The batch's JSON while it is one patch: the broker's text, sent as
    // it came rather than serialized again.
    std::string batch_text;
    std::vector<Subscriber> subscribers;
    // The snapshot frames of `snapshot_revision`, encoded once.
    std::uint64_t snapshot_revision = UINT64_MAX;
    struct {
      SharedMessage ws;
      SharedFrame sse;
    } snapshot;
  };
  // A frame as a WebSocket message (compressed per window where asked; a
  // gRPC Connect call takes its JSON) or as a Server-Sent Event: the one
  // its subscriber's kind needs. Its connection sends it on whatever
  // carries the subscriber (Connection::live_send).
  struct Frame {
    SharedMessage ws;
    SharedFrame sse;
  };

  // A subscription: a stream's name, and the call it was made on (0: the
  // connection's own).
  using Held = std::pair<std::string, std::int32_t>;

  void subscribe(Connection& c, std::string_view name, std::optional<std::uint64_t> since, bool sse,
                 std::int32_t call = 0);
  void unsubscribe(Connection& c, std::string_view name, std::int32_t call);
  Subscriber* find(Stream& s, const Connection& c, std::int32_t call);
  // What `sub` is owed goes out (its client took its output).
  void drain(const std::string& name, Stream& s, Subscriber& sub);
  void send(const Frame& f, Subscriber& sub);
  bool behind(Subscriber& sub);
  void want_drain(Subscriber& sub);
  // Serves a subscriber's first frame, the stream being followed.
  void serve(const std::string& name, Stream& s, Subscriber& sub);
  void on_state(const envelope::EnvelopeView& v, const envelope::StreamRecord& r);
  void on_patch(const envelope::EnvelopeView& v, const envelope::StreamRecord& r);
  // A targeted answer to a resume: for one subscriber only.
  void on_answer(const envelope::EnvelopeHeader& h, const envelope::StreamRecord& r, bool state);
  void recover_all();
  // Every stream's patches since the last emission go out.
  void emit();
  void emit(const std::string& name, Stream& s);
  // Queues one subscriber's missed patch for when its output drains.
  void owe(Subscriber& sub, const nlohmann::json& patch, bool exact, std::uint64_t from, std::uint64_t to);
  // The frames: shared where they can be, per subscriber where they cannot.
  Frame snapshot_frame(const std::string& name, Stream& s, bool sse);
  static Frame patch_frame(std::string_view name, std::uint64_t from, std::uint64_t to, std::string_view patch,
                           std::int64_t ts, bool sse);
  static Frame frame(std::string json, std::string_view event, std::uint64_t id, bool sse);
  void send_to_broker(std::uint64_t code, const envelope::StreamRecord& r, const Connection* c = nullptr);

  const Config& config_;
  EventSender& sender_;
  transport::ListenerMetricsHeader* metrics_ = nullptr;
  std::unordered_map<std::string, Stream> streams_;
  std::unordered_map<Connection*, std::vector<Held>> by_connection_;
  std::vector<std::string> dirty_;
  std::uint64_t pass_ = 0;  // emit() passes: a connection's backlog is read once per pass
  static constexpr int kHoldTurns = 32;
  int held_turns_ = 0;  // turns in a row whose patches waited (end_turn)
  // A frame sent may close its connection at once (too far behind), and
  // closed() would then change what is being walked: while busy, closes
  // wait in closing_ until the walk is over.
  bool busy_ = false;
  std::vector<Connection*> closing_;
  class Busy {
   public:
    explicit Busy(StreamHub& hub) : hub_(hub), outer_(hub.busy_) { hub.busy_ = true; }
    ~Busy();
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;

   private:
    StreamHub& hub_;
    bool outer_;
  };
};

}  // namespace edri::listener
