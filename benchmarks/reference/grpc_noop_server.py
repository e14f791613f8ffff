"""grpcio reference for `bench grpc`: edri's generic gRPC service
(proto/edri/v1/edri.proto) answered by a no-op servicer on upstream's own
stack, grpcio's synchronous server with a thread pool.

usage: /usr/bin/python3 grpc_noop_server.py PORT [THREADS]

Listens on 127.0.0.1:PORT and prints one line,
"grpc_noop_server: listening on 127.0.0.1:PORT", once it serves. Every Call
and every Event on a Connect stream gets the answer edri's bench app gives
to the "noop" command: Event{type:"noop", status:200, body:'{"ok":true}'},
carrying on Connect the id of the Event it answers.

The messages stay bytes (no serializers): the answer is serialized once,
by hand, in protobuf's wire format, and only a Connect Event's id is read,
so that the figure is grpcio's transport and not a protobuf library.
"""

import sys
from concurrent import futures

import grpc

# A Connect stream holds a handler thread for as long as it is open: the
# pool must exceed the connections bench opens (32 by default).
DEFAULT_THREADS = 64

WIRE_VARINT = 0
WIRE_FIXED64 = 1
WIRE_LENGTH = 2
WIRE_FIXED32 = 5
ID_FIELD = 5


def varint(value):
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value == 0:
            out.append(low)
            return bytes(out)
        out.append(low | 0x80)


def key(field, wire_type):
    return varint(field << 3 | wire_type)


def length_delimited(field, data):
    return key(field, WIRE_LENGTH) + varint(len(data)) + data


NOOP_ANSWER = (
    length_delimited(1, b"noop")  # type
    + length_delimited(2, b'{"ok":true}')  # body
    + key(4, WIRE_VARINT)  # status
    + varint(200)
)


def read_varint(data, at):
    value = 0
    shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def event_id(data):
    """Field 5 of an Event (0 when absent), skipping the others."""
    at = 0
    found = 0
    while at < len(data):
        field_key, at = read_varint(data, at)
        wire_type = field_key & 7
        if wire_type == WIRE_VARINT:
            value, at = read_varint(data, at)
            if field_key >> 3 == ID_FIELD:
                found = value
        elif wire_type == WIRE_LENGTH:
            size, at = read_varint(data, at)
            at += size
        elif wire_type == WIRE_FIXED64:
            at += 8
        elif wire_type == WIRE_FIXED32:
            at += 4
        else:
            raise ValueError("unknown wire type %d" % wire_type)
    return found


def answer_to(request):
    request_id = event_id(request)
    if request_id == 0:
        return NOOP_ANSWER
    return NOOP_ANSWER + key(ID_FIELD, WIRE_VARINT) + varint(request_id)


def call(request, context):
    return NOOP_ANSWER


def connect(requests, context):
    for request in requests:
        yield answer_to(request)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: grpc_noop_server.py PORT [THREADS]")
    port = int(sys.argv[1])
    threads = int(sys.argv[2]) if len(sys.argv) == 3 else DEFAULT_THREADS
    handlers = {
        # No serializers: requests and answers stay bytes.
        "Call": grpc.unary_unary_rpc_method_handler(call),
        "Connect": grpc.stream_stream_rpc_method_handler(connect),
    }
    # Without SO_REUSEPORT a port someone else holds is refused, not shared.
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=threads), options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("edri.v1.Edri", handlers),))
    address = "127.0.0.1:%d" % port
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError:  # what newer grpcio raises instead of returning 0
        bound = 0
    if bound == 0:
        sys.exit("grpc_noop_server: cannot listen on " + address)
    server.start()
    print("grpc_noop_server: listening on " + address, flush=True)
    # SIGTERM (bench stopping it) ends the process by its default action.
    server.wait_for_termination()


if __name__ == "__main__":
    main()
