#include "cluster/stream_ledger.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <chrono>
#include <variant>

#include "cluster/inbound.hpp"
#include "cluster/wire.hpp"
#include "envelope/stream_patch.hpp"

namespace edri::cluster {

namespace env = edri::envelope;
using namespace std::chrono_literals;

namespace {

// A publish that lost the compare-and-set this many times in a row is
// answered 503: other instances publish to that stream faster than this
// one can merge.
constexpr int kAttempts = 16;
// Each key-value call waits at most this long for JetStream.
constexpr std::int64_t kWaitMs = 2000;
constexpr auto kReopenAfter = 500ms;
const std::string kTooDeep =
    "a stream's patch nests deeper than " + std::to_string(kStreamJsonMaxDepth) + " levels of arrays and objects";

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string last_error(natsStatus s) {
  const char* text = nats_GetLastError(nullptr);
  return std::string(natsStatus_GetText(s)) + (text && *text ? std::string(": ") + text : "");
}

void on_connected(natsConnection*, void*) {}

}  // namespace

StreamLedger::StreamLedger(const NatsSettings& settings, const std::string& cluster, std::size_t max_bytes)
    : settings_(settings),
      bucket_(stream_bucket(cluster)),
      max_bytes_(max_bytes),
      ready_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      problem_("the stream bucket is not open yet") {
  settings_.name += " streams";
  orderer_ = std::thread([this] { order(); });
  watcher_thread_ = std::thread([this] { watch(); });
}

StreamLedger::~StreamLedger() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    if (watcher_) kvWatcher_Stop(watcher_);  // its thread waits no longer
  }
  wake_.notify_all();
  orderer_.join();
  watcher_thread_.join();
  close();
}

void StreamLedger::submit(Job job) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void StreamLedger::take(std::vector<Revision>& revisions, std::vector<Answer>& answers) {
  std::uint64_t n;
  while (::read(ready_.get(), &n, sizeof n) > 0) {
  }
  std::lock_guard lock(mutex_);
  revisions.swap(revisions_out_);
  answers.swap(answers_out_);
}

std::vector<StreamLedger::Revision> StreamLedger::all() const {
  std::lock_guard lock(mutex_);
  std::vector<Revision> out;
  out.reserve(known_.size());
  for (const auto& [name, k] : known_)
    if (k.revision.revision > 0) out.push_back(k.revision);  // not only skipped values
  return out;
}

bool StreamLedger::ready() const {
  std::lock_guard lock(mutex_);
  return open_;
}

std::string StreamLedger::problem() const {
  std::lock_guard lock(mutex_);
  return problem_;
}

std::string StreamLedger::unavailable() const {
  return "live streams are ordered in JetStream, which is not reachable now (" + problem() + "); retry";
}

void StreamLedger::finished(std::optional<Revision> revision, std::optional<Answer> answer) {
  {
    std::lock_guard lock(mutex_);
    if (revision) revisions_out_.push_back(std::move(*revision));
    if (answer) answers_out_.push_back(std::move(*answer));
  }
  const std::uint64_t one = 1;
  (void)!::write(ready_.get(), &one, sizeof one);
}

// ---- the watcher thread: opens the bucket, then follows it ----

bool StreamLedger::open() {
  natsStatus s = NATS_OK;
  if (!connection_) {
    natsOptions* o = NatsClient::make_options(settings_);
    natsOptions_SetMaxReconnect(o, -1);
    natsOptions_SetReconnectWait(o, 250);
    natsOptions_SetTimeout(o, 2000);
    natsOptions_SetRetryOnFailedConnect(o, true, on_connected, nullptr);
    s = natsConnection_Connect(&connection_, o);
    natsOptions_Destroy(o);
    if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED) connection_ = nullptr;
  }
  if (connection_ && !js_) {
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = kWaitMs;
    s = natsConnection_JetStream(&js_, connection_, &jo);
  }
  if (js_ && !kv_) {
    s = js_KeyValue(&kv_, js_, bucket_.c_str());
    if (s == NATS_NOT_FOUND) {
      kvConfig c;
      kvConfig_Init(&c);
      c.Bucket = bucket_.c_str();
      c.History = 1;
      s = js_CreateKeyValue(&kv_, js_, &c);
    }
  }
  kvWatcher* watcher = nullptr;
  if (kv_ && !watcher_) s = kvStore_WatchAll(&watcher, kv_, nullptr);
  std::lock_guard lock(mutex_);
  if (watcher) watcher_ = watcher;  // under the lock: the destructor stops it
  if (watcher_) {
    open_ = true;
    return true;
  }
  problem_ = s == NATS_NO_RESPONDERS || s == NATS_TIMEOUT
                 ? "is JetStream enabled on the NATS server? nats-server -js; " + last_error(s)
                 : last_error(s);
  return false;
}

