// Topology: which process slots exist and which channels join them.
//
// Computed the same way in the supervisor and in every child from the
// process counts alone, so no table has to be shipped between them.
//
//   slot 0                supervisor (owns no channel)
//   slot 1                broker
//   slot 2                router
//   slots 3 .. 3+L-1      listeners
//   slots 3+L .. 3+L+M-1  managers
//   slot 3+L+M            the switch, only where the instance is joined to
//                         others over NATS (EDRI_NATS_URL; docs/cluster.md)
//
// Channels: listener <-> broker, broker <-> router, router <-> manager,
// router <-> switch, one ring per direction; manager -> switch for the
// answers to other instances; where listeners x managers is at most
// kMaxAnswerChannels, manager (and switch) -> listener for answers that
// skip the router and broker on their way back (docs/decisions/0016); and
// listener -> router for clients' requests that skip the broker on their
// way there, the broker told without a wake-up (docs/decisions/0026); and,
// where answers have their rings and no switch is, listener -> manager for
// clients' requests that skip the router too, the router told without a
// wake-up (docs/decisions/0027); and, where those exist and managers x
// (managers - 1) is at most kMaxAnswerChannels, manager -> manager for a
// handler's requests to another manager and their answers, the router
// told without a wake-up (0028). Each kind is appended after the ones
// before, so their numbers never move.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace edri::transport {

enum class Role : std::uint8_t { Supervisor, Broker, Router, Listener, Manager, Switch };

inline const char* role_name(Role r) {
  switch (r) {
    case Role::Supervisor: return "supervisor";
    case Role::Broker: return "broker";
    case Role::Router: return "router";
    case Role::Listener: return "listener";
    case Role::Manager: return "manager";
    case Role::Switch: return "switch";
  }
  return "?";
}

struct ChannelSpec {
  std::uint32_t producer;
  std::uint32_t consumer;
};

class Topology {
 public:
  static constexpr std::uint32_t kSupervisor = 0;
  static constexpr std::uint32_t kBroker = 1;
  static constexpr std::uint32_t kRouter = 2;
  // Past this many listener x manager pairs, answers go back the long way
  // (through the router and broker): each pair is one more ring.
  static constexpr std::uint32_t kMaxAnswerChannels = 256;

  Topology(std::uint32_t listeners, std::uint32_t managers, bool has_switch = false)
      : listeners_(listeners), managers_(managers), has_switch_(has_switch) {
    if (listeners == 0) throw std::invalid_argument("at least one listener is needed");
    for (std::uint32_t i = 0; i < listeners; ++i) {
      channels_.push_back({listener_slot(i), kBroker});
      channels_.push_back({kBroker, listener_slot(i)});
    }
    channels_.push_back({kBroker, kRouter});
    channels_.push_back({kRouter, kBroker});
    for (std::uint32_t j = 0; j < managers; ++j) {
      channels_.push_back({kRouter, manager_slot(j)});
      channels_.push_back({manager_slot(j), kRouter});
    }
    if (has_switch) {
      channels_.push_back({kRouter, switch_slot()});
      channels_.push_back({switch_slot(), kRouter});
    }
    if (direct_answers())
      for (std::uint32_t j = 0; j < destinations(); ++j)
        for (std::uint32_t i = 0; i < listeners; ++i) channels_.push_back({destination_slot(j), listener_slot(i)});
    // A manager answers what another instance asked straight to the switch.
    if (has_switch)
      for (std::uint32_t j = 0; j < managers; ++j) channels_.push_back({manager_slot(j), switch_slot()});
    for (std::uint32_t i = 0; i < listeners; ++i) channels_.push_back({listener_slot(i), kRouter});
    // A client's request from its listener straight to its manager (0027).
    if (direct_requests())
      for (std::uint32_t j = 0; j < managers; ++j)
        for (std::uint32_t i = 0; i < listeners; ++i) channels_.push_back({listener_slot(i), manager_slot(j)});
    // A manager's request straight to another, and its answer back (0028).
    if (direct_between_managers())
      for (std::uint32_t a = 0; a < managers; ++a)
        for (std::uint32_t b = 0; b < managers; ++b)
          if (a != b) channels_.push_back({manager_slot(a), manager_slot(b)});
  }

  // Whether managers (and the switch) answer listeners on channels of
  // their own.
  bool direct_answers() const { return listeners_ * destinations() <= kMaxAnswerChannels; }
  // Whether listeners send clients' requests to managers on channels of
  // their own (0027): as many pairs as answers, and not where instances
  // are joined (the switch may take any event there).
  bool direct_requests() const { return direct_answers() && !has_switch_; }
  // Whether managers send each other requests and answers on channels of
  // their own (0028): where listeners do, and the pairs are few enough.
  bool direct_between_managers() const {
    return direct_requests() && managers_ > 1 && managers_ * (managers_ - 1) <= kMaxAnswerChannels;
  }

  std::uint32_t listeners() const { return listeners_; }
  std::uint32_t managers() const { return managers_; }
  bool has_switch() const { return has_switch_; }
  std::uint32_t process_slots() const { return 3 + listeners_ + managers_ + (has_switch_ ? 1 : 0); }
  std::uint32_t listener_slot(std::uint32_t i) const { return 3 + i; }
  std::uint32_t manager_slot(std::uint32_t j) const { return 3 + listeners_ + j; }
  bool is_manager(std::uint32_t slot) const { return slot >= manager_slot(0) && slot < manager_slot(managers_); }
  // Only meaningful where has_switch().
  std::uint32_t switch_slot() const { return 3 + listeners_ + managers_; }
  // The slots the router sends requests to: every manager, then the switch.
  std::uint32_t destinations() const { return managers_ + (has_switch_ ? 1 : 0); }
  std::uint32_t destination_slot(std::uint32_t d) const { return manager_slot(d); }
  bool is_destination(std::uint32_t slot) const {
    return slot >= manager_slot(0) && slot < manager_slot(destinations());
  }

  Role role_of(std::uint32_t slot) const {
    if (slot == kSupervisor) return Role::Supervisor;
    if (slot == kBroker) return Role::Broker;
    if (slot == kRouter) return Role::Router;
    if (slot < 3 + listeners_) return Role::Listener;
    if (has_switch_ && slot == switch_slot()) return Role::Switch;
    return Role::Manager;
  }
  // Index of the slot within its role (listener i, manager j).
  std::uint32_t index_of(std::uint32_t slot) const {
    switch (role_of(slot)) {
      case Role::Listener: return slot - 3;
      case Role::Manager: return slot - 3 - listeners_;
      default: return 0;
    }
  }

  const std::vector<ChannelSpec>& channels() const { return channels_; }

  // The channel from `producer` to `consumer`; throws if there is none.
  std::uint32_t channel(std::uint32_t producer, std::uint32_t consumer) const {
    for (std::uint32_t i = 0; i < channels_.size(); ++i)
      if (channels_[i].producer == producer && channels_[i].consumer == consumer) return i;
    throw std::logic_error("no channel " + std::to_string(producer) + "->" + std::to_string(consumer));
  }

 private:
  std::uint32_t listeners_;
  std::uint32_t managers_;
  bool has_switch_;
  std::vector<ChannelSpec> channels_;
};

}  // namespace edri::transport
