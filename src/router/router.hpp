// Router: event type -> the managers that handle it.
//
// Where the instance is joined to others (docs/cluster.md) the switch is
// one more destination, after the managers: it subscribes like a manager
// to the events of the domains that run elsewhere, and to the
// notifications other instances want; what it brings from them comes in
// like what a manager sends.
// Managers subscribe when they start (a control envelope listing their
// event type ids). Requests (from the broker, and clients' HTTP requests
// straight from the listeners, docs/decisions/0026) go to a subscriber; responses go back to the
// broker, or, for clients' requests, straight from the manager to the
// listener, the router told afterwards (kControlAnswered, 0016). Until every manager has subscribed once, requests for
// events nobody handles yet are held (bounded), so the first requests after start do not fail. Requests for a domain
// with replicas go round robin over them, or to the one with the fewest in flight (EDRI_ROUTING). Notifications fan out
// to one replica of every subscribed domain, and to the broker for those WebSocket clients subscribed to. It reads
// envelope headers only.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "envelope/control.hpp"
#include "envelope/envelope.hpp"
#include "router/in_flight_ledger.hpp"
#include "runtime/config.hpp"
#include "runtime/process_loop.hpp"
#include "runtime/successor_watch.hpp"

namespace edri::router {

class Router {
 public:
  Router(ProcessLoop& loop, const Config& config);

 private:
  struct Subscribers {
    std::vector<std::uint32_t> managers;
    std::uint32_t next = 0;         // round robin of requests
    std::uint32_t next_notify = 0;  // which replica of a domain gets the next notification
  };

  void on_broker(std::span<const std::byte> record);
  // A client's request that a listener sent here itself (0026): routed as
  // the broker's are; what the router answers for it goes through the
  // broker, which was told of it. Or a listener's notices of the requests
  // it sent straight to their managers (0027): kept as in flight there.
  void on_listener(std::span<const std::byte> record);
  void on_listener_control(std::span<const std::byte> record);
  // kControlRouted: `r` went from its listener straight to its manager.
  void track_routed(const envelope::RoutedRequest& r);
  // Reads every listener's notices now (0027): a manager may report a
  // request answered before its notice is read.
  void learn_routed();
  // A request whose header the caller has read already.
  void on_request(const envelope::EnvelopeHeader& h, std::span<const std::byte> record);
  void fan_out(const envelope::EnvelopeHeader& h, std::span<const std::byte> record);
  // A notification of `type` that WebSocket clients want did not reach the
  // broker: it closes their connections (kControlPushesLost).
  void pushes_lost(std::uint64_t type);
  // Whether WebSocket clients subscribe to notification `type`, as the
  // broker announced it (its ring read first where it is not yet known).
  bool pushed(std::uint64_t type);
  // A notification to the broker, where WebSocket clients may subscribe to it.
  void push_to_broker(const envelope::EnvelopeHeader& h, std::span<const std::byte> record);
  transport::Outbox& reply_channel(const envelope::EnvelopeHeader& h);
  // A record from destination `manager` (a manager, or the switch).
  void on_manager(std::uint32_t manager, std::span<const std::byte> record);
  // A notification from another instance: to the one domain it names, or
  // to the broker's WebSocket subscribers only (kFlagFromCluster).
  void deliver_from_cluster(const envelope::EnvelopeHeader& h, std::span<const std::byte> record);
  void on_stream_control(std::uint32_t manager, const envelope::EnvelopeHeader& h, std::span<const std::byte> record);
  void subscribe(std::uint32_t manager, std::span<const std::byte> body);
  // kControlAnswered: a manager answered these requests straight to who
  // asked: their listeners (reply_to 0), the switch or another manager
  // (0028; the asker's slot). One not known may be a request sent straight
  // whose notice is unread: with `learn`, the listeners' notices are read
  // first, and a manager's is settled at the end of the turn.
  void forget_answered(std::span<const std::byte> ids, std::uint16_t reply_to, bool learn = true);
  // Reads every manager's notices now (0028); in any order, since
  // settle_unmatched matches answers read before their notices.
  void learn_routed_by_managers();
  // A manager died: every request it took and did not answer is answered
  // 503 now, or, if its event is replayed (kFlagReplay) and this is its
  // first death, handed to the successor; those still waiting in its
  // channel go to the successor anyway.
  void on_manager_death(std::uint32_t manager);

  // `key` was answered: forgotten now, after reading the listeners' notices
  // if it is not known and a client's (unless `listeners_read`, which is
  // set once they are), or at the end of the turn if a manager's.
  void forget_answer(const RequestKey& key, bool& listeners_read);
  // Answers 503 a request no manager can take now.
  void refuse(const envelope::EnvelopeHeader& h, const char* detail);
  // What no process took of the requests to dead `manager`: in the
  // router's ring to it and in every listener's and manager's (0027, 0028).
  RequestKeys untaken_requests_to(std::uint32_t manager) const;
  // Forgets what managers answered to requests another manager sent
  // straight (0028) whose notices were unread then, reading the askers'
  // rings; called once every ring was read, never inside a reading.
  void settle_unmatched();
  // Hands dead `manager`'s replays to its successor, in the order they
  // came; one that cannot be is answered 503. How many were handed.
  std::size_t replay(std::uint32_t manager, const InFlightLedger::Orphans& orphans);
  void answer_lost(const envelope::EnvelopeHeader& request);

  ProcessLoop& loop_;
  transport::Outbox& to_broker_;
  std::vector<transport::Outbox*> to_manager_;  // by destination: the managers, then the switch
  // The log's names of the destinations: "manager notes", "manager notes
  // 2" (EDRI_INTERNAL_MANAGERS, the supervisor's), then "switch".
  std::vector<std::string> names_;
  const std::string& name_of(std::uint32_t destination) const { return names_.at(destination); }
  void learn_names();
  std::uint32_t managers_;  // destinations before the switch
  std::unordered_map<std::uint64_t, Subscribers> routes_;
  bool least_loaded_;                       // EDRI_ROUTING=least_loaded
  InFlightLedger ledger_;                   // requests sent to a manager and not answered yet
  std::vector<std::uint64_t> group_of_;     // per manager: its domain id (replicas share it)
  std::vector<std::uint64_t> groups_seen_;  // scratch of fan_out
  std::vector<std::uint64_t> push_events_;  // notifications the broker wants (WebSocket pushes)
  bool learning_ = false;                   // learn_routed is reading the listeners' rings
  std::vector<bool> subscribed_;
  std::uint32_t subscribed_count_ = 0;
  std::vector<std::vector<std::byte>> held_;
  std::size_t held_bytes_ = 0;
  std::size_t held_limit_;
};

}  // namespace edri::router
