// The example app, part 2: audit (contract: ../shared/specs/notes-app.md).
//
// Domain `audit` runs in its own manager process. It never touches the
// notes database: it counts the `notes.changed` notifications the notes
// manager publishes, and answers GET /audit with the counts since it
// started.
#include <edri/plugin.hpp>

#include <string>

namespace {

struct Counts {
  long created = 0;
  long updated = 0;
  long deleted = 0;
};

Counts& counts() {
  static Counts c;  // one audit manager process, one thread
  return c;
}

void register_audit(edri::Registry& r) {
  r.domain("audit");
  r.subscribe("notes.changed", [](const edri::Request& req, edri::Context&) {
    const auto op = req.json().value("op", std::string());
    if (op == "created") ++counts().created;
    if (op == "updated") ++counts().updated;
    if (op == "deleted") ++counts().deleted;
  });
  r.get("/audit", "audit.counts", [](const edri::Request&, edri::Context&) {
    const auto& c = counts();
    return edri::Response::json({{"created", c.created}, {"updated", c.updated}, {"deleted", c.deleted}});
  });
}

}  // namespace

EDRI_PLUGIN("audit", register_audit)
