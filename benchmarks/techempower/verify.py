#!/usr/bin/env python3
"""Checks a server against the rules of the TechEmpower Framework
Benchmarks' seven test types, as TechEmpower's own verification does
before it measures a framework, and says per test type what breaks them.

    verify.py http://127.0.0.1:8080
    verify.py http://127.0.0.1:8080 --only json,plaintext
    verify.py http://127.0.0.1:8080 --database-url postgresql://u@127.0.0.1:5432/db

Test types (TechEmpower's names; README.md has the paths and the rules):
json, plaintext, db, query, fortune, update, cached_query.

Exit status: 0 when every test type checked passes (warnings allowed), 1
when one fails, 2 for a usage error. --json-report PATH writes the same
findings as JSON.

Only the standard library is needed, and asyncpg for --database-url: with
it, what the server answered is compared with the tables themselves (the
rows /db and /queries read, the fortunes, and the rows /updates must have
written). Without it, updates are read back through /queries.
"""

import argparse
import asyncio
import json
import random
import re
import socket
import sys
import time
from datetime import datetime, timezone
from html.parser import HTMLParser
from urllib.parse import urlsplit

WORLD_ROWS = 10000
MAX_QUERIES = 500

TESTS = ("json", "plaintext", "db", "query", "cached_query", "fortune", "update")
# The paths TechEmpower's configurations use most; --path changes one.
DEFAULT_PATHS = {
    "json": "/json",
    "plaintext": "/plaintext",
    "db": "/db",
    "query": "/queries?queries=",
    "fortune": "/fortunes",
    "update": "/updates?queries=",
    "cached_query": "/cached-queries?count=",
}
ALIASES = {
    "queries": "query",
    "fortunes": "fortune",
    "updates": "update",
    "cached-query": "cached_query",
    "cached-queries": "cached_query",
    "cached_queries": "cached_query",
}

# Content-Type as TechEmpower accepts it: the type, with a UTF-8 charset
# that only HTML must name.
CONTENT_TYPES = {
    "json": re.compile(r"^application/json(; ?charset=utf-8)?$", re.IGNORECASE),
    "plaintext": re.compile(r"^text/plain(; ?charset=utf-8)?$", re.IGNORECASE),
    "html": re.compile(r"^text/html; ?charset=utf-8$", re.IGNORECASE),
}

# The value of N a query-taking test is sent and how many rows it must
# answer: missing or not an integer is 1, and N is held within 1..500.
# None: the parameter left out altogether.
COUNT_CASES = (("2", 2), ("0", 1), ("-1", 1), ("foo", 1), ("", 1), (None, 1), ("501", 500), ("20", 20))

FORTUNES = (
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
)
ADDED_FORTUNE = (0, "Additional fortune added at request time.")
SCRIPT_FORTUNE_ID = 11
JAPANESE_FORTUNE_ID = 12

# Plaintext is measured with 16 requests pipelined on each connection.
PIPELINE_DEPTH = 16
# A Date that does not change between two requests this far apart is
# cached, not the time of the answer.
DATE_ADVANCE_SECONDS = 2.1
# How many updated rows must have changed, as TechEmpower allows for a
# few random numbers drawn equal to the old ones.
UPDATED_SHARE = 0.9


class HttpError(Exception):
    """The server's answer could not be read as HTTP/1.1."""


class Response:
    def __init__(self, status, reason, headers, body, chunked):
        self.status = status
        self.reason = reason
        self.headers = headers  # [(name, value)] as sent
        self.body = body
        self.chunked = chunked

    def all(self, name):
        return [value for key, value in self.headers if key.lower() == name.lower()]

    def header(self, name):
        values = self.all(name)
        return values[0] if values else None


