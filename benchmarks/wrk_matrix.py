#!/usr/bin/env python3
"""edri against nginx under wrk, on a machine with cores to spare.

`bench` measures with its own one-thread load generator, which is the
limit long before a 16-core server is (docs/performance.md). This script
puts wrk on CPUs of its own (--client-cpus) and the servers on the rest
(--server-cpus), and runs a plan of cells, each server fresh per group:

  matrix     GET /noop at each --concurrency: nginx (one worker) and each
             edri setting (--edri NAME:VAR=VALUE,...; the defaults first)
  listeners  GET /noop at --listener-concurrency on 1, 2, 4, ... edri
             listener processes and nginx with as many workers
  route      GET /route/N on bench_app: N round trips manager -> router ->
             manager, one in flight (BENCH_ROUTE_WINDOW=1), per edri setting
  idle       each edri server's CPU (all its processes, /proc) over
             --idle-seconds once its load has ended

Every cell records the host's steal time (/proc/stat); the summary leaves
out cells over 2 %. Rounds alternate the servers' order. The results go to
--out as JSON and the tables to stdout as Markdown. Only loopback is used;
every server started is stopped by its PID.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

# bench's nginx reference, the same file `bench compare` serves from.
NGINX_TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference", "nginx.conf.in")

STEAL_LIMIT = 0.02


def cpu_list(text):
    """"0-3", "0,2", or "all": the CPUs this process may use."""
    if text == "all":
        return sorted(os.sched_getaffinity(0))
    out = []
    for item in text.split(","):
        first, _, last = item.partition("-")
        out.extend(range(int(first), int(last or first) + 1))
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, path, timeout=5.0):
    """One HTTP/1.1 GET with Connection: close; (status, body) or None."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while chunk := s.recv(65536):
                data += chunk
    except OSError:
        return None
    head, _, body = data.partition(b"\r\n\r\n")
    parts = head.split(b" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        return None
    return int(parts[1]), body


def steal_ticks():
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return fields[7] if len(fields) > 7 else 0, sum(fields)


def descendants(root):
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def cpu_seconds(pids):
    """CPU time of every thread of `pids` (schedstat: nanoseconds, not ticks)."""
    total = 0
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
    return total / 1e9


class Server:
    """A server process started with the server CPUs' affinity, stopped by PID."""

    def __init__(self, name, argv, env, cpus, workdir):
        self.name = name
        self.port = free_port()
        self.log_path = os.path.join(workdir, re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".log")
        self.argv, self.env, self.cpus = argv, env, cpus
        self.proc = None

    def start(self):
        try:
            with open(self.log_path, "wb") as log:
                self.proc = subprocess.Popen(
                    self.argv,
                    env={**os.environ, **self.env},
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    preexec_fn=lambda: os.sched_setaffinity(0, self.cpus))
        except (OSError, subprocess.SubprocessError) as e:
            with open(self.log_path, "a") as log:
                log.write(f"not started: {e}\n")
            return False
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            got = http_get(self.port, "/noop", timeout=1)
            if got and got[0] == 200:
                return True
            time.sleep(0.05)
        return False

    def stop(self):
        if not self.proc or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            for pid in descendants(self.proc.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            self.proc.wait()

    def pids(self):
        return descendants(self.proc.pid)


def run_wrk(args, port, connections, seconds):
    threads = max(1, min(args.wrk_threads or len(args.client_cpus), connections))
    cmd = [args.wrk, f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency",
           f"http://127.0.0.1:{port}/noop"]
    s0, t0 = steal_ticks()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 30,
                         preexec_fn=lambda: os.sched_setaffinity(0, args.client_cpus)).stdout
    s1, t1 = steal_ticks()
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)\b", out)
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", out)
    errors = re.search(r"Socket errors: (.*)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)

    def micros(m):
        return None if not m else float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)]

    return {"rate": float(rate.group(1)) if rate else None, "p50_us": micros(p50), "p99_us": micros(p99),
            "steal": (s1 - s0) / max(1, t1 - t0), "errors": errors.group(1) if errors else None,
            "non2xx": int(non2xx.group(1)) if non2xx else 0}


def nginx_server(args, workers, workdir):
    prefix = tempfile.mkdtemp(prefix=f"nginx{workers}-", dir=workdir)
    server = Server(f"nginx workers={workers}", [args.nginx, "-p", prefix + "/", "-c", prefix + "/nginx.conf"],
                    {}, args.server_cpus, workdir)
    with open(NGINX_TEMPLATE) as f:
        conf = f.read()
    address = f"127.0.0.1:{server.port}"
    substitutions = (("@PREFIX@", prefix), ("@LISTEN@", address), ("@ADDRESS@", address), ("@WORKERS@", str(workers)))
    for key, value in substitutions:
        conf = conf.replace(key, value)
    with open(os.path.join(prefix, "nginx.conf"), "w") as f:
        f.write(conf)
    return server


