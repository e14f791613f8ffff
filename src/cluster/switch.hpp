// Switch: the role that joins this instance to the others of its app over
// NATS (docs/cluster.md; the subjects are in cluster/wire.hpp).
//
// To the router it is one more destination: it subscribes, like a manager,
// to the request events of the domains that run on no local manager
// (EDRI_DOMAINS) and to the notifications other instances want. Towards
// NATS:
//   - a request from the router goes to `<cluster>.req.<domain>` with what
//     is left of its deadline; its answer comes back on this instance's
//     reply subject and goes to the router as if a manager had answered;
//   - a request from NATS for a local domain goes to the router as this
//     process's own (its reply_to), and the answer goes back on NATS;
//   - a notification goes to `<cluster>.note.<domain>` for every
//     subscribed domain that runs on no local manager, and to
//     `<cluster>.push` when WebSocket clients may subscribe to it;
//   - every second a hello says who this instance is; /health lists the
//     instances heard from in the last 3 s;
//   - replaced on reload, or stopping, it hands its domains over: NATS
//     sends their requests to the other members of the queue group (the
//     new generation's switch), and what was sent here is still answered;
//   - live streams are ordered in a JetStream key-value bucket
//     (StreamLedger): the router sends the managers' publishes and reads
//     here, and the broker gets each revision to fan out.
// Without NATS, requests for other instances are answered 503 at once,
// and those waiting for an answer when it went are answered 503 then.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster/inbound.hpp"
#include "cluster/instance_directory.hpp"
#include "cluster/nats_client.hpp"
#include "cluster/portable.hpp"
#include "cluster/stream_ledger.hpp"
#include "envelope/envelope.hpp"
#include "plugin/plugin_set.hpp"
#include "runtime/config.hpp"
#include "runtime/process_loop.hpp"

namespace edri::cluster {

// The NATS client's settings from EDRI_NATS_* (`instance` names the
// connection, as the NATS server's monitoring shows it).
NatsSettings nats_settings(const Config& config, const std::string& instance);

class Switch {
 public:
  Switch(ProcessLoop& loop, const Config& config, const plugin::PluginSet& plugins);
  ~Switch();
  Switch(const Switch&) = delete;
  Switch& operator=(const Switch&) = delete;

 private:
  using Clock = std::chrono::steady_clock;

  // A domain that runs on no local manager: the requests for it this turn
  // (one message at its end), and the messages sent and not all answered,
  // by their number in the reply subject (oldest first).
  struct RemoteDomain {
    std::string name;
    std::string request_subject;
    std::string reply_prefix;  // + the number of the message
    WireMessage outgoing{FrameKind::Request};
    std::vector<std::uint64_t> outgoing_ids;
    struct Sent {
      std::vector<std::uint64_t> ids;
      std::size_t waiting;
    };
    std::map<std::uint64_t, Sent> sent;
    bool runs_elsewhere = false;  // an instance heard from lately runs it
  };
  // When a request asked or served here expires. A request's entry goes
  // when it is answered, so the set holds only what is in flight.
  struct Deadline {
    Clock::time_point at;
    std::uint64_t id;
    bool served;  // in served_, else in asked_
    auto operator<=>(const Deadline&) const = default;
  };
  using Deadlines = std::set<Deadline>;
  // A request sent to another instance, by its number.
  struct Asked {
    envelope::EnvelopeHeader request;
    RemoteDomain* domain;
    Deadlines::iterator deadline;
    std::uint64_t message = 0;  // 0 while in `outgoing`
  };
  // A request another instance sent, by the id it has here.
  struct Served {
    std::shared_ptr<const std::string> reply;  // the asker's reply subject, one per message
    std::uint64_t asker_id;
    envelope::EnvelopeHeader request;
    Deadlines::iterator deadline;
  };
  void learn_plugins(const plugin::PluginSet& plugins);
  void subscribe_router();
  void subscribe_nats();
  void subscribe_all();
  void on_router(std::span<const std::byte> record);
  // An answer a manager sent straight here.
  void on_manager(std::span<const std::byte> record);
  // Router -> NATS.
  void ask(const envelope::EnvelopeHeader& h, std::span<const std::byte> record);
  void answer(const envelope::EnvelopeHeader& h, std::span<const std::byte> record);
  void publish_notification(const envelope::EnvelopeHeader& h, std::span<const std::byte> record);
  // Publishes a domain's requests of this turn as one message.
  void send_requests(RemoteDomain& domain);
  // Adds an answer for `reply` to this turn's message to that asker.
  void queue_answer(const Served& served, int status, std::span<const std::byte> record);
  void send_answers();
  // NATS -> router.
  void serve(const NatsMessage& m);
  void serve_one(const std::shared_ptr<const std::string>& reply, const WireEntry& e);
  void on_reply(const NatsMessage& m, RemoteDomain& domain);
  // Where the answer to `request` goes: its listener, or the router.
  transport::Outbox& answer_channel(const envelope::EnvelopeHeader& request);
  bool end_of_turn();
  // The largest message: EDRI_NATS_MAX_MESSAGE, at most NATS's max_payload.
  std::size_t message_limit() const;
  // Takes the request `id` off the books; its header.
  std::optional<envelope::EnvelopeHeader> take_asked(std::uint64_t id);
  void on_notification(const NatsMessage& m, std::uint64_t domain_id);
  void on_hello(const NatsMessage& m);
  void hello_refused(const std::string& why);
  // The counts of refusals the log limits left unsaid once floods stop.
  void log_unlogged();
  // Answers a request of the router's with a problem (counted as refused).
  void refuse(const envelope::EnvelopeHeader& h, int status, const std::string& detail);
  std::chrono::milliseconds time_left(const envelope::EnvelopeHeader& h) const;
  Deadlines::iterator add_deadline(Clock::time_point at, std::uint64_t id, bool served);
  // Whether an instance heard from lately runs each remote domain
  // (RemoteDomain::runs_elsewhere), after the directory changed.
  void directory_changed();
  void expire();
  void tick();
  // Ends this instance's queue subscriptions for each local domain that
  // another instance heard from runs (all of them once stopping): NATS
  // sends the domain's requests and notifications there from now on, and
  // what it sent here before is still served. A replaced generation's
  // switch does this as soon as the new generation's has said hello.
  void hand_over();
  // Stopping: once what other instances asked here is answered (or
  // expired, or NATS is gone) and the drained subscriptions handed out
  // their last message.
  void stop_when_done();
  void nats_changed(bool up);
  // This instance as a hello says it and /health lists it (Hello::listed).
  nlohmann::json self_listed() const;
  void say_hello(bool bye = false);
  void write_instances();
  // Live streams (switch_streams.cpp): publishes and reads go to the
  // ledger; what it ordered goes to the broker, its answers to the router.
  void on_stream_control(const envelope::EnvelopeHeader& h, std::span<const std::byte> record);
  void streams_ready();
  void send_revision(const StreamLedger::Revision& r);

