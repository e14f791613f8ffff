// The switch's directory of instances (cluster/instance_directory.hpp),
// without NATS or a clock: hellos add and refresh instances, goodbyes and
// silence remove them, domains move between them, and the table stays
// bounded against made-up instances.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/instance_directory.hpp"

using namespace edri::cluster;
using namespace std::chrono_literals;
using Heard = InstanceDirectory::Heard;

namespace {

const InstanceDirectory::Clock::time_point t0{};

Hello hello(std::string id, std::vector<std::string> domains) {
  Hello h;
  h.id = std::move(id);
  h.host = "host-" + h.id;
  h.pid = 42;
  h.domains = std::move(domains);
  return h;
}

Hello bye(std::string id) {
  Hello h = hello(std::move(id), {});
  h.bye = true;
  return h;
}

// "made-up-7": appended, since GCC 12 warns falsely (-Wrestrict) of
// "literal" + std::to_string(i).
std::string numbered(std::string prefix, std::size_t i) {
  prefix += std::to_string(i);
  return prefix;
}

std::vector<nlohmann::json> listed(const InstanceDirectory& d) {
  std::vector<nlohmann::json> out;
  d.for_each_listed([&](const nlohmann::json& j) { out.push_back(j); });
  return out;
}

}  // namespace

TEST_CASE("a hello adds an instance, and its domains run elsewhere", "[cluster]") {
  InstanceDirectory d("self");
  CHECK_FALSE(d.runs("notes"));
  CHECK(d.hear(hello("a", {"notes"}), t0) == Heard::Joined);
  CHECK(d.size() == 1);
  CHECK(d.runs("notes"));
  CHECK_FALSE(d.runs("audit"));
  const auto list = listed(d);
  REQUIRE(list.size() == 1);
  CHECK(list[0] == nlohmann::json{{"id", "a"}, {"host", "host-a"}, {"pid", 42}, {"domains", {"notes"}}});
}

TEST_CASE("this instance's own hello, come back from NATS, is not in the directory", "[cluster]") {
  InstanceDirectory d("self");
  CHECK(d.hear(hello("self", {"notes"}), t0) == Heard::Self);
  CHECK(d.size() == 0);
  CHECK_FALSE(d.runs("notes"));
}

TEST_CASE("a later hello refreshes an instance: its domains and listing follow, it is not new", "[cluster]") {
  InstanceDirectory d("self");
  d.hear(hello("a", {"notes"}), t0);
  CHECK(d.hear(hello("a", {"audit"}), t0 + 1s) == Heard::Again);
  CHECK(d.size() == 1);
  CHECK_FALSE(d.runs("notes"));
  CHECK(d.runs("audit"));
  CHECK(listed(d)[0]["domains"] == nlohmann::json{"audit"});
}

TEST_CASE("an instance silent for over 3 s expires, one heard lately stays", "[cluster]") {
  InstanceDirectory d("self");
  d.hear(hello("a", {"notes"}), t0);
  d.hear(hello("b", {"audit"}), t0 + 2s);
  CHECK_FALSE(d.expire(t0 + InstanceDirectory::kGone));  // 3 s exactly: not yet
  CHECK(d.expire(t0 + InstanceDirectory::kGone + 1ms));
  CHECK(d.size() == 1);
  CHECK_FALSE(d.runs("notes"));
  CHECK(d.runs("audit"));
  CHECK_FALSE(d.expire(t0 + 4s));
}

TEST_CASE("each hello puts off an instance's expiry", "[cluster]") {
  InstanceDirectory d("self");
  d.hear(hello("a", {"notes"}), t0);
  d.hear(hello("a", {"notes"}), t0 + 2s);
  CHECK_FALSE(d.expire(t0 + 4s));
  CHECK(d.runs("notes"));
  CHECK(d.expire(t0 + 6s));
}

TEST_CASE("a domain moves: its instance says goodbye and another takes it up", "[cluster]") {
  InstanceDirectory d("self");
  d.hear(hello("a", {"notes", "audit"}), t0);
  d.hear(hello("b", {"audit"}), t0);
  CHECK(d.hear(bye("a"), t0 + 1s) == Heard::Left);
  CHECK_FALSE(d.runs("notes"));
  CHECK(d.runs("audit"));  // b runs it still
  CHECK(d.hear(bye("a"), t0 + 1s) == Heard::Unknown);
  CHECK(d.hear(hello("b", {"audit", "notes"}), t0 + 2s) == Heard::Again);
  CHECK(d.runs("notes"));
  d.clear();  // NATS lost: nobody is reachable
  CHECK(d.size() == 0);
  CHECK_FALSE(d.runs("audit"));
}

TEST_CASE("a full directory forgets the instance heard once longest ago, and refuses when none was", "[cluster]") {
  InstanceDirectory d("self");
  const auto n = InstanceDirectory::kMaxInstances;
  for (std::size_t i = 0; i < n; ++i)
    REQUIRE(d.hear(hello(numbered("made-up-", i), {numbered("d", i)}), t0 + i * 1ms) == Heard::Joined);
  d.hear(hello("made-up-0", {"d0"}), t0 + 1s);  // heard twice: a real one
  CHECK(d.hear(hello("new-1", {"new"}), t0 + 2s) == Heard::Joined);
  CHECK(d.size() == n);
  CHECK(d.runs("d0"));        // kept: heard more than once
  CHECK_FALSE(d.runs("d1"));  // the oldest heard once went
  CHECK(d.runs("d2"));
  for (std::size_t i = 2; i < n; ++i) d.hear(hello(numbered("made-up-", i), {}), t0 + 3s);
  d.hear(hello("new-1", {"new"}), t0 + 3s);
  CHECK(d.hear(hello("new-2", {"other"}), t0 + 4s) == Heard::Full);
  CHECK(d.size() == n);
  CHECK_FALSE(d.runs("other"));
}