void StreamLedger::close() {
  if (watcher_) kvWatcher_Destroy(watcher_);
  if (kv_) kvStore_Destroy(kv_);
  if (js_) jsCtx_Destroy(js_);
  if (connection_) {
    natsConnection_Close(connection_);
    natsConnection_Destroy(connection_);
  }
}

void StreamLedger::watch() {
  bool said = false;
  auto stopping = [this] {
    std::lock_guard lock(mutex_);
    return stopping_;
  };
  while (!stopping()) {
    if (!watcher_) {
      if (!open()) {
        if (!said) spdlog::warn("live streams cannot cross instances yet: {}", unavailable());
        said = true;
        std::this_thread::sleep_for(kReopenAfter);
        continue;
      }
      spdlog::info("live streams are ordered in JetStream bucket {}", bucket_);
    }
    if (const auto n = skipped_log_.overdue())
      spdlog::error("{} more values in the stream bucket were skipped since the last such line", n);
    kvEntry* e = nullptr;
    const natsStatus s = kvWatcher_Next(&e, watcher_, 250);
    if (s == NATS_OK && e) {
      // Every write, in the bucket's order: the broker's only source.
      if (auto r = learn(e)) finished(std::move(r), std::nullopt);
      kvEntry_Destroy(e);
    } else if (s != NATS_OK && s != NATS_TIMEOUT) {
      std::this_thread::sleep_for(kReopenAfter / 5);
    }
  }
}

std::optional<StreamLedger::Revision> StreamLedger::learn(kvEntry* e) {
  if (kvEntry_Operation(e) != kvOp_Put) return std::nullopt;  // nothing here deletes a stream
  const auto* data = static_cast<const char*>(kvEntry_Value(e));
  return learn(stream_name(kvEntry_Key(e)), kvEntry_Revision(e), std::string(data, kvEntry_ValueLen(e)));
}

std::optional<StreamLedger::Revision> StreamLedger::learn(const std::string& name, std::uint64_t sequence,
                                                          std::string value) {
  // Anyone who can write to the bucket can put anything there: a value is
  // taken only when it is whole, consistent, no larger and no deeper than
  // this instance would write it (inbound.hpp), or skipped.
  std::string why;
  auto stored = is_valid_stream_name(name) ? read_stream_value(value, max_bytes_, why) : std::nullopt;
  if (!stored) skipped(name, why.empty() ? "a key that names no stream" : why);
  std::optional<Revision> r;
  if (stored) r = Revision{name, stored->from, stored->revision, stored->ts, std::move(value)};
  std::lock_guard lock(mutex_);
  auto& k = known_[name];
  if (k.sequence >= sequence) return r;
  // A skipped value's sequence is kept: the next publish writes over it,
  // going on from the last revision known here.
  k.sequence = sequence;
  if (r) {
    k.revision = *r;
    k.state = std::move(stored->state);
  }
  return r;
}

void StreamLedger::skipped(const std::string& name, const std::string& why) {
  if (std::uint64_t unlogged = 0; skipped_log_.allow(unlogged))
    spdlog::error("stream {}: a value in the bucket was skipped: {}{}", name, why, LogLimit::more(unlogged));
}

// ---- the orderer thread: this instance's publishes and reads ----

void StreamLedger::order() {
  std::deque<Job> jobs;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      jobs.swap(jobs_);
    }
    serve(jobs);
    jobs.clear();
  }
}

void StreamLedger::serve(std::deque<Job>& jobs) {
  // The publishes to one stream that waited together go as one write, in
  // the order they came; reads and the other streams keep their order.
  while (!jobs.empty()) {
    std::vector<Job> batch{std::move(jobs.front())};
    jobs.pop_front();
    if (batch.front().patch) {
      for (auto it = jobs.begin(); it != jobs.end();) {
        if (it->patch && it->name == batch.front().name) {
          batch.push_back(std::move(*it));
          it = jobs.erase(it);
        } else {
          ++it;
        }
      }
    }
    serve(batch);
  }
}

void StreamLedger::serve(std::vector<Job>& batch) {
  const Job& first = batch.front();
  auto refuse_all = [&](int status, const std::string& detail) {
    for (const auto& job : batch) finished(std::nullopt, Answer{job.h, status, {{"detail", detail}}});
  };
  if (!is_valid_stream_name(first.name)) return refuse_all(422, "a stream name is 1 to 128 of A-Z a-z 0-9 . _ : -");
  if (!ready()) return refuse_all(503, unavailable());
  if (first.patch) return publish(batch);
  if (!refresh(first.name)) return refuse_all(503, unavailable());
  std::lock_guard lock(mutex_);
  const auto it = known_.find(first.name);
  nlohmann::json body{{"stream", first.name}, {"revision", 0}, {"state", nlohmann::json::object()}};
  if (it != known_.end())
    body = {{"stream", first.name}, {"revision", it->second.revision.revision}, {"state", it->second.state}};
  answers_out_.push_back(Answer{first.h, 200, std::move(body)});
  const std::uint64_t one = 1;
  (void)!::write(ready_.get(), &one, sizeof one);
}

