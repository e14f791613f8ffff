#include "cluster/nats_client.hpp"

#include <spdlog/spdlog.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace edri::cluster {

namespace {

// Reading stops after this many socket reads or messages per pump(), so
// that a flood from NATS cannot starve the channels from the router.
constexpr int kReadsPerPump = 16;
constexpr std::size_t kMessagesPerPump = 512;
// A drain's fence is one round trip; past this NATS is taken as gone.
constexpr std::int64_t kDrainTimeoutMs = 5000;

void check_status(natsStatus s, const char* what) {
  if (s != NATS_OK) throw std::runtime_error(std::string(what) + ": " + natsStatus_GetText(s));
}

void on_connected(natsConnection*, void*) {}

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

natsOptions* NatsClient::make_options(const NatsSettings& settings) {
  natsOptions* o = nullptr;
  check_status(natsOptions_Create(&o), "options");
  try {
    std::vector<const char*> urls;
    bool tls = settings.tls;
    for (const auto& u : settings.urls) {
      urls.push_back(u.c_str());
      tls = tls || starts_with(u, "tls://");
    }
    check_status(natsOptions_SetServers(o, urls.data(), static_cast<int>(urls.size())), "EDRI_NATS_URL");
    if (!settings.user.empty())
      check_status(natsOptions_SetUserInfo(o, settings.user.c_str(), settings.password.c_str()), "EDRI_NATS_USER");
    if (!settings.token.empty()) check_status(natsOptions_SetToken(o, settings.token.c_str()), "EDRI_NATS_TOKEN");
    if (tls) check_status(natsOptions_SetSecure(o, true), "EDRI_NATS_TLS");
    if (!settings.ca.empty())
      check_status(natsOptions_LoadCATrustedCertificates(o, settings.ca.c_str()), "EDRI_NATS_CA");
    if (!settings.certificate.empty())
      check_status(natsOptions_LoadCertificatesChain(o, settings.certificate.c_str(), settings.key.c_str()),
                   "EDRI_NATS_CERTIFICATE");
    check_status(natsOptions_SetName(o, settings.name.c_str()), "name");
  } catch (...) {
    natsOptions_Destroy(o);
    throw;
  }
  return o;
}

void NatsClient::check(const NatsSettings& settings) { natsOptions_Destroy(make_options(settings)); }

NatsClient::NatsClient(EventLoop& loop, const NatsSettings& settings)
    : loop_(loop), epoll_(::epoll_create1(EPOLL_CLOEXEC)) {
  if (!epoll_) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
  options_ = make_options(settings);
  auto require = [this](natsStatus s, const char* what) {
    if (s != NATS_OK) {
      natsOptions_Destroy(options_);
      check_status(s, what);
    }
  };
  require(natsOptions_SetEventLoop(options_, this, on_attach, on_read, on_write, on_detach), "event loop");
  require(natsOptions_SetSendAsap(options_, true), "send asap");
  // This instance never receives what it publishes itself.
  require(natsOptions_SetNoEcho(options_, true), "no echo");
  // Served again within a second of NATS coming back (docs/cluster.md).
  require(natsOptions_SetMaxReconnect(options_, -1), "reconnect");
  require(natsOptions_SetReconnectWait(options_, 250), "reconnect wait");
  require(natsOptions_SetReconnectJitter(options_, 50, 250), "reconnect jitter");
  require(natsOptions_SetTimeout(options_, 2000), "timeout");
  // A NATS server that stops answering is given up in about 4 s.
  require(natsOptions_SetPingInterval(options_, 2000), "ping interval");
  require(natsOptions_SetMaxPingsOut(options_, 2), "pings out");
  require(natsOptions_SetRetryOnFailedConnect(options_, true, on_connected, nullptr), "retry");
  const natsStatus s = natsConnection_Connect(&connection_, options_);
  if (s != NATS_NOT_YET_CONNECTED) require(s, "NATS connect");
  loop_.watch(epoll_.get(), EPOLLIN, [this](std::uint32_t) {
    if (pump()) backlog_ = true;
  });
}

NatsClient::~NatsClient() {
  loop_.unwatch(epoll_.get());
  for (auto& s : subscriptions_) natsSubscription_Destroy(s.sub);
  if (connection_) {
    natsConnection_Close(connection_);
    natsConnection_Destroy(connection_);
  }
  natsOptions_Destroy(options_);
}

bool NatsClient::connected() const {
  return connection_ && natsConnection_Status(connection_) == NATS_CONN_STATUS_CONNECTED;
}

std::size_t NatsClient::max_payload() const {
  return connection_ ? static_cast<std::size_t>(std::max<int64_t>(0, natsConnection_GetMaxPayload(connection_))) : 0;
}

void NatsClient::subscribe(const std::string& subject, const std::string& queue, Handler handler) {
  Subscription s;
  s.handler = std::move(handler);
  s.subject = subject;
  if (queue.empty())
    check_status(natsConnection_SubscribeSync(&s.sub, connection_, subject.c_str()), "NATS subscribe");
  else
    check_status(natsConnection_QueueSubscribeSync(&s.sub, connection_, subject.c_str(), queue.c_str()),
                 "NATS subscribe");
  // What a slow switch may hold unread before NATS drops for it.
  (void)natsSubscription_SetPendingLimits(s.sub, 1 << 20, 512 << 20);
  subscriptions_.push_back(std::move(s));
}

bool NatsClient::publish(const std::string& subject, const std::string& reply, std::span<const std::byte> data) {
  if (!connected()) return false;
  const auto* p = data.data();
  const int n = static_cast<int>(data.size());
  const natsStatus s = reply.empty() ? natsConnection_Publish(connection_, subject.c_str(), p, n)
                                     : natsConnection_PublishRequest(connection_, subject.c_str(), reply.c_str(), p, n);
  return s == NATS_OK;
}

bool NatsClient::pump() {
  epoll_event events[4];
  int reads = 0;
  std::size_t messages = 0;
  while (reads < kReadsPerPump && messages < kMessagesPerPump) {
    const int n = ::epoll_wait(epoll_.get(), events, 4, 0);
    if (n <= 0) break;
    for (int i = 0; i < n; ++i) {
      if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) (void)natsConnection_ProcessReadEvent(connection_);
      if (events[i].events & EPOLLOUT) (void)natsConnection_ProcessWriteEvent(connection_);
    }
    ++reads;
    messages += drain_subscriptions();
  }
  // Messages read by an earlier pump beyond its bound.
  if (messages < kMessagesPerPump) messages += drain_subscriptions();
  return reads >= kReadsPerPump || messages >= kMessagesPerPump;
}

