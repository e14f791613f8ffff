// What a plugin declares (Registry: events, routes, handlers, WebSocket
// commands and pushes, middleware, worker pools), and the entry point
// EDRI_PLUGIN generates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <edri/abi.hpp>
#include <edri/admission.hpp>
#include <edri/context.hpp>
#include <edri/event_name.hpp>
#include <edri/fields.hpp>
#include <edri/grpc_service.hpp>
#include <edri/metric.hpp>
#include <edri/model.hpp>
#include <edri/request.hpp>
#include <edri/response.hpp>
#include <edri/setting.hpp>

namespace edri {

struct EventDecl {
  std::string name;
  std::string domain;
  std::vector<FieldDecl> fields;
};

struct RouteDecl {
  Method method;
  std::string path;  // e.g. "/notes/{id:int}"; parameter types: int, str, uuid
  std::string event;
};

// A WebSocket command: a text message {"command": command, ...fields}
// becomes a request for `event`, its fields bound like a JSON body (path
// and query fields of the event are read from the message too).
struct CommandDecl {
  std::string command;
  std::string event;
};

// WebSocket pushes of a notification: {"command": subscribe} (optionally
// with "filter": {field: value, "a.b": value}) makes the connection receive
// {"command": notification, "event": payload} for each matching publish;
// {"command": unsubscribe} stops them.
struct PushDecl {
  std::string notification;
  std::string subscribe;
  std::string unsubscribe;
};

// What runs in a domain's manager (each replica's) around its service:
// `on_start` before it serves (open a database, check configuration,
// start a periodic timer with Context::after); a throw stops start-up
// with its message. `on_stop` on a graceful stop, after its last answer.
struct LifecycleDecl {
  std::string domain;
  std::function<void(Context&)> on_start = {};
  std::function<void(Context&)> on_stop = {};
};

// A database of a domain (Registry::database).
struct DatabaseDecl {
  std::string domain;
  std::string name;
  std::string url;  // the plugin's default; EDRI_DATABASES wins
};

// The worker thread pool of a domain.
struct WorkerPoolDecl {
  std::string domain;
  std::size_t threads;
  std::size_t queue;
};

// The worker process pool of a domain.
struct WorkerProcessesDecl {
  std::string domain;
  std::size_t processes;
  std::size_t queue;
};

struct TaskDecl {
  std::string name;
  std::string domain;
  Task task;
};

struct HandlerDecl {
  std::string event;
  Handler handler;
};

// What an event's handler may answer, for /openapi.json
// (Registry::answers): a status, what it means, and the shape of its JSON
// body. A status of 400 or more without a body is a problem (RFC 9457).
struct AnswerDecl {
  std::string event;
  int status;
  std::string description;
  std::optional<FieldDecl> body = std::nullopt;
};

struct SubscriberDecl {
  std::string event;
  std::string domain;
  Subscriber subscriber;
};

// Middleware runs in the listener, in a defined order, on every call a
// client makes before it becomes an event, whatever the protocol: an
// HTTP/1.1 or HTTP/2 request (the WebSocket handshake and a Server-Sent
// Events subscription included), each WebSocket command, each gRPC call
// (edri.v1.Edri's Call and each Event on Connect, a typed method) and each
// live-stream subscription (docs/security.md). `on_request` sees the
// protocol, the method, path, raw query, every header (a command: its
// handshake's; gRPC: the call's metadata), the client's address, the event
// the call becomes and the body; it may add response headers and name the
// caller (Admission), and may refuse by returning a Response: the call
// goes no further, and the refusal is answered in the protocol's terms (an
// HTTP answer, a WebSocket error reply, a gRPC status). `on_response` sees
// the final status of every HTTP response and may add headers. Middleware
// never runs in a manager.
struct MiddlewareDecl {
  std::string name;
  int order = 0;  // lower runs first; equal orders keep declaration order
  std::function<std::optional<Response>(const Request&, Admission&)> on_request = {};
  std::function<void(int status, ResponseHeaders&)> on_response = {};
  // Where `on_request` runs; empty: everywhere. `events`: only for calls
  // that become one of these events (on every protocol; a live-stream
  // subscription is the event "stream.subscribe"). `paths`: only where the
  // request path starts with one of these prefixes (a WebSocket command's
  // path is its handshake's, a gRPC call's its method's, "/pkg.Svc/M").
  // An unknown event stops start-up.
  std::vector<std::string> events = {};
  std::vector<std::string> paths = {};
};

// Everything a plugin declared, in declaration order: what edri-server
// reads of a Registry once registration is over (PluginBinding).
struct RegistryDeclarations {
  std::vector<EventDecl> events;
  std::vector<RouteDecl> routes;
  std::vector<HandlerDecl> handlers;
  std::vector<MiddlewareDecl> middlewares;
  std::vector<std::pair<std::string, std::string>> asset_mounts;  // (URL prefix, folder)
  std::vector<std::string> notifications;                         // events declared with notification()
  std::vector<SubscriberDecl> subscribers;
  std::vector<CommandDecl> commands;
  std::vector<PushDecl> pushes;
  std::vector<WorkerPoolDecl> worker_pools;
  std::vector<TaskDecl> tasks;
  std::vector<WorkerProcessesDecl> worker_process_pools;
  std::vector<std::pair<std::string, std::size_t>> replica_counts;  // (domain, processes)
  std::vector<std::string> replayed;                                // events declared with replay()
  std::vector<std::string> stream_event_routes;                     // Server-Sent Events paths of live streams
  std::vector<GrpcServiceDecl> grpc_services;
  std::vector<std::string> all_headers;     // events declared with all_headers()
  std::vector<std::string> closed_events;   // events declared with refuse_unknown_fields()
  std::vector<LifecycleDecl> lifecycle;     // on_start() and on_stop() hooks, by domain
  std::vector<DatabaseDecl> databases;      // database(), by domain
  std::vector<SettingDecl> settings;        // setting(), in declaration order
  std::vector<MetricRegistration> metrics;  // counter(), gauge(), histogram(), in declaration order
  std::vector<AnswerDecl> answers;          // answers(), in declaration order
};

// What a plugin declares. Filled by the plugin's registration function.
class Registry {
 public:
  // Sets the domain (manager process) for the events declared after it.
  // The default domain is the plugin's name.
  Registry& domain(std::string name) {
    current_domain_ = std::move(name);
    return *this;
  }

