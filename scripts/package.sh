#!/usr/bin/env bash
# Builds the .deb from a built tree (default: build/, the release build)
# and checks it as a user would meet it: lintian accepts it, systemd
# accepts its unit, and the server installed into a scratch root serves
# the packaged notes app, with the packaged config, and a plugin built
# against the packaged pkg-config file. docs/operations.md, "Installing".
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"

(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls "$build"/edri_*_amd64.deb)
echo "package: $deb"
# Errors and warnings fail (its manual page is checked with man's own
# warnings among them); lintian's informational tags are printed.
lintian --fail-on error,warning "$deb"

root=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$root"
}
trap cleanup EXIT
dpkg -x "$deb" "$root"

# The unit as systemd reads it. verify needs ExecStart's binary where the
# unit says (/usr/bin): the copy names the scratch root's. It exits 0 on
# an unknown key, so any word it says is a failure.
mkdir "$root/unit"
sed "s#ExecStart=/usr/bin/#ExecStart=$root/usr/bin/#" "$root/lib/systemd/system/edri.service" >"$root/unit/edri.service"
said=$(systemd-analyze verify "$root/unit/edri.service" 2>&1 || echo "(exit $?)")
if [ -n "$said" ]; then
  echo "systemd-analyze verify: $said" >&2
  exit 1
fi
grep -q '^Type=notify$' "$root/unit/edri.service"

# A plugin built with the packaged pkg-config file alone.
cat >"$root/hi.cpp" <<'CPP'
#include <edri/plugin.hpp>
EDRI_PLUGIN("hi", [](edri::Registry& r) {
  const std::string who = r.setting({.key = "who", .variable = "HI_WHO", .default_value = "world"});
  r.get("/hi", "hi.hi", [who](const edri::Request&, edri::Context&) { return edri::Response::text("hi " + who); });
})
CPP
flags=$(PKG_CONFIG_SYSROOT_DIR="$root" PKG_CONFIG_PATH="$root/usr/share/pkgconfig" pkg-config --cflags edri)
g++ -shared -fPIC -fvisibility=hidden $flags "$root/hi.cpp" -o "$root/hi.so"

# The packaged server, config and notes app, from the scratch root: the
# environment names the plugins where they lie here (it wins over the
# file), the file's [plugin.notes] keeps its relative database path.
cat >>"$root/etc/edri/edri.toml" <<'TOML'
[plugin.hi]
who = "from the file"
TOML
plugins="$root/usr/lib/edri/plugins/notes.so:$root/usr/lib/edri/plugins/audit.so:$root/hi.so"
(cd "$root" && EDRI_PLUGINS="$plugins" exec "$root/usr/bin/edri-server" --config "$root/etc/edri/edri.toml" \
  --port 0 >"$root/out.log" 2>"$root/err.log") &
server_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$root/out.log" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's#.*listening on http://127.0.0.1:\([0-9]*\).*#\1#p' "$root/out.log")
[ -n "$port" ] || { cat "$root/err.log" >&2; exit 1; }
created=$(curl -sf -X POST -H 'Content-Type: application/json' -d '{"title":"packaged","body":"served"}' \
  "http://127.0.0.1:$port/notes")
echo "$created" | grep -q '"title":"packaged"'
curl -sf "http://127.0.0.1:$port/notes" | grep -q '"packaged"'
curl -sf "http://127.0.0.1:$port/" | grep -qi '<html'
[ "$(curl -sf "http://127.0.0.1:$port/hi")" = "hi from the file" ]
# /docs and the Swagger UI files the package put beside bin/.
curl -sf "http://127.0.0.1:$port/docs" | grep -q 'swagger-ui-bundle.js'
curl -sf -o /dev/null "http://127.0.0.1:$port/docs/swagger-ui-bundle.js"
test -f "$root/notes.db"
kill -TERM "$server_pid"
wait "$server_pid"
server_pid=
# The manual page, made from the settings table, names every setting.
man_settings=$(zcat "$root/usr/share/man/man1/edri-server.1.gz" | grep -c '^\.B EDRI_')
[ "$man_settings" -eq "$("$root/usr/bin/edri-server" --print-config-markdown | grep -c '^| `EDRI_')" ]
echo "package: lintian, systemd-analyze, pkg-config, the manual page and the scratch install all pass"
