// InFlightLedger: the router's books of the requests in flight to each
// manager (docs/reliability.md). A request is kept when it is routed (or
// when the notice of one sent straight is read, 0027, 0028) and forgotten
// when it is answered or refused; what a dead manager still owes is what
// it took and never answered. Plain data: the router reads the rings and
// sends the answers, the ledger only says which.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "envelope/envelope.hpp"

namespace edri::router {

// A request in flight to a manager is known by who asked (reply_to) and
// its id: ids are unique per asker.
struct RequestKey {
  std::uint64_t id;
  std::uint16_t reply_to;
  bool operator==(const RequestKey&) const = default;
};
struct RequestKeyHash {
  std::size_t operator()(const RequestKey& k) const { return k.id * 0x9E3779B97F4A7C15ULL ^ k.reply_to; }
};
using RequestKeys = std::unordered_set<RequestKey, RequestKeyHash>;
inline RequestKey key_of(const envelope::EnvelopeHeader& h) { return {h.request_id, h.reply_to}; }

// A request a manager was given.
struct Taken {
  std::uint32_t manager;
  envelope::EnvelopeHeader request;  // to answer it, should the manager die
  std::uint64_t position;            // of its record in the manager's channel (Outbox::last_position)
  bool replayed = false;             // handed to a successor once already
  bool direct = false;               // sent by its listener or manager on a channel of its own (0027, 0028)
};

class InFlightLedger {
 public:
  // `destinations`: the managers, then the switch.
  explicit InFlightLedger(std::uint32_t destinations);

  // Counts `taken` as in flight to its manager until answered; the same
  // key again replaces the older one (the newer one counts).
  void keep(const Taken& taken);
  // `key` was answered or refused: false when it was not in flight.
  bool forget(const RequestKey& key);
  std::uint32_t in_flight(std::uint32_t manager) const { return in_flight_[manager]; }
  std::size_t size() const { return unanswered_.size(); }

  // An answer to a request whose notice is not read yet (0028): kept
  // aside until settle() reads its asker.
  void defer(const RequestKey& key) { unmatched_.push_back(key); }
  // Forgets the deferred answers. One whose request is not known calls
  // `read_asker(reply_to)` (once a round per asker; what it reads may
  // keep() and defer()) and is tried again; what that reading deferred goes
  // to the next round, up to kSettleRounds. One still unknown after its
  // asker was read was sent before this router started: dropped.
  void settle(const std::function<void(std::uint16_t asker)>& read_asker);
  bool unsettled() const { return !unmatched_.empty(); }
  static constexpr int kSettleRounds = 4;

  // What dead `manager` owes: every request it took (not in `untaken`,
  // which its successor handles). `lost` are forgotten now and owed a 503;
  // `replays` (kFlagReplay, first death, sent by the router) stay, by
  // position in its channel: the order they came in.
  struct Orphans {
    std::vector<envelope::EnvelopeHeader> lost;
    std::vector<std::pair<std::uint64_t, RequestKey>> replays;
  };
  Orphans orphans_of(std::uint32_t manager, const RequestKeys& untaken);
  // A replay was handed to the successor at `position`: a second death
  // of it is a 503.
  void replayed(const RequestKey& key, std::uint64_t position);
  // The header of `key` in flight, forgotten (a replay that could not be
  // handed over is owed a 503).
  envelope::EnvelopeHeader give_up(const RequestKey& key);

 private:
  using Unanswered = std::unordered_map<RequestKey, Taken, RequestKeyHash>;
  Unanswered::iterator forget(Unanswered::iterator it);

  Unanswered unanswered_;
  // in_flight_ counts unanswered_ per manager (for least-loaded routing).
  std::vector<std::uint32_t> in_flight_;
  std::vector<RequestKey> unmatched_;  // answered before their notices were read
};

}  // namespace edri::router
