// The example app, part 1: notes (contract: ../shared/specs/notes-app.md).
//
// Domain `notes` owns the notes in SQLite (EDRI_NOTES_DB, default notes.db,
// WAL mode), opened by the domain's start hook (a wrong path stops
// start-up) and used on the domain's one worker thread: the handlers are
// coroutines that await it, so the manager's loop never waits on the disk
// and one connection sees the writes in the order the requests came.
// Every create, update and delete is committed before it is
// answered and then published as the notification `notes.changed`
// {"op": "created"|"updated"|"deleted", "note": {...}}; the audit plugin
// counts those, and WebSocket clients that sent `notes.subscribe` receive
// them. The same events answer REST routes, WebSocket commands and the
// gRPC service notes.v1.Notes: the listener binds path, query and body
// fields from each.
#include <edri/plugin.hpp>

#include <sqlite3.h>

#include "notes_descriptor.hpp"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

namespace {

using edri::Context;
using edri::Field;
using edri::Request;
using edri::Response;
using nlohmann::json;

// One SQLite connection per manager process, opened by the start hook
// (registration runs in every process and must not open it), then used on
// the domain's one worker thread alone.
class Db {
 public:
  static Db& get() {
    static Db db;
    return db;
  }

  sqlite3* handle() const { return db_; }
  // Held by each job: EDRI_WORKER_THREADS may give the domain more than
  // the one thread it asks for, and a connection serves one at a time.
  std::mutex mutex;

  // A statement prepared once and reset after each use.
  class Statement {
   public:
    Statement(sqlite3* db, const char* sql) : db_(db) {
      if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) != SQLITE_OK)
        throw std::runtime_error(std::string("prepare: ") + sqlite3_errmsg(db));
    }
    ~Statement() { sqlite3_finalize(stmt_); }
    sqlite3_stmt* use() {
      sqlite3_reset(stmt_);
      sqlite3_clear_bindings(stmt_);
      return stmt_;
    }
    sqlite3* db() const { return db_; }

   private:
    sqlite3* db_;
    sqlite3_stmt* stmt_ = nullptr;
  };

  sqlite3* db_ = open();  // first: the statements below use it
  // A replayed create (its manager died before it answered, maybe after it
  // committed) finds the note its first run made: one note per request.
  Statement insert{db_,
                   "INSERT INTO notes(title, body, created_at, updated_at, request_id) VALUES(?1, ?2, ?3, ?3, ?4)"
                   " ON CONFLICT(request_id) DO NOTHING"};
  Statement by_request{db_, "SELECT id FROM notes WHERE request_id = ?1"};
  Statement select{db_, "SELECT id, title, body, created_at, updated_at FROM notes WHERE id = ?1"};
  Statement page{db_, "SELECT id, title, body, created_at, updated_at FROM notes ORDER BY id DESC LIMIT ?1 OFFSET ?2"};
  Statement count{db_, "SELECT count(*) FROM notes"};
  Statement update{db_, "UPDATE notes SET title = ?2, body = ?3, updated_at = ?4 WHERE id = ?1"};
  Statement remove{db_, "DELETE FROM notes WHERE id = ?1"};

 private:
  Db() = default;
  ~Db() { sqlite3_close_v2(db_); }

  sqlite3* open() {
    sqlite3* db = nullptr;
    const char* path = std::getenv("EDRI_NOTES_DB");
    if (!path || !*path) path = "notes.db";
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr) !=
        SQLITE_OK) {
      const std::string why = db ? sqlite3_errmsg(db) : "out of memory";
      sqlite3_close_v2(db);
      throw std::runtime_error(std::string("cannot open EDRI_NOTES_DB ") + path + ": " + why);
    }
    sqlite3_busy_timeout(db, 5000);
    // WAL: readers never block the writer. synchronous=FULL: a commit is on
    // disk before the 2xx leaves, so it survives any crash, not only one of
    // an edri process.
    exec(db, "PRAGMA journal_mode=WAL");
    exec(db, "PRAGMA synchronous=FULL");
    exec(db,
         "CREATE TABLE IF NOT EXISTS notes("
         " id INTEGER PRIMARY KEY AUTOINCREMENT,"
         " title TEXT NOT NULL, body TEXT NOT NULL,"
         " created_at TEXT NOT NULL, updated_at TEXT NOT NULL, request_id TEXT)");
    // A database made before request_id was kept.
    char* err = nullptr;
    if (sqlite3_exec(db, "ALTER TABLE notes ADD COLUMN request_id TEXT", nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string why = err ? err : "";
      sqlite3_free(err);
      if (why.find("duplicate column") == std::string::npos)
        throw std::runtime_error("cannot add notes.request_id: " + why);
    }
    exec(db, "CREATE UNIQUE INDEX IF NOT EXISTS notes_request_id ON notes(request_id)");
    return db;
  }
  static void exec(sqlite3* db, const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "unknown error";
      sqlite3_free(err);
      throw std::runtime_error(std::string(sql) + ": " + msg);
    }
  }
};

