// A plugin whose WebSocket declarations are wrong in the way named by the
// environment variable BAD_WEBSOCKET (read at registration).
#include <edri/plugin.hpp>

#include <cstdlib>
#include <string>

namespace {
void reg(edri::Registry& r) {
  const char* v = std::getenv("BAD_WEBSOCKET");
  const std::string bad = v ? v : "";
  auto ok = [](const edri::Request&, edri::Context&) { return edri::Response::empty(); };
  r.on(edri::Method::Get, "/a", "ws.a", ok);
  r.notification("ws.changed");
  if (bad == "undeclared") r.command("go", "ws.nowhere");
  if (bad == "notification") r.command("go", "ws.changed");
  if (bad == "twice") r.command("ws.a").command("ws.a");
  if (bad == "push-of-event") r.push("ws.a", "sub", "unsub");
  if (bad == "push-clash") r.command("sub", "ws.a").push("ws.changed", "sub", "unsub");
  if (bad == "push-same") r.push("ws.changed", "sub", "sub");
}
}  // namespace

EDRI_PLUGIN("bad_websocket", reg)
