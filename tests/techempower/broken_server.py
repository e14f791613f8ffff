#!/usr/bin/env python3
"""A server of the TechEmpower test types that breaks one rule of each, for
the test that benchmarks/techempower/verify.py fails it (and says why):

    json          Content-Type text/plain
    plaintext     no Server header
    db            id as a string
    query         queries=501 answers 501 rows (no upper clamp)
    cached_query  count=0 and count=-1 answer no rows (no lower clamp)
    fortune       the <script> fortune unescaped
    update        numbers answered, never written

Everything else it gets right, from a World table and the fortunes held in
memory, so that each failure is the one broken rule and nothing else.

    broken_server.py PORT    (serves 127.0.0.1:PORT until killed)
"""

import json
import random
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

WORLD = {i: random.randint(1, 10000) for i in range(1, 10001)}
FORTUNES = [
    (1, "fortune: No such file or directory"),
    (2, "A computer scientist is someone who fixes things that aren't broken."),
    (3, "After enough decimal places, nobody gives a damn."),
    (4, "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1"),
    (5, "A computer program does what you tell it to do, not what you want it to do."),
    (6, "Emacs is a nice operating system, but I prefer UNIX. \u2014 Tom Christaensen"),
    (7, "Any program that runs right is obsolete."),
    (8, "A list is only as strong as its weakest link. \u2014 Donald Knuth"),
    (9, "Feature: A bug with seniority."),
    (10, "Computers make very fast, very accurate mistakes."),
    (11, '<script>alert("This should not be displayed in a browser alert box.");</script>'),
    (12, "\u30d5\u30ec\u30fc\u30e0\u30ef\u30fc\u30af\u306e\u30d9\u30f3\u30c1\u30de\u30fc\u30af"),
    (0, "Additional fortune added at request time."),
]


def count(query, name, low=1, high=500):
    """N as the rule has it, but held only within `low`..`high` (None:
    no upper bound), so that a route can break one side of the clamp."""
    try:
        n = int(parse_qs(query, keep_blank_values=True).get(name, ["1"])[0])
    except ValueError:
        n = 1
    n = max(low, n)
    return n if high is None else min(n, high)


def worlds(n):
    return [{"id": i, "randomNumber": WORLD[i]} for i in random.sample(range(1, 10001), min(n, 10000))]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "broken"
    sys_version = ""

    def log_message(self, *args):
        pass

    def answer(self, body, content_type="application/json", server=True):
        if not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        body = body if isinstance(body, bytes) else body.encode("utf-8")
        self.send_response_only(200)
        if server:
            self.send_header("Server", self.version_string())
        self.send_header("Date", self.date_time_string())
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urlsplit(self.path)
        route = getattr(self, "route_" + url.path.strip("/").replace("-", "_"), None)
        if route is None:
            self.send_error(404)
            return
        route(url.query)

    def route_json(self, query):
        self.answer({"message": "Hello, World!"}, "text/plain")

    def route_plaintext(self, query):
        self.answer(b"Hello, World!", "text/plain", server=False)

    def route_db(self, query):
        i = random.randint(1, 10000)
        self.answer({"id": str(i), "randomNumber": WORLD[i]})

    def route_queries(self, query):
        self.answer(worlds(count(query, "queries", high=None)))

    def route_cached_queries(self, query):
        self.answer(worlds(count(query, "count", low=0)))

    def route_updates(self, query):
        read = worlds(count(query, "queries"))
        self.answer([{"id": w["id"], "randomNumber": random.randint(1, 10000)} for w in read])

    def route_fortunes(self, query):
        rows = "".join("<tr><td>%d</td><td>%s</td></tr>" % f for f in sorted(FORTUNES, key=lambda f: f[1]))
        self.answer(
            "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>"
            "<tr><th>id</th><th>message</th></tr>%s</table></body></html>" % rows,
            "text/html; charset=utf-8",
        )


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