// RFC 3339, UTC, milliseconds: 2026-11-30T12:34:56.789Z
std::string now_rfc3339() {
  const auto now = std::chrono::system_clock::now();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms % 1000));
  return buf;
}

std::string column_text(sqlite3_stmt* s, int i) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(s, i))) : std::string();
}

json row_to_note(sqlite3_stmt* s) {
  return json{{"id", sqlite3_column_int64(s, 0)},
              {"title", column_text(s, 1)},
              {"body", column_text(s, 2)},
              {"created_at", column_text(s, 3)},
              {"updated_at", column_text(s, 4)}};
}

void check(int rc, sqlite3* db, const char* what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
    throw std::runtime_error(std::string(what) + ": " + sqlite3_errmsg(db));
}

void bind_text(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}

// The note with this id, or null.
json find_note(std::int64_t id) {
  auto& db = Db::get();
  sqlite3_stmt* s = db.select.use();
  sqlite3_bind_int64(s, 1, id);
  const int rc = sqlite3_step(s);
  check(rc, db.handle(), "select");
  return rc == SQLITE_ROW ? row_to_note(s) : json();
}

Response not_found(std::int64_t id) {
  return Response::problem(404, "Not Found", "note " + std::to_string(id) + " does not exist");
}

void changed(Context& ctx, const char* op, const json& note) {
  ctx.publish("notes.changed", json{{"op", op}, {"note", note}});
}

// What a write made: the note, and whether it is new (a replayed create
// finds the note its first run made).
struct Written {
  json note;
  bool changed = false;
};

Written insert_note(const std::string& title, const std::string& body, const std::string& request_id) {
  auto& db = Db::get();
  sqlite3_stmt* s = db.insert.use();
  bind_text(s, 1, title);
  bind_text(s, 2, body);
  bind_text(s, 3, now_rfc3339());
  bind_text(s, 4, request_id);
  check(sqlite3_step(s), db.handle(), "insert");
  const bool inserted = sqlite3_changes(db.handle()) > 0;
  sqlite3_stmt* q = db.by_request.use();
  bind_text(q, 1, request_id);
  check(sqlite3_step(q), db.handle(), "select by request");
  return {find_note(sqlite3_column_int64(q, 0)), inserted};
}

json page_of_notes(std::int64_t limit, std::int64_t offset) {
  auto& db = Db::get();
  sqlite3_stmt* s = db.page.use();
  sqlite3_bind_int64(s, 1, limit);
  sqlite3_bind_int64(s, 2, offset);
  json items = json::array();
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) items.push_back(row_to_note(s));
  check(rc, db.handle(), "list");
  sqlite3_stmt* c = db.count.use();
  check(sqlite3_step(c), db.handle(), "count");
  return json{{"items", std::move(items)}, {"total", sqlite3_column_int64(c, 0)}};
}

Written update_note(std::int64_t id, const std::string& title, const std::string& body) {
  auto& db = Db::get();
  sqlite3_stmt* s = db.update.use();
  sqlite3_bind_int64(s, 1, id);
  bind_text(s, 2, title);
  bind_text(s, 3, body);
  bind_text(s, 4, now_rfc3339());
  check(sqlite3_step(s), db.handle(), "update");
  if (sqlite3_changes(db.handle()) == 0) return {};
  return {find_note(id), true};
}

