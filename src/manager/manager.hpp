// Manager: runs the handlers of one domain.
//
// Loads the plugins, keeps the handlers and notification subscribers of
// its domain, subscribes their events at the router and answers each
// request it is sent. A handler that throws becomes a 500 (detail hidden
// when ENVIRONMENT=production); the manager keeps running. Handlers may
// publish notifications, send requests to other managers, answer later
// (Context), and hand CPU work to worker threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "database/open_database.hpp"
#include "envelope/envelope.hpp"
#include "http/content_coding.hpp"
#include "http/multipart.hpp"
#include "manager/coroutines.hpp"
#include "manager/http_client.hpp"
#include "manager/template_cache.hpp"
#include "manager/traces.hpp"
#include "manager/worker_processes.hpp"
#include "manager/worker_threads.hpp"
#include "plugin/direct_routes.hpp"
#include "plugin/plugin_set.hpp"
#include "runtime/config.hpp"
#include "runtime/loop_placement.hpp"
#include "runtime/process_loop.hpp"

namespace edri::manager {

// Why a stream patch cannot be published (the problem its `then` gets), or
// nullopt: a bad stream name or a patch that is not an object (422), one
// whose text (`patch_bytes`) is larger than `max_bytes` (413,
// EDRI_STREAM_MAX_BYTES).
std::optional<Response> refused_patch(std::string_view name, const nlohmann::json& patch, std::size_t patch_bytes,
                                      std::size_t max_bytes);

class Manager final : public Context {
 public:
  // `worker_cpus`: where worker threads may run (the CPUs the process had
  // before its loop was pinned). `home_cpu`: where the loop runs while it is
  // quiet, floating over `worker_cpus` while busy (LoopPlacement); none:
  // where main placed it.
  // `title`: how ps and the logs name it ("notes", "notes 2").
  Manager(ProcessLoop& loop, const Config& config, const plugin::PluginSet& plugins, std::string domain,
          std::string title, std::vector<int> worker_cpus = {}, std::optional<int> home_cpu = {});
  ~Manager() override;

  // What start() throws when a start hook of the domain threw.
  struct StartFailed : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  // Starts the worker processes, if the domain registered tasks, runs its
  // start hooks (Registry::on_start; StartFailed if one throws), then
  // subscribes at the router.
  void start();
  // Runs the domain's stop hooks (Registry::on_stop), once its loop ended.
  void stop();

  // Context
  std::string_view domain() const override { return domain_; }
  void log(LogLevel level, std::string_view message, const Request* about = nullptr) override;
  bool publish(std::string_view event, const nlohmann::json& payload) override;
  bool publish_patch(std::string_view name, const nlohmann::json& patch,
                     std::function<void(const Response&)> then) override;
  void read_stream(std::string_view name, std::function<void(const Response&)> then) override;
  void after(std::chrono::milliseconds delay, std::function<void()> fn) override;
  bool request_for(const Request* about, std::string_view event, const nlohmann::json& body,
                   std::function<void(const Response&)> on_response) override;
  Responder defer() override;
  std::string render(std::string_view name, const nlohmann::json& data) override {
    return templates_.render(name, data);
  }
  Reply in_thread(std::function<Response()> work) override;
  Reply in_process(std::string_view task, std::string input, std::function<Response(const TaskResult&)> then) override;
  Reply start(const AsyncHandler& handler, const Request& req) override;
  void start(const AsyncSubscriber& subscriber, const Request& n) override;
  bool run_on_thread(const Request* about, std::function<void()> work, std::function<void()> done) override;
  void run_task(const Request* about, std::string_view name, std::string input,
                std::function<void(const TaskResult&)> done) override;
  std::function<void()> http(HttpCall call, std::chrono::steady_clock::time_point deadline,
                             std::function<void(HttpReply)> done) override;
  Database& database(std::string_view name) override;

  // Sends `resp` as the answer to the request with header `request`; a
  // stream opens here and goes on as its client takes it.
  void respond(const envelope::EnvelopeHeader& request, Response resp);

