"""gRPC client scenarios against a real edri-server, with Python grpcio
(Debian python3-grpcio), the stack upstream EDRI itself runs on.

    grpc_client.py <generated-modules-dir> <port> <scenario>

Each scenario prints one JSON object of what it observed; the C++ test that
ran it (tests/integration/grpc_test.cpp) checks it. Nothing here decides
pass or fail, so that the checks stay in one place.
"""
import json
import queue
import sys
import time
import urllib.error
import urllib.request

import grpc

sys.path.insert(0, sys.argv[1])
import edri_pb2  # noqa: E402  (generated at build time)
import health_pb2  # noqa: E402

PORT = int(sys.argv[2])
SCENARIO = sys.argv[3]
Event = edri_pb2.Event


def channel():
    return grpc.insecure_channel(f"127.0.0.1:{PORT}")


def unary(ch):
    return ch.unary_unary("/edri.v1.Edri/Call", request_serializer=Event.SerializeToString,
                          response_deserializer=Event.FromString)


def bidi(ch):
    return ch.stream_stream("/edri.v1.Edri/Connect", request_serializer=Event.SerializeToString,
                            response_deserializer=Event.FromString)


def outcome(call, ev, **kw):
    """The answer as JSON, or the gRPC error."""
    try:
        r = call(ev, timeout=kw.pop("timeout", 10), **kw)
        return {"code": "OK", "status": r.status, "id": r.id, "type": r.type,
                "body": json.loads(r.body) if r.body else None, "meta": dict(r.meta)}
    except grpc.RpcError as e:
        return {"code": e.code().name, "details": e.details()}


def scenario_compression():
    """gzip on the channel: requests compressed, answers taken compressed."""
    with grpc.insecure_channel(f"127.0.0.1:{PORT}", compression=grpc.Compression.Gzip) as ch:
        call = unary(ch)
        name = json.dumps({"name": "x" * 3000}).encode()
        return {"hello": outcome(call, Event(type="hello", body=name, id=1)),
                "counted": outcome(call, Event(type="counted", body=json.dumps({"n": 20000}).encode(), id=2))}


def scenario_unary():
    with channel() as ch:
        call = unary(ch)
        health = ch.unary_unary("/grpc.health.v1.Health/Check",
                                request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                                response_deserializer=health_pb2.HealthCheckResponse.FromString)
        other = ch.unary_unary("/edri.v1.Other/Nothing", request_serializer=Event.SerializeToString,
                               response_deserializer=Event.FromString)
        out = {
            "hello": outcome(call, Event(type="hello", body=b'{"name":"grpc"}', id=41)),
            "created": outcome(call, Event(type="things.create", body=b'{"title":"abc"}')),
            "invalid": outcome(call, Event(type="things.create", body=b'{"title":""}')),
            "missing_param": outcome(call, Event(type="hello")),
            "not_object": outcome(call, Event(type="hello", body=b"[1]")),
            "unknown": outcome(call, Event(type="no.such.command")),
            "handler_404": outcome(call, Event(type="status", body=b'{"code":404}')),
            "subscribe_on_call": outcome(call, Event(type="watch")),
            "metadata": outcome(call, Event(type="search", body=b'{"q":"z"}'),
                                metadata=[("x-api-key", "from-metadata"), ("cookie", "session=s1")]),
            "event_meta": outcome(call, Event(type="search", body=b'{"q":"z"}', meta={"X-Api-Key": "from-event"})),
            "no_method": outcome(other, Event(type="hello")),
        }
        try:
            out["health"] = health_pb2.HealthCheckResponse.ServingStatus.Name(
                health(health_pb2.HealthCheckRequest(), timeout=10).status)
        except grpc.RpcError as e:
            out["health"] = e.code().name
        try:
            health(health_pb2.HealthCheckRequest(service="nope.v1.Nope"), timeout=10)
            out["health_unknown"] = "OK"
        except grpc.RpcError as e:
            out["health_unknown"] = e.code().name
    return out


