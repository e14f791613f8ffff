#include "transport/segment.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/statvfs.h>

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/permissions.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "transport/stale_owner.hpp"

namespace bip = boost::interprocess;

namespace edri::transport {
namespace {

std::string mebibytes(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / 1048576.0);
  return buf;
}

// What /dev/shm has left, for the message of a segment it has no room for.
std::string shm_room() {
  struct statvfs st {};
  if (::statvfs("/dev/shm", &st) != 0) return "its size unknown";
  const double unit = static_cast<double>(st.f_frsize);
  return mebibytes(static_cast<double>(st.f_bavail) * unit) + " free of " +
         mebibytes(static_cast<double>(st.f_blocks) * unit);
}

// Takes every page of the segment now. tmpfs hands pages out as they are
// first written, so a /dev/shm smaller than the segment let start-up pass
// and then killed whichever process first touched a page past its end with
// SIGBUS, over and over (issue 35: 17 deaths in 10 s on an 8 MB /dev/shm).
void reserve(int fd, std::size_t bytes, const std::string& name) {
  int rc = 0;
  do rc = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  while (rc == EINTR);
  if (rc != 0)
    throw std::system_error(rc, std::generic_category(),
                            "cannot reserve " + mebibytes(static_cast<double>(bytes)) + " of shared memory for " +
                                name + " in /dev/shm (" + shm_room() + ")");
}

}  // namespace

Segment::Segment(std::string name, std::unique_ptr<bip::mapped_region> region)
    : name_(std::move(name)), region_(std::move(region)), base_(static_cast<std::byte*>(region_->get_address())) {}

Segment::Segment(Segment&&) noexcept = default;
Segment& Segment::operator=(Segment&&) noexcept = default;
Segment::~Segment() = default;

Segment Segment::create(const std::string& name, const Topology& topology, std::size_t ring_bytes,
                        std::uint32_t route_count, std::size_t plugin_metric_bytes, std::uint32_t call_rows) {
  if (ring_bytes < kMinRingBytes || (ring_bytes & (ring_bytes - 1)) != 0)
    throw std::invalid_argument("ring size must be a power of two of at least 4096 bytes");
  const auto& specs = topology.channels();
  if (specs.size() > kMaxChannels || topology.process_slots() > kMaxProcesses)
    throw std::invalid_argument("too many processes or channels for one segment");
  const auto count = static_cast<std::uint32_t>(specs.size());
  const std::size_t total =
      segment_bytes(count, ring_bytes, topology.listeners(), route_count, plugin_metric_bytes, call_rows);

  bip::permissions owner_only(0600);
  bip::shared_memory_object shm(bip::create_only, name.c_str(), bip::read_write, owner_only);
  std::unique_ptr<bip::mapped_region> region;
  try {
    shm.truncate(static_cast<bip::offset_t>(total));
    reserve(shm.get_mapping_handle().handle, total, name);
    region = std::make_unique<bip::mapped_region>(shm, bip::read_write);
  } catch (...) {
    remove(name);  // a segment nobody will use must not stay in /dev/shm
    throw;
  }
  Segment seg(name, std::move(region));

  // The fresh mapping is zero-filled; construct the header and controls.
  auto* hdr = new (seg.base_) SegmentHeader{};
  hdr->layout_version = kLayoutVersion;
  hdr->channel_count = count;
  hdr->ring_bytes = ring_bytes;
  hdr->total_bytes = total;
  hdr->supervisor_pid = static_cast<std::uint64_t>(::getpid());
  hdr->listener_count = topology.listeners();
  hdr->route_count = route_count;
  hdr->call_rows = call_rows;
  hdr->metrics_offset = metrics_offset(count, ring_bytes);
  hdr->metrics_stride = listener_metrics_bytes(route_count, call_rows);
  hdr->plugin_metrics_offset = plugin_metrics_offset(count, ring_bytes, topology.listeners(), route_count, call_rows);
  hdr->plugin_metrics_bytes = align_up(plugin_metric_bytes, kPage);
  hdr->manager_count.store(topology.managers(), std::memory_order_relaxed);
  for (std::uint32_t s = 0; s < kMaxProcesses; ++s) new (&seg.doorbell(s)) DoorbellState{};
  for (std::uint32_t c = 0; c < count; ++c) {
    auto* ctl = new (&seg.control(c)) ChannelControl{};
    ctl->producer_slot = specs[c].producer;
    ctl->consumer_slot = specs[c].consumer;
    ctl->data_offset_pages = static_cast<std::uint32_t>((ring_data_offset(count) + c * ring_bytes) / kPage);
  }
  // Last: the magic tells openers that the layout is complete.
  std::atomic_thread_fence(std::memory_order_release);
  hdr->magic = kSegmentMagic;
  return seg;
}

