#include "router/in_flight_ledger.hpp"

#include <algorithm>

namespace edri::router {

namespace env = edri::envelope;

InFlightLedger::InFlightLedger(std::uint32_t destinations) : in_flight_(destinations, 0) { unanswered_.reserve(4096); }

void InFlightLedger::keep(const Taken& taken) {
  auto [it, fresh] = unanswered_.try_emplace(key_of(taken.request), taken);
  if (!fresh) {  // the same id again: the newer one counts
    --in_flight_[it->second.manager];
    it->second = taken;
  }
  ++in_flight_[taken.manager];
}

bool InFlightLedger::forget(const RequestKey& key) {
  const auto it = unanswered_.find(key);
  if (it == unanswered_.end()) return false;
  forget(it);
  return true;
}

InFlightLedger::Unanswered::iterator InFlightLedger::forget(Unanswered::iterator it) {
  --in_flight_[it->second.manager];
  return unanswered_.erase(it);
}

void InFlightLedger::settle(const std::function<void(std::uint16_t)>& read_asker) {
  // An asker's notice was written before its request, so before the
  // answer that was read: reading the asker's ring after the answer finds
  // it. Answers those readings bring up go to the next round, which reads
  // their askers again; what is left after kSettleRounds waits for the
  // next turn.
  for (int round = 0; round < kSettleRounds && !unmatched_.empty(); ++round) {
    const auto keys = std::move(unmatched_);
    unmatched_.clear();
    std::vector<std::uint16_t> read;  // askers whose rings this round read
    for (const auto& key : keys) {
      if (forget(key) || std::find(read.begin(), read.end(), key.reply_to) != read.end()) continue;
      read.push_back(key.reply_to);
      read_asker(key.reply_to);
      forget(key);
    }
  }
}

InFlightLedger::Orphans InFlightLedger::orphans_of(std::uint32_t manager, const RequestKeys& untaken) {
  Orphans orphans;
  for (auto it = unanswered_.begin(); it != unanswered_.end();) {
    const Taken& t = it->second;
    if (t.manager != manager || untaken.count(it->first)) {
      ++it;
    } else if (!t.direct && (t.request.flags & env::kFlagReplay) && !t.replayed) {
      orphans.replays.emplace_back(t.position, it->first);
      ++it;
    } else {
      orphans.lost.push_back(t.request);
      it = forget(it);
    }
  }
  std::sort(orphans.replays.begin(), orphans.replays.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return orphans;
}

void InFlightLedger::replayed(const RequestKey& key, std::uint64_t position) {
  auto& taken = unanswered_.at(key);
  taken.replayed = true;
  taken.position = position;
}

env::EnvelopeHeader InFlightLedger::give_up(const RequestKey& key) {
  const auto it = unanswered_.find(key);
  const auto request = it->second.request;
  forget(it);
  return request;
}

}  // namespace edri::router