  Registry& event(std::string name, std::vector<FieldDecl> fields = {}) {
    d_.events.push_back(EventDecl{std::move(name), current_domain_, std::move(fields)});
    return *this;
  }

  Registry& route(Method method, std::string path, std::string event_name) {
    d_.routes.push_back(RouteDecl{method, std::move(path), std::move(event_name)});
    return *this;
  }

  Registry& handle(std::string event_name, Handler handler) {
    d_.handlers.push_back(HandlerDecl{std::move(event_name), std::move(handler)});
    return *this;
  }
  // A coroutine handler (include/edri/async.hpp): `-> edri::Async<>`.
  Registry& handle(std::string event_name, AsyncHandler handler) {
    return handle(std::move(event_name), from_async(std::move(handler)));
  }

  // Declares an event that is published (Context::publish), not routed.
  Registry& notification(std::string name, std::vector<FieldDecl> fields = {}) {
    d_.events.push_back(EventDecl{std::move(name), current_domain_, std::move(fields)});
    d_.notifications.push_back(d_.events.back().name);
    return *this;
  }
  // The current domain runs `s` for every notification of `event_name`.
  // `s` may be a coroutine (returning edri::Async<void>): it may wait.
  // (A std::function<void(...)> would take a coroutine too, and drop the
  // task it returns unstarted: hence the test of what `s` returns.)
  template <class F>
  Registry& subscribe(std::string event_name, F s) {
    if constexpr (std::is_same_v<std::invoke_result_t<F&, const Request&, Context&>, Async<void>>)
      return add_subscriber(std::move(event_name), from_async(AsyncSubscriber(std::move(s))));
    else
      return add_subscriber(std::move(event_name), Subscriber(std::move(s)));
  }
  Registry& add_subscriber(std::string event_name, Subscriber s) {
    d_.subscribers.push_back(SubscriberDecl{std::move(event_name), current_domain_, std::move(s)});
    return *this;
  }