bool NatsClient::flush() {
  if (want_write_.load(std::memory_order_relaxed)) (void)natsConnection_ProcessWriteEvent(connection_);
  if (!backlog_) return false;
  backlog_ = pump();
  return backlog_;
}

std::size_t NatsClient::drain_subscriptions() {
  std::size_t handled = 0;
  for (auto& s : subscriptions_) handled += hand_out(s, kMessagesPerPump - handled);
  return handled;
}

std::size_t NatsClient::hand_out(Subscription& s, std::size_t limit) {
  std::size_t handled = 0;
  while (handled < limit) {
    natsMsg* m = nullptr;
    const natsStatus status = natsSubscription_NextMsg(&m, s.sub, 0);
    if (status == NATS_NO_RESPONDERS) {
      // NATS's answer to a request nobody took: the client keeps only
      // the fact, not the message (nor its subject).
      deliver(s, NatsMessage{{}, {}, {}, true});
    } else if (status == NATS_OK) {
      const char* reply = natsMsg_GetReply(m);
      deliver(s, NatsMessage{natsMsg_GetSubject(m),
                             reply ? reply : "",
                             {reinterpret_cast<const std::byte*>(natsMsg_GetData(m)),
                              static_cast<std::size_t>(natsMsg_GetDataLength(m))},
                             false});
      natsMsg_Destroy(m);
    } else {
      break;
    }
    ++handled;
  }
  return handled;
}

void NatsClient::drain(const std::string& subject) {
  for (auto& s : subscriptions_) {
    if (s.subject != subject || s.draining) continue;
    s.draining = true;
    // The client ends a drained subscription once its fence came and it
    // handed out the last message (NextMsg), or after this long.
    if (connected() && natsSubscription_DrainTimeout(s.sub, kDrainTimeoutMs) == NATS_OK) continue;
    // Nothing more can come: what the client holds is handed out now.
    (void)hand_out(s, std::numeric_limits<std::size_t>::max());
    (void)natsSubscription_Unsubscribe(s.sub);
  }
}

bool NatsClient::drained() const {
  // A synchronous subscription stays valid after its drain: the drain's
  // own status says whether it is still under way.
  return std::none_of(subscriptions_.begin(), subscriptions_.end(), [](const Subscription& s) {
    return s.draining && natsSubscription_IsValid(s.sub) &&
           natsSubscription_DrainCompletionStatus(s.sub) == NATS_ILLEGAL_STATE;
  });
}

void NatsClient::deliver(Subscription& s, const NatsMessage& m) {
  try {
    s.handler(m);
  } catch (const std::exception& e) {
    spdlog::error("a message from NATS on {} was dropped: {}", m.subject, e.what());
  }
}

void NatsClient::set_interest(bool read, bool on) {
  std::lock_guard lock(interest_mutex_);
  const std::uint32_t bit = read ? EPOLLIN : EPOLLOUT;
  interest_ = on ? (interest_ | bit) : (interest_ & ~bit);
  if (!read) want_write_.store(on, std::memory_order_relaxed);
  if (socket_ < 0) return;
  epoll_event ev{};
  ev.events = interest_;
  ev.data.fd = socket_;
  (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, socket_, &ev);
}

natsStatus NatsClient::on_attach(void** user, void* loop, natsConnection*, natsSock fd) {
  auto* self = static_cast<NatsClient*>(loop);
  *user = self;
  std::lock_guard lock(self->interest_mutex_);
  // A reconnect: the old socket is closed, and left the set with it.
  self->socket_ = fd;
  self->interest_ = EPOLLIN;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (::epoll_ctl(self->epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0 &&
      (errno != EEXIST || ::epoll_ctl(self->epoll_.get(), EPOLL_CTL_MOD, fd, &ev) != 0))
    return NATS_SYS_ERROR;
  return NATS_OK;
}

natsStatus NatsClient::on_read(void* user, bool add) {
  if (!user) return NATS_OK;
  static_cast<NatsClient*>(user)->set_interest(true, add);
  return NATS_OK;
}

natsStatus NatsClient::on_write(void* user, bool add) {
  if (!user) return NATS_OK;
  static_cast<NatsClient*>(user)->set_interest(false, add);
  return NATS_OK;
}

natsStatus NatsClient::on_detach(void* user) {
  auto* self = static_cast<NatsClient*>(user);
  if (!self) return NATS_OK;
  std::lock_guard lock(self->interest_mutex_);
  if (self->socket_ >= 0) (void)::epoll_ctl(self->epoll_.get(), EPOLL_CTL_DEL, self->socket_, nullptr);
  self->socket_ = -1;
  self->interest_ = 0;
  self->want_write_.store(false, std::memory_order_relaxed);
  return NATS_OK;
}

}  // namespace edri::cluster
