// DomainContext: what a manager is to a domain's handlers, inside a
// TestClient (include/edri/testing.hpp). Timers, coroutines, worker
// threads, databases, templates and outbound HTTP are the manager's own
// parts on the client's loop; what would cross a process boundary
// (notifications, requests to other domains, stream patches) goes to the
// TestHost, which records it and serves it in-process.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <edri/plugin.hpp>
#include <edri/testing.hpp>

#include "manager/coroutines.hpp"
#include "manager/http_client.hpp"
#include "manager/template_cache.hpp"
#include "manager/worker_threads.hpp"
#include "plugin/plugin_set.hpp"
#include "runtime/event_loop.hpp"

namespace edri::testing {

// What the domains of a TestClient share: its loop, its records, and the
// way from one domain's handler to another's.
class TestHost {
 public:
  virtual ~TestHost() = default;
  virtual EventLoop& loop() = 0;
  virtual const TestOptions& options() const = 0;
  // Runs `fn` later, on the loop (what "later in the manager's loop" is).
  virtual void post(std::function<void()> fn) = 0;
  // The answer to the request `id` (a test's, or another domain's).
  virtual void answered(std::uint64_t id, Response response) = 0;
  // A handler of `from` sends `event`; false when no domain handles it.
  virtual bool request(const std::string& from, std::string_view event, const nlohmann::json& body,
                       std::function<void(const Response&)> done) = 0;
  virtual void publish(const std::string& from, std::string_view event, const nlohmann::json& payload) = 0;
  // A stream patch, numbered; the revision.
  virtual std::uint64_t patch_stream(const std::string& from, std::string_view name, const nlohmann::json& patch) = 0;
  virtual nlohmann::json read_stream(std::string_view name) const = 0;
  virtual std::uint64_t stream_revision(std::string_view name) const = 0;
  virtual void log(const std::string& domain, LogLevel level, std::string_view message) = 0;
};

class DomainContext final : public Context {
 public:
  DomainContext(TestHost& host, const plugin::PluginSet& plugins, std::string domain);
  ~DomainContext() override;

  // Runs `handler` for `req`, the request `id`: its answer now, or
  // Deferred (then host.answered(id, ...) comes later).
  Reply call(const Handler& handler, const Request& req, std::uint64_t id);
  // Runs a notification's subscriber.
  void deliver(const Subscriber& subscriber, const Request& n);
  // Runs the start (or stop) hooks; the start hooks' exceptions go on.
  void run_hooks(bool start);
  // Whether nothing of this domain is left to run: no coroutine waits, no
  // timer is set, no worker thread's job is out.
  bool idle() const { return coroutines_.waiting() == 0 && timers_.empty() && jobs_out_ == 0; }

  // Context
  std::string_view domain() const override { return domain_; }
  void log(LogLevel level, std::string_view message, const Request* about = nullptr) override;
  bool publish(std::string_view event, const nlohmann::json& payload) override;
  bool request_for(const Request* about, std::string_view event, const nlohmann::json& body,
                   std::function<void(const Response&)> on_response) override;
  bool publish_patch(std::string_view name, const nlohmann::json& patch,
                     std::function<void(const Response&)> then) override;
  void read_stream(std::string_view name, std::function<void(const Response&)> then) override;
  void after(std::chrono::milliseconds delay, std::function<void()> fn) override;
  Responder defer() override;
  std::string render(std::string_view name, const nlohmann::json& data) override {
    return templates_.render(name, data);
  }
  Reply in_thread(std::function<Response()> work) override;
  Reply in_process(std::string_view task, std::string input, std::function<Response(const TaskResult&)> then) override;
  std::function<void()> http(HttpCall call, std::chrono::steady_clock::time_point deadline,
                             std::function<void(HttpReply)> done) override;
  Database& database(std::string_view name) override;
  Reply start(const AsyncHandler& handler, const Request& req) override;
  void start(const AsyncSubscriber& subscriber, const Request& n) override;
  bool run_on_thread(const Request* about, std::function<void()> work, std::function<void()> done) override;
  void run_task(const Request* about, std::string_view name, std::string input,
                std::function<void(const TaskResult&)> done) override;

 private:
  // The request whose handler runs now (0: none), for defer() and the
  // calls that answer it later.
  std::uint64_t current() const;
  manager::WorkerThreads& threads();
  void open_databases();

  TestHost& host_;
  const plugin::PluginSet& plugins_;
  std::string domain_;
  manager::Coroutines coroutines_;
  manager::TemplateCache templates_;
  std::unique_ptr<manager::WorkerThreads> threads_;
  std::unique_ptr<manager::HttpClient> http_;
  std::vector<std::pair<std::string, std::unique_ptr<Database>>> databases_;
  std::list<std::unique_ptr<EventLoop::Timer>> timers_;
  std::size_t jobs_out_ = 0;
  std::uint64_t current_ = 0;
};

}  // namespace edri::testing
