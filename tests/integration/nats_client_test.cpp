// The switch's NATS client against a real nats-server: a drained queue
// subscription, as a replaced or stopping switch drains its domains'
// (docs/operations.md, "Reload"), hands out every message NATS sent it
// before the drain, and NATS sends the next ones to the group's other
// member; none is lost or handed out twice.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <iterator>
#include <set>
#include <string>
#include <thread>

#include "cluster/nats_client.hpp"
#include "runtime/event_loop.hpp"
#include "support/nats_server.hpp"
#include "support/test_helpers.hpp"

using edri::EventLoop;
using edri::cluster::NatsClient;
using edri::cluster::NatsMessage;
using edri::cluster::NatsSettings;
using namespace std::chrono_literals;

namespace {

NatsSettings settings_for(const edri::test::NatsServer& nats, const std::string& name) {
  NatsSettings s;
  s.urls = {nats.url()};
  s.name = name;
  return s;
}

// The numbers a member of the group was handed.
struct Member {
  std::multiset<int> got;
  // How many numbers from `first` up it was handed, twice counted twice.
  std::size_t from(int first) const {
    return static_cast<std::size_t>(std::distance(got.lower_bound(first), got.end()));
  }
  NatsClient::Handler take() {
    return [this](const NatsMessage& m) {
      got.insert(std::stoi(std::string(reinterpret_cast<const char*>(m.data.data()), m.data.size())));
    };
  }
};

bool publish(NatsClient& client, int n) {
  const auto text = std::to_string(n);
  return client.publish("t.req", "", std::as_bytes(std::span<const char>(text.data(), text.size())));
}

// Runs the loop until `done` or 10 s, with the clients' end of turn as
// the switch's loop has it (flush: what a pump left is pumped again).
template <class Done>
bool run_until(EventLoop& loop, std::initializer_list<NatsClient*> clients, Done done) {
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    bool more = false;
    for (auto* c : clients) more = c->flush() || more;
    (void)loop.poll(more ? 0 : 5);
  }
  return true;
}

}  // namespace

TEST_CASE("a drained queue subscription hands out what NATS sent it, and the next go to the other member",
          "[cluster][nats]") {
  edri::test::NatsServer nats({}, false);
  EventLoop loop;
  NatsClient publisher(loop, settings_for(nats, "publisher"));
  NatsClient old_member(loop, settings_for(nats, "old")), new_member(loop, settings_for(nats, "new"));
  Member old_got, new_got;
  const auto everyone = {&publisher, &old_member, &new_member};
  old_member.subscribe("t.req", "q", old_got.take());
  new_member.subscribe("t.req", "q", new_got.take());
  REQUIRE(run_until(loop, everyone,
                    [&] { return publisher.connected() && old_member.connected() && new_member.connected(); }));
  // Both subscriptions are in place once a message reaches each member.
  // Those messages are negative: one may have come before NATS had any
  // subscription, and gone nowhere.
  int warm = 0;
  REQUIRE(run_until(loop, everyone, [&] {
    REQUIRE(publish(publisher, --warm));
    return old_got.from(warm) > 0 && new_got.from(warm) > 0;
  }));

  // A burst, and the drain while about half of it waits unread in the
  // old member's socket: an unsubscribe would lose that half.
  int sent = 0;
  for (; sent < 5000; ++sent) REQUIRE(publish(publisher, sent));
  (void)publisher.flush();
  std::this_thread::sleep_for(100ms);
  old_member.drain("t.req");
  CHECK_FALSE(old_member.drained());
  const auto all_in = [&] { return old_got.from(0) + new_got.from(0) == static_cast<std::size_t>(sent); };
  REQUIRE(run_until(loop, everyone, [&] { return old_member.drained() && all_in(); }));
  const auto old_before = old_got.from(0);
  INFO("the old member was handed " << old_before << " of the burst of 5,000");
  CHECK(old_before > 1000);

  // From now on NATS sends everything to the new member.
  for (; sent < 6000; ++sent) REQUIRE(publish(publisher, sent));
  REQUIRE(run_until(loop, everyone, all_in));
  CHECK(old_got.from(0) == old_before);
  // Each number once, in one member or the other.
  std::set<int> all(old_got.got.lower_bound(0), old_got.got.end());
  all.insert(new_got.got.lower_bound(0), new_got.got.end());
  CHECK(all.size() == static_cast<std::size_t>(sent));
}

TEST_CASE("a subscription drained while NATS is away ends at once", "[cluster][nats]") {
  auto nats = std::make_unique<edri::test::NatsServer>(std::vector<std::string>{}, false);
  EventLoop loop;
  NatsClient publisher(loop, settings_for(*nats, "publisher"));
  NatsClient member(loop, settings_for(*nats, "member"));
  Member got;
  const auto everyone = {&publisher, &member};
  member.subscribe("t.req", "q", got.take());
  int sent = 0;
  REQUIRE(run_until(loop, everyone, [&] {
    REQUIRE(publish(publisher, sent++));
    return !got.got.empty();
  }));
  nats.reset();
  REQUIRE(run_until(loop, everyone, [&] { return !member.connected(); }));
  const auto before = got.got;
  member.drain("t.req");
  CHECK(member.drained());
  CHECK(got.got == before);
}
