// The router's books of requests in flight (router/in_flight_ledger.hpp),
// without a process: what is routed stays owed until answered, a dead
// manager owes a 503 for what it took (or a replay, once), and answers
// read before their requests' notices are settled by reading the asker.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "envelope/envelope.hpp"
#include "router/in_flight_ledger.hpp"

using namespace edri;
using namespace edri::router;
namespace env = edri::envelope;

namespace {

constexpr std::uint16_t kClient = 0;  // reply_to of a client's request
constexpr std::uint16_t kAsker = 7;   // the slot of a manager that asked

env::EnvelopeHeader request(std::uint64_t id, std::uint16_t reply_to = kClient, std::uint16_t flags = 0) {
  auto h = env::make_header(env::Kind::Request, env::event_type_id("notes.list"), id);
  h.reply_to = reply_to;
  h.flags = flags;
  return h;
}

Taken routed(std::uint32_t manager, const env::EnvelopeHeader& h, std::uint64_t position = 0) {
  return Taken{manager, h, position};
}

Taken sent_straight(std::uint32_t manager, const env::EnvelopeHeader& h) {
  Taken t{manager, h, 0};
  t.direct = true;
  return t;
}

std::vector<std::uint64_t> ids_of(const std::vector<env::EnvelopeHeader>& headers) {
  std::vector<std::uint64_t> ids;
  for (const auto& h : headers) ids.push_back(h.request_id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace

TEST_CASE("a routed request is in flight to its manager until it is answered", "[router]") {
  InFlightLedger ledger(3);
  ledger.keep(routed(1, request(10)));
  ledger.keep(routed(1, request(11)));
  CHECK(ledger.in_flight(1) == 2);
  CHECK(ledger.in_flight(0) == 0);
  CHECK(ledger.forget({10, kClient}));
  CHECK(ledger.in_flight(1) == 1);
  CHECK(ledger.size() == 1);
  CHECK(ledger.forget({11, kClient}));
  CHECK(ledger.in_flight(1) == 0);
  CHECK(ledger.size() == 0);
}

TEST_CASE("a duplicate or stale answer changes nothing", "[router]") {
  InFlightLedger ledger(2);
  ledger.keep(routed(0, request(5)));
  CHECK(ledger.forget({5, kClient}));
  CHECK_FALSE(ledger.forget({5, kClient}));  // answered twice
  CHECK_FALSE(ledger.forget({6, kClient}));  // never routed
  CHECK(ledger.in_flight(0) == 0);
  ledger.keep(routed(0, request(8, kAsker)));
  CHECK_FALSE(ledger.forget({8, kClient}));  // the same id, another asker's
  CHECK(ledger.in_flight(0) == 1);
}

TEST_CASE("ids are per asker: the same id from two askers is two requests", "[router]") {
  InFlightLedger ledger(2);
  constexpr auto kTop = std::numeric_limits<std::uint64_t>::max();  // the last id before a wrap
  ledger.keep(routed(0, request(kTop, kClient)));
  ledger.keep(routed(1, request(kTop, kAsker)));
  ledger.keep(routed(1, request(0, kAsker)));  // and the first one after it
  CHECK(ledger.size() == 3);
  CHECK(ledger.forget({kTop, kAsker}));
  CHECK(ledger.in_flight(0) == 1);
  CHECK(ledger.in_flight(1) == 1);
}

TEST_CASE("the same request kept again counts once, for the manager that has it now", "[router]") {
  InFlightLedger ledger(2);
  ledger.keep(routed(0, request(3)));
  ledger.keep(routed(1, request(3)));  // the same key again: the newer one counts
  CHECK(ledger.size() == 1);
  CHECK(ledger.in_flight(0) == 0);
  CHECK(ledger.in_flight(1) == 1);
  CHECK(ledger.orphans_of(0, {}).lost.empty());
  CHECK(ids_of(ledger.orphans_of(1, {}).lost) == std::vector<std::uint64_t>{3});
}

TEST_CASE("a dead manager owes a 503 for what it took, not for what waits in its channels", "[router]") {
  InFlightLedger ledger(3);
  ledger.keep(routed(0, request(1)));
  ledger.keep(sent_straight(0, request(2, kAsker)));
  ledger.keep(routed(0, request(3)));  // still in its channel
  ledger.keep(routed(1, request(4)));  // another manager's
  const auto orphans = ledger.orphans_of(0, RequestKeys{{3, kClient}});
  CHECK(ids_of(orphans.lost) == std::vector<std::uint64_t>{1, 2});
  CHECK(orphans.replays.empty());
  CHECK(ledger.in_flight(0) == 1);  // its successor takes the untaken one
  CHECK(ledger.in_flight(1) == 1);
  CHECK_FALSE(ledger.forget({1, kClient}));  // owed once: a late answer is stale
  CHECK(ledger.orphans_of(0, RequestKeys{{3, kClient}}).lost.empty());
}

TEST_CASE("a replayed event goes to the successor once, in the order it came, and its second death is a 503",
          "[router]") {
  InFlightLedger ledger(2);
  ledger.keep(routed(0, request(1, kClient, env::kFlagReplay), 30));
  ledger.keep(routed(0, request(2, kClient, env::kFlagReplay), 10));
  ledger.keep(routed(0, request(3, kClient, env::kFlagReplay), 20));
  ledger.keep(sent_straight(0, request(4, kClient, env::kFlagReplay)));  // no record of it in the router's ring
  auto orphans = ledger.orphans_of(0, {});
  CHECK(ids_of(orphans.lost) == std::vector<std::uint64_t>{4});
  REQUIRE(orphans.replays.size() == 3);
  CHECK(orphans.replays[0].first == 10);
  CHECK(orphans.replays[0].second == RequestKey{2, kClient});
  CHECK(orphans.replays[1].second == RequestKey{3, kClient});
  CHECK(orphans.replays[2].second == RequestKey{1, kClient});
  CHECK(ledger.in_flight(0) == 3);  // replays stay owed
  ledger.replayed({2, kClient}, 40);
  ledger.replayed({3, kClient}, 41);
  CHECK(ledger.give_up({1, kClient}).request_id == 1);  // written over in the ring: a 503
  CHECK(ledger.in_flight(0) == 2);
  orphans = ledger.orphans_of(0, {});  // the successor died too
  CHECK(ids_of(orphans.lost) == std::vector<std::uint64_t>{2, 3});
  CHECK(orphans.replays.empty());
  CHECK(ledger.size() == 0);
}

TEST_CASE("an answer read before its request's notice is settled once the asker is read", "[router]") {
  InFlightLedger ledger(3);
  ledger.defer({9, kAsker});
  CHECK(ledger.unsettled());
  std::vector<std::uint16_t> read;
  ledger.settle([&](std::uint16_t asker) {
    read.push_back(asker);
    ledger.keep(sent_straight(2, request(9, kAsker)));  // the notice, in the asker's ring
  });
  CHECK(read == std::vector<std::uint16_t>{kAsker});
  CHECK_FALSE(ledger.unsettled());
  CHECK(ledger.size() == 0);
  CHECK(ledger.in_flight(2) == 0);
}

TEST_CASE("an answer whose request is known is settled without reading, one never known is dropped", "[router]") {
  InFlightLedger ledger(2);
  ledger.keep(sent_straight(1, request(1, kAsker)));
  ledger.defer({1, kAsker});
  ledger.defer({2, kAsker});  // sent before this router started
  ledger.defer({3, kAsker});
  int reads = 0;
  ledger.settle([&](std::uint16_t) { ++reads; });
  CHECK(reads == 1);  // once per asker per round
  CHECK_FALSE(ledger.unsettled());
  CHECK(ledger.size() == 0);
}

TEST_CASE("answers a reading brings up are settled in later rounds, the rest in the next turn", "[router]") {
  // Each asker's reading brings up the notice of its request and an
  // answer for the next asker's request, not yet known: a chain of rounds.
  constexpr int kChain = InFlightLedger::kSettleRounds + 2;
  InFlightLedger ledger(2);
  ledger.defer({1, 1});
  std::vector<std::uint16_t> read;
  const auto read_asker = [&](std::uint16_t asker) {
    read.push_back(asker);
    ledger.keep(sent_straight(0, request(asker, asker)));
    if (asker < kChain) ledger.defer({std::uint64_t{asker} + 1u, static_cast<std::uint16_t>(asker + 1)});
  };
  ledger.settle(read_asker);
  CHECK(read.size() == InFlightLedger::kSettleRounds);
  CHECK(ledger.unsettled());
  CHECK(ledger.in_flight(0) == 0);  // each one read was settled in its round
  ledger.settle(read_asker);        // the next turn
  CHECK(read.size() == kChain);
  CHECK_FALSE(ledger.unsettled());
  CHECK(ledger.size() == 0);
}
