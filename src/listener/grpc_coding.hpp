// gRPC message compression (docs/grpc.md, "Compression"): which encodings
// a call may send its messages in and be answered in, read from its head,
// and its answers gzipped. Messages are framed here, in the listener
// (decision 0022), so here is where they are compressed; they are small
// next to the answers the managers compress (docs/decisions/0034).
#pragma once

#include <string>
#include <string_view>

#include "http/request_parser.hpp"
#include "listener/grpc_calls.hpp"
#include "runtime/config.hpp"

namespace edri::listener {

// The grpc-accept-encoding line of every answer: what a client may send.
std::string_view grpc_accept_line(const Config& config);

// Reads grpc-encoding and grpc-accept-encoding of a call's head into the
// call; false for an encoding this server does not take (the call is then
// UNIMPLEMENTED, the answer naming those it takes).
bool agree_encodings(const Config& config, const http::HttpRequest& head, GrpcCall& call);

// The lines an answer's head starts with: grpc-accept-encoding, and
// grpc-encoding where the call's answers may be compressed.
std::string grpc_head_lines(const Config& config, const GrpcCall& call);
// The call's trace, back to the client as an HTTP answer's goes
// (`traceparent: ...\r\n`); empty when the call is not traced.
std::string grpc_trace_line(const GrpcCall& call);

// One framed message (prefix included), gzipped when the call takes gzip
// and it has EDRI_COMPRESSION_MIN_SIZE bytes or more; as it is otherwise,
// or when gzip does not make it smaller (a message may always go
// uncompressed).
std::string coded_message(const Config& config, const GrpcCall& call, std::string framed);

}  // namespace edri::listener