  // Shorthands: declare an event, route it and handle it in one call.
  Registry& get(std::string path, std::string event_name, Handler h, std::vector<FieldDecl> fields = {}) {
    return on(Method::Get, std::move(path), std::move(event_name), std::move(h), std::move(fields));
  }
  Registry& get(std::string path, std::string event_name, AsyncHandler h, std::vector<FieldDecl> fields = {}) {
    return on(Method::Get, std::move(path), std::move(event_name), from_async(std::move(h)), std::move(fields));
  }
  Registry& post(std::string path, std::string event_name, Handler h, std::vector<FieldDecl> fields = {}) {
    return on(Method::Post, std::move(path), std::move(event_name), std::move(h), std::move(fields));
  }
  Registry& post(std::string path, std::string event_name, AsyncHandler h, std::vector<FieldDecl> fields = {}) {
    return on(Method::Post, std::move(path), std::move(event_name), from_async(std::move(h)), std::move(fields));
  }
  Registry& put(std::string path, std::string event_name, Handler h, std::vector<FieldDecl> fields = {}) {
    return on(Method::Put, std::move(path), std::move(event_name), std::move(h), std::move(fields));
  }
  Registry& put(std::string path, std::string event_name, AsyncHandler h, std::vector<FieldDecl> fields = {}) {
    return on(Method::Put, std::move(path), std::move(event_name), from_async(std::move(h)), std::move(fields));
  }
  Registry& del(std::string path, std::string event_name, Handler h, std::vector<FieldDecl> fields = {}) {
    return on(Method::Delete, std::move(path), std::move(event_name), std::move(h), std::move(fields));
  }
  Registry& del(std::string path, std::string event_name, AsyncHandler h, std::vector<FieldDecl> fields = {}) {
    return on(Method::Delete, std::move(path), std::move(event_name), from_async(std::move(h)), std::move(fields));
  }
  Registry& on(Method m, std::string path, std::string event_name, Handler h, std::vector<FieldDecl> fields = {}) {
    event(event_name, std::move(fields));
    route(m, std::move(path), event_name);
    return handle(std::move(event_name), std::move(h));
  }

