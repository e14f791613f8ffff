// The example app, part 1: notes (contract: ../shared/specs/notes-app.md).
//
// Domain `notes` keeps the notes in its database `notes`
// (include/edri/database.hpp): the SQLite file EDRI_NOTES_DB (default
// notes.db), in WAL mode, each commit on disk before it is answered; or
// Postgres, when EDRI_NOTES_DB holds a postgresql:// URL. The handlers are
// coroutines that await it: the manager's loop only queues each statement
// and takes its answer (SQLite's statements run on the database's threads,
// writes on its one writer in the order they came), so it never waits on
// the disk. Every create, update and delete is committed before it is
// answered and then published as the notification `notes.changed`
// {"op": "created"|"updated"|"deleted", "note": {...}}; the audit plugin
// counts those, and WebSocket clients that sent `notes.subscribe` receive
// them. The same events answer REST routes, WebSocket commands and the
// gRPC service notes.v1.Notes: the listener binds path, query and body
// fields from each.
#include <edri/plugin.hpp>

#include "notes_descriptor.hpp"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

namespace {

using edri::Context;
using edri::Request;
using edri::Response;
using edri::Rows;
using edri::SqlParams;
using nlohmann::json;

// The setting `db` ([plugin.notes] in the config file, EDRI_NOTES_DB in
// the environment): a file (default notes.db, in the working directory),
// or a database URL (postgresql://..., sqlite:...). Read where the plugin
// registers, in every process; only the notes manager opens it.
std::string notes_url(edri::Registry& r) {
  const std::string db = r.setting({.key = "db",
                                    .variable = "EDRI_NOTES_DB",
                                    .default_value = "notes.db",
                                    .meaning = "the notes' database: a SQLite file or a postgresql:// URL"});
  for (const char* scheme : {"postgresql://", "postgres://", "sqlite:"})
    if (db.starts_with(scheme)) return db;
  return "sqlite:" + db;
}

// $N placeholders: both SQLite and Postgres take them. Only the table
// differs between the two.
const std::string kNote = "id, title, body, created_at, updated_at";
// A replayed create (its manager died before it answered, maybe after it
// committed) finds the note its first run made: one note per request.
const std::string kInsert =
    "INSERT INTO notes(title, body, created_at, updated_at, request_id) VALUES($1, $2, $3, $3, $4)"
    " ON CONFLICT(request_id) DO NOTHING";
const std::string kByRequest = "SELECT " + kNote + " FROM notes WHERE request_id = $1";
const std::string kSelect = "SELECT " + kNote + " FROM notes WHERE id = $1";
const std::string kPage = "SELECT " + kNote + " FROM notes ORDER BY id DESC LIMIT $1 OFFSET $2";
const std::string kCount = "SELECT count(*) FROM notes";
const std::string kUpdate = "UPDATE notes SET title = $2, body = $3, updated_at = $4 WHERE id = $1 RETURNING " + kNote;
// One statement: the note published is the note deleted.
const std::string kDelete = "DELETE FROM notes WHERE id = $1 RETURNING " + kNote;

std::vector<edri::Statement> schema(std::string_view kind) {
  const bool pg = kind == "postgresql";
  std::vector<edri::Statement> s;
  s.push_back({std::string("CREATE TABLE IF NOT EXISTS notes(") +
                   (pg ? "id BIGSERIAL PRIMARY KEY" : "id INTEGER PRIMARY KEY AUTOINCREMENT") +
                   ", title TEXT NOT NULL, body TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,"
                   " request_id TEXT)",
               {}});
  // A database made before request_id was kept (SQLite refuses the column
  // twice, which is then no failure).
  s.push_back({pg ? "ALTER TABLE notes ADD COLUMN IF NOT EXISTS request_id TEXT"
                  : "ALTER TABLE notes ADD COLUMN request_id TEXT",
               {}});
  s.push_back({"CREATE UNIQUE INDEX IF NOT EXISTS notes_request_id ON notes(request_id)", {}});
  return s;
}

// The table, made once per manager before its handlers use it: the start
// hook sends its statements, and handlers wait until they are answered (a
// failure fails them, and the next handler sends them again).
class Schema {
 public:
  static Schema& get() {
    static Schema s;  // one notes manager per process, one thread
    return s;
  }

