"""A typed gRPC service (notes.v1.Notes) as a generic tool uses it: every
service listed and every message type learned through server reflection,
none compiled in, then each method called with messages built from what
the server described (grpcurl and Postman work this way).

    typed_client.py <generated-modules-dir> <port> <scenario>

Prints one JSON object of what it observed; tests/integration/grpc_test.cpp
checks it.
"""
import json
import sys
import urllib.error
import urllib.request

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

sys.path.insert(0, sys.argv[1])
import health_pb2  # noqa: E402  (generated at build time)
import reflection_pb2  # noqa: E402

PORT = int(sys.argv[2])
SCENARIO = sys.argv[3]
REFLECTION = "/grpc.reflection.{}.ServerReflection/ServerReflectionInfo"
Request = reflection_pb2.ServerReflectionRequest
Response = reflection_pb2.ServerReflectionResponse


def reflect(ch, requests, version="v1"):
    call = ch.stream_stream(REFLECTION.format(version), request_serializer=Request.SerializeToString,
                            response_deserializer=Response.FromString)
    return list(call(iter(requests), timeout=10))


def pool_of(responses):
    """A descriptor pool of every file the responses carried, imports first."""
    files = {}
    for r in responses:
        for raw in r.file_descriptor_response.file_descriptor_proto:
            files[descriptor_pb2.FileDescriptorProto.FromString(raw).name] = raw
    pool, added = descriptor_pool.DescriptorPool(), set()

    def add(name):
        if name in added:
            return
        for dep in descriptor_pb2.FileDescriptorProto.FromString(files[name]).dependency:
            add(dep)
        pool.AddSerializedFile(files[name])
        added.add(name)

    for name in files:
        add(name)
    return pool


def message_class(pool, name):
    return message_factory.MessageFactory(pool).GetPrototype(pool.FindMessageTypeByName(name))


def json_of(msg):
    from google.protobuf import json_format
    return json_format.MessageToDict(msg, preserving_proto_field_name=True)


class Typed:
    """The methods of one service, their message types from the pool."""

    def __init__(self, ch, pool, service):
        self.ch, self.pool = ch, pool
        self.service = pool.FindServiceByName(service)

    def call(self, method, fields=None, raw=None, metadata=None):
        m = self.service.methods_by_name[method]
        req_cls = message_class(self.pool, m.input_type.full_name)
        res_cls = message_class(self.pool, m.output_type.full_name)
        path = f"/{self.service.full_name}/{method}"
        serialize = (lambda b: b) if raw is not None else req_cls.SerializeToString
        stub = self.ch.unary_unary(path, request_serializer=serialize, response_deserializer=res_cls.FromString)
        try:
            res, call = stub.with_call(raw if raw is not None else req_cls(**(fields or {})), timeout=10,
                                       metadata=metadata)
            return {"code": "OK", "message": json_of(res), "metadata": dict(call.initial_metadata())}
        except grpc.RpcError as e:
            return {"code": e.code().name, "details": e.details()}


def rest_get(path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{PORT}{path}", timeout=10) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        return {"http_status": e.code}


def scenario_notes():
    out = {}
    with grpc.insecure_channel(f"127.0.0.1:{PORT}") as ch:
        for version in ("v1", "v1alpha"):
            [listed] = reflect(ch, [Request(list_services="*")], version)
            out["services_" + version] = sorted(s.name for s in listed.list_services_response.service)
        answers = reflect(ch, [Request(file_containing_symbol="notes.v1.Notes"),
                               Request(file_containing_symbol="no.such.Symbol"),
                               Request(file_by_filename="google/protobuf/empty.proto"),
                               Request(all_extension_numbers_of_type="notes.v1.Note")])
        out["symbol_files"] = [descriptor_pb2.FileDescriptorProto.FromString(raw).name
                               for raw in answers[0].file_descriptor_response.file_descriptor_proto]
        out["unknown_symbol"] = answers[1].error_response.error_code
        out["by_filename"] = len(answers[2].file_descriptor_response.file_descriptor_proto)
        out["extensions_base"] = answers[3].all_extension_numbers_response.base_type_name
        pool = pool_of(answers[:1])
        notes = Typed(ch, pool, "notes.v1.Notes")
        out["methods"] = sorted(notes.service.methods_by_name)

        created = notes.call("CreateNote", {"title": "from grpc", "body": ""})
        out["created"] = created
        note_id = int(created["message"]["id"]) if created["code"] == "OK" else 0
        out["got"] = notes.call("GetNote", {"id": note_id})
        out["rest"] = rest_get(f"/notes/{note_id}")
        out["listed"] = notes.call("ListNotes", {})
        out["listed_one"] = notes.call("ListNotes", {"limit": 1})
        out["list_invalid"] = notes.call("ListNotes", {"limit": 1000})
        out["updated"] = notes.call("UpdateNote", {"id": note_id, "title": "renamed", "body": "b"})
        out["invalid"] = notes.call("CreateNote", {"title": "", "body": "x"})
        out["not_a_message"] = notes.call("CreateNote", raw=b"\xff\xff\xff")
        out["far_id"] = notes.call("GetNote", {"id": 2 ** 40})
        out["deleted"] = notes.call("DeleteNote", {"id": note_id})
        out["after_delete"] = notes.call("GetNote", {"id": note_id})
        health = ch.unary_unary("/grpc.health.v1.Health/Check",
                                request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                                response_deserializer=health_pb2.HealthCheckResponse.FromString)
        out["health"] = health_pb2.HealthCheckResponse.ServingStatus.Name(
            health(health_pb2.HealthCheckRequest(service="notes.v1.Notes"), timeout=10).status)
    return out


print(json.dumps({"notes": scenario_notes}[SCENARIO]()))