Segment Segment::open(const std::string& name) {
  bip::shared_memory_object shm(bip::open_only, name.c_str(), bip::read_write);
  auto region = std::make_unique<bip::mapped_region>(shm, bip::read_write);
  if (region->get_size() < sizeof(SegmentHeader)) throw std::runtime_error("segment " + name + " is too small");
  Segment seg(name, std::move(region));
  const auto& h = seg.header();
  if (h.magic != kSegmentMagic) throw std::runtime_error("segment " + name + " has no edri header");
  if (h.layout_version != kLayoutVersion)
    throw std::runtime_error("segment " + name + " has layout version " + std::to_string(h.layout_version) +
                             ", this binary expects " + std::to_string(kLayoutVersion));
  if (h.total_bytes != seg.region_->get_size() ||
      h.total_bytes != segment_bytes(h.channel_count, h.ring_bytes, h.listener_count, h.route_count,
                                     h.plugin_metrics_bytes, h.call_rows) ||
      h.plugin_metrics_offset !=
          plugin_metrics_offset(h.channel_count, h.ring_bytes, h.listener_count, h.route_count, h.call_rows))
    throw std::runtime_error("segment " + name + " has an inconsistent size");
  return seg;
}

bool Segment::remove(const std::string& name) { return bip::shared_memory_object::remove(name.c_str()); }

std::vector<std::string> Segment::remove_stale(const std::string& prefix) {
  std::vector<std::string> removed;
  DIR* dir = ::opendir("/dev/shm");
  if (!dir) return removed;
  while (dirent* e = ::readdir(dir)) {
    std::string n = e->d_name;
    if (n.rfind(prefix, 0) != 0) continue;
    // edri.<pid>.<nonce>: stale when that pid is gone.
    const auto pid_start = prefix.size();
    const auto dot = n.find('.', pid_start);
    if (dot == std::string::npos) continue;
    const long pid = std::strtol(n.substr(pid_start, dot - pid_start).c_str(), nullptr, 10);
    if (!owner_gone(pid)) continue;
    if (remove(n)) removed.push_back(n);
  }
  ::closedir(dir);
  return removed;
}

DoorbellState& Segment::doorbell(std::uint32_t slot) const {
  return reinterpret_cast<DoorbellState*>(base_ + doorbells_offset())[slot];
}

ChannelControl& Segment::control(std::uint32_t channel) const {
  return reinterpret_cast<ChannelControl*>(base_ + channels_offset())[channel];
}

std::byte* Segment::ring_data(std::uint32_t channel) const {
  return base_ + static_cast<std::size_t>(control(channel).data_offset_pages) * kPage;
}

ListenerMetricsHeader& Segment::listener_metrics(std::uint32_t listener) const {
  const auto& h = header();
  if (listener >= h.listener_count) throw std::out_of_range("listener index");
  return *reinterpret_cast<ListenerMetricsHeader*>(base_ + h.metrics_offset + listener * h.metrics_stride);
}

std::atomic<std::uint64_t>& Segment::request_counter(std::uint32_t listener, std::uint32_t row,
                                                     std::size_t column) const {
  auto* first = reinterpret_cast<std::atomic<std::uint64_t>*>(&listener_metrics(listener) + 1);
  return first[static_cast<std::size_t>(row) * kStatusColumns + column];
}

std::atomic<std::uint64_t>& Segment::route_latency(std::uint32_t listener, std::uint32_t row) const {
  auto* counters_end = &request_counter(listener, header().route_count + 1, 0);
  return counters_end[static_cast<std::size_t>(row) * kRouteLatencyCells];
}

std::atomic<std::uint64_t>& Segment::call_latency(std::uint32_t listener, std::uint32_t row) const {
  return (&route_latency(listener, header().route_count + 1))[static_cast<std::size_t>(row) * kRouteLatencyCells];
}

ChannelProducer Segment::producer(std::uint32_t channel) const {
  if (channel >= header().channel_count) throw std::out_of_range("channel index");
  return ChannelProducer(&control(channel), ring_data(channel), ring_bytes());
}

ChannelConsumer Segment::consumer(std::uint32_t channel) const {
  if (channel >= header().channel_count) throw std::out_of_range("channel index");
  return ChannelConsumer(&control(channel), ring_data(channel), ring_bytes());
}

}  // namespace edri::transport