def scenario_bidi():
    """1,000 events in one Connect, with refusals among them: every answer
    carries its id, in the order sent, and the stream goes on."""
    events = []
    for i in range(1000):
        if i % 100 == 7:
            events.append(Event(type="things.create", body=b'{"title":""}', id=i))
        elif i % 100 == 8:
            events.append(Event(type="no.such.command", id=i))
        else:
            events.append(Event(type="hello", body=json.dumps({"name": f"n{i}"}).encode(), id=i))
    with channel() as ch:
        answers = list(bidi(ch)(iter(events), timeout=60))
    bodies_ok = all(json.loads(a.body).get("hello") == f"n{a.id}" for a in answers if a.status == 200)
    return {"count": len(answers), "ids_in_order": [a.id for a in answers] == list(range(1000)),
            "statuses": sorted({a.status for a in answers}), "bodies_ok": bodies_ok,
            "refused_422": sum(1 for a in answers if a.status == 422),
            "refused_404": sum(1 for a in answers if a.status == 404)}


class Requests:
    """A Connect stream's requests, sent as the test decides."""

    def __init__(self):
        self.q = queue.Queue()

    def send(self, ev):
        self.q.put(ev)

    def close(self):
        self.q.put(None)

    def __iter__(self):
        while True:
            ev = self.q.get()
            if ev is None:
                return
            yield ev


def scenario_push():
    """Pushes of a subscription made on Connect arrive on it, and stop after
    the unsubscription."""
    with channel() as ch:
        reqs = Requests()
        stream = bidi(ch)(iter(reqs), timeout=30)
        call = unary(ch)
        reqs.send(Event(type="watch", id=1))
        first = next(stream)
        published = outcome(call, Event(type="publish", body=b'{"n":3}'))
        pushes = [next(stream) for _ in range(3)]
        reqs.send(Event(type="unwatch", id=2))
        unwatched = next(stream)
        after = outcome(call, Event(type="publish", body=b'{"n":2}'))
        reqs.send(Event(type="hello", body=b'{"name":"last"}', id=3))
        last = next(stream)
        reqs.close()
        rest = list(stream)
    return {"subscribed": {"id": first.id, "status": first.status}, "published": published["status"],
            "pushes": [{"type": p.type, "body": json.loads(p.body)} for p in pushes],
            "unsubscribed": {"id": unwatched.id, "status": unwatched.status}, "after": after["status"],
            "last": {"id": last.id, "type": last.type, "body": json.loads(last.body)},
            "rest": [m.type for m in rest]}


def scenario_cancel():
    """Cancelled calls free what they held: the server answers the next."""
    with channel() as ch:
        call = unary(ch)
        future = call.future(Event(type="sleep", body=b'{"ms":300}'), timeout=10)
        time.sleep(0.05)
        cancelled = future.cancel()
        reqs = Requests()
        stream = bidi(ch)(iter(reqs), timeout=10)
        reqs.send(Event(type="sleep", body=b'{"ms":300}', id=1))
        time.sleep(0.05)
        stream.cancel()
        time.sleep(0.5)  # both sleeps' answers come back to calls that are gone
        after = outcome(call, Event(type="hello", body=b'{"name":"after"}'))
    return {"cancelled": cancelled, "after": after}


def scenario_deadline():
    """grpc-timeout: the client's own deadline, and the server's (a client
    that waits past it hears DEADLINE_EXCEEDED from the server)."""
    with channel() as ch:
        call = unary(ch)
        t0 = time.monotonic()
        short = outcome(call, Event(type="sleep", body=b'{"ms":1500}'), timeout=0.3)
        took = time.monotonic() - t0
        fast = outcome(call, Event(type="sleep", body=b'{"ms":10}'), timeout=5)
    return {"short": short["code"], "took": took, "fast": fast}


