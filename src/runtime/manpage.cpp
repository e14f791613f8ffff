#include "runtime/manpage.hpp"

#include "runtime/settings.hpp"

namespace edri {

namespace {

// Left-adjusted (.ad l): a setting's long list of values cannot be
// justified, and troff would warn for each such line.
constexpr const char* kHead = R"(.TH EDRI\-SERVER 1 "" "edri @VERSION@" "User Commands"
.ad l
.SH NAME
edri\-server \- multi\-process event\-routing application server
.SH SYNOPSIS
.B edri\-server
[\fB\-\-config\fR \fIFILE\fR] [\fB\-\-\fIkey\fR \fIvalue\fR ...]
.br
.B edri\-server
\fB\-\-print\-config\fR | \fB\-\-print\-config\-toml\fR | \fB\-\-print\-config\-markdown\fR | \fB\-\-print\-manpage\fR | \fB\-\-help\fR | \fB\-\-version\fR
.SH DESCRIPTION
.B edri\-server
serves the plugins named in \fBEDRI_PLUGINS\fR (shared libraries built against the edri headers) over
HTTP/1.1, HTTP/2, gRPC, WebSocket and Server\-Sent Events. It runs in the foreground as a supervisor and its
children: listeners, a broker, a router and one manager process per application domain, joined by shared memory.
It logs to standard error and exits 0 after a clean stop.
.PP
A setting comes from the command line, else the environment, else the TOML file that \fB\-\-config\fR names, else
its default. An unknown option, key or \fBEDRI_\fR variable stops start\-up with a hint.
.SH OPTIONS
.TP
.BI \-\-config " FILE"
Read settings from the TOML file \fIFILE\fR: one key per setting (\fBport = 8081\fR), and a
[plugin.\fIname\fR] section per plugin for the settings it declares.
.TP
\fB\-\-\fIkey value\fR, \fB\-\-\fIkey\fB=\fIvalue\fR
Set the setting \fIkey\fR: \fB\-\-port 8081\fR sets \fBEDRI_PORT\fR. A '\-' in a key may be written '_'.
.TP
.B \-\-print\-config
Print the settings in effect, the plugins' too, and exit.
.TP
.B \-\-print\-config\-toml
Print the same as a config file and exit.
.TP
.B \-\-print\-config\-markdown
Print every setting with its default and meaning as a markdown table and exit.
.TP
.B \-\-print\-manpage
Print this page and exit.
.TP
.BR \-\-help ", " \-h
Print the usage and exit.
.TP
.B \-\-version
Print the version and the plugin ABI version and exit.
.SH ENVIRONMENT
Each setting, with its default (the key in a config file is the name without \fBEDRI_\fR, in lower case):
)";

constexpr const char* kTail = R"(.SH SIGNALS
.TP
.BR SIGTERM ", " SIGINT
Stop gracefully: no new connections, requests in flight answered, WebSockets closed with 1001, within
\fBEDRI_SHUTDOWN_TIMEOUT\fR seconds. A second one kills the children.
.TP
.B SIGHUP
Reload: read the config file and the plugins again and start a new generation of processes beside the old one,
which finishes what it holds. A reload that cannot start leaves the old generation serving.
.TP
.B SIGUSR1
Reopen the access log and the trace file (for rotation).
.SH EXIT STATUS
.TP
.B 0
A clean stop.
.TP
.B 2
A configuration error: a setting, option or config file it refuses.
.TP
.B 3
A plugin it cannot use, or a declaration of one it refuses.
.TP
.B 78
A start hook of a plugin failed.
.TP
.B 1
Any other error at start\-up.
.SH FILES
.TP
.I /etc/edri/edri.toml
The config file of the packaged service.
.TP
.I /lib/systemd/system/edri.service
The systemd unit (Type=notify; reload sends SIGHUP).
.TP
.I /usr/lib/edri/plugins/
The example notes app.
.SH SEE ALSO
.BR systemctl (1)
.PP
The guides in \fI/usr/share/doc/edri/\fR: operations.md (deploy, configure, reload, logs, traces, metrics),
configuration.md, writing\-a\-plugin.md, security.md.
)";

std::string replaced(std::string text, std::string_view from, std::string_view to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

}  // namespace

std::string troff_text(std::string_view markdown) {
  std::string out;
  bool code = false;
  for (const char c : markdown) {
    if (c == '`') {
      out += code ? "\\fR" : "\\fB";
      code = !code;
    } else if (c == '\\') {
      out += "\\e";
    } else if (c == '-' && code) {  // in an option or value: a minus, not a hyphen
      out += "\\-";
    } else if (c == ',' && code) {  // a place a long list of values may break
      out += ",\\:";
    } else {
      out += c;
    }
  }
  if (code) out += "\\fR";
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out.insert(0, "\\&");
  return out;
}

std::string manpage(std::string_view version) {
  std::string out = replaced(kHead, "@VERSION@", version);
  for (const auto& s : settings()) {
    out += ".TP\n.B " + troff_text(s.name) + "\n";
    out += troff_text(s.meaning) + ". Default: " + troff_text(s.default_text) + ".\n";
  }
  return out + kTail;
}

}  // namespace edri