  ProcessLoop& loop_;
  const Config& config_;
  transport::Outbox& to_router_;
  // Answers to a client's request go straight to its listener, and the
  // router is told afterwards (docs/decisions/0016), as from a manager.
  std::vector<transport::Outbox*> to_listener_;
  std::vector<std::uint64_t> answered_;
  transport::ClusterState& state_;
  std::string instance_;  // this instance's id (random, per start of this process)
  std::vector<std::string> local_domains_;
  std::vector<std::unique_ptr<RemoteDomain>> remote_domains_;
  std::unordered_map<std::uint64_t, RemoteDomain*> domain_of_request_;  // by request event
  // Per notification type: the domains subscribed to it that run on no
  // local manager, and whether WebSocket clients may subscribe to it.
  struct NotificationRoute {
    std::vector<std::string> remote_domains;
    bool push = false;
  };
  std::unordered_map<std::uint64_t, NotificationRoute> notifications_;
  std::size_t max_message_;
  NatsClient nats_;
  std::unordered_map<std::uint64_t, Asked> asked_;
  std::unordered_map<std::uint64_t, Served> served_;
  // This turn's answers, by the asker's reply subject.
  std::unordered_map<std::string, WireMessage> answers_out_;
  Deadlines deadlines_;
  std::optional<Clock::time_point> timer_at_;
  EventLoop::Timer deadline_timer_;
  EventLoop::Timer tick_timer_;
  std::uint64_t next_asked_ = 0;
  std::uint64_t next_message_ = 0;
  std::uint64_t next_served_ = 0;
  bool up_ = false;
  bool ever_up_ = false;
  Clock::time_point settled_at_{};     // connected long enough to have heard the others
  bool replaced_ = false;              // SIGUSR2: a new generation serves beside this one
  bool stopping_ = false;              // SIGTERM: finishing what other instances asked
  std::set<std::string> handed_over_;  // local domains NATS no longer sends here
  unsigned ticks_ = 0;
  InstanceDirectory directory_;
  std::string instances_written_;
  // Set by hellos, acted on at the end of the turn: a burst of hellos
  // costs one hello back and one look at the directory.
  bool greet_ = false;
  bool directory_dirty_ = false;
  // Garbage from NATS is logged a line a second at most, per kind.
  LogLimit hello_log_, request_log_, answer_log_, notification_log_;
  StreamLedger streams_;
  std::vector<StreamLedger::Revision> revisions_taken_;
  std::vector<StreamLedger::Answer> answers_taken_;
};

}  // namespace edri::cluster
