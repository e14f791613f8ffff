// NatsClient: one connection to NATS (the C client, libnats), driven from
// the switch's own event loop.
//
// The C client reads and writes its socket only when told to
// (natsOptions_SetEventLoop): no reader thread stands between the socket
// and the loop, and subscriptions are synchronous ones drained right after
// each read. The client keeps two threads of its own (timers and
// reconnects); they reach the socket's registration through a private
// epoll set, which is safe from any thread, and whose descriptor the
// process loop watches. Publishes go out at once (send-asap), not on the
// client's flush timer.
//
// Starting without NATS is normal: the client keeps trying (every 250 ms)
// and subscriptions made meanwhile take effect when it connects.
#pragma once

#include <nats/nats.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "runtime/event_loop.hpp"
#include "transport/unique_fd.hpp"

namespace edri::cluster {

struct NatsSettings {
  std::vector<std::string> urls;
  std::string user, password, token;
  bool tls = false;
  std::string ca, certificate, key;
  std::string name;  // shown by the NATS server (connz)
};

// One message as a subscription hands it over; valid during the call.
struct NatsMessage {
  std::string_view subject;
  std::string_view reply;
  std::span<const std::byte> data;
  // NATS's own answer to a request that no subscriber took, on a reply
  // subscription: the C client tells that it came, not its subject (so the
  // fields above are empty).
  bool no_responders;
};

class NatsClient {
 public:
  using Handler = std::function<void(const NatsMessage&)>;

  // Throws std::runtime_error when the settings are refused (a bad URL, an
  // unreadable certificate), not when NATS is merely unreachable.
  NatsClient(EventLoop& loop, const NatsSettings& settings);
  // Applies `settings` to options that are thrown away: throws what the
  // constructor would (a bad URL, an unreadable certificate), connecting
  // to nothing. For start-up, before any process runs.
  static void check(const NatsSettings& settings);
  // A new natsOptions with `settings` applied; throws on a refused one.
  static natsOptions* make_options(const NatsSettings& settings);
  ~NatsClient();
  NatsClient(const NatsClient&) = delete;
  NatsClient& operator=(const NatsClient&) = delete;

  bool connected() const;
  // Largest message the server takes (0 while never connected).
  std::size_t max_payload() const;
  // `queue` empty: every subscriber gets each message; else one of the
  // group. Throws when the client refuses.
  void subscribe(const std::string& subject, const std::string& queue, Handler handler);
  // Ends the subscription to `subject` without losing what NATS already
  // sent to it (a drain: NATS is told, and a PING's answer fences what it
  // sent before): those messages are still handed out. For a queue group,
  // NATS sends the next messages to its other members. Not connected: the
  // messages the client holds are handed out now, and it ends at once.
  void drain(const std::string& subject);
  // Whether every subscription drain() ended has handed out its last message.
  bool drained() const;
  // False when not connected or refused: nothing was queued.
  // What is published goes out at the end of the loop's turn (flush()),
  // all of a turn's messages in one write.
  bool publish(const std::string& subject, const std::string& reply, std::span<const std::byte> data);
  // Reads what the socket has and hands out what the subscriptions hold,
  // a bounded amount. True when it stopped with work left.
  bool pump();
  // Writes what was published; pumps again where pump() left work. For the
  // loop's end of turn: true when work is left for the next turn.
  bool flush();

 private:
  struct Subscription {
    natsSubscription* sub = nullptr;
    Handler handler;
    std::string subject;
    bool draining = false;
  };
  // The C client's event loop callbacks; `closure` is this client.
  static natsStatus on_attach(void** user, void* loop, natsConnection* nc, natsSock fd);
  static natsStatus on_read(void* user, bool add);
  static natsStatus on_write(void* user, bool add);
  static natsStatus on_detach(void* user);
  void set_interest(bool read, bool on);
  std::size_t drain_subscriptions();
  // Hands out what `s` holds now; the number handed out.
  std::size_t hand_out(Subscription& s, std::size_t limit);
  static void deliver(Subscription& s, const NatsMessage& m);

  EventLoop& loop_;
  UniqueFd epoll_;  // the socket's private set (see above)
  natsOptions* options_ = nullptr;
  natsConnection* connection_ = nullptr;
  std::vector<Subscription> subscriptions_;
  std::mutex interest_mutex_;  // callbacks come from the client's threads too
  int socket_ = -1;
  std::uint32_t interest_ = 0;  // EPOLLIN | EPOLLOUT wanted
  std::atomic<bool> want_write_{false};
  bool backlog_ = false;  // pump() stopped at its bound
};

}  // namespace edri::cluster
