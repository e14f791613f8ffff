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
#include <type_traits>
#include <utility>

#include "envelope/envelope.hpp"

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
// manager -> router, and listener -> broker: these requests were answered
// on a channel of their own to who asked, a client's listener
// (docs/decisions/0016), the switch or another manager (0028; reply_to
// names the asker), so the router and the broker drop them from their
// books. Sent without a wake-up: read when the receiver next runs.
// Payload: u64 request ids.
inline constexpr std::uint64_t kControlAnswered = 24;
// listener -> broker: these requests of clients went straight to the
// router (docs/decisions/0026) or to their managers (0027, kFlagDirect),
// so the broker keeps them as pending (their deadlines, their 503 should
// the router die) as if it had passed them on. Sent without a wake-up,
// like kControlAnswered, and before the request itself, so that the broker
// can know it before anything answered for it reaches the broker.
// Payload: the requests' EnvelopeHeaders, as sent.
inline constexpr std::uint64_t kControlSent = 25;
// listener -> router: these requests of clients went straight to their
// managers (docs/decisions/0027), and manager -> router: these requests of
// a handler's went straight to another manager (0028), so the router
// keeps them as in flight there, for their 503 should the manager die
// with them. Sent without a wake-up and before the request itself.
// Payload: RoutedRequests.
inline constexpr std::uint64_t kControlRouted = 26;

// listener -> router -> every manager, and listener -> every manager
// where requests go to them straight (the same channel as the requests,
// so it comes after them): the answer to slot origin_stream of connection
// origin_connection of origin_listener, at origin_generation, can no
// longer be delivered: its HTTP/2 stream or gRPC call was reset, or, when
// origin_stream is kEveryStream, the connection closed with answers still
// due. A coroutine handler waiting for one of them is cancelled
// (docs/decisions/0030). No payload.
inline constexpr std::uint64_t kControlClientGone = 27;
inline constexpr std::uint32_t kEveryStream = UINT32_MAX;

// An item of kControlRouted: a request, as sent, and the manager (its
// index among the managers) it was sent to.
struct RoutedRequest {
  EnvelopeHeader request;
  std::uint32_t manager;
  std::uint32_t reserved = 0;
};
static_assert(sizeof(RoutedRequest) == 96 && std::is_trivially_copyable_v<RoutedRequest>);

// Live streams (docs/decisions/0018). Every payload is a StreamRecord
// (stream_record.hpp); what its fields mean is said per code.
//
// manager -> router -> broker: publish the merge patch `json` to stream
// `name`. request_id and reply_to address the broker's Response (200
// {"stream","revision"}, or a problem); origin_stream kNoAnswer: none.
inline constexpr std::uint64_t kControlStreamPublish = 32;
// manager -> router -> broker: read stream `name`; answered like a publish
// with 200 {"stream","revision","state"}.
inline constexpr std::uint64_t kControlStreamRead = 33;
// listener -> broker: this listener has subscribers of `name` now: send
// its state (kControlStreamState) and then every revision.
inline constexpr std::uint64_t kControlStreamFollow = 34;
// listener -> broker: no subscriber of `name` is left here.
inline constexpr std::uint64_t kControlStreamUnfollow = 35;
// listener -> broker: the connection of the header's origin asks for
// `name` from revision `from` (a `since`); answered with a targeted
// kControlStreamPatch or kControlStreamState.
inline constexpr std::uint64_t kControlStreamResume = 36;
// listener -> broker, after the broker died: the listener follows `name`
// and holds `json` at `revision` (published at `ts`). The successor
// broker takes the newest such state as its own.
inline constexpr std::uint64_t kControlStreamRecover = 37;
// broker -> listeners, when a broker starts: say what you follow (one
// kControlStreamRecover per stream, then one with an empty name: done).
// Until every listener is done (or 2 s passed) the broker holds publishes.
inline constexpr std::uint64_t kControlStreamRecoverAll = 40;
// broker -> listener: `name` went from `from` to `revision` by patch
// `json`, published at `ts`. origin_stream kNoAnswer: for every follower
// of the listener; otherwise for the origin connection only.
inline constexpr std::uint64_t kControlStreamPatch = 38;
// broker -> listener: `name` is `json` at `revision`. For the listener
// (kNoAnswer) or one connection, like kControlStreamPatch.
inline constexpr std::uint64_t kControlStreamState = 39;

// Instances joined over NATS (docs/decisions/0020): the switch orders
// streams through JetStream, so the router sends it the managers'
// publishes and reads instead of the broker, and the broker only fans out.
//
// switch -> router -> broker: `name` is at `revision` now, one past `from`
// when `json` is {"patch":..,"state":..} of a contiguous revision. The
// broker sends followers the patch when it held `from`, else the state.
inline constexpr std::uint64_t kControlStreamApply = 41;
// broker -> router -> switch, when a broker starts: send every stream's
// newest revision again (kControlStreamApply), so that streams nobody here
// followed are known again too.
inline constexpr std::uint64_t kControlStreamReplay = 42;

inline constexpr bool is_stream_control(std::uint64_t code) {
  return code >= kControlStreamPublish && code <= kControlStreamReplay;
}

// Calls f(item) for each T of a payload that is an array of them (the
// request ids of kControlAnswered, the headers of kControlSent).
template <class T, class F>
void for_each_item(std::span<const std::byte> payload, F&& f) {
  for (std::size_t at = 0; at + sizeof(T) <= payload.size(); at += sizeof(T)) {
    T item;
    std::memcpy(&item, payload.data() + at, sizeof item);
    f(item);
  }
}

// Calls f(id) for each request id of a kControlAnswered payload.
template <class F>
void for_each_answered(std::span<const std::byte> payload, F&& f) {
  for_each_item<std::uint64_t>(payload, std::forward<F>(f));
}

// origin_stream of a control that expects no answer.
inline constexpr std::uint32_t kNoAnswer = UINT32_MAX;

}  // namespace edri::envelope
