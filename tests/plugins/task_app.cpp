// The plugin the worker process tests run: tasks that answer, echo, take
// their time, throw, crash or answer too much, and routes that send them.
// TASK_APP_BREAK_WORKERS=1 makes the plugin fail to load in worker
// processes only, so that none can start.
#include <unistd.h>

#include <edri/plugin.hpp>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

edri::Response answer(const edri::TaskResult& t) {
  if (!t.ok()) return t.problem();
  return edri::Response::json({{"output", t.output}, {"manager", ::getpid()}});
}

void reg(edri::Registry& r) {
  if (std::getenv("TASK_APP_BREAK_WORKERS") && std::getenv("EDRI_INTERNAL_WORKER"))
    throw std::runtime_error("this plugin refuses to load in a worker");
  r.domain("jobs");
  r.task("pid", [](std::string_view) { return std::to_string(::getpid()); });
  // Written in the worker process that runs the task.
  const auto echoes = r.counter({"task_echoes_total", "Echo tasks run, by who ran them.", {"process"}});
  r.task("echo", [echoes](std::string_view in) {
    echoes.inc({std::getenv("EDRI_INTERNAL_WORKER") ? "worker" : "manager"});
    return std::string(in);
  });
  r.task("sleep", [](std::string_view in) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(std::string(in))));
    return std::to_string(::getpid());
  });
  r.task("throw", [](std::string_view) -> std::string { throw std::runtime_error("task exploded"); });
  r.task("crash", [](std::string_view) -> std::string { std::abort(); });
  r.task("big", [](std::string_view in) { return std::string(std::stoul(std::string(in)), 'x'); });
  r.worker_processes(2, 2);

  // GET /task/{name}?input=...: runs the task and answers its output.
  r.get("/task/{name}", "jobs.run",
        [](const edri::Request& req, edri::Context& ctx) {
          return ctx.in_process(*req.path_param("name"), std::string(req.query_param("input").value_or("")), answer);
        },
        {edri::Field("input").in_query().string().default_to("")});
  // POST /echo-task: the body through the echo task and back.
  r.post("/echo-task", "jobs.echo", [](const edri::Request& req, edri::Context& ctx) {
    return ctx.in_process("echo", std::string(req.body), [](const edri::TaskResult& t) {
      return t.ok() ? edri::Response::text(t.output) : t.problem();
    });
  });
  // A task input larger than a channel record.
  r.get("/huge-input", "jobs.huge", [](const edri::Request&, edri::Context& ctx) {
    return ctx.in_process("echo", std::string(std::size_t{8} << 20, 'y'), answer);
  });
  r.get("/manager/pid", "jobs.pid", [](const edri::Request&, edri::Context&) {
    return edri::Response::json({{"pid", ::getpid()}});
  });
}

}  // namespace

EDRI_PLUGIN("tasks", reg)
