// The example app, part 2: audit (contract: ../shared/specs/notes-app.md).
//
// Domain `audit` runs in its own manager process. It never touches the
// notes database: it counts the `notes.changed` notifications the notes
// manager publishes, answers GET /audit with the counts since it started,
// and keeps them in the live stream `audit` (docs/streams.md), which the
// page follows: every count is in every patch, so the stream is right
// again after any publish, whatever was lost before it.
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

nlohmann::json as_json(const Counts& c) {
  return {{"created", c.created}, {"updated", c.updated}, {"deleted", c.deleted}};
}

void register_audit(edri::Registry& r) {
  r.domain("audit");
  r.subscribe("notes.changed", [](const edri::Request& req, edri::Context& ctx) {
    const auto op = req.json().value("op", std::string());
    if (op == "created") ++counts().created;
    if (op == "updated") ++counts().updated;
    if (op == "deleted") ++counts().deleted;
    ctx.publish_patch("audit", as_json(counts()));
  });
  r.get("/audit", "audit.counts",
        [](const edri::Request&, edri::Context&) { return edri::Response::json(as_json(counts())); });
}

}  // namespace

EDRI_PLUGIN("audit", register_audit)
