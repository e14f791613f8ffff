// The switch's hellos: the instances that run each domain, learnt from
// what every instance says of itself once a second, and what /health shows
// of them (docs/cluster.md). A hello is untrusted input (cluster/inbound.hpp).
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "cluster/inbound.hpp"
#include "cluster/switch.hpp"

namespace edri::cluster {

namespace {

// The most instances known at once. Anyone who can publish a hello can
// make up instances by the thousand; the table, and the work each hello
// costs, stay bounded. An app of more instances than this is past what a
// hello a second from each to each was built for (256 already make 65,536
// hellos a second across NATS).
constexpr std::size_t kMaxInstances = 256;

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

void Switch::say_hello(bool bye) {
  nlohmann::json hello{{"id", instance_}, {"host", host_name()}, {"pid", ::getpid()}, {"domains", local_domains_}};
  if (bye) hello["bye"] = true;
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
  if (hello->id == instance_) return;
  if (hello->bye) {
    if (instances_.erase(hello->id)) directory_dirty_ = true;
    return;
  }
  const auto now = Clock::now();
  if (const auto it = instances_.find(hello->id); it != instances_.end()) {
    it->second.listed = hello->listed();  // before the domains move out of it
    it->second.domains = std::move(hello->domains);
    it->second.seen = now;
    ++it->second.hellos;
    return;  // the tick sees what changed
  }
  if (instances_.size() >= kMaxInstances && !make_room())
    return hello_refused("the table of instances is full (" + std::to_string(kMaxInstances) + ")");
  auto listed = hello->listed();
  instances_.emplace(hello->id, Instance{std::move(listed), std::move(hello->domains), now, 1});
  greet_ = true;  // so that it knows this one without waiting a second
  directory_dirty_ = true;
}

bool Switch::make_room() {
  // A made-up instance is heard once; a real one every second. So the one
  // heard once that was heard longest ago goes, and the instances this one
  // works with stay whatever is made up.
  auto oldest = instances_.end();
  for (auto it = instances_.begin(); it != instances_.end(); ++it)
    if (it->second.hellos == 1 && (oldest == instances_.end() || it->second.seen < oldest->second.seen)) oldest = it;
  if (oldest == instances_.end()) return false;
  instances_.erase(oldest);
  directory_dirty_ = true;
  return true;
}

void Switch::hello_refused(const std::string& why) {
  if (std::uint64_t unlogged = 0; hello_log_.allow(unlogged))
    spdlog::warn("a hello from NATS was refused: {}{}", why, LogLimit::more(unlogged));
}

void Switch::directory_changed() {
  directory_dirty_ = false;
  for (auto& d : remote_domains_) d->runs_elsewhere = someone_runs(d->name);
  write_instances();
}

void Switch::write_instances() {
  auto list = nlohmann::json::array();
  auto self = nlohmann::json{
      {"id", instance_}, {"host", host_name()}, {"pid", ::getpid()}, {"domains", local_domains_}, {"self", true}};
  list.push_back(std::move(self));
  for (const auto& [id, i] : instances_) list.push_back(i.listed);
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