 private:
  struct Entry {
    const Handler* handler;
    std::string_view event;
  };
  bool split_form(const envelope::EnvelopeHeader& h);
  bool within_deadline(const envelope::EnvelopeView& v);
  Reply call_handler(const Entry& entry);
  void refuse_large_answer(const envelope::EnvelopeHeader& request, std::size_t size);
  // Where the answer to `request` goes: the channel of its own to who
  // asked, a client's listener (docs/decisions/0016), the switch or
  // another manager (0028), where one exists, else the router.
  transport::Outbox& answer_channel(const envelope::EnvelopeHeader& request);
  // Tells the router, without waking it, which answers went straight to
  // who asked this turn.
  void report_answered();
  // A request of a handler's, straight to the manager that alone handles
  // its event (0028), the router told first without a wake-up, or to the
  // router. False when the channel refused it (new work past
  // EDRI_OUTBOX_LIMIT); the router, if told, is then told it is answered.
  bool send_request(envelope::EnvelopeWriter& w);
  struct PoolSize {
    std::size_t workers, queue;
  };
  PoolSize pool_size(std::size_t setting, std::size_t declared, std::size_t declared_queue) const;

  void on_record(std::span<const std::byte> record);
  void on_request(envelope::EnvelopeView& v);
  void on_notification(envelope::EnvelopeView& v);
  std::optional<Traces::Call> consume_trace(envelope::EnvelopeView& v);
  // While a notification's subscribers run: their calls are on its trace.
  bool notifying_ = false;
  std::string consumer_traceparent_;
  void on_response(envelope::EnvelopeView& v);
  bool fill_request(const envelope::EnvelopeView& v, std::string_view event);
  // Tells the router this domain's events; `again`: the router asked (it
  // asks at each of its starts).
  void subscribe(bool again);

  // Streamed answers (Response::stream, docs/decisions/0011).
  struct OpenStream {
    envelope::EnvelopeHeader request;
    BodyProducer next;
    std::uint64_t credit;    // bytes the client's listener takes now
    std::int64_t length;     // declared Content-Length, or -1
    std::uint64_t sent = 0;  // bytes the producer made
    std::chrono::steady_clock::time_point last_credit;
    std::unique_ptr<http::Encoder> encoder;  // null: the pieces go as they are made
  };
  void open_stream(const envelope::EnvelopeHeader& request, Response& resp);
  // Makes pieces of stream `id` while its credit lasts.
  void pump(std::uint64_t id);
  // The listener granted credit or cancelled.
  void on_stream_control(const envelope::EnvelopeView& v);
  // The piece the producer made (piece_) as it goes out: through the
  // stream's encoder, flushed, so the client can use it at once.
  std::string_view coded_piece(OpenStream& s, bool more);
  // One piece after the head; false when it could not be queued.
  bool send_piece(const OpenStream& s, std::string_view bytes, std::uint16_t flags);
  // Runs the producer to its end into one body (an asker that takes no
  // stream); a problem when it fails or grows past what a body may be.
  Response collect(Response& resp);
  void sweep_streams();

