// The NATS contract between edri instances (contract, versioned; see
// docs/cluster.md). Every subject starts with the app's name
// (EDRI_CLUSTER), so two apps on one NATS never see each other's events:
//
//   <cluster>.req.<domain>         a request for `domain`; queue group
//                                  "req.<domain>": one instance that runs
//                                  the domain takes it
//   <cluster>.rep.<instance>.<domain>.<id>
//                                  the answer, on the request's reply
//                                  subject: to the instance that asked
//                                  (NATS answers there itself, with a
//                                  "no responders" status, when no
//                                  instance runs the domain)
//   <cluster>.note.<domain>        a notification for `domain`; queue
//                                  group "note.<domain>": once per app
//   <cluster>.push                 a notification for the WebSocket
//                                  clients of every instance
//   <cluster>.hello                each instance, every second: its id,
//                                  host, pid and domains (JSON), and
//                                  "draining": true once a reload
//                                  replaced it; and once with "bye":
//                                  true when it stops
//
// Live streams are ordered in a JetStream key-value bucket (nats-server
// -js; docs/decisions/0020), not on a subject:
//
//   bucket <cluster>_streams       one key per stream, history 1
//   key                            the stream's name with '.' written
//                                  "=2E" and ':' written "=3A" (neither
//                                  is a key character; '=' is no name's)
//   value                          JSON {"revision":N,"from":M,"ts":T,
//                                  "patches":[..],"state":{..}}: the
//                                  stream went from revision M to N by
//                                  the N-M merge patches, in order (one
//                                  write holds the publishes that queued
//                                  together), and is `state` after them
//
// A publish is a compare-and-set on the key's last sequence, retried on a
// conflict; every instance watches the bucket.
//
// Every message but hello is one Frame, then `count` entries, each an
// Entry and one envelope (envelope/envelope.hpp) whose body, if any, is
// inline: a Body section. Blob handles, file paths and upload paths name
// things of one host and never cross. The requests a switch sends for one
// domain in one turn of its loop go as one message, and so do the answers
// it sends to one asker in one turn: a message per request and per answer
// was a third of the CPU of a remote request, in nats-server alone
// (docs/decisions/0019).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace edri::cluster {

inline constexpr std::uint32_t kFrameMagic = 0x43524445;  // "EDRC"
inline constexpr std::uint16_t kFrameVersion = 1;

enum class FrameKind : std::uint16_t { Request = 1, Answer = 2, Notification = 3, Push = 4 };

struct Frame {
  std::uint32_t magic;
  std::uint16_t version;
  std::uint16_t kind;   // FrameKind
  std::uint32_t count;  // entries that follow
  std::uint32_t reserved;
};
static_assert(sizeof(Frame) == 16);

struct Entry {
  // A request: the asker's number for it; an answer carries it back.
  std::uint64_t id;
  // A request: milliseconds left of the asker's deadline when it was sent.
  // The instance that takes it answers within that or not at all.
  std::uint32_t deadline_ms;
  std::uint32_t length;  // of the envelope that follows
};
static_assert(sizeof(Entry) == 16);

inline std::string request_subject(std::string_view cluster, std::string_view domain) {
  return std::string(cluster) + ".req." + std::string(domain);
}
inline std::string request_queue(std::string_view domain) { return "req." + std::string(domain); }
inline std::string reply_prefix(std::string_view cluster, std::string_view instance, std::string_view domain) {
  return std::string(cluster) + ".rep." + std::string(instance) + "." + std::string(domain) + ".";
}
inline std::string note_subject(std::string_view cluster, std::string_view domain) {
  return std::string(cluster) + ".note." + std::string(domain);
}
inline std::string note_queue(std::string_view domain) { return "note." + std::string(domain); }
inline std::string push_subject(std::string_view cluster) { return std::string(cluster) + ".push"; }
inline std::string stream_bucket(std::string_view cluster) { return std::string(cluster) + "_streams"; }
inline std::string stream_key(std::string_view name) {
  std::string key;
  for (const char c : name) key += c == '.' ? "=2E" : c == ':' ? "=3A" : std::string(1, c);
  return key;
}
inline std::string stream_name(std::string_view key) {
  std::string name;
  for (std::size_t i = 0; i < key.size(); ++i) {
    const auto code = key.substr(i, 3);
    if (code == "=2E" || code == "=3A") {
      name += code == "=2E" ? '.' : ':';
      i += 2;
    } else {
      name += key[i];
    }
  }
  return name;
}
inline std::string hello_subject(std::string_view cluster) { return std::string(cluster) + ".hello"; }

}  // namespace edri::cluster
