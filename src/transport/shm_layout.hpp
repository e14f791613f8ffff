// The whole shared-memory contract between edri processes, in one place.
//
// One segment per server instance, created by the supervisor (mode 0600,
// named `edri.<supervisor pid>.<nonce>`), mapped by every child:
//
//   SegmentHeader                      (one page)
//   DoorbellState  x kMaxProcesses     (two cache lines each)
//   ChannelControl x channel_count     (three cache lines each)
//   ring data      x channel_count     (ring_bytes each, page aligned)
//   ListenerMetrics x listener_count   (page aligned; written by its listener only)
//   plugin metrics                     (page aligned; MetricHead and series per metric)
//
// A channel is a single-producer single-consumer byte ring. Records are
//   [u32 length][u32 tag][payload, padded to 8 bytes]
// A record never wraps: when it does not fit before the end of the ring the
// producer writes a kWrapTag header and continues at offset 0.
//
// Positions (head, tail) are 64-bit byte counters that only grow; the
// offset in the ring is position & (ring_bytes - 1).
//
// Wake-up protocol (no lost wake-ups, no system call while busy):
//   consumer, before sleeping: sleeping = 1; fence; re-check every inbound
//     ring; sleep only if all are empty.
//   producer, after publishing tail: fence; if sleeping and
//     exchange(sleeping, 0) returned 1, write the consumer's eventfd.
// The same protocol runs backwards for a full ring: a producer that found
// no room sets producer_waiting; the consumer, after advancing head, rings
// the producer's doorbell if that flag was set.
#pragma once

#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>

