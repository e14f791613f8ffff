// TracedDatabase: a domain's database as its handlers reach it when
// tracing is on (docs/operations.md, Tracing): the driver's, each run of
// statements (a query, a batch, a transaction's) a CLIENT span of the
// trace of the handler it runs for, named "<OPERATION> <database>" as
// OpenTelemetry's database conventions name it; a transaction's BEGIN and
// its COMMIT or ROLLBACK too.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <edri/database.hpp>

#include "manager/traces.hpp"

namespace edri::manager {

class TracedDatabase final : public Database {
 public:
  // The span a call on behalf of `about` (null: the request whose handler
  // runs now) goes on, or none: Manager::trace_call.
  using StartCall = std::function<std::optional<Traces::Call>(const Request* about)>;
  TracedDatabase(std::unique_ptr<Database> driver, Traces& traces, StartCall start);

  const std::string& name() const override { return driver_->name(); }
  std::string_view kind() const override { return driver_->kind(); }
  std::function<void()> run(std::vector<Statement> statements, Deadline deadline, Done done) override;
  std::function<void()> run_about(const Request* about, std::vector<Statement> statements, Deadline deadline,
                                  Done done) override;
  std::function<void()> begin(Deadline deadline, Began began) override;
  std::function<void()> begin_about(const Request* about, Deadline deadline, Began began) override;

  // `done`, ending the span of `statements` first when they are traced
  // for `about`: what a session's run_about hands its driver.
  Done traced(const Request* about, const std::vector<Statement>& statements, Done done) const;
  // The same for a transaction's end: a span "COMMIT <database>" or
  // "ROLLBACK <database>".
  Done traced_end(const Request* about, bool commit, Done done) const;

 private:
  class Session;
  // A statement's span's attributes: the database's system and name, the
  // statement's text (cut).
  std::vector<SpanAttribute> attributes_for(std::string_view sql) const;
  std::unique_ptr<Database> driver_;
  Traces& traces_;
  StartCall start_;
};

// "SELECT notes", from the first statement's first word; "BATCH notes"
// for several.
std::string statement_span_name(const std::vector<Statement>& statements, std::string_view database);

}  // namespace edri::manager