def post_json(path, body):
    """A REST call beside the gRPC ones: a live stream's patch."""
    req = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def scenario_live():
    """Live streams followed on Connect (bench_app's /stream/{name}): a
    snapshot, then each patch as a "stream" Event; a refusal is the
    answer to its id; after the unsubscription, the next message is an
    answer again. A client that half-closes keeps its subscription."""
    post_json("/stream/doc", {"title": "a"})
    with channel() as ch:
        reqs = Requests()
        stream = bidi(ch)(iter(reqs), timeout=30)
        reqs.send(Event(type="stream.subscribe", body=b'{"stream":"doc"}', id=1))
        snapshot = next(stream)
        post_json("/stream/doc", {"n": 1})
        patch = next(stream)
        reqs.send(Event(type="stream.subscribe", body=b'{"stream":"no spaces"}', id=2))
        refused = next(stream)
        # The unsubscription has no answer of its own: the noop's, which
        # comes after it, says it was taken before the publish below.
        reqs.send(Event(type="stream.unsubscribe", body=b'{"stream":"doc"}', id=3))
        reqs.send(Event(type="noop", id=4))
        answer = next(stream)
        post_json("/stream/doc", {"n": 2})
        # Subscribed again (a snapshot, not revision 3's patch, comes first
        # if the unsubscription held), the client sends nothing more:
        # frames still come.
        reqs.send(Event(type="stream.subscribe", body=b'{"stream":"doc"}', id=5))
        again = next(stream)
        reqs.close()
        post_json("/stream/doc", {"n": 3})
        after_close = next(stream)
        stream.cancel()

    def seen(m):
        return {"type": m.type, "id": m.id, "status": m.status, "body": json.loads(m.body)}
    return {"snapshot": seen(snapshot), "patch": seen(patch), "refused": seen(refused), "answer": seen(answer),
            "again": seen(again), "after_close": seen(after_close)}


def scenario_stop():
    """A call in flight when the server is told to stop is answered; the
    test sends SIGTERM once this prints "started"."""
    with channel() as ch:
        call = unary(ch)
        future = call.future(Event(type="sleep", body=b'{"ms":700}'), timeout=10)
        time.sleep(0.2)
        print("started", flush=True)
        try:
            r = future.result()
            return {"code": "OK", "status": r.status}
        except grpc.RpcError as e:
            return {"code": e.code().name}


def scenario_budget():
    """grpc-timeout reaches the handler (Request::deadline), and an event
    whose deadline passes while it waits for a busy manager never runs:
    `created` counts the creates that ran."""
    with channel() as ch:
        call = unary(ch)
        out = {"with": outcome(call, Event(type="deadline"), timeout=5),
               "without": outcome(call, Event(type="deadline"), timeout=None)}
        busy = call.future(Event(type="sleep", body=b'{"ms":800}'), timeout=10)
        time.sleep(0.2)
        out["late"] = outcome(call, Event(type="things.create", body=b'{"title":"late"}'), timeout=0.2)
        out["busy"] = busy.result().status
        out["created"] = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{PORT}/things/created").read())
    return out


def scenario_lost():
    """A call whose manager dies with it: the pipeline's 503 (a hop's, not a
    handler's) ends it UNAVAILABLE. The test kills the manager once this
    prints "started"; a handler's own 503 stays an OK call."""
    with channel() as ch:
        call = unary(ch)
        own = outcome(call, Event(type="status", body=b'{"code":503}'))
        future = call.future(Event(type="sleep", body=b'{"ms":5000}'), timeout=20)
        time.sleep(0.3)
        print("started", flush=True)
        try:
            r = future.result()
            return {"code": "OK", "status": r.status, "own": own}
        except grpc.RpcError as e:
            return {"code": e.code().name, "details": e.details(), "own": own}


def raw_unary(ch, path):
    """A typed method called with raw bytes: the gate answers before any
    handler, whatever the message."""
    return ch.unary_unary(path, request_serializer=lambda b: b, response_deserializer=lambda b: b)


def raw_outcome(call, message, **kw):
    try:
        call(message, timeout=10, **kw)
        return {"code": "OK"}
    except grpc.RpcError as e:
        return {"code": e.code().name, "details": e.details()}


def connect_statuses(ch, events, metadata=None):
    """Each event's status on one Connect, in order."""
    answers = list(bidi(ch)(iter(events), timeout=20, metadata=metadata))
    return [a.status for a in answers]


