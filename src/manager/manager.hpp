// Manager: runs the handlers of one domain.
//
// Loads the plugins, keeps the handlers and notification subscribers of
// its domain, subscribes their events at the router and answers each
// request it is sent. A handler that throws becomes a 500 (detail hidden
// when ENVIRONMENT=production); the manager keeps running. Handlers may
// publish notifications, send requests to other managers, answer later
// (Context), and hand CPU work to worker threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/config.hpp"
#include "common/process_loop.hpp"
#include "envelope/envelope.hpp"
#include "manager/template_cache.hpp"
#include "manager/worker_processes.hpp"
#include "manager/worker_threads.hpp"
#include "plugin/plugin_set.hpp"

namespace edri::manager {

class Manager final : public Context {
 public:
  // `worker_cpus`: where worker threads may run (the CPUs the process had
  // before its loop was pinned).
  // `title`: how ps and the logs name it ("notes", "notes 2").
  Manager(ProcessLoop& loop, const Config& config, const plugin::PluginSet& plugins, std::string domain,
          std::string title, std::vector<int> worker_cpus = {});
  ~Manager() override;

  // Subscribes at the router and starts the worker processes, if the
  // domain registered tasks.
  void start();

  // Context
  std::string_view domain() const override { return domain_; }
  bool publish(std::string_view event, const nlohmann::json& payload) override;
  bool request(std::string_view event, const nlohmann::json& body,
               std::function<void(const Response&)> on_response) override;
  Responder defer() override;
  std::string render(std::string_view name, const nlohmann::json& data) override {
    return templates_.render(name, data);
  }
  Response in_thread(std::function<Response()> work) override;
  Response in_process(std::string_view task, std::string input,
                      std::function<Response(const TaskResult&)> then) override;

  // Sends `resp` as the answer to the request with header `request`.
  void respond(const envelope::EnvelopeHeader& request, const Response& resp);

 private:
  struct Entry {
    const Handler* handler;
    std::string_view event;
  };

  void on_record(std::span<const std::byte> record);
  void on_request(envelope::EnvelopeView& v);
  void on_notification(envelope::EnvelopeView& v);
  void on_response(envelope::EnvelopeView& v);
  bool fill_request(const envelope::EnvelopeView& v, std::string_view event);
  void subscribe();

  ProcessLoop& loop_;
  const Config& config_;
  const plugin::PluginSet& plugins_;
  std::string domain_;
  transport::Outbox& to_router_;
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
  TemplateCache templates_;
  std::vector<int> worker_cpus_;
  std::unique_ptr<WorkerThreads> workers_;  // made by the first in_thread()
  std::string title_;
  std::unique_ptr<WorkerProcesses> processes_;  // made by start() when the domain has tasks
};

}  // namespace edri::manager