namespace edri::transport {

inline constexpr std::uint64_t kSegmentMagic = 0x3147455349524445ULL;  // "EDRISEG1"
inline constexpr std::uint32_t kLayoutVersion = 13;
inline constexpr std::size_t kCacheLine = 64;
inline constexpr std::size_t kPage = 4096;

inline constexpr std::uint32_t kMaxProcesses = 256;
inline constexpr std::uint32_t kMaxChannels = 1024;

inline constexpr std::size_t kRecordHeaderBytes = 8;
inline constexpr std::size_t kRecordAlign = 8;
inline constexpr std::uint32_t kWrapTag = 0xFFFFFFFFu;

// Default ring size per channel; the largest record is a quarter of it.
inline constexpr std::size_t kDefaultRingBytes = 1u << 20;
inline constexpr std::size_t kMinRingBytes = 4096;

inline constexpr std::size_t max_record_bytes(std::size_t ring_bytes) { return ring_bytes / 4 - kRecordHeaderBytes; }

inline constexpr std::size_t align_up(std::size_t n, std::size_t a) { return (n + a - 1) & ~(a - 1); }

static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
static_assert(std::atomic<std::uint16_t>::is_always_lock_free);

// Quick deaths in a row (each within 10 s of its start) from which a
// process is in a crash loop: logged so, and flagged by /health.
inline constexpr std::uint32_t kCrashLoopFailures = 3;

// CPUs a busy manager may hold for itself: placement keeps the pipeline
// together only on machines of few CPUs (runtime/placement.hpp), where
// loops float; past this many allowed CPUs, the rest are never held.
inline constexpr std::size_t kHeldCpusMax = 64;

// What a process's loop did, counted as it goes: turns that found work
// and the records they took, turns spent spinning, sleeps and how long
// they lasted, and the sleeps a ring ended with the time from the ring to
// the turn it started. Per request, these say how many times a request
// woke each process and what each wake-up cost.
struct alignas(kCacheLine) LoopStats {
  std::atomic<std::uint64_t> turns;     // turns that found work
  std::atomic<std::uint64_t> records;   // records taken from inbound rings
  std::atomic<std::uint64_t> spins;     // turns spent spinning, found nothing
  std::atomic<std::uint64_t> sleeps;    // blocks in epoll_wait
  std::atomic<std::uint64_t> slept_us;  // time blocked
  std::atomic<std::uint64_t> woken;     // sleeps a ring ended (rang_ns was set)
  std::atomic<std::uint64_t> wake_us;   // their time from the ring to the turn
  // A manager's, stored at the end of each turn (/metrics, per domain):
  // requests its handlers hold while they wait (coroutines, streamed
  // answers being made), and calls they made that are not answered yet.
  std::atomic<std::uint32_t> waiting;
  std::atomic<std::uint32_t> calls;
};

// One per process slot: the process's eventfd doorbell state, and what the
// supervisor and /health need to know of it.
struct alignas(kCacheLine) DoorbellState {
  std::atomic<std::uint32_t> sleeping;  // 1: the owner is about to block on its eventfd
  std::atomic<std::uint32_t> pid;       // set by the process when it serves; 0 while (re)starting
  std::atomic<std::uint64_t> rings;     // eventfd writes made to this slot (statistics)
  std::atomic<std::uint32_t> restarts;  // written by the supervisor
  // Deaths in a row, each within 10 s of its start (a crash loop); 0 once a
  // start has lived longer. Written by the supervisor, shown by /health.
  std::atomic<std::uint32_t> failures;
  // Milliseconds the supervisor waits before the next start; 0 when none is
  // due. Written by the supervisor, shown by /health.
  std::atomic<std::uint32_t> restart_delay_ms;
  // When the owner's loop last began a turn (turn_clock_ms()). A process
  // that is not `sleeping` and began no turn for long is stuck in one (a
  // handler that never returns): /health says so (EDRI_HEALTH_STALL).
  std::atomic<std::uint64_t> turn_ms;
  // When a producer last rang this doorbell (loop_clock_ns()); the owner
  // takes it when it wakes, to count the time from the ring to its turn.
  std::atomic<std::uint64_t> rang_ns;
  // Spans the process's exporter dropped (EDRI_TRACE_BUFFER), stored by
  // the owner once a second; shown by /metrics.
  std::atomic<std::uint64_t> spans_dropped;
  // Export requests its exporter failed to POST (their spans are lost to
  // the endpoint), stored with spans_dropped.
  std::atomic<std::uint64_t> trace_batches_failed;
  // Loop statistics (issue 39: where a request waits), written by the
  // owner only, on a line of their own, and read by /metrics.
  LoopStats loop;
};

// Control block of one ring. Producer-written and consumer-written fields
// live on separate cache lines so that the two sides do not false-share.
struct ChannelControl {
  alignas(kCacheLine) std::atomic<std::uint64_t> tail;  // written by the producer only
  std::atomic<std::uint32_t> producer_waiting;          // producer found the ring full
  std::uint32_t producer_slot;                          // set by the supervisor
  alignas(kCacheLine) std::atomic<std::uint64_t> head;  // written by the consumer only
  // 1 + the position of the record the consumer is handling (0: none).
  // Written before each record, so a consumer that crashes on a record is
  // restarted past it (and past the records of its batch before it, which
  // it finished): a record that kills its consumer is not handled twice.
  std::atomic<std::uint64_t> in_progress;
  std::uint32_t consumer_slot;      // set by the supervisor
  std::uint32_t data_offset_pages;  // from the start of the segment
  alignas(kCacheLine) std::uint64_t reserved[8];
};

// What the switch (docs/cluster.md) tells the listeners' /health and
// /metrics. Counters are cumulative; `instances` is a JSON array written
// under a sequence lock: odd `instances_version` while it is written.
inline constexpr std::size_t kClusterInstancesBytes = 3072;
struct ClusterState {
  std::atomic<std::uint32_t> nats_up;  // 1 while the switch is connected to NATS
  std::atomic<std::uint32_t> instances_version;
  std::atomic<std::uint64_t> requests_sent;       // to other instances
  std::atomic<std::uint64_t> requests_served;     // for other instances
  std::atomic<std::uint64_t> requests_refused;    // 503 at once: NATS down, nobody runs the domain, too large
  std::atomic<std::uint64_t> requests_expired;    // no answer from the other instance within the deadline
  std::atomic<std::uint64_t> notifications_sent;  // published for other instances (domains and pushes)
  std::atomic<std::uint64_t> notifications_received;
  std::atomic<std::uint64_t> reconnects;  // times NATS came back after it was lost
  char instances[kClusterInstancesBytes];
};

struct alignas(kPage) SegmentHeader {
  std::uint64_t magic;
  std::uint32_t layout_version;
  std::uint32_t channel_count;
  std::uint64_t ring_bytes;
  std::uint64_t total_bytes;
  std::uint64_t supervisor_pid;
  std::uint32_t listener_count;
  std::uint32_t route_count;            // routes in the listeners' table (metrics rows)
  std::uint32_t call_rows;              // WebSocket commands' and gRPC methods' latency rows (plugin/call_rows.hpp)
  std::uint64_t metrics_offset;         // first ListenerMetrics block
  std::uint64_t metrics_stride;         // bytes per listener's block
  std::uint64_t plugin_metrics_offset;  // the plugins' metrics (metric_area.hpp)
  std::uint64_t plugin_metrics_bytes;
  std::atomic<std::uint32_t> managers_subscribed;  // written by the router
  std::atomic<std::uint32_t> manager_count;
  // Child deaths so far. The supervisor adds one after it has reaped a child
  // and counted it in that slot's `restarts`, then rings every live child's
  // doorbell: a process that sees this change compares each slot's
  // `restarts` with what it saw before to learn who died (and answers for
  // the requests that died with it).
  std::atomic<std::uint32_t> deaths;
  // The CPUs busy managers' loops hold, each for itself (EDRI_CPUS=auto on
  // few cores, docs/decisions/0036): entry i is the slot of the manager
  // holding the i-th CPU the server may use, 0 while none does. Taken by
  // compare-exchange from 0, given back by the holder when it is quiet, and
  // cleared by a manager's next start in its slot (a crash leaves it).
  std::atomic<std::uint16_t> cpu_holders[kHeldCpusMax];
  ClusterState cluster;
};

static_assert(sizeof(SegmentHeader) == kPage);
static_assert(offsetof(SegmentHeader, cluster) + sizeof(ClusterState) <= kPage);
static_assert(sizeof(LoopStats) == kCacheLine);
static_assert(offsetof(DoorbellState, loop) == kCacheLine);  // producers write the first line, the owner this one
static_assert(sizeof(DoorbellState) == 2 * kCacheLine);

// DoorbellState::turn_ms's clock, the same in every process: monotonic
// milliseconds, coarse (a tick of a few ms, read in a few ns, once per
// loop turn).
// DoorbellState::rang_ns's clock, the same in every process: monotonic
// nanoseconds (read only when a ring is made, and after a sleep).
inline std::uint64_t loop_clock_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u + static_cast<std::uint64_t>(t.tv_nsec);
}
inline std::uint64_t turn_clock_ms() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000 + static_cast<std::uint64_t>(t.tv_nsec) / 1000000;
}
static_assert(sizeof(ChannelControl) == 3 * kCacheLine);

