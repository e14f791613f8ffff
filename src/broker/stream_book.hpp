// StreamBook: the broker's live streams (docs/decisions/0018). The broker
// is the one process every publish and every listener reaches, and it is
// single-threaded, so it orders each stream's revisions: it applies each
// merge patch to the state, numbers it, keeps the last EDRI_STREAM_LOG
// patches for subscribers that resume, and sends each revision once to
// every listener that follows the stream. Which connection holds which
// revision is the listener's business (listener/stream_hub.hpp).
//
// When the broker dies its successor starts empty and learns the states
// back from the listeners (kControlStreamRecover): every stream anyone
// subscribes to is held by some listener, at its newest revision there.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "envelope/envelope.hpp"
#include "envelope/stream_patch.hpp"
#include "envelope/stream_record.hpp"
#include "runtime/config.hpp"
#include "transport/outbox.hpp"

namespace edri::broker {

class StreamBook {
 public:
  StreamBook(const Config& config, transport::Outbox& to_router, std::vector<transport::Outbox*> to_listener);

  // A control of codes 32..39 from a manager (through the router) or from
  // listener `listener`.
  void on_manager_control(const envelope::EnvelopeHeader& h, const envelope::StreamRecord& r);
  void on_listener_control(std::uint16_t listener, const envelope::EnvelopeHeader& h, const envelope::StreamRecord& r);
  // Listener `listener` (re)started: it follows nothing.
  void listener_reset(std::uint16_t listener);
  // This broker (re)started: asks the listeners what they follow; publishes
  // wait until they said, or until `give_up` (then served as they are).
  void start_recovery();
  void give_up_recovery() { finish_recovery(); }
  bool recovering() const { return waiting_ > 0; }

 private:
  struct Revision {
    std::uint64_t revision;
    std::int64_t ts;
    nlohmann::json patch;
  };
  struct Stream {
    envelope::StreamState state;
    std::uint64_t revision = 0;
    std::int64_t ts = 0;
    std::deque<Revision> log;     // the newest EDRI_STREAM_LOG patches, oldest first
    std::vector<bool> followers;  // by listener
  };

  void publish(const envelope::EnvelopeHeader& h, const envelope::StreamRecord& r);
  // `name` is at `revision` by `patch` (whose JSON is `text`), already
  // merged into its state: kept, and sent to its followers.
  void advance(std::string_view name, Stream& s, std::uint64_t revision, std::int64_t ts, nlohmann::json patch,
               const std::string& text);
  // A revision ordered elsewhere (kControlStreamApply, from the switch).
  void apply(const envelope::StreamRecord& r);
  void read(const envelope::EnvelopeHeader& h, std::string_view name);
  void unfollow(std::uint16_t listener, std::string_view name);
  void recover(std::uint16_t listener, const envelope::StreamRecord& r);
  // Every listener said (or gave up on): replays what was held, and sends
  // each follower whose revision was behind the newest its state.
  void finish_recovery();
  void listener_done(std::uint16_t listener);
  void resume(std::uint16_t listener, const envelope::EnvelopeHeader& h, const envelope::StreamRecord& r);
  Stream& stream(std::string_view name);
  // Sends `name`'s state to `listener`, for the listener (h null) or for
  // the connection of `h`.
  void send_state(std::uint16_t listener, std::string_view name, const Stream& s,
                  const envelope::EnvelopeHeader* h = nullptr);
  void send_record(std::uint16_t listener, std::uint64_t code, const envelope::StreamRecord& r,
                   const envelope::EnvelopeHeader* h);
  // The publisher's answer (through the router), when it asked for one.
  void answer(const envelope::EnvelopeHeader& h, int status, const nlohmann::json& body);

  std::size_t log_size_;
  std::size_t max_bytes_;
  // Joined to other instances: the switch orders, this book fans out.
  bool ordered_by_switch_;
  transport::Outbox& to_router_;
  std::vector<transport::Outbox*> to_listener_;
  std::unordered_map<std::string, Stream> streams_;
  // Recovery: listeners not yet done, what each reported, what waits.
  std::size_t waiting_ = 0;
  std::vector<bool> done_;
  struct Reported {
    std::uint16_t listener;
    std::string name;
    std::uint64_t revision;
  };
  std::vector<Reported> reported_;
  struct Held {
    std::int32_t listener;  // -1: from a manager
    std::vector<std::byte> record;
  };
  std::vector<Held> held_;

 public:
  // Holds a record while recovering; false when not recovering.
  bool hold(std::int32_t listener, std::span<const std::byte> record);
  // Where held records go when recovery ends (the broker's own readers).
  std::function<void(std::int32_t listener, std::span<const std::byte> record)> replay;
};

}  // namespace edri::broker