  void make(edri::Database& db) {
    state_ = State::making;
    db.run(schema(db.kind()), edri::Database::Deadline::max(), [this](std::vector<Rows> rows) {
      const Rows* failed = nullptr;
      for (const Rows& r : rows)
        if (!r.ok() && r.error().find("duplicate column") == std::string::npos) failed = failed ? failed : &r;
      state_ = failed ? State::unmade : State::made;
      for (auto& w : std::exchange(waiting_, {})) {
        if (failed)
          w.fail(std::make_exception_ptr(edri::DatabaseError(*failed)));
        else
          w();
      }
    });
  }

  edri::Pending<void> ready(edri::Database& db) {
    return edri::Pending<void>([this, &db](edri::Pending<void>::Completion done) {
      if (state_ == State::made) return done();
      waiting_.push_back(std::move(done));
      if (state_ == State::unmade) make(db);
    });
  }

 private:
  enum class State { unmade, making, made };
  State state_ = State::unmade;
  std::vector<edri::Pending<void>::Completion> waiting_;
};

// The database, once its table is there.
edri::Async<edri::Database*> notes(Context& ctx) {
  edri::Database& db = ctx.database("notes");
  co_await Schema::get().ready(db);
  co_return &db;
}

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

// The events, named once: the routes, commands, replays and gRPC methods
// below all refer to these.
constexpr edri::EventName kCreateNote{"notes.create"};
constexpr edri::EventName kGetNote{"notes.get"};
constexpr edri::EventName kListNotes{"notes.list"};
constexpr edri::EventName kUpdateNote{"notes.update"};
constexpr edri::EventName kDeleteNote{"notes.delete"};
constexpr edri::EventName kNotesChanged{"notes.changed"};

// What a client sends to create or update a note: the listener checks it
// (a 422 naming each bad field), the handler is given it parsed.
struct NoteInput {
  std::string title;
  std::string body;
};
const edri::Model<NoteInput> note_input{edri::member(&NoteInput::title, "title").length(1, 200),
                                        edri::member(&NoteInput::body, "body").length(0, 65536)};

// What the notes app answers.
struct Note {
  std::int64_t id = 0;
  std::string title;
  std::string body;
  std::string created_at;
  std::string updated_at;
};
const edri::Model<Note> note{edri::member(&Note::id, "id"), edri::member(&Note::title, "title"),
                             edri::member(&Note::body, "body"), edri::member(&Note::created_at, "created_at"),
                             edri::member(&Note::updated_at, "updated_at")};

struct NotePage {
  std::vector<Note> items;
  std::int64_t total = 0;
};
const edri::Model<NotePage> note_page{edri::member(&NotePage::items, "items", note),
                                      edri::member(&NotePage::total, "total")};

const auto note_id = edri::path_param<std::int64_t>("id");
const auto limit = edri::query<std::int64_t>("limit").range(1, 100).default_to(20);
const auto offset = edri::query<std::int64_t>("offset").range(0, 9'000'000'000'000'000).default_to(0);

Note note_of(const edri::Row& r) {
  return {r.int64("id"), std::string(r.text("title")), std::string(r.text("body")), std::string(r.text("created_at")),
          std::string(r.text("updated_at"))};
}

Response not_found(std::int64_t id) {
  return Response::problem(404, "Not Found", "note " + std::to_string(id) + " does not exist");
}

void changed(Context& ctx, const char* op, const Note& n) {
  ctx.publish(kNotesChanged, json{{"op", op}, {"note", note.to_json(n)}});
}

// The handlers: read the request on the loop, await the database, publish
// and answer on the loop again. Parameters are made before the co_await's
// statement (GCC 12 and braced lists there; docs/writing-a-plugin.md).
edri::Async<> create(const NoteInput& in, const Request& req, Context& ctx) {
  edri::Database* db = co_await notes(ctx);
  // Inserted, then read back by the request's id (the note a replay's
  // first run made, if it did): both on one connection, in order.
  std::vector<edri::Statement> write;
  write.push_back({kInsert, {in.title, in.body, now_rfc3339(), std::string(req.id)}});
  write.push_back({kByRequest, {std::string(req.id)}});
  const std::vector<Rows> rows = co_await db->query_all(std::move(write));
  const Note made = note_of(rows.at(1).at(0));
  if (rows[0].affected_rows() > 0) changed(ctx, "created", made);
  co_return Response::json(note.to_json(made), 201).header("Location", "/notes/" + std::to_string(made.id));
}

edri::Async<> get(const Request& req, Context& ctx) {
  const std::int64_t id = req.get(note_id);
  edri::Database* db = co_await notes(ctx);
  SqlParams params{id};
  const Rows rows = co_await db->query(kSelect, std::move(params));
  co_return rows.empty() ? not_found(id) : Response::json(note.to_json(note_of(rows[0])));
}

edri::Async<> list(const Request& req, Context& ctx) {
  edri::Database* db = co_await notes(ctx);
  std::vector<edri::Statement> reads;
  reads.push_back({kPage, {req.get(limit), req.get(offset)}});
  reads.push_back({kCount, {}});
  const std::vector<Rows> rows = co_await db->query_all(std::move(reads));
  NotePage page;
  for (std::size_t i = 0; i < rows.at(0).size(); ++i) page.items.push_back(note_of(rows[0][i]));
  page.total = rows.at(1).at(0).int64(0);
  co_return Response::json(note_page.to_json(page));
}

edri::Async<> update(const NoteInput& in, const Request& req, Context& ctx) {
  const std::int64_t id = req.get(note_id);
  edri::Database* db = co_await notes(ctx);
  SqlParams params{id, in.title, in.body, now_rfc3339()};
  const Rows rows = co_await db->query(kUpdate, std::move(params));
  if (rows.empty()) co_return not_found(id);
  const Note updated = note_of(rows[0]);
  changed(ctx, "updated", updated);
  co_return Response::json(note.to_json(updated));
}

edri::Async<> remove(const Request& req, Context& ctx) {
  const std::int64_t id = req.get(note_id);
  edri::Database* db = co_await notes(ctx);
  SqlParams params{id};
  const Rows rows = co_await db->query(kDelete, std::move(params));
  if (rows.empty()) co_return not_found(id);
  changed(ctx, "deleted", note_of(rows[0]));
  co_return Response::empty(204);
}

// What each handler answers, for /openapi.json.
void declare_answers(edri::Registry& r) {
  r.answers(kCreateNote, 201, "the note made (Location: its URL)", note);
  r.answers(kGetNote, 200, "the note", note).answers(kGetNote, 404, "no such note");
  r.answers(kListNotes, 200, "a page of notes, newest first, and how many there are", note_page);
  r.answers(kUpdateNote, 200, "the note updated", note).answers(kUpdateNote, 404, "no such note");
  r.answers(kDeleteNote, 204, "the note is deleted").answers(kDeleteNote, 404, "no such note");
}

void register_notes(edri::Registry& r) {
  r.domain("notes");
  // Opened by the manager before the start hook runs (a file in a folder
  // that does not exist stops start-up); EDRI_DATABASES, naming `notes`,
  // wins over EDRI_NOTES_DB.
  r.database("notes", notes_url(r));
  r.on_start([](Context& ctx) { Schema::get().make(ctx.database("notes")); });
  r.notification(kNotesChanged);
  r.post("/notes", kCreateNote, create, note_input);
  r.get("/notes/{id:int}", kGetNote, get);
  r.get("/notes", kListNotes, list, {limit, offset});
  r.put("/notes/{id:int}", kUpdateNote, update, note_input);
  r.del("/notes/{id:int}", kDeleteNote, remove);
  declare_answers(r);
  // A misspelt field ("titel") is a 422 naming it, not silently dropped.
  r.refuse_unknown_fields(kCreateNote).refuse_unknown_fields(kUpdateNote);
  // WebSocket: the same events as commands, and pushes of every change.
  for (const edri::EventName c : {kCreateNote, kGetNote, kListNotes, kUpdateNote, kDeleteNote}) {
    r.command(c);
    // Should the manager die while it handles one, its successor runs it
    // again: creates are deduplicated on Request::id, the rest are
    // idempotent.
    r.replay(c);
  }
  r.push(kNotesChanged, "notes.subscribe", "notes.unsubscribe");
  // gRPC: the same events as the typed service notes.v1.Notes (notes.proto).
  r.grpc_service("notes.v1.Notes", std::string(notes_descriptor, sizeof notes_descriptor),
                 {{"CreateNote", kCreateNote},
                  {"GetNote", kGetNote},
                  {"ListNotes", kListNotes},
                  {"UpdateNote", kUpdateNote},
                  {"DeleteNote", kDeleteNote}});
  // The web page: GET / serves assets/index.html.
  r.assets("/", "notes_assets");
}

}  // namespace

EDRI_PLUGIN("notes", register_notes)
