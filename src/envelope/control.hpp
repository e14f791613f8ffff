// Control envelopes: the messages the processes exchange about the
// pipeline itself, never seen by a handler. Every code, with its sender,
// receiver and payload, is here. The code travels in the header's
// event_type field of an envelope of kind Control; the payload is its
// Control section.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace edri::envelope {

// manager -> router: the manager handles and subscribes to these events.
// Payload: u64 id of its domain (event_type_id of the name: replicas of a
// domain share it), then u64 event type ids.
inline constexpr std::uint64_t kControlSubscribe = 1;
// router -> managers and broker: a (re)started router asks for every
// subscription again, since they live in the router's memory only. No
// payload.
inline constexpr std::uint64_t kControlResubscribe = 2;

// listener -> broker: a WebSocket connection (the header's origin fields)
// subscribes to a notification. Payload: u64 notification type, then the
// filter as JSON text (may be empty). The broker answers with a Response
// envelope to the same origin.
inline constexpr std::uint64_t kControlPushSubscribe = 16;
// listener -> broker: the connection unsubscribes. Payload: u64
// notification type, or none for every subscription of the connection (it
// closed: no answer then, origin_stream is kNoAnswer).
inline constexpr std::uint64_t kControlPushUnsubscribe = 17;
// listener -> broker, when a listener (re)starts: forget every subscription
// of connections of this listener (origin_listener). No payload.
inline constexpr std::uint64_t kControlListenerReset = 18;
// broker -> router: the notification types that WebSocket clients want,
// the whole set each time it changes. Payload: u64 event type ids.
inline constexpr std::uint64_t kControlPushEvents = 19;

// listener -> broker -> router -> manager: the client took `n` more bytes
// of a streamed answer; its producer may make that many more. Addressed
// by reply_to (the manager's slot, from the StreamHead) and request_id
// (the streamed request's). Payload: u64 n.
inline constexpr std::uint64_t kControlStreamCredit = 20;
// The same way: the client is gone (or asked HEAD); drop the producer. No
// payload.
inline constexpr std::uint64_t kControlStreamCancel = 21;

// manager -> router -> broker: a notification that WebSocket clients may
// want could not be queued on its way (a channel far behind): every
// subscriber of it missed it. Payload: u64 notification type.
inline constexpr std::uint64_t kControlPushesLost = 22;
// broker -> listener: these connections of the listener missed a push
// (it could not be queued for the listener): close them (1013), never
// leave a silent gap. Payload: PushTarget array.
inline constexpr std::uint64_t kControlPushClose = 23;
// manager -> router, and listener -> broker: these requests of clients
// were answered on a manager -> listener channel (docs/decisions/0016),
// so the router and the broker drop them from their books. Sent without
// a wake-up: read when the receiver next runs. Payload: u64 request ids.
inline constexpr std::uint64_t kControlAnswered = 24;

// Calls f(id) for each request id of a kControlAnswered payload.
template <class F>
void for_each_answered(std::span<const std::byte> payload, F&& f) {
  for (std::size_t at = 0; at + sizeof(std::uint64_t) <= payload.size(); at += sizeof(std::uint64_t)) {
    std::uint64_t id;
    std::memcpy(&id, payload.data() + at, sizeof id);
    f(id);
  }
}

// origin_stream of a control that expects no answer.
inline constexpr std::uint32_t kNoAnswer = UINT32_MAX;

}  // namespace edri::envelope
