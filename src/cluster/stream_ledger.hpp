// StreamLedger: live streams ordered across instances, in a JetStream
// key-value bucket (cluster/wire.hpp; docs/decisions/0020).
//
// Each stream is a key whose value is its newest revision. A publish is a
// compare-and-set on the key's last sequence: whichever instance's write
// lands first numbers the revision, and the loser merges its patch onto
// the winner's state and tries again. The publishes to one stream that
// queued here while a write was out go as one write of several revisions. Every instance watches the bucket,
// so every broker learns every revision, in order per stream.
//
// The C client's key-value calls block, so they run on two threads of
// their own beside the switch's loop, over a connection of their own: one
// orders this instance's publishes (and answers reads), one watches. The
// loop hands them jobs and takes what they finished when `ready_fd()` is
// readable; nothing here touches the loop's rings.
#pragma once

#include <nats/nats.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/inbound.hpp"
#include "cluster/nats_client.hpp"
#include "envelope/envelope.hpp"
#include "transport/unique_fd.hpp"

namespace edri::cluster {

class StreamLedger {
 public:
  // A publish (patch set) or a read, and the header to answer.
  struct Job {
    envelope::EnvelopeHeader h;
    std::string name;
    std::optional<std::string> patch;
  };
  struct Answer {
    envelope::EnvelopeHeader h;
    int status;
    nlohmann::json body;
  };
  // A stream's newest revision as the bucket holds it.
  struct Revision {
    std::string name;
    std::uint64_t from = 0, revision = 0;
    std::int64_t ts = 0;
    std::string value;  // the bucket's JSON value
  };

  StreamLedger(const NatsSettings& settings, const std::string& cluster, std::size_t max_bytes);
  ~StreamLedger();
  StreamLedger(const StreamLedger&) = delete;
  StreamLedger& operator=(const StreamLedger&) = delete;

  void submit(Job job);
  // Readable when take() has something.
  int ready_fd() const { return ready_.get(); }
  // What the threads finished. Revisions come only from the watch, so
  // the broker gets each stream's in the bucket's order; a publisher may
  // hear of its revision a little before its broker does.
  void take(std::vector<Revision>& revisions, std::vector<Answer>& answers);
  // Every stream's newest revision known here.
  std::vector<Revision> all() const;
  bool ready() const;

 private:
  struct Known {
    std::uint64_t sequence = 0;  // the key's last sequence in the bucket
    Revision revision;
    nlohmann::json state;
  };

  void order();
  void watch();
  // Connects, binds (or creates) the bucket and starts watching; false
  // with `problem_` set when it cannot yet.
  bool open();
  void close();
  void serve(std::deque<Job>& jobs);
  void serve(std::vector<Job>& batch);  // one read, or publishes to one stream
  // The patches of `batch` merged onto `state` at revision `from`, as far
  // as one write holds: its patches, the state after them, an answer for
  // each publish taken (refused ones too).
  struct Merged {
    std::size_t taken = 0;
    nlohmann::json patches;
    nlohmann::json state;
    std::vector<Answer> answers;
  };
  Merged merge(const std::vector<Job>& batch, nlohmann::json state, std::uint64_t from);
  void publish(std::vector<Job>& batch);
  // One write of the first publishes of `batch`: how many it took.
  std::size_t publish_some(const std::vector<Job>& batch);
  // The key's newest revision, from the bucket: false when it could not be read.
  bool refresh(const std::string& name);
  // The revision `e` holds (nullopt when it is none of edri's), kept when
  // it is newer than what is known here.
  std::optional<Revision> learn(kvEntry* e);
  std::optional<Revision> learn(const std::string& name, std::uint64_t sequence, std::string value);
  // Logs a value skipped (a line a second at most: anyone may write many).
  void skipped(const std::string& name, const std::string& why);
  void finished(std::optional<Revision> revision, std::optional<Answer> answer);
  std::string problem() const;
  std::string unavailable() const;

  NatsSettings settings_;
  std::string bucket_;
  std::size_t max_bytes_;
  UniqueFd ready_;
  natsConnection* connection_ = nullptr;
  jsCtx* js_ = nullptr;
  kvStore* kv_ = nullptr;
  kvWatcher* watcher_ = nullptr;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool open_ = false;
  std::string problem_;
  std::deque<Job> jobs_;
  std::unordered_map<std::string, Known> known_;
  std::vector<Revision> revisions_out_;
  std::vector<Answer> answers_out_;
  LogLimit skipped_log_;  // both threads learn
  std::thread orderer_;
  std::thread watcher_thread_;
};

}  // namespace edri::cluster