inline constexpr std::size_t doorbells_offset() { return sizeof(SegmentHeader); }
inline constexpr std::size_t channels_offset() { return doorbells_offset() + kMaxProcesses * sizeof(DoorbellState); }
inline constexpr std::size_t ring_data_offset(std::uint32_t channel_count) {
  return align_up(channels_offset() + channel_count * sizeof(ChannelControl), kPage);
}
// Request metrics of one listener. Counters are written by that listener
// alone (relaxed load + store, no locked instruction) and read by any.
// Rows: one per route, then one for answers given without a route (404,
// 400, built-in endpoints). Columns: the status codes below, then "other".
inline constexpr std::uint16_t kTrackedStatuses[] = {200, 201, 204, 301, 302, 303, 304, 307, 308, 400,
                                                     401, 403, 404, 405, 408, 409, 413, 414, 415, 417,
                                                     422, 429, 431, 500, 501, 502, 503, 504, 505};
inline constexpr std::size_t kStatusColumns = std::size(kTrackedStatuses) + 1;
// Latency buckets, upper bounds in microseconds (Prometheus `le`), then +Inf.
inline constexpr std::uint64_t kLatencyBucketsUs[] = {
    100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000};
inline constexpr std::size_t kLatencyBuckets = std::size(kLatencyBucketsUs) + 1;
// Each row's latency, after every row's status counters: its buckets'
// counts (not cumulative; the reader sums), the sum in microseconds, the
// count.
inline constexpr std::size_t kRouteLatencyCells = kLatencyBuckets + 2;

// gRPC's status codes, 0 (OK) to 16 (UNAUTHENTICATED).
inline constexpr std::size_t kGrpcCodes = 17;