def scenario_gate_deny():
    """Beside notes.so, a middleware that refuses every call: no gRPC
    method reaches a handler."""
    with channel() as ch:
        call = unary(ch)
        return {
            "call_create": outcome(call, Event(type="notes.create", body=b'{"title":"t"}')),
            "call_list": outcome(call, Event(type="notes.list")),
            "connect": connect_statuses(ch, [Event(type="notes.create", body=b'{"title":"t"}', id=1),
                                             Event(type="notes.subscribe", id=2),
                                             Event(type="stream.subscribe", body=b'{"stream":"s"}', id=3),
                                             Event(type="notes.list", id=4)]),
            "typed_create": raw_outcome(raw_unary(ch, "/notes.v1.Notes/CreateNote"), b""),
            "typed_list": raw_outcome(raw_unary(ch, "/notes.v1.Notes/ListNotes"), b""),
            "rest_list": rest_status("/notes"),
        }


def rest_status(path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{PORT}{path}", timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def scenario_gate_key():
    """Writes need the key on gRPC as on HTTP; the handler sees the
    principal the middleware named, and the protocol."""
    key = [("x-api-key", "k1")]
    with channel() as ch:
        call = unary(ch)
        return {
            "create_without": outcome(call, Event(type="notes.create", body=b'{"title":"t"}')),
            "create_with": outcome(call, Event(type="notes.create", body=b'{"title":"t","body":"x"}'), metadata=key),
            "typed_without": raw_outcome(raw_unary(ch, "/notes.v1.Notes/CreateNote"), b""),
            "whoami": outcome(call, Event(type="whoami")),
            "whoami_key": outcome(call, Event(type="whoami.post"), metadata=key),
            "stream_without": connect_statuses(ch, [Event(type="stream.subscribe", body=b'{"stream":"s"}', id=1),
                                                    Event(type="whoami", id=2)]),
        }


def scenario_gate_admin():
    """A middleware attached to one event guards it on gRPC too."""
    with channel() as ch:
        call = unary(ch)
        return {"admin": outcome(call, Event(type="admin")),
                "admin_yes": outcome(call, Event(type="admin"), metadata=[("x-admin", "yes")]),
                "whoami": outcome(call, Event(type="whoami"))}


def scenario_one_by_one():
    """300 unary calls, each after the last one's answer; "warm" is printed
    once the channel is up, for the test to start counting there."""
    with channel() as ch:
        call = unary(ch)
        first = outcome(call, Event(type="hello", body=b'{"name":"warm"}'))
        print("warm", flush=True)
        statuses = [outcome(call, Event(type="hello", body=json.dumps({"name": f"n{i}"}).encode()))["status"]
                    for i in range(300)]
        return {"first": first["status"], "statuses": sorted(set(statuses)), "count": len(statuses)}


def scenario_access_log():
    """Three calls for the access log: one answered, one its handler
    answers 404, and one to a method no service has."""
    with channel() as ch:
        other = ch.unary_unary("/edri.v1.Other/Nothing", request_serializer=Event.SerializeToString,
                               response_deserializer=Event.FromString)
        call = unary(ch)
        return {"hello": outcome(call, Event(type="hello", body=b'{"name":"log"}'),
                                 metadata=[("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")]),
                "status": outcome(call, Event(type="status", body=b'{"code":404}')),
                "no_method": outcome(other, Event(type="hello"))}


def traceparent_of(metadata):
    return dict(metadata or ()).get("traceparent", "")


def scenario_traced():
    """A call carrying a traceparent to trace_app's back.work, and one to a
    method no service has (a Trailers-Only answer): the traceparent each
    answer carries back."""
    sent = [("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")]
    with channel() as ch:
        _, call = unary(ch).with_call(Event(type="back.work", body=b'{}'), timeout=10, metadata=sent)
        other = ch.unary_unary("/edri.v1.Other/Nothing", request_serializer=Event.SerializeToString,
                               response_deserializer=Event.FromString)
        try:
            other(Event(type="x"), timeout=10, metadata=sent)
            refused = {}
        except grpc.RpcError as e:
            refused = {"code": e.code().name,
                       "traceparent": traceparent_of(e.initial_metadata()) or traceparent_of(e.trailing_metadata())}
        return {"answered": {"code": call.code().name, "traceparent": traceparent_of(call.initial_metadata())},
                "refused": refused}


SCENARIOS = {name[len("scenario_"):]: f for name, f in globals().items() if name.startswith("scenario_")}

if __name__ == "__main__":
    result = SCENARIOS[SCENARIO]()
    print(json.dumps(result), flush=True)
