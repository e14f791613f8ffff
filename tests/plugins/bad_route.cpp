// A plugin whose route names an event it never declared.
#include <edri/plugin.hpp>

namespace {
void reg(edri::Registry& r) { r.route(edri::Method::Get, "/x", "nowhere"); }
}  // namespace

EDRI_PLUGIN("bad_route", reg)