def edri_server(args, name, env, workdir):
    server = Server(f"edri {name}", [args.edri_server], {"EDRI_HOST": "127.0.0.1", "EDRI_PLUGINS": args.plugin, **env},
                    args.server_cpus, workdir)
    server.env["EDRI_PORT"] = str(server.port)
    return server


def parse_setting(text):
    name, _, assignments = text.partition(":")
    env = {}
    for item in filter(None, assignments.split(",")):
        key, _, value = item.partition("=")
        env[key] = value
    return name, env


def measure_server(args, server, concurrencies, kind, results, extra=None):
    """Starts `server`, warms it, runs a wrk cell per concurrency, its idle CPU, stops it."""
    if not server.start():
        print(f"# {server.name}: did not start (log {server.log_path})", file=sys.stderr, flush=True)
        server.stop()
        results.append({"kind": kind, "server": server.name, "failed": True, **(extra or {})})
        return
    try:
        health = http_get(server.port, "/health")
        placement = None
        if health and health[0] == 200 and server.name.startswith("edri"):
            try:
                placement = json.loads(health[1]).get("placement")
            except ValueError:
                pass
        run_wrk(args, server.port, max(concurrencies), args.warmup)
        for c in concurrencies:
            pids = server.pids()
            cpu0, w0 = cpu_seconds(pids), time.monotonic()
            cell = run_wrk(args, server.port, c, args.duration)
            cell["server_cpu_per_s"] = (cpu_seconds(server.pids()) - cpu0) / (time.monotonic() - w0)
            results.append({"kind": kind, "server": server.name, "c": c, "placement": placement,
                            **cell, **(extra or {})})
            print(f"# {kind} {server.name} c={c}: {cell['rate']} req/s, steal {cell['steal']:.1%}", file=sys.stderr,
                  flush=True)
        if server.name.startswith("edri"):
            time.sleep(0.5)
            pids = server.pids()
            cpu0 = cpu_seconds(pids)
            time.sleep(args.idle_seconds)
            idle = (cpu_seconds(server.pids()) - cpu0) / args.idle_seconds
            results.append({"kind": "idle", "server": server.name, "cpu_ms_per_s": idle * 1000, **(extra or {})})
    finally:
        server.stop()


def measure_route(args, name, env, workdir, results):
    server = edri_server(args, name, {**env, "BENCH_ROUTE_WINDOW": "1"}, workdir)
    if not server.start():
        results.append({"kind": "route", "server": server.name, "failed": True})
        server.stop()
        return
    try:
        http_get(server.port, "/route/10000", timeout=120)
        got = http_get(server.port, f"/route/{args.route_n}", timeout=120)
        rate = None
        if got and got[0] == 200:
            rate = json.loads(got[1]).get("per_second")
        results.append({"kind": "route", "server": server.name, "n": args.route_n, "per_second": rate})
        print(f"# route {server.name}: {rate}/s", file=sys.stderr, flush=True)
    finally:
        server.stop()


def median_clean(cells):
    rates = [c["rate"] for c in cells if c.get("rate") and c["steal"] <= STEAL_LIMIT]
    return statistics.median(rates) if rates else None


def fmt(x):
    return "-" if x is None else f"{x:,.0f}"


