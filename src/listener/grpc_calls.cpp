#include "listener/grpc_calls.hpp"

namespace edri::listener {

void GrpcCall::clear() {
  typed = nullptr;
  call_row = 0;
  reader.clear();
  head.clear();
  pending.clear();
  subscriptions.clear();
  deadline.reset();
  messages = 0;
  client_done = false;
  gzip_in = false;
  gzip_out = false;
  body = nullptr;
  finished = false;
  taking = false;
  last_input = {};
  stalled = false;
  starved = false;
  failure.reset();
  access.reset();
  bytes_out = 0;
}

GrpcCall& GrpcCalls::open(std::int32_t stream, GrpcCall::Method m, std::size_t max_message) {
  if (spare_.empty() || calls_.contains(stream)) {
    const auto [it, made] = calls_.try_emplace(stream, m, max_message);
    if (made) it->second.started = std::chrono::steady_clock::now();
    return it->second;
  }
  auto node = std::move(spare_.back());
  spare_.pop_back();
  node.key() = stream;
  GrpcCall& call = node.mapped();  // cleared when its last call ended
  call.method = m;
  call.started = std::chrono::steady_clock::now();
  call.reader.set_limit(max_message);
  return calls_.insert(std::move(node)).position->second;
}

GrpcCall* GrpcCalls::find(std::int32_t stream) {
  const auto it = calls_.find(stream);
  return it == calls_.end() ? nullptr : &it->second;
}

std::uint32_t GrpcCalls::open_event(std::int32_t stream, GrpcCall& call, std::uint64_t id, std::string type) {
  // 2^31 - 1 numbers: kSeqBit | 0x7fffffff is kNoAnswer, never used.
  const std::uint32_t seq = kSeqBit | (next_++ % 0x7fffffffu);
  auto& p = call.pending.emplace_back();
  p.seq = seq;
  p.id = id;
  p.type = std::move(type);
  p.opened = std::chrono::steady_clock::now();
  seqs_[seq] = stream;
  return seq;
}

void GrpcCalls::drop_event(GrpcCall& call, std::uint32_t seq) {
  if (call.pending.empty() || call.pending.back().seq != seq) return;
  seqs_.erase(seq);
  call.pending.pop_back();
}

std::pair<GrpcCall*, GrpcCall::Pending*> GrpcCalls::find_event(std::uint32_t seq, std::int32_t& stream) {
  const auto it = seqs_.find(seq);
  if (it == seqs_.end()) {
    gone_.erase(seq);
    return {nullptr, nullptr};
  }
  stream = it->second;
  GrpcCall* call = find(stream);
  if (!call) return {nullptr, nullptr};
  for (auto& p : call->pending)
    if (p.seq == seq) return {call, p.ready ? nullptr : &p};
  return {call, nullptr};
}

void GrpcCalls::take_ready(GrpcCall& call, std::string& out) {
  while (!call.pending.empty() && call.pending.front().ready) {
    if (out.empty())
      out = std::move(call.pending.front().framed);
    else
      out += call.pending.front().framed;
    seqs_.erase(call.pending.front().seq);
    call.pending.pop_front();
  }
}

void GrpcCalls::close(std::int32_t stream) {
  const auto it = calls_.find(stream);
  if (it == calls_.end()) return;
  for (const auto& p : it->second.pending) {
    seqs_.erase(p.seq);
    if (!p.ready) gone_.emplace(p.seq, p.opened);
  }
  auto node = calls_.extract(it);
  if (spare_.size() == kSpareCalls) return;
  node.mapped().clear();
  spare_.push_back(std::move(node));
}

}  // namespace edri::listener
