// ProcessLoop: the single-threaded loop every edri child runs.
//
// One EventLoop (epoll) carries sockets, timers, signals and the process's
// doorbell; around it the loop drains every inbound channel in one batch per
// turn and, when a turn found nothing to do for as many turns as its spin
// budget allows (SpinBudget: none unless the processes have cores of their
// own), tells its producers it is going to sleep and blocks in epoll_wait
// (protocol: shm_layout.hpp). While the pipeline is busy no process makes a system call
// per message.
//
// A loop may host guests: the loops of other slots run by the same thread
// (a domain run inside the listener, EDRI_LISTENER_DOMAINS). Each keeps
// its slot, channels and doorbell; they share the host's EventLoop, take
// their turns after the host's and sleep only when every one of them found
// nothing, so a record between host and guest makes no wake-up.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "runtime/config.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/placement.hpp"
#include "transport/blob_arena.hpp"
#include "transport/outbox.hpp"
#include "transport/segment.hpp"
#include "transport/topology.hpp"

namespace edri {

// How long a process waits, after the successor of a process its requests
// went through has started serving, before it answers 503 for those sent
// before the death and still unanswered (SuccessorWatch). Most of them are
// not lost: the dead process had passed them on, and their answers come
// back through its successor. What is still missing after this is lost.
inline constexpr std::chrono::milliseconds kLostAnswerGrace{750};

class ProcessLoop {
 public:
  using RecordHandler = std::function<void(std::span<const std::byte>)>;

  ProcessLoop(const transport::Segment& segment, const transport::Topology& topology, std::uint32_t slot,
              const std::vector<int>& doorbell_fds, const Config& config, std::uint32_t spin_polls);
  // A guest of `host` for `slot`: run by host.run(), stopped with it (the
  // host alone takes the stop signals). The host outlives its guests.
  ProcessLoop(ProcessLoop& host, std::uint32_t slot, const Config& config);
  ~ProcessLoop();
  ProcessLoop(const ProcessLoop&) = delete;
  ProcessLoop& operator=(const ProcessLoop&) = delete;

  EventLoop& events() { return *events_; }
  const transport::Segment& segment() const { return segment_; }
  std::uint32_t slot() const { return slot_; }
  const transport::Topology& topology() const { return topology_; }

  // Records arriving from `producer_slot` go to `handler`.
  void on_records_from(std::uint32_t producer_slot, RecordHandler handler);
  // The outbox towards `consumer_slot`; throws if there is no such channel.
  transport::Outbox& outbox_to(std::uint32_t consumer_slot);
  // Called once per turn after inbound channels were drained, before the
  // outboxes are flushed (listeners write their sockets here). True: it
  // left work for the next turn, which then comes before any sleep.
  void after_drain(std::function<bool()> hook) { after_drain_ = std::move(hook); }
  // Whether this turn read a full batch from some channel: more records
  // wait there, and the next turn comes before any sleep.
  bool behind() const { return behind_; }
  // Called on SIGTERM/SIGINT; the default stops the loop.
  void on_stop_signal(std::function<void()> hook) { on_stop_signal_ = std::move(hook); }
  // Called on SIGUSR1 (the supervisor passes it on): reopen log files.
  // Each hook added is called (the listener's access log, the tracers of
  // the domains it runs).
  void on_reopen_signal(std::function<void()> hook) { on_reopen_signal_.push_back(std::move(hook)); }
  // Called on SIGUSR2 (the supervisor's, to a generation it replaced on
  // reload): finish what is held, taking nothing new; ignored when unset.
  void on_replaced_signal(std::function<void()> hook) { on_replaced_signal_ = std::move(hook); }
  // Called with the slot of another process that died (the supervisor
  // counted it and rang our doorbell), before anything it handled is
  // answered by its successor: the caller answers for what died with it.
  void on_peer_death(std::function<void(std::uint32_t slot)> hook);
  // Handles what `producer_slot` has sent so far, out of turn, batch after
  // batch until a batch is not full: a dead producer's last words before
  // deciding what it left unanswered, or the notices a live one wrote
  // before a record that just came from elsewhere. Never a ring whose
  // reading is under way (refused, logged).
  void drain_from(std::uint32_t producer_slot);
  // The channel from `producer_slot` to `consumer_slot`, which this
  // process only watches, as its producer last published it: to read what
  // its dead consumer never took (for_each_untaken), never to write.
  transport::ChannelProducer watched_channel(std::uint32_t producer_slot, std::uint32_t consumer_slot) const {
    auto producer = segment_.producer(topology_.channel(producer_slot, consumer_slot));
    std::atomic_thread_fence(std::memory_order_acquire);  // what the producer wrote before its tail
    return producer;
  }

  // Runs this loop and its guests until stop(); never called on a guest.
  void run();
  void stop() { stopped_ = true; }
  // The slots run by this loop's thread: its own, then its guests'.
  std::vector<std::uint32_t> hosted_slots() const;

  // The instance's blob area, if it has one (set by main before run()).
  void set_blobs(transport::BlobArena* blobs) { blobs_ = blobs; }
  transport::BlobArena* blobs() const { return blobs_; }

 private:
  struct Inbound {
    transport::ChannelConsumer consumer;
    transport::Doorbell producer;
    RecordHandler handler;
    std::uint32_t producer_slot;
    bool draining = false;  // its handler runs now: drain_from must not read it again
  };

  // At most this many records from one channel per turn, so that one busy
  // producer cannot starve the others.
  static constexpr std::size_t kBatchRecords = 1024;
  void open_outboxes(const Config& config);
  void watch_doorbell();
  // Tells the supervisor the slot is set up and serving.
  void mark_serving();
  // One turn of this slot's: its rings drained, its after-drain hook, its
  // outboxes flushed. Returns the work it found.
  std::size_t turn();
  // Raises the sleeping flag of this slot and its guests; false (flags
  // lowered again) when a record came meanwhile.
  bool announce_sleep();
  void end_sleep();
  std::size_t drain_batch(Inbound& in);
  std::size_t drain_inbound();
  void check_deaths();
  bool inbound_empty() const;
  void flush_outboxes();
  // Blocks in epoll_wait, and counts the sleep (LoopStats): how long, and
  // whether a ring ended it and how long after it this turn began.
  void sleep();
  // A turn found work: `records` of it from the rings.
  void counted_turn(std::size_t records);
  // Adds to a counter only this process writes: a plain load and store,
  // no locked instruction on the loop's path.
  static void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) {
    counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }

  std::unique_ptr<EventLoop> owned_events_;  // none in a guest
  EventLoop* events_;
  ProcessLoop* host_ = nullptr;  // a guest's
  std::vector<ProcessLoop*> guests_;
  const transport::Segment& segment_;
  const transport::Topology& topology_;
  std::uint32_t slot_;
  std::vector<int> doorbell_fds_;
  SpinBudget spin_;
  transport::Doorbell own_;
  UniqueFd signal_fd_;
  std::vector<Inbound> inbound_;
  std::vector<std::unique_ptr<transport::Outbox>> outboxes_;  // by consumer slot
  std::vector<transport::Outbox*> active_outboxes_;
  std::function<bool()> after_drain_;
  std::function<void()> on_stop_signal_;
  std::vector<std::function<void()>> on_reopen_signal_;
  std::function<void()> on_replaced_signal_;
  std::function<void(std::uint32_t)> on_peer_death_;
  std::uint32_t deaths_seen_ = 0;
  std::vector<std::uint32_t> restarts_seen_;  // by slot
  bool stopped_ = false;
  bool behind_ = false;
  transport::BlobArena* blobs_ = nullptr;
};

}  // namespace edri
