// OutputQueue: what a connection owes its client, in order, and the writing
// of it to its socket. It knows no protocol: codecs append bytes, frames
// shared with other connections, blobs and file ranges; the connection
// writes it out as the socket takes it.
//
// Pieces come before the tail, which collects plain bytes at the end; both
// in the order they were added. A piece of a streamed answer grants its
// bytes back to its producer once written (the `credit` callback of
// write()), so what a stream holds here is bounded by the producer's
// window.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "listener/client_socket.hpp"
#include "listener/file_body.hpp"
#include "listener/shared_frame.hpp"
#include "listener/stream_ref.hpp"
#include "transport/blob_arena.hpp"

#include <boost/container/deque.hpp>

namespace edri::listener {

class OutputQueue {
 public:
  struct Piece {
    std::variant<std::string, SharedFrame, transport::BlobLease, FileBody> body;
    std::size_t off = 0;  // bytes of an in-memory body already written (a file keeps its own offset)
    std::uint32_t credit = 0;
    StreamRef stream{};
    // The bytes of an in-memory body (empty for a file).
    std::string_view data() const;
    std::size_t unsent() const { return data().size() - off; }
  };
  enum class Written { All, Blocked, Failed };

  // Plain bytes at the end. tail() is for writers that serialize straight
  // into it (call seal() after a large one).
  void append(std::string_view bytes) { grown_tail() += bytes; }
  std::string& tail() { return grown_tail(); }
  void append(Piece p);
  // A frame shared with other connections: a small one is copied next to
  // the others, a large one queued as the shared buffer itself.
  void append_shared(const SharedFrame& frame);
  // Moves the tail into the queue when it holds more than a piece's worth,
  // so that drop_unsent() can drop most of it.
  void seal();
  // Drops what the client has not started to take (whole pieces and
  // frames only: a piece begun is finished).
  void drop_unsent();
  void clear();

  bool empty() const { return queue_.empty() && tail_off_ == tail_.size(); }
  // Bytes queued and not yet written (file bodies are on disk, not
  // counted).
  std::size_t backlog() const { return queued_bytes_ + tail_.size() - tail_off_; }
  // The backlog less the blob area's bytes (shared memory with its own
  // bound): what counts towards EDRI_OUTPUT_BUFFER_TOTAL.
  std::size_t held_bytes() const { return backlog() - queued_blob_bytes_; }

  // Writes to `socket` until it is full or all is out; `progress` is set
  // when a byte went. credit(stream, bytes) for each streamed piece taken.
  template <class Credit>
  Written write(ClientSocket& socket, bool& progress, Credit&& credit);

 private:
  Written write_piece(ClientSocket& socket, Piece& p, bool& progress);
  Written write_file(ClientSocket& socket, FileBody& f, bool& progress);
  Written write_file_tls(ClientSocket& socket, FileBody& f, bool& progress);
  Written write_tail(ClientSocket& socket, bool& progress);
  void count_out(const Piece& p, std::size_t n);
  // The tail, given its first 512 bytes at once (an answer's head and a
  // small body fit; write_tail keeps that much and gives a larger buffer
  // back): several small frames then cost one allocation, not one per
  // doubling.
  std::string& grown_tail() {
    if (tail_.capacity() < kFirstTailBytes) tail_.reserve(kFirstTailBytes);
    return tail_;
  }
  static constexpr std::size_t kFirstTailBytes = 512;

  // Written before tail_. Boost's deque allocates nothing until a piece
  // comes and gives its block back once empty (shrink_to_fit), where
  // std::deque holds ~0.5 KB from its construction: most connections
  // never queue a piece, and an idle one should hold nothing here.
  boost::container::deque<Piece> queue_;
  std::size_t queued_bytes_ = 0;       // unsent bytes in queue_
  std::size_t queued_blob_bytes_ = 0;  // of which in the blob area
  std::string tail_;
  std::size_t tail_off_ = 0;
  std::string file_chunk_;  // TLS: a file's bytes read for SSL_write
  std::size_t file_chunk_off_ = 0;
};

template <class Credit>
OutputQueue::Written OutputQueue::write(ClientSocket& socket, bool& progress, Credit&& credit) {
  while (!queue_.empty()) {
    if (const auto w = write_piece(socket, queue_.front(), progress); w != Written::All) return w;
    // The client took a piece of a stream: its producer may make more.
    if (queue_.front().credit) credit(queue_.front().stream, queue_.front().credit);
    queue_.pop_front();
    if (queue_.empty()) queue_.shrink_to_fit();
  }
  return write_tail(socket, progress);
}

}  // namespace edri::listener