def report(args, results):
    print(f"\n## GET /noop, req/s (median of clean cells over {args.rounds} rounds; ratio to nginx one worker)\n")
    servers = list(dict.fromkeys(r["server"] for r in results if r["kind"] == "matrix"))
    print("| server | " + " | ".join(f"c={c}" for c in args.concurrency) + " |")
    print("|---|" + "---:|" * len(args.concurrency))
    base = {c: median_clean([r for r in results if r["kind"] == "matrix" and r["server"].startswith("nginx")
                             and r.get("c") == c]) for c in args.concurrency}
    for s in servers:
        row = []
        for c in args.concurrency:
            m = median_clean([r for r in results if r["kind"] == "matrix" and r["server"] == s and r.get("c") == c])
            ratio = f" ({m / base[c]:.2f}x)" if m and base[c] and not s.startswith("nginx") else ""
            row.append(fmt(m) + ratio)
        print(f"| {s} | " + " | ".join(row) + " |")
    listeners = [r for r in results if r["kind"] == "listeners"]
    if listeners:
        print(f"\n## Listener processes against nginx workers, GET /noop at c={args.listener_concurrency}, req/s\n")
        names = list(dict.fromkeys(r["server"].rsplit(" listeners=", 1)[0] for r in listeners
                                   if r["server"].startswith("edri")))
        print("| n | " + " | ".join(f"{e} listeners (/ nginx)" for e in names) + " | nginx workers |")
        print("|---:|" + "---:|" * (len(names) + 1))
        for n in sorted({r["n"] for r in listeners}):
            g = median_clean([r for r in listeners if r["n"] == n and r["server"].startswith("nginx")])
            row = []
            for name in names:
                e = median_clean([r for r in listeners if r["n"] == n and r["server"] == f"{name} listeners={n}"])
                row.append(fmt(e) + (f" ({e / g:.2f}x)" if e and g else ""))
            print(f"| {n} | " + " | ".join(row) + f" | {fmt(g)} |")
    routes = [r for r in results if r["kind"] == "route"]
    if routes:
        print(f"\n## GET /route/{args.route_n}, one in flight: round trips/s\n\n| server | round trips/s |\n|---|---:|")
        for r in routes:
            print(f"| {r['server']} | {fmt(r.get('per_second'))} |")
    idle = [r for r in results if r["kind"] == "idle"]
    if idle:
        print(f"\n## Idle CPU of every edri process together, {args.idle_seconds} s after load\n")
        print("| server | ms of CPU per s |\n|---|---:|")
        for r in idle:
            print(f"| {r['server']}{' n=' + str(r['n']) if 'n' in r else ''} | {r['cpu_ms_per_s']:.1f} |")
    placements = {r["server"]: r["placement"] for r in results if r.get("placement")}
    if placements:
        print("\n## What EDRI_CPUS/EDRI_SPIN/EDRI_LISTENER_WORKERS chose (/health placement)\n")
        for s, p in placements.items():
            print(f"- {s}: {p.get('summary', p)}")
    dirty = [r for r in results if r.get("steal", 0) > STEAL_LIMIT]
    print(f"\n{len(dirty)} cells over {STEAL_LIMIT:.0%} steal left out of the medians.")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--edri-server", required=True)
    p.add_argument("--plugin", required=True, help="bench_app.so")
    p.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    p.add_argument("--wrk", default=shutil.which("wrk") or "wrk")
    p.add_argument("--client-cpus", type=cpu_list, default=sorted(os.sched_getaffinity(0))[:1],
                   help="wrk's CPUs (default: the first allowed)")
    p.add_argument("--server-cpus", type=cpu_list, default=sorted(os.sched_getaffinity(0)),
                   help="the servers' CPUs, or all (the default: every CPU allowed)")
    p.add_argument("--wrk-threads", type=int, default=0, help="wrk's threads (default: one per client CPU)")
    p.add_argument("--edri", action="append", default=[], help="NAME:VAR=VALUE,... (repeatable; 'defaults:' if none)")
    p.add_argument("--concurrency", type=lambda t: [int(x) for x in t.split(",")], default=[1, 8, 32, 128])
    p.add_argument("--listeners", type=lambda t: [int(x) for x in t.split(",")], default=[])
    p.add_argument("--listener-concurrency", type=int, default=256)
    p.add_argument("--listener-edri", action="append", default=[],
                   help="NAME:VAR=VALUE,... edri settings of the listeners cells (repeatable; 'auto:' if none)")
    p.add_argument("--route-n", type=int, default=0)
    p.add_argument("--duration", type=float, default=3)
    p.add_argument("--warmup", type=float, default=1)
    p.add_argument("--idle-seconds", type=float, default=2)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--out", default=".")
    args = p.parse_args()
    args.duration, args.warmup = int(round(args.duration)), max(1, int(round(args.warmup)))
    for program in (args.wrk, args.edri_server):
        if not shutil.which(program):
            p.error(f"{program} is not an executable (install wrk, or build edri-server)")
    settings = [parse_setting(t) for t in (args.edri or ["defaults:"])]
    results = []
    workdir = tempfile.mkdtemp(prefix="wrk-matrix-")
    try:
        for rnd in range(args.rounds):
            order = [("nginx", None)] + [("edri", s) for s in settings]
            if rnd % 2:
                order.reverse()
            for kind, setting in order:
                server = nginx_server(args, 1, workdir) if kind == "nginx" else \
                    edri_server(args, setting[0], setting[1], workdir)
                measure_server(args, server, args.concurrency, "matrix", results, {"round": rnd})
        variants = [parse_setting(t) for t in (args.listener_edri or ["auto:"])]
        for n in args.listeners:
            servers = [edri_server(args, f"{name} listeners={n}", {**env, "EDRI_LISTENER_WORKERS": str(n)}, workdir)
                       for name, env in variants] + [nginx_server(args, n, workdir)]
            for server in servers:
                measure_server(args, server, [args.listener_concurrency], "listeners", results, {"n": n})
        if args.route_n:
            for name, env in settings:
                measure_route(args, name, env, workdir, results)
    finally:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "wrk_matrix.json"), "w") as f:
            json.dump({"machine": {"cpus": os.cpu_count(), "uname": list(os.uname())}, "args": vars(args),
                       "results": results}, f, indent=1)
        # Every server's log in one file, each under its name.
        with open(os.path.join(args.out, "wrk_matrix_servers.log"), "w") as out:
            for name in sorted(os.listdir(workdir)):
                if name.endswith(".log"):
                    with open(os.path.join(workdir, name), errors="replace") as log:
                        out.write(f"==> {name}\n" + log.read()[-20000:])
        shutil.rmtree(workdir, ignore_errors=True)
    report(args, results)


if __name__ == "__main__":
    main()