// One transaction: the note published is the note deleted.
Written delete_note(std::int64_t id) {
  auto& db = Db::get();
  check(sqlite3_exec(db.handle(), "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), db.handle(), "begin");
  json note;
  try {
    note = find_note(id);
    if (!note.is_null()) {
      sqlite3_stmt* s = db.remove.use();
      sqlite3_bind_int64(s, 1, id);
      check(sqlite3_step(s), db.handle(), "delete");
    }
    check(sqlite3_exec(db.handle(), "COMMIT", nullptr, nullptr, nullptr), db.handle(), "commit");
  } catch (...) {
    sqlite3_exec(db.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return {note, !note.is_null()};
}

// `f` as a worker-thread job that holds the connection while it runs.
template <class F>
auto with_db(F f) {
  return [f = std::move(f)] {
    std::lock_guard<std::mutex> lock(Db::get().mutex);
    return f();
  };
}

// The handlers: read the request on the loop, await the database on the
// worker thread, publish and answer on the loop again.
edri::Async<> create(const Request& req, Context& ctx) {
  const json in = req.json();
  const std::string title = in.at("title").get<std::string>(), body = in.at("body").get<std::string>();
  // The job made first, awaited by name: GCC 12 destroys a temporary with
  // a destructor (this lambda's strings) twice when it is made inside the
  // co_await's own statement.
  auto insert = ctx.thread(with_db([title, body, id = std::string(req.id)] { return insert_note(title, body, id); }));
  const Written w = co_await insert;
  if (w.changed) changed(ctx, "created", w.note);
  co_return Response::json(w.note, 201)
      .header("Location", "/notes/" + std::to_string(w.note.at("id").get<long long>()));
}

edri::Async<> get(const Request& req, Context& ctx) {
  const auto id = req.int_param("id");
  const json note = co_await ctx.thread(with_db([id] { return find_note(id); }));
  co_return note.is_null() ? not_found(id) : Response::json(note);
}

edri::Async<> list(const Request& req, Context& ctx) {
  const auto limit = req.int_query("limit"), offset = req.int_query("offset");
  json page = co_await ctx.thread(with_db([=] { return page_of_notes(limit, offset); }));
  co_return Response::json(page);
}

edri::Async<> update(const Request& req, Context& ctx) {
  const auto id = req.int_param("id");
  const json in = req.json();
  const std::string title = in.at("title").get<std::string>(), body = in.at("body").get<std::string>();
  auto write = ctx.thread(with_db([id, title, body] { return update_note(id, title, body); }));  // made first: GCC 12
  const Written w = co_await write;
  if (!w.changed) co_return not_found(id);
  changed(ctx, "updated", w.note);
  co_return Response::json(w.note);
}

edri::Async<> remove(const Request& req, Context& ctx) {
  const auto id = req.int_param("id");
  const Written w = co_await ctx.thread(with_db([id] { return delete_note(id); }));
  if (!w.changed) co_return not_found(id);
  changed(ctx, "deleted", w.note);
  co_return Response::empty(204);
}

std::vector<edri::FieldDecl> note_fields() {
  return {Field("title").string().length(1, 200), Field("body").string().length(0, 65536)};
}

void register_notes(edri::Registry& r) {
  r.domain("notes");
  // One thread for the database: one connection, writes in request order.
  r.worker_threads(1, 4096);
  r.on_start([](Context&) { Db::get(); });  // EDRI_NOTES_DB opened (and checked) before the domain serves
  r.notification("notes.changed");
  r.post("/notes", "notes.create", create, note_fields());
  r.get("/notes/{id:int}", "notes.get", get);
  r.get("/notes", "notes.list", list,
        {Field("limit").in_query().integer().range(1, 100).default_to(20),
         Field("offset").in_query().integer().range(0, 9.0e15).default_to(0)});
  r.put("/notes/{id:int}", "notes.update", update, note_fields());
  r.del("/notes/{id:int}", "notes.delete", remove);
  // WebSocket: the same events as commands, and pushes of every change.
  for (const char* c : {"notes.create", "notes.get", "notes.list", "notes.update", "notes.delete"}) {
    r.command(c);
    // Should the manager die while it handles one, its successor runs it
    // again: creates are deduplicated on Request::id, the rest are
    // idempotent.
    r.replay(c);
  }
  r.push("notes.changed", "notes.subscribe", "notes.unsubscribe");
  // gRPC: the same events as the typed service notes.v1.Notes (notes.proto).
  r.grpc_service("notes.v1.Notes", std::string(notes_descriptor, sizeof notes_descriptor),
                 {{"CreateNote", "notes.create"},
                  {"GetNote", "notes.get"},
                  {"ListNotes", "notes.list"},
                  {"UpdateNote", "notes.update"},
                  {"DeleteNote", "notes.delete"}});
  // The web page: GET / serves assets/index.html.
  r.assets("/", "notes_assets");
}

}  // namespace

EDRI_PLUGIN("notes", register_notes)