  // A route whose body is a model (edri/model.hpp): `handler` takes
  // (const T&, const Request&, Context&) and is given the body parsed;
  // the model's members are the event's body fields, `more` its other
  // fields (query, header, cookie).
  template <class T, class F>
  Registry& on(Method m, std::string path, std::string event_name, F handler, const Model<T>& body,
               std::vector<FieldDecl> more = {}) {
    std::vector<FieldDecl> fields = body.fields();
    fields.insert(fields.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    return on(m, std::move(path), std::move(event_name), with_body(body, std::move(handler)), std::move(fields));
  }
  template <class T, class F>
  Registry& post(std::string path, std::string event_name, F handler, const Model<T>& body,
                 std::vector<FieldDecl> more = {}) {
    return on(Method::Post, std::move(path), std::move(event_name), std::move(handler), body, std::move(more));
  }
  template <class T, class F>
  Registry& put(std::string path, std::string event_name, F handler, const Model<T>& body,
                std::vector<FieldDecl> more = {}) {
    return on(Method::Put, std::move(path), std::move(event_name), std::move(handler), body, std::move(more));
  }

  // Declares an answer of `event_name`'s handler for /openapi.json: its
  // status, what it means, and the shape of its JSON body (a model's, or
  // a FieldDecl). Without a body, a status of 400 or more is a problem
  // (RFC 9457). An event with none declared is documented as answering
  // anything. An event this plugin does not declare, or a status outside
  // 100-599, stops start-up.
  Registry& answers(std::string event_name, int status, std::string description,
                    std::optional<FieldDecl> body = std::nullopt) {
    d_.answers.push_back(AnswerDecl{std::move(event_name), status, std::move(description), std::move(body)});
    return *this;
  }
  template <class T>
  Registry& answers(std::string event_name, int status, std::string description, const Model<T>& body) {
    return answers(std::move(event_name), status, std::move(description), body.shape());
  }

  // Makes `event` a WebSocket command named `command` (default: the
  // event's own name). Only declared commands are reachable over WebSocket.
  Registry& command(std::string command, std::string event_name = {}) {
    if (event_name.empty()) event_name = command;
    d_.commands.push_back(CommandDecl{std::move(command), std::move(event_name)});
    return *this;
  }
  // Lets WebSocket clients subscribe to `notification` (see PushDecl).
  Registry& push(std::string notification, std::string subscribe_command, std::string unsubscribe_command) {
    d_.pushes.push_back(
        PushDecl{std::move(notification), std::move(subscribe_command), std::move(unsubscribe_command)});
    return *this;
  }

  // Serves live streams as Server-Sent Events at GET `path`, a template
  // whose last parameter names the stream ("/sse/{name}"). The listener
  // answers it alone: no handler runs (docs/streams.md).
  Registry& stream_events(std::string path) {
    d_.stream_event_routes.push_back(std::move(path));
    return *this;
  }

  // Serves `service` (its full name) over gRPC, each of its methods
  // sending an event (GrpcServiceDecl). `descriptor_set`: the bytes protoc
  // wrote, which the listener checks at start-up (a method that is not
  // unary, or that maps to no event, stops it).
  Registry& grpc_service(std::string service, std::string descriptor_set, std::vector<GrpcMethodDecl> methods) {
    d_.grpc_services.push_back(GrpcServiceDecl{std::move(service), std::move(descriptor_set), std::move(methods)});
    return *this;
  }

  const std::string& current_domain() const { return current_domain_; }

  // Serves the files of `folder` (relative to the plugin file's own
  // directory unless absolute) under the URL prefix, from the listener.
  Registry& assets(std::string url_prefix, std::string folder) {
    d_.asset_mounts.push_back({std::move(url_prefix), std::move(folder)});
    return *this;
  }

  // Sizes the worker thread pool of the current domain (Context::in_thread):
  // `threads` threads, up to `queue` jobs waiting. EDRI_WORKER_THREADS and
  // EDRI_WORKER_QUEUE, when set, win.
  Registry& worker_threads(std::size_t threads, std::size_t queue = 256) {
    d_.worker_pools.push_back(WorkerPoolDecl{current_domain_, threads, queue});
    return *this;
  }

  // Registers `task` under `name` in the current domain, for
  // Context::in_process. A domain with tasks starts its worker processes
  // with its manager.
  Registry& task(std::string name, Task task) {
    d_.tasks.push_back(TaskDecl{std::move(name), current_domain_, std::move(task)});
    return *this;
  }
  // Sizes the worker process pool of the current domain: `processes`
  // processes, up to `queue` tasks waiting. EDRI_WORKER_PROCESSES and
  // EDRI_WORKER_QUEUE, when set, win; the default is one per CPU.
  Registry& worker_processes(std::size_t processes, std::size_t queue = 256) {
    d_.worker_process_pools.push_back(WorkerProcessesDecl{current_domain_, processes, queue});
    return *this;
  }

  // Runs `hook` in each manager of the current domain before it serves:
  // /ready says 200 only once every domain's hooks returned, and a hook
  // that throws stops start-up with its message and a non-zero exit
  // (never a restart loop). The Context may publish, ask and start timers
  // (Context::after: a periodic job); there is no request to defer.
  template <class F>
  Registry& on_start(F hook) {
    static_assert(std::is_void_v<std::invoke_result_t<F&, Context&>>,
                  "a start hook returns nothing (a coroutine start hook is not supported yet)");
    d_.lifecycle.push_back(LifecycleDecl{current_domain_, std::function<void(Context&)>(std::move(hook)), {}});
    return *this;
  }
  // Runs `hook` in each manager of the current domain on a graceful stop,
  // once it has given its last answer (close what on_start opened).
  template <class F>
  Registry& on_stop(F hook) {
    static_assert(std::is_void_v<std::invoke_result_t<F&, Context&>>, "a stop hook returns nothing");
    d_.lifecycle.push_back(LifecycleDecl{current_domain_, {}, std::function<void(Context&)>(std::move(hook))});
    return *this;
  }

  // The current domain uses the database `name` (include/edri/database.hpp):
  // each of its managers opens a pool of connections to it before its
  // start hooks run, and its handlers reach it with Context::database().
  // `url` (postgresql://..., or sqlite:<file>) is the plugin's default;
  // EDRI_DATABASES, when it names the database, wins. A database left
  // with no URL stops start-up.
  Registry& database(std::string name, std::string url = {}) {
    d_.databases.push_back(DatabaseDecl{current_domain_, std::move(name), std::move(url)});
    return *this;
  }

  // Runs the current domain in `n` manager processes (replicas); the router
  // spreads its requests over them, and each notification reaches one of
  // them. Only for domains whose state is not in the process (a database,
  // or none); one that keeps state declares replicas(1) and stays single
  // whatever EDRI_MANAGER_REPLICAS says. EDRI_DOMAIN_REPLICAS, when it
  // names the domain, wins.
  Registry& replicas(std::size_t n) {
    d_.replica_counts.emplace_back(current_domain_, n);
    return *this;
  }

  // When the manager handling a request of `event_name` dies before it
  // answers, the request is handed once more to its successor instead of
  // being answered 503. Only for handlers that may run twice for one
  // request: reads, and writes that are idempotent or that deduplicate on
  // Request::id (which is the same both times). A request whose second run
  // kills the manager again is answered 503.
  Registry& replay(std::string event_name) {
    d_.replayed.push_back(std::move(event_name));
    return *this;
  }

  // Hands the handler of `event_name` every header the client sent (a
  // command: its handshake's; gRPC: the call's metadata), names in lower
  // case, not only its declared header fields (Request::header).
  Registry& all_headers(std::string event_name) {
    d_.all_headers.push_back(std::move(event_name));
    return *this;
  }

  // Answers 422 for a field `event_name` does not declare ("extra: is not
  // a declared field"), instead of passing it on (the default, as JSON
  // Schema's and Pydantic's): in a JSON body that has declared fields,
  // and in a WebSocket command's or gRPC call's fields, where the route's
  // path parameters are declared too.
  Registry& refuse_unknown_fields(std::string event_name) {
    d_.closed_events.push_back(std::move(event_name));
    return *this;
  }

  Registry& middleware(MiddlewareDecl m) {
    d_.middlewares.push_back(std::move(m));
    return *this;
  }

  // Declares a setting this plugin reads (include/edri/setting.hpp) and
  // returns its value: the environment variable when set and not empty,
  // else `key` in the plugin's section of the config file, else the
  // default. Registration runs in every process, and each gets the same
  // value: the supervisor puts the file's values into the environment the
  // others inherit. Parsing the text is the plugin's; a value it refuses
  // is best thrown from registration, which stops start-up naming it.
  std::string setting(SettingDecl s) {
    if (before_setting_) before_setting_(s);
    const char* v = std::getenv(s.variable.c_str());
    std::string value = v && *v ? std::string(v) : s.default_value;
    d_.settings.push_back(std::move(s));
    return value;
  }

  // Declares a metric of the plugin's own (include/edri/metric.hpp) and
  // returns the handle that writes it: kept by the handlers, tasks and
  // middleware that count with it.
  Counter counter(MetricDecl m) { return Counter(declare(MetricKind::Counter, std::move(m))); }
  Gauge gauge(MetricDecl m) { return Gauge(declare(MetricKind::Gauge, std::move(m))); }
  Histogram histogram(MetricDecl m) { return Histogram(declare(MetricKind::Histogram, std::move(m))); }

 private:
  std::shared_ptr<MetricCell> declare(MetricKind kind, MetricDecl m) {
    auto cell = std::make_shared<MetricCell>();
    d_.metrics.push_back(MetricRegistration{kind, std::move(m), cell});
    return cell;
  }

  friend struct PluginBinding;
  RegistryDeclarations d_;
  std::string current_domain_;
  // Set by the supervisor: puts a config file's value for the setting
  // into the environment, unless the environment has one.
  std::function<void(const SettingDecl&)> before_setting_;
};

// The descriptor the entry point returns. abi_version comes first and stays
// first in every future version, so a loader can read it before trusting
// anything else.
struct PluginDescriptor {
  std::uint32_t abi_version;
  // EDRI_TOOLCHAIN where the plugin was built: std::function and
  // nlohmann::json cross dlopen, so their layouts must be edri-server's.
  const char* toolchain;
  const char* name;
  void (*register_plugin)(Registry&);
};

// The loader's access to a Registry: it sets the default domain before
// registration and takes the declarations after it.
struct PluginBinding {
  static void start(Registry& r, std::string domain, std::function<void(const SettingDecl&)> before_setting = {}) {
    r.current_domain_ = std::move(domain);
    r.before_setting_ = std::move(before_setting);
  }
  static RegistryDeclarations& declarations(Registry& r) { return r.d_; }
};

}  // namespace edri

#define EDRI_PLUGIN_ENTRY_SYMBOL "edri_plugin_descriptor"

// Declares this shared library an edri plugin. NAME is a string literal (the
// default domain); REGISTER is `void(edri::Registry&)`.
#define EDRI_PLUGIN(NAME, REGISTER)                                                                              \
  extern "C" __attribute__((visibility("default"))) const ::edri::PluginDescriptor* edri_plugin_descriptor() {   \
    static const ::edri::PluginDescriptor descriptor{::edri::kPluginAbiVersion, EDRI_TOOLCHAIN, NAME, REGISTER}; \
    return &descriptor;                                                                                          \
  }
