#include "manager/traced_database.hpp"

#include <algorithm>
#include <cctype>

namespace edri::manager {

namespace {

constexpr std::size_t kStatementTextMax = 1024;  // db.query.text, cut

}  // namespace

std::string statement_span_name(const std::vector<Statement>& statements, std::string_view database) {
  if (statements.size() != 1) return "BATCH " + std::string(database);
  const std::string_view sql = statements[0].sql;
  const auto start = sql.find_first_not_of(" \t\r\n(");
  std::string op;
  for (auto i = start;
       i != std::string_view::npos && i < sql.size() && std::isalpha(static_cast<unsigned char>(sql[i])); ++i)
    op += static_cast<char>(std::toupper(static_cast<unsigned char>(sql[i])));
  return (op.empty() ? std::string("SQL") : op) + " " + std::string(database);
}

// A transaction's connection: its statements traced as the database's.
class TracedDatabase::Session final : public Database::Session {
 public:
  Session(std::shared_ptr<Database::Session> inner, const TracedDatabase& db) : inner_(std::move(inner)), db_(db) {}
  std::function<void()> run(std::vector<Statement> statements, Deadline deadline, Done done) override {
    return run_about(nullptr, std::move(statements), deadline, std::move(done));
  }
  std::function<void()> run_about(const Request* about, std::vector<Statement> statements, Deadline deadline,
                                  Done done) override {
    done = db_.traced(about, statements, std::move(done));
    return inner_->run(std::move(statements), deadline, std::move(done));
  }
  void end(bool commit, Deadline deadline, Done done) override {
    end_about(nullptr, commit, deadline, std::move(done));
  }
  void end_about(const Request* about, bool commit, Deadline deadline, Done done) override {
    inner_->end(commit, deadline, db_.traced_end(about, commit, std::move(done)));
  }

 private:
  std::shared_ptr<Database::Session> inner_;
  const TracedDatabase& db_;
};

TracedDatabase::TracedDatabase(std::unique_ptr<Database> driver, Traces& traces, StartCall start)
    : driver_(std::move(driver)), traces_(traces), start_(std::move(start)) {}

std::function<void()> TracedDatabase::run(std::vector<Statement> statements, Deadline deadline, Done done) {
  return run_about(nullptr, std::move(statements), deadline, std::move(done));
}

std::function<void()> TracedDatabase::run_about(const Request* about, std::vector<Statement> statements,
                                                Deadline deadline, Done done) {
  done = traced(about, statements, std::move(done));
  return driver_->run(std::move(statements), deadline, std::move(done));
}

std::function<void()> TracedDatabase::begin(Deadline deadline, Began began) {
  return begin_about(nullptr, deadline, std::move(began));
}

std::function<void()> TracedDatabase::begin_about(const Request* about, Deadline deadline, Began began) {
  return driver_->begin(deadline, [this, call = start_(about), began = std::move(began)](
                                      std::shared_ptr<Database::Session> s, Rows failure) {
    if (call) traces_.finish(*call, "BEGIN " + driver_->name(), !s, attributes_for("BEGIN"));
    began(s ? std::make_shared<Session>(std::move(s), *this) : nullptr, std::move(failure));
  });
}

Database::Done TracedDatabase::traced_end(const Request* about, bool commit, Done done) const {
  const auto call = start_(about);
  if (!call) return done;
  const char* what = commit ? "COMMIT" : "ROLLBACK";
  return [this, span = *call, what, then = std::move(done)](std::vector<Rows> all) mutable {
    const bool failed = all.empty() || !all[0].ok();
    traces_.finish(span, what + (" " + driver_->name()), failed, attributes_for(what));
    if (then) then(std::move(all));
  };
}

std::vector<SpanAttribute> TracedDatabase::attributes_for(std::string_view sql) const {
  return {{"db.system.name", std::string(driver_->kind())},
          {"db.namespace", driver_->name()},
          {"db.query.text", std::string(sql.substr(0, kStatementTextMax))}};
}

Database::Done TracedDatabase::traced(const Request* about, const std::vector<Statement>& statements, Done done) const {
  const auto call = start_(about);
  if (!call || statements.empty()) return done;
  std::vector<SpanAttribute> attributes = attributes_for(statements[0].sql);
  if (statements.size() > 1)
    attributes.push_back({"db.operation.batch.size", static_cast<std::int64_t>(statements.size())});
  return [this, span = *call, name = statement_span_name(statements, driver_->name()),
          attributes = std::move(attributes), then = std::move(done)](std::vector<Rows> all) mutable {
    const bool failed = std::any_of(all.begin(), all.end(), [](const Rows& r) { return !r.ok(); });
    traces_.finish(span, std::move(name), failed, std::move(attributes));
    then(std::move(all));
  };
}

}  // namespace edri::manager