class Connection:
    """One keep-alive HTTP/1.1 connection, read byte for byte, so that
    every header is seen as the server sent it and requests can be
    pipelined."""

    def __init__(self, host, port, timeout):
        self.host, self.port, self.timeout = host, port, timeout
        self.sock = None
        self.reader = None
        self.closes = 0  # by the server, or after an answer that could not be read

    def _open(self):
        self.close()
        try:
            self.sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        except OSError as e:
            raise HttpError("cannot connect to %s:%d: %s" % (self.host, self.port, e)) from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")

    def close(self):
        if self.reader:
            self.reader.close()
        if self.sock:
            self.sock.close()
        self.sock = self.reader = None

    def get(self, target):
        return self.pipeline(target, 1)[0]

    def pipeline(self, target, depth):
        """Writes `depth` GETs of `target` at once and reads their answers."""
        if self.sock is None:
            self._open()
        request = ("GET %s HTTP/1.1\r\nHost: %s:%d\r\nAccept: */*\r\n\r\n" % (target, self.host, self.port)).encode()
        try:
            self.sock.sendall(request * depth)
            responses = [self._read_response() for _ in range(depth)]
        except (OSError, HttpError) as e:
            self.closes += 1
            self.close()
            raise HttpError("GET %s: %s" % (target, e)) from None
        if self.sock and any((r.header("Connection") or "").lower() == "close" for r in responses):
            self.closes += 1
            self.close()
        return responses

    def _line(self):
        line = self.reader.readline(65537)
        if not line:
            raise HttpError("the connection closed before a complete answer")
        if not line.endswith(b"\r\n"):
            raise HttpError("a line of the answer does not end in CRLF: %r" % line[:80])
        return line[:-2].decode("latin-1")

    def _read_exactly(self, n):
        data = self.reader.read(n)
        if len(data) != n:
            raise HttpError("the body ended after %d of %d bytes" % (len(data), n))
        return data

    def _read_response(self):
        status_line = self._line()
        match = re.match(r"^HTTP/1\.[01] (\d{3})(?: (.*))?$", status_line)
        if not match:
            raise HttpError("not an HTTP/1.1 status line: %r" % status_line[:80])
        headers = []
        while True:
            line = self._line()
            if line == "":
                break
            name, sep, value = line.partition(":")
            if not sep:
                raise HttpError("not a header line: %r" % line[:80])
            headers.append((name.strip(), value.strip()))
        response = Response(int(match.group(1)), match.group(2) or "", headers, b"", False)
        encoding = response.header("Transfer-Encoding")
        length = response.all("Content-Length")
        if encoding and "chunked" in encoding.lower():
            response.chunked = True
            response.body = self._read_chunked()
        elif length:
            if not length[0].isdigit():
                raise HttpError("Content-Length is not a number: %r" % length[0])
            response.body = self._read_exactly(int(length[0]))
        elif response.status in (204, 304):
            pass
        else:
            # Neither size header: the body runs to the close, which no
            # client of a keep-alive benchmark can wait for.
            response.body = self.reader.read()
            self.closes += 1
            self.close()
        return response

    def _read_chunked(self):
        body = b""
        while True:
            size_line = self._line().split(";")[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise HttpError("bad chunk size: %r" % size_line) from None
            if size == 0:
                while self._line() != "":  # trailers
                    pass
                return body
            body += self._read_exactly(size)
            if self._read_exactly(2) != b"\r\n":
                raise HttpError("a chunk does not end in CRLF")


class Database:
    """The benchmark's tables, read directly (asyncpg)."""

    def __init__(self, url):
        try:
            import asyncpg

            del asyncpg  # only asked for here, so that a missing one is said at once
        except ImportError:
            sys.exit("verify.py: --database-url needs asyncpg (python3-asyncpg)")
        self.url = url

    def _fetch(self, sql):
        async def run():
            import asyncpg

            connection = await asyncpg.connect(self.url)
            try:
                return await connection.fetch(sql)
            finally:
                await connection.close()

        return asyncio.run(run())

    def worlds(self):
        return {row[0]: row[1] for row in self._fetch("SELECT id, randomnumber FROM world")}

    def fortunes(self):
        return [(row[0], row[1]) for row in self._fetch("SELECT id, message FROM fortune")]


class Result:
    """What one test type found: failures stop it from being measured,
    warnings do not. A finding met again on another answer is counted,
    not repeated."""

    def __init__(self, test):
        self.test = test
        self.found = {"fail": [], "warn": []}
        self.skipped = None

    def _add(self, level, url, message):
        for entry in self.found[level]:
            if entry[1] == message:
                entry[2] += 1
                return
        self.found[level].append([url, message, 0])

    def fail(self, url, message):
        self._add("fail", url, message)

    def warn(self, url, message):
        self._add("warn", url, message)

    def _rendered(self, level):
        return [
            "%s: %s%s" % (url, message, " (and %d more answers)" % more if more else "")
            for url, message, more in self.found[level]
        ]

    @property
    def failures(self):
        return self._rendered("fail")

    @property
    def warnings(self):
        return self._rendered("warn")

    def status(self):
        if self.skipped:
            return "skipped"
        return "fail" if self.found["fail"] else "pass"


class Verifier:
    def __init__(self, base_url, paths, database, timeout, date_advance):
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            sys.exit("verify.py: the base URL must be http://host:port, not %r" % base_url)
        self.prefix = parts.path.rstrip("/")
        self.connection = Connection(parts.hostname, parts.port or 80, timeout)
        self.paths = paths
        self.database = database
        self.date_advance = date_advance
        self.first_date = None  # (Result, url, Date, monotonic time) of the first answer

    # ---- requests and the rules every answer follows

    def url(self, test, value=""):
        """The path of `test` with `value` appended; None: the parameter
        left out (the path without its query)."""
        path = self.paths[test]
        if value is None:
            return self.prefix + path.split("?", 1)[0]
        return self.prefix + path + value

    def get(self, result, url, kind):
        """GETs `url` and checks the headers every answer needs; the
        response, or None (with a failure) when it is not a 200."""
        try:
            response = self.connection.get(url)
        except HttpError as e:
            result.fail(url, str(e))
            return None
        return response if self.check_headers(result, url, response, kind) else None

    def check_headers(self, result, url, response, kind):
        if response.status != 200:
            result.fail(url, "status %d %s, not 200" % (response.status, response.reason))
            return False
        for name in ("Server", "Date", "Content-Type"):
            if response.header(name) is None:
                result.fail(url, "no %s header" % name)
        self.check_size_headers(result, url, response)
        self.check_date(result, url, response.header("Date"))
        content_type = response.header("Content-Type")
        if content_type is not None and not CONTENT_TYPES[kind].match(content_type):
            result.fail(url, "Content-Type is %r, not %s" % (content_type, CONTENT_TYPES[kind].pattern))
        return True

    @staticmethod
    def check_size_headers(result, url, response):
        lengths = response.all("Content-Length")
        if not lengths and not response.chunked:
            result.fail(url, "neither Content-Length nor Transfer-Encoding: chunked")
        if lengths and response.header("Transfer-Encoding") is not None:
            result.fail(url, "both Content-Length and Transfer-Encoding (RFC 9112 forbids it)")
        if len(set(lengths)) > 1:
            result.fail(url, "Content-Length given as %s" % ", ".join(lengths))

    def check_date(self, result, url, date):
        if date is None:
            return
        try:
            when = datetime.strptime(date, "%a, %d %b %Y %H:%M:%S GMT").replace(tzinfo=timezone.utc)
        except ValueError:
            result.warn(url, "Date %r is not in the IMF-fixdate form (Sun, 06 Nov 1994 08:49:37 GMT)" % date)
            return
        if self.first_date is None:
            self.first_date = (result, url, date, time.monotonic())
        skew = abs((datetime.now(timezone.utc) - when).total_seconds())
        if skew > 60:
            result.warn(url, "Date %r is %.0f s away from this machine's clock" % (date, skew))

    def check_date_advances(self):
        """TechEmpower's check that Date is the time of each answer, not
        one cached at start: the same URL again a while later, on a new
        connection as TechEmpower's check asks it, must carry another Date.
        On the connection kept alive since, a Date that stood still is
        only a warning, since TechEmpower's check does not see it (uvicorn
        before 0.20 keeps each connection's first Date)."""
        if self.first_date is None or not self.date_advance:
            return
        result, url, date, at = self.first_date
        left = DATE_ADVANCE_SECONDS - (time.monotonic() - at)
        if left > 0:
            time.sleep(left)
        fresh = Connection(self.connection.host, self.connection.port, self.connection.timeout)
        try:
            kept = self.connection.get(url).header("Date")
            again = fresh.get(url).header("Date")
        except HttpError as e:
            result.fail(url, str(e))
            return
        finally:
            fresh.close()
        if again == date:
            result.fail(
                url, "Date %r did not change in %.1f s: it is cached, not each answer's" % (date, DATE_ADVANCE_SECONDS)
            )
        elif kept == date:
            result.warn(url, "on a kept-alive connection Date stays %r, the time it opened" % date)

    @staticmethod
    def parse_json(result, url, response):
        try:
            return json.loads(response.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            result.fail(url, "the body is not JSON (%s): %r" % (e, response.body[:80]))
            return None

    # ---- World objects

    @staticmethod
    def check_world(result, url, item):
        """(id, randomNumber) of a valid World object, else None (with the
        failure)."""
        if not isinstance(item, dict):
            result.fail(url, "expected a World object, got %s" % json.dumps(item)[:60])
            return None
        keys = {key.lower(): key for key in item}
        if "id" not in keys or "randomnumber" not in keys:
            result.fail(url, "a World object needs id and randomNumber, got %s" % json.dumps(item)[:80])
            return None
        if keys["randomnumber"] != "randomNumber":
            result.warn(url, "the key is %r; TechEmpower writes randomNumber" % keys["randomnumber"])
        if len(item) > 2:
            extra = sorted(set(item) - {keys["id"], keys["randomnumber"]})
            result.warn(url, "extra keys in a World object: %s" % ", ".join(extra))
        values = []
        for name in ("id", "randomnumber"):
            value = item[keys[name]]
            if isinstance(value, bool) or not isinstance(value, int):
                result.fail(url, "%s is %s, not an integer" % (keys[name], json.dumps(value)))
                return None
            if not 1 <= value <= WORLD_ROWS:
                result.fail(url, "%s is %d, outside 1..%d" % (keys[name], value, WORLD_ROWS))
                return None
            values.append(value)
        return tuple(values)

    def check_world_list(self, result, url, body, expected):
        """[(id, randomNumber)] of a JSON array of `expected` World objects;
        None when it is not one."""
        if not isinstance(body, list):
            result.fail(url, "expected a JSON array of %d World objects, got %s" % (expected, json.dumps(body)[:60]))
            return None
        if len(body) != expected:
            result.fail(url, "expected %d World object%s, got %d" % (expected, "" if expected == 1 else "s", len(body)))
        worlds = []
        bad = 0
        for item in body:
            world = self.check_world(result, url, item)
            if world is None:
                bad += 1
                if bad == 3:  # enough to say what is wrong
                    return None
            else:
                worlds.append(world)
        if bad:
            return None
        if len(worlds) >= 5 and all(row_id == number for row_id, number in worlds):
            result.fail(url, "randomNumber equals id in every object: is the id column read as the number?")
        return worlds

    def check_against_table(self, result, url, worlds):
        """The rows as the table holds them (nothing writes while this runs)."""
        if self.database is None or not worlds:
            return
        table = self.database.worlds()
        wrong = [(i, n, table.get(i)) for i, n in worlds if table.get(i) != n]
        if wrong:
            i, n, stored = wrong[0]
            result.fail(
                url,
                "%d of %d rows differ from the table, e.g. id %d: answered %d, stored %s"
                % (len(wrong), len(worlds), i, n, stored),
            )

    # ---- the test types

    def test_json(self, result):
        url = self.url("json")
        response = self.get(result, url, "json")
        if response is None:
            return
        body = self.parse_json(result, url, response)
        if not isinstance(body, dict):
            if body is not None:
                result.fail(url, "expected a JSON object, got %s" % json.dumps(body)[:60])
            return
        message = body.get("message")
        if not isinstance(message, str) or message.lower() != "hello, world!":
            result.fail(url, 'expected {"message": "Hello, World!"}, got %s' % json.dumps(body)[:80])
            return
        if message != "Hello, World!":
            result.warn(url, "the message is %r; TechEmpower writes 'Hello, World!'" % message)
        if len(body) > 1:
            result.warn(url, "extra keys: %s" % ", ".join(k for k in body if k != "message"))
        if len(response.body) > 27:
            result.warn(url, "%d bytes where 27 do ({\"message\":\"Hello, World!\"})" % len(response.body))

    def test_plaintext(self, result):
        url = self.url("plaintext")
        response = self.get(result, url, "plaintext")
        if response is None:
            return
        if b"hello, world!" not in response.body.lower():
            result.fail(url, "the body is %r, not 'Hello, World!'" % response.body[:80])
            return
        if len(response.body) > 13:
            result.warn(url, "%d bytes where 13 do ('Hello, World!')" % len(response.body))
        # The benchmark pipelines: each connection writes 16 requests before
        # it reads, and every one must be answered, in order.
        try:
            answers = self.connection.pipeline(url, PIPELINE_DEPTH)
        except HttpError as e:
            result.fail(url, "%d pipelined requests: %s" % (PIPELINE_DEPTH, e))
            return
        bad = [a for a in answers if a.status != 200 or b"hello, world!" not in a.body.lower()]
        if bad:
            result.fail(
                url, "%d of %d pipelined requests were not answered 200 'Hello, World!'" % (len(bad), PIPELINE_DEPTH)
            )

    def test_db(self, result):
        url = self.url("db")
        worlds = []
        for _ in range(10):
            response = self.get(result, url, "json")
            if response is None:
                return
            body = self.parse_json(result, url, response)
            if body is None:
                return
            if isinstance(body, list) and len(body) == 1:
                result.warn(url, "a JSON array of one object; the test asks for the object itself")
                body = body[0]
            world = self.check_world(result, url, body)
            if world is None:
                return
            worlds.append(world)
        if len({i for i, _ in worlds}) == 1:
            result.fail(url, "10 answers all read id %d: the row is not chosen at random" % worlds[0][0])
        if all(i == n for i, n in worlds):
            result.fail(url, "randomNumber equals id in every answer: is the id column read as the number?")
        self.check_against_table(result, url, worlds)

    def count_cases(self, result, test):
        """The N cases of a query-taking test; the rows of the "20" one."""
        twenty = None
        for value, expected in COUNT_CASES:
            url = self.url(test, value)
            response = self.get(result, url, "json")
            if response is None:
                continue
            body = self.parse_json(result, url, response)
            if body is None:
                continue
            worlds = self.check_world_list(result, url, body, expected)
            if value == "20":
                twenty = (url, worlds)
        return twenty

    def test_query(self, result):
        twenty = self.count_cases(result, "query")
        if twenty and twenty[1]:
            url, worlds = twenty
            if len({i for i, _ in worlds}) == 1:
                result.fail(url, "20 rows of one id: the rows are not chosen at random")
            self.check_against_table(result, url, worlds)

    def test_cached_query(self, result):
        # The cache may lag the table (it is filled once), so only the
        # shape and the counts are checked.
        self.count_cases(result, "cached_query")

    def test_update(self, result):
        self.count_cases(result, "update")
        if self.database is not None:
            self.check_updates_in_table(result)
        else:
            self.check_updates_read_back(result)

    def updates_of_500(self, result):
        """{id: {randomNumber answered}} of one /updates?queries=500."""
        url = self.url("update", str(MAX_QUERIES))
        response = self.get(result, url, "json")
        body = self.parse_json(result, url, response) if response else None
        worlds = self.check_world_list(result, url, body, MAX_QUERIES) if body is not None else None
        if not worlds:
            return url, None
        answered = {}
        for i, n in worlds:
            answered.setdefault(i, set()).add(n)
        return url, answered

    def check_updates_in_table(self, result):
        before = self.database.worlds()
        url, answered = self.updates_of_500(result)
        if answered is None:
            return
        after = self.database.worlds()
        changed = sum(1 for i in answered if after.get(i) != before.get(i))
        if changed < UPDATED_SHARE * len(answered):
            result.fail(url, "only %d of the %d rows answered changed in the table" % (changed, len(answered)))
        # A row updated twice in one request holds one of its two numbers.
        stale = [i for i, numbers in answered.items() if after.get(i) not in numbers]
        if stale:
            i = stale[0]
            result.fail(
                url,
                "%d rows hold another number than the one answered, e.g. id %d: answered %s, stored %s"
                % (len(stale), i, sorted(answered[i]), after.get(i)),
            )

    def sample_worlds(self, result, rounds):
        """{id: randomNumber} of `rounds` /queries?queries=500; None when
        the query test's path does not answer."""
        seen = {}
        url = self.url("query", str(MAX_QUERIES))
        for _ in range(rounds):
            response = self.get(result, url, "json")
            body = self.parse_json(result, url, response) if response else None
            worlds = self.check_world_list(result, url, body, MAX_QUERIES) if body is not None else None
            if not worlds:
                result.fail(url, "updates are read back through the query test's path, which failed")
                return None
            seen.update(worlds)
        return seen

    def check_updates_read_back(self, result):
        """Without the database: rows sampled through /queries before and
        after one /updates?queries=500. The rows it answered must be new
        numbers (a server that answers what it read and writes nothing
        fails) and must be what /queries reads afterwards (one that answers
        new numbers and writes nothing fails)."""
        before = self.sample_worlds(result, 4)
        if before is None:
            return
        url, answered = self.updates_of_500(result)
        if answered is None:
            return
        after = self.sample_worlds(result, 4)
        if after is None:
            return
        single = {i: next(iter(n)) for i, n in answered.items() if len(n) == 1}
        seen_before = [i for i in single if i in before]
        seen_after = [i for i in single if i in after]
        if len(seen_before) < 10 or len(seen_after) < 10:
            result.warn(
                url,
                "too few updated rows read back to judge (%d before, %d after)" % (len(seen_before), len(seen_after)),
            )
            return
        changed = sum(1 for i in seen_before if single[i] != before[i])
        if changed < UPDATED_SHARE * len(seen_before):
            result.fail(
                url,
                "only %d of %d rows read back before the update were answered with new numbers"
                % (changed, len(seen_before)),
            )
        kept = sum(1 for i in seen_after if after[i] == single[i])
        if kept < UPDATED_SHARE * len(seen_after):
            result.fail(
                url,
                "only %d of %d updated rows read back through %s hold the number answered: the updates were not written"
                % (kept, len(seen_after), self.paths["query"]),
            )

    def test_fortune(self, result):
        url = self.url("fortune")
        response = self.get(result, url, "html")
        if response is None:
            return
        try:
            page = response.body.decode("utf-8")
        except UnicodeDecodeError as e:
            result.fail(url, "the page is not UTF-8: %s" % e)
            return
        expected = list(self.database.fortunes() if self.database else FORTUNES)
        expected.append(ADDED_FORTUNE)
        expected.sort(key=lambda fortune: fortune[1])
        check_fortunes_page(result, url, page, expected)

    # ---- running

    def run(self, tests):
        results = []
        for test in TESTS:
            result = Result(test)
            if test not in tests:
                result.skipped = "not asked for"
            else:
                closes = self.connection.closes
                getattr(self, "test_" + test)(result)
                closed = self.connection.closes - closes
                if closed > 0:
                    result.warn(
                        self.url(test),
                        "the connection was closed after %d answers: the benchmark measures kept-alive ones" % closed,
                    )
            results.append(result)
        self.check_date_advances()
        self.connection.close()
        return results


# ---- fortunes


class PageEvents(HTMLParser):
    """The page as a list of (kind, value): declarations, tags, and the
    text between tags with its character references decoded, so that
    &lt; and &#60; read alike. Tags a page may add without changing what
    it shows (meta, link, thead, tbody) are left out, as TechEmpower's
    check leaves them out."""

    IGNORED = {"meta", "link", "thead", "tbody"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.events = []
        self.text = []

    def flush(self):
        text = "".join(self.text)
        self.text = []
        if text.strip():
            self.events.append(("text", text))

    def handle_decl(self, decl):
        self.flush()
        self.events.append(("decl", " ".join(decl.lower().split())))

    def handle_starttag(self, tag, attrs):
        self.flush()
        if tag not in self.IGNORED:
            self.events.append(("start", tag))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        self.flush()
        if tag not in self.IGNORED:
            self.events.append(("end", tag))

    def handle_data(self, data):
        self.text.append(data)

    def close(self):
        super().close()
        self.flush()


def cell(tag, text):
    return [("start", tag), ("text", text), ("end", tag)]


def expected_page(fortunes):
    events = [("decl", "doctype html"), ("start", "html"), ("start", "head")]
    events += cell("title", "Fortunes") + [("end", "head"), ("start", "body"), ("start", "table")]
    events += [("start", "tr")] + cell("th", "id") + cell("th", "message") + [("end", "tr")]
    for fortune_id, message in fortunes:
        events += [("start", "tr")] + cell("td", str(fortune_id)) + cell("td", message) + [("end", "tr")]
    return events + [("end", "table"), ("end", "body"), ("end", "html")]


def describe(event):
    kind, value = event
    form = {"decl": "<!%s>", "start": "<%s>", "end": "</%s>", "text": "text %r"}[kind]
    return form % (value[:70] if kind == "text" else value)


def page_rows(events):
    """(id text, message) of every <tr><td>..</td><td>..</td></tr>."""
    rows = []
    for at in range(len(events) - 6):
        window = events[at : at + 8]
        kinds = [e[0] + ":" + (e[1] if e[0] != "text" else "") for e in window]
        if kinds == ["start:tr", "start:td", "text:", "end:td", "start:td", "text:", "end:td", "end:tr"]:
            rows.append((window[2][1], window[5][1]))
    return rows


def check_fortunes_page(result, url, page, expected):
    """The rules of the fortunes test, the specific ones first so that a
    failure says which, then the whole document against the one it must
    be."""
    if re.search(r"<script", page, re.IGNORECASE):
        result.fail(url, "the page holds a <script> tag: the fortune with <script> is not HTML-escaped")
    parser = PageEvents()
    parser.feed(page)
    parser.close()
    rows = page_rows(parser.events)
    messages = [message for _, message in rows]
    by_id = {fortune_id: message for fortune_id, message in expected}
    japanese = by_id.get(JAPANESE_FORTUNE_ID)
    if japanese and japanese not in messages:
        result.fail(url, "the Japanese fortune %r is not there intact (UTF-8)" % japanese)
    if (str(ADDED_FORTUNE[0]), ADDED_FORTUNE[1]) not in rows:
        result.fail(url, "no row <td>0</td><td>%s</td>: the fortune added at request time" % ADDED_FORTUNE[1])
    if len(rows) != len(expected):
        result.fail(url, "%d fortune rows, not %d (the table's and the one added)" % (len(rows), len(expected)))
    if messages != sorted(messages):
        result.fail(url, "the rows are not sorted by message")
    wanted = expected_page(expected)
    got = parser.events
    for at, (want, have) in enumerate(zip(wanted, got + [("end", "(end of page)")] * max(0, len(wanted) - len(got)))):
        if want != have:
            result.fail(
                url,
                "the document differs from the one expected at its item %d: %s where %s belongs"
                % (at + 1, describe(have), describe(want)),
            )
            return
    if len(got) > len(wanted):
        result.fail(url, "the document goes on after </html>: %s" % describe(got[len(wanted)]))


# ---- command line


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("base_url", help="the server, e.g. http://127.0.0.1:8080")
    parser.add_argument("--only", help="comma-separated test types (default: all): " + ", ".join(TESTS))
    parser.add_argument(
        "--database-url",
        help="postgresql://user@host:port/db of the server's database, to check rows in it (needs asyncpg)",
    )
    parser.add_argument(
        "--path",
        action="append",
        default=[],
        metavar="TEST=PATH",
        help="another path for a test, e.g. cached_query=/cached_queries?count=",
    )
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds for each answer (default 10)")
    parser.add_argument(
        "--no-date-wait",
        action="store_true",
        help="skip the check that Date changes between answers %.1f s apart" % DATE_ADVANCE_SECONDS,
    )
    parser.add_argument("--json-report", metavar="PATH", help="also write the findings as JSON")
    args = parser.parse_args(argv)
    tests = set(TESTS)
    if args.only:
        tests = set()
        for name in args.only.split(","):
            name = ALIASES.get(name.strip(), name.strip())
            if name not in TESTS:
                parser.error("unknown test type %r (known: %s)" % (name, ", ".join(TESTS)))
            tests.add(name)
    paths = dict(DEFAULT_PATHS)
    for override in args.path:
        test, sep, path = override.partition("=")
        test = ALIASES.get(test, test)
        if not sep or test not in TESTS or not path.startswith("/"):
            parser.error("--path wants TEST=/path, got %r" % override)
        paths[test] = path
    return args, tests, paths


def print_report(base_url, results):
    for result in results:
        note = ""
        if result.warnings:
            note = " (%d warning%s)" % (len(result.warnings), "s" if len(result.warnings) > 1 else "")
        print("%-13s %s%s" % (result.test, result.status().upper(), note))
        for failure in result.failures:
            print("  fail  " + failure)
        for warning in result.warnings:
            print("  warn  " + warning)
    checked = [r for r in results if not r.skipped]
    passed = [r for r in checked if not r.failures]
    print("verify: %d of %d test types pass against %s" % (len(passed), len(checked), base_url))


def main(argv):
    args, tests, paths = parse_args(argv)
    random.seed()
    database = Database(args.database_url) if args.database_url else None
    verifier = Verifier(args.base_url, paths, database, args.timeout, not args.no_date_wait)
    results = verifier.run(tests)
    print_report(args.base_url, results)
    passed = all(not r.failures for r in results)
    if args.json_report:
        report = {
            "base_url": args.base_url,
            "passed": passed,
            "tests": {r.test: {"status": r.status(), "failures": r.failures, "warnings": r.warnings} for r in results},
        }
        with open(args.json_report, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=2, ensure_ascii=False)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