  ProcessLoop& loop_;
  const Config& config_;
  const plugin::PluginSet& plugins_;
  std::string domain_;
  transport::Outbox& to_router_;
  std::vector<transport::Outbox*> to_listener_;  // by listener index; empty: answers go through the router
  // By manager index (none to itself): requests this manager sends
  // straight, where `direct_` says so, and answers to what others asked
  // (0028); empty: both through the router.
  std::vector<transport::Outbox*> to_manager_;
  plugin::DirectRoutes direct_;
  // Where the instance is joined to others: answers to what they asked go
  // straight to the switch.
  transport::Outbox* to_switch_ = nullptr;
  std::uint16_t switch_slot_ = 0;
  // Requests answered straight to who asked, not yet reported to the
  // router: (reply_to: 0 for a client's listener, else the asker's slot, id).
  std::vector<std::pair<std::uint16_t, std::uint64_t>> answered_;
  std::vector<std::uint64_t> report_ids_;  // scratch of report_answered
  std::unordered_map<std::uint64_t, Entry> handlers_;
  struct Subscribers {
    std::string_view event;
    std::vector<const Subscriber*> list;
  };
  std::unordered_map<std::uint64_t, Subscribers> subscribers_;
  // Requests this manager sent to others, by request id.
  std::unordered_map<std::uint64_t, std::function<void(const Response&)>> outstanding_;
  std::uint64_t next_request_ = 0;
  const envelope::EnvelopeHeader* current_ = nullptr;  // the request whose handler runs now
  Request request_;                                    // reused across calls
  char request_id_[33] = {};                           // Request::id: 16 hex digits, '-', 16 more
  std::vector<http::MultipartPart> parts_;             // reused across calls
  TemplateCache templates_;
  std::vector<int> worker_cpus_;
  std::unique_ptr<WorkerThreads> workers_;  // made by the first in_thread()
  WorkerThreads& workers();
  // Checks that the domain runs `task` (std::invalid_argument if not).
  WorkerProcesses& processes_for(std::string_view task);
  // How long after it arrives the broker answers 504 for a request
  // (EDRI_API_RESPONSE_TIMEOUT): a waiting coroutine's latest deadline.
  std::chrono::steady_clock::duration pipeline_timeout() const;
  std::string title_;
  std::unique_ptr<WorkerProcesses> processes_;             // made by start() when the domain has tasks
  std::unique_ptr<LoopPlacement> placement_;               // with a home CPU
  std::unordered_map<std::uint64_t, OpenStream> streams_;  // by request id
  std::vector<std::uint64_t> idle_streams_;                // producers that made nothing: asked again soon
  std::string piece_;                                      // scratch
  std::string coded_;                                      // scratch: piece_ encoded
  EventLoop::Timer stream_timer_;
  bool stream_timer_armed_ = false;
  // Context::after (and sleep()): what is due, in order, and one timer
  // for the first (thousands of handlers may sleep at once).
  std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> laters_;
  void run_laters();
  // Sends a live-stream control to the broker (through the router);
  // `then` (may be empty) gets its answer.
  bool send_stream_control(std::uint64_t code, std::string_view name, std::string_view json,
                           std::function<void(const Response&)> then);
  // Stream controls the broker has not answered in time get a 504.
  void expire_stream_controls();
  std::deque<std::pair<std::chrono::steady_clock::time_point, std::uint64_t>> stream_deadlines_;  // (deadline, id)
  EventLoop::Timer stream_control_timer_;
  EventLoop::Timer later_timer_;
  std::unique_ptr<HttpClient> http_;  // made by the first outbound call
  Traces traces_;
  // The domain's databases (Registry::database), opened by start(); with
  // tracing on, each run a span (TracedDatabase). After traces_: they go first.
  void open_databases();
  std::map<std::string, std::unique_ptr<Database>, std::less<>> databases_;
  // The trace a call out of the handler of `about` (null: the current
  // request's, or the one continuing_ names) goes on: a client span, or none.
  std::optional<Traces::Call> trace_call(const Request* about, std::string_view traceparent = {}) const;
  // The trace context of a handler whose callback runs now, after the
  // handler returned (ctx.request's `then`): the calls the callback makes
  // continue its handler's trace. Null while no such callback runs.
  struct CallerTrace {
    std::string traceparent, tracestate;
  };
  const CallerTrace* continuing_ = nullptr;
  // The request whose handler a call out of comes from: `about`, else the
  // one running now (a handler's or a notification's), else none.
  const Request* handler_of(const Request* about) const;
  // The trace context a call out of `about`'s handler continues (copied:
  // it outlives the handler's request).
  CallerTrace asker_trace(const Request* about) const;
  // Sets continuing_ for a callback's run, and puts it back after.
  class ContinuingTrace {
   public:
    ContinuingTrace(const CallerTrace*& slot, const CallerTrace& context) : slot_(slot), outer_(slot) {
      slot_ = &context;
    }
    ~ContinuingTrace() { slot_ = outer_; }
    ContinuingTrace(const ContinuingTrace&) = delete;
    ContinuingTrace& operator=(const ContinuingTrace&) = delete;

   private:
    const CallerTrace*& slot_;
    const CallerTrace* outer_;
  };
  void trace_http(HttpCall& call, std::function<void(HttpReply)>& done);
  // Last: its waiting handlers go first, while all they refer to lives.
  Coroutines coroutines_;
};

}  // namespace edri::manager
