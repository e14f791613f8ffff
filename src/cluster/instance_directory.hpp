// InstanceDirectory: the other instances of this app the switch has heard
// from, and the domains each runs (docs/cluster.md), learnt from the
// hellos every instance sends once a second. Plain data: the switch reads
// NATS and the clock, and acts on what hear() and expire() say.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster/inbound.hpp"

namespace edri::cluster {

class InstanceDirectory {
 public:
  using Clock = std::chrono::steady_clock;
  // The most instances known at once. Anyone who can publish a hello can
  // make up instances by the thousand; the table, and the work each hello
  // costs, stay bounded. An app of more instances than this is past what a
  // hello a second from each to each was built for (256 already make
  // 65,536 hellos a second across NATS).
  static constexpr std::size_t kMaxInstances = 256;
  // An instance not heard from for this long is gone.
  static constexpr auto kGone = std::chrono::seconds(3);

  // `self`: this instance's id, whose own hellos come back from NATS.
  explicit InstanceDirectory(std::string self) : self_(std::move(self)) {}

  // What a hello did to the directory.
  enum class Heard {
    Self,     // this instance's own: nothing
    Again,    // a known instance: its listing, domains and time refreshed
    Joined,   // a new instance: the directory changed
    Left,     // a known instance said goodbye: the directory changed
    Unknown,  // goodbye from one not known: nothing
    Full,     // a new instance, and the table was full of ones heard more than once: refused
  };
  Heard hear(Hello hello, Clock::time_point now);
  // Forgets the instances not heard from for kGone; whether any went.
  bool expire(Clock::time_point now);
  // Forgets every instance (NATS was lost: none is reachable).
  void clear() { instances_.clear(); }

  // Whether an instance heard from lately runs `domain`.
  bool runs(const std::string& domain) const;
  std::size_t size() const { return instances_.size(); }
  // Each instance as /health lists it (Hello::listed), in no order.
  template <class F>
  void for_each_listed(F&& f) const {
    for (const auto& [id, i] : instances_) f(i.listed);
  }

 private:
  struct Instance {
    nlohmann::json listed;  // as /health lists it
    std::vector<std::string> domains;
    Clock::time_point seen;
    unsigned hellos;  // heard so far: a made-up instance, usually once
  };
  // Where the table is full: forgets the instance heard once, longest
  // ago. False when every one was heard more than once.
  bool make_room();

  std::string self_;
  std::unordered_map<std::string, Instance> instances_;
};

}  // namespace edri::cluster