bool StreamLedger::refresh(const std::string& name) {
  kvEntry* e = nullptr;
  const natsStatus s = kvStore_Get(&e, kv_, stream_key(name).c_str());
  if (s == NATS_NOT_FOUND) return true;
  if (s != NATS_OK) {
    std::lock_guard lock(mutex_);
    problem_ = last_error(s);
    return false;
  }
  (void)learn(e);  // the broker hears of it from the watch, in order
  kvEntry_Destroy(e);
  return true;
}

StreamLedger::Merged StreamLedger::merge(const std::vector<Job>& batch, nlohmann::json state, std::uint64_t from) {
  Merged m;
  env::StreamState merged;  // one copy of the state for the batch, at most
  merged.replace(std::move(state));
  m.patches = nlohmann::json::array();
  std::size_t bytes = 0;
  for (const auto& job : batch) {
    // A write holds at most about EDRI_STREAM_MAX_BYTES of patches; the
    // rest wait for the next one.
    if (m.patches.size() > 0 && bytes + job.patch->size() > max_bytes_) break;
    ++m.taken;
    if (json_nests_deeper_than(*job.patch, kStreamJsonMaxDepth)) {
      // Every instance would skip the value it went into (inbound.hpp).
      m.answers.push_back(Answer{job.h, 422, {{"detail", kTooDeep}}});
      continue;
    }
    auto applied = env::apply_stream_patch(job.name, merged, *job.patch, max_bytes_);
    if (const auto* refused = std::get_if<env::PatchRefused>(&applied)) {
      m.answers.push_back(Answer{job.h, refused->status, {{"detail", refused->detail}}});
      continue;
    }
    bytes += job.patch->size();
    m.patches.push_back(std::move(std::get<env::PatchApplied>(applied).patch));
    m.answers.push_back(Answer{job.h, 200, {{"stream", job.name}, {"revision", from + m.patches.size()}}});
  }
  m.state = std::move(merged.value);
  return m;
}

void StreamLedger::publish(std::vector<Job>& batch) {
  while (!batch.empty()) {
    const std::size_t taken = publish_some(batch);
    batch.erase(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(taken));
  }
}

std::size_t StreamLedger::publish_some(const std::vector<Job>& batch) {
  const std::string& name = batch.front().name;
  const std::string key = stream_key(name);
  std::size_t taken = 1;
  auto refuse = [&](int status, const std::string& detail) {
    for (std::size_t i = 0; i < taken; ++i) finished(std::nullopt, Answer{batch[i].h, status, {{"detail", detail}}});
    return taken;
  };
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    std::uint64_t sequence = 0, revision = 0;
    nlohmann::json state = nlohmann::json::object();
    {
      std::lock_guard lock(mutex_);
      if (const auto it = known_.find(name); it != known_.end()) {
        sequence = it->second.sequence;
        revision = it->second.revision.revision;
        state = it->second.state;
      }
    }
    Merged m = merge(batch, std::move(state), revision);
    taken = m.taken;
    if (m.patches.empty()) {  // every one refused
      for (auto& a : m.answers) finished(std::nullopt, std::move(a));
      return taken;
    }
    const nlohmann::json value{{"revision", revision + m.patches.size()},
                               {"from", revision},
                               {"ts", now_us()},
                               {"patches", std::move(m.patches)},
                               {"state", std::move(m.state)}};
    const std::string text = value.dump();
    const int length = static_cast<int>(text.size());
    std::uint64_t written = 0;
    // A stream no instance published yet is created; any other is updated
    // only where it still is at the sequence these patches were merged onto.
    const natsStatus s = sequence == 0 ? kvStore_Create(&written, kv_, key.c_str(), text.data(), length)
                                       : kvStore_Update(&written, kv_, key.c_str(), text.data(), length, sequence);
    if (s == NATS_OK) {
      (void)learn(name, written, text);  // the broker hears of it from the watch, in order
      for (auto& a : m.answers) finished(std::nullopt, std::move(a));
      return taken;
    }
    if (s == NATS_MAX_PAYLOAD) return refuse(413, "the stream's revision is larger than the NATS server's max_payload");
    if (s == NATS_TIMEOUT || natsConnection_Status(connection_) != NATS_CONN_STATUS_CONNECTED) {
      std::lock_guard lock(mutex_);
      problem_ = last_error(s);
      break;
    }
    // Another instance published first: merge onto its revision.
    if (!refresh(name)) break;
  }
  if (!ready()) return refuse(503, unavailable());
  return refuse(503, "stream " + name + ": other instances published to it first " + std::to_string(kAttempts) +
                         " times in a row, or JetStream refused it (" + problem() + "); retry");
}

}  // namespace edri::cluster
