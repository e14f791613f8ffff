// The switch's hellos: what this instance says of itself once a second,
// what it hears of the others (kept in its InstanceDirectory), and what
// /health shows of them (docs/cluster.md). A hello is untrusted input
// (cluster/inbound.hpp).
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "cluster/inbound.hpp"
#include "cluster/switch.hpp"

namespace edri::cluster {

namespace {

// Asked once: it is in every hello and in /health every tick.
const std::string& host_name() {
  static const std::string name = [] {
    char text[256] = {};
    return ::gethostname(text, sizeof text - 1) == 0 ? std::string(text) : std::string("?");
  }();
  return name;
}

std::string_view text_of(std::span<const std::byte> data) {
  return {reinterpret_cast<const char*>(data.data()), data.size()};
}

}  // namespace

nlohmann::json Switch::self_listed() const {
  return Hello{instance_, host_name(), ::getpid(), local_domains_, false, replaced_}.listed();
}

void Switch::say_hello(bool bye) {
  nlohmann::json hello = self_listed();
  if (bye) {
    hello.erase("draining");
    hello["bye"] = true;
  }
  const auto text = hello.dump();
  greet_ = false;
  (void)nats_.publish(hello_subject(config_.cluster), "",
                      std::as_bytes(std::span<const char>(text.data(), text.size())));
}

void Switch::on_hello(const NatsMessage& m) {
  // Measured before it is parsed, and only its known fields kept
  // (inbound.hpp): a hello is anyone's who can publish on NATS.
  auto hello = read_hello(text_of(m.data));
  if (!hello) return hello_refused("it is no hello (malformed, over 64 KiB or nested deeper than 3)");
  using Heard = InstanceDirectory::Heard;
  switch (directory_.hear(std::move(*hello), Clock::now())) {
    case Heard::Joined:
      greet_ = true;  // so that it knows this one without waiting a second
      directory_dirty_ = true;
      return;
    case Heard::Left: directory_dirty_ = true; return;
    case Heard::Full:
      return hello_refused("the table of instances is full (" + std::to_string(InstanceDirectory::kMaxInstances) + ")");
    default: return;  // its own, or one known: the tick sees what changed
  }
}

void Switch::hello_refused(const std::string& why) {
  if (std::uint64_t unlogged = 0; hello_log_.allow(unlogged))
    spdlog::warn("a hello from NATS was refused: {}{}", why, LogLimit::more(unlogged));
}

void Switch::directory_changed() {
  directory_dirty_ = false;
  for (auto& d : remote_domains_) d->runs_elsewhere = directory_.runs(d->name);
  if (replaced_) hand_over();
  write_instances();
}

void Switch::write_instances() {
  auto list = nlohmann::json::array();
  auto self = self_listed();
  self["self"] = true;
  list.push_back(std::move(self));
  directory_.for_each_listed([&](const nlohmann::json& listed) { list.push_back(listed); });
  auto text = list.dump();
  if (text == instances_written_) return;
  // Past the room in the segment: this instance alone, and the count.
  if (text.size() >= transport::kClusterInstancesBytes) {
    text = '[' + list[0].dump() + ']';
  }
  instances_written_ = text;
  state_.instances_version.fetch_add(1, std::memory_order_acq_rel);  // odd: being written
  std::atomic_thread_fence(std::memory_order_release);
  std::memset(state_.instances, 0, sizeof state_.instances);
  std::memcpy(state_.instances, text.data(), text.size());
  state_.instances_version.fetch_add(1, std::memory_order_release);
}

}  // namespace edri::cluster