// A counter only this process writes: a plain load and store, no locked
// add (readers in other processes may see it a turn late).
inline void bump_owned(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

// Counts a call of `us` microseconds into a latency's kRouteLatencyCells,
// owned by this process.
inline void observe_latency_us(std::atomic<std::uint64_t>* cells, std::uint64_t us) {
  std::size_t b = 0;
  while (b < std::size(kLatencyBucketsUs) && us > kLatencyBucketsUs[b]) ++b;
  bump_owned(cells[b]);
  bump_owned(cells[kLatencyBuckets], us);
  bump_owned(cells[kLatencyBuckets + 1]);
}

struct ListenerMetricsHeader {
  // Bytes the listener holds unsent for its clients now
  // (EDRI_OUTPUT_BUFFER_TOTAL bounds it), and the clients it closed for
  // falling too far behind.
  std::atomic<std::uint64_t> output_held_bytes;
  std::atomic<std::uint64_t> clients_shed;
  // Trusted proxies' connections closed without a valid PROXY protocol
  // header (EDRI_PROXY_PROTOCOL).
  std::atomic<std::uint64_t> proxy_headers_refused;
  // Access log lines queued for the writer, and those dropped (its buffer
  // full, or a write failed): EDRI_ACCESS_LOG.
  std::atomic<std::uint64_t> access_log_lines;
  std::atomic<std::uint64_t> access_log_dropped;
  // The calls that are not HTTP requests, by how they ended: WebSocket
  // commands by their answer's status column, gRPC calls by status code;
  // Server-Sent Events streams opened, and live-stream frames sent (to
  // WebSocket, SSE and gRPC subscribers alike).
  std::atomic<std::uint64_t> websocket_commands[kStatusColumns];
  std::atomic<std::uint64_t> grpc_calls[kGrpcCodes];
  std::atomic<std::uint64_t> sse_streams;
  std::atomic<std::uint64_t> stream_frames;
  // followed by (route_count + 1) * kStatusColumns counters, then as many
  // routes' latencies (kRouteLatencyCells each), then call_rows latencies:
  // each WebSocket command's and unary gRPC method's, as a route's.
};

inline constexpr std::size_t listener_metrics_bytes(std::uint32_t route_count, std::uint32_t call_rows = 0) {
  return align_up(sizeof(ListenerMetricsHeader) +
                      ((route_count + 1) * (kStatusColumns + kRouteLatencyCells) + call_rows * kRouteLatencyCells) *
                          sizeof(std::uint64_t),
                  kPage);
}

inline constexpr std::size_t metrics_offset(std::uint32_t channel_count, std::size_t ring_bytes) {
  return ring_data_offset(channel_count) + channel_count * ring_bytes;
}

// The plugins' own metrics (include/edri/metric.hpp), written by every
// process that runs plugin code, with locked instructions: each metric a
// MetricHead, then its `max_series` series of metric_series_bytes(buckets)
// each. Every process lays the metrics out alike, from the same plugins
// in the same order (plugin/plugin_metrics.hpp).
inline constexpr std::size_t kMetricLabelBytes = 184;  // a series' label values, encoded
inline constexpr std::size_t kMetricMaxBuckets = 32;   // a histogram's, besides +Inf

struct alignas(kCacheLine) MetricHead {
  // Writes dropped: the metric had no room for another series, or the
  // label values did not fit or were not as many as its labels.
  std::atomic<std::uint64_t> dropped;
};

// A series: free, then claimed by the first writer of its label values
// (which it copies in), then ready. Claimed is seen only for the few
// instructions of the copy, unless its writer died in them: a reader that
// waited long enough passes it by.
enum : std::uint32_t { kSeriesFree = 0, kSeriesClaimed = 1, kSeriesReady = 2 };
struct MetricSeriesHead {
  std::atomic<std::uint32_t> state;
  std::uint32_t label_bytes;
  // Each label value as a length byte, then its bytes, in declared order.
  char labels[kMetricLabelBytes];
  // A counter's or gauge's value; a histogram's sum. Its buckets' counts
  // follow (one per bound, then +Inf; not cumulative).
  std::atomic<double> value;
};

static_assert(std::atomic<double>::is_always_lock_free);
static_assert(sizeof(MetricHead) == kCacheLine);
static_assert(sizeof(MetricSeriesHead) == 200);

inline constexpr std::size_t metric_series_bytes(std::size_t buckets) {
  return align_up(sizeof(MetricSeriesHead) + (buckets == 0 ? 0 : (buckets + 1) * sizeof(std::uint64_t)), kCacheLine);
}
inline constexpr std::size_t metric_bytes(std::size_t buckets, std::uint32_t max_series) {
  return sizeof(MetricHead) + max_series * metric_series_bytes(buckets);
}

inline constexpr std::size_t plugin_metrics_offset(std::uint32_t channel_count, std::size_t ring_bytes,
                                                   std::uint32_t listeners, std::uint32_t route_count,
                                                   std::uint32_t call_rows = 0) {
  return metrics_offset(channel_count, ring_bytes) + listeners * listener_metrics_bytes(route_count, call_rows);
}

inline constexpr std::size_t segment_bytes(std::uint32_t channel_count, std::size_t ring_bytes, std::uint32_t listeners,
                                           std::uint32_t route_count, std::size_t plugin_metric_bytes = 0,
                                           std::uint32_t call_rows = 0) {
  return plugin_metrics_offset(channel_count, ring_bytes, listeners, route_count, call_rows) +
         align_up(plugin_metric_bytes, kPage);
}

inline std::size_t status_column(int status) {
  for (std::size_t i = 0; i < std::size(kTrackedStatuses); ++i)
    if (kTrackedStatuses[i] == status) return i;
  return std::size(kTrackedStatuses);
}

}  // namespace edri::transport
