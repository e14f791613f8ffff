// OutputQueue over a socket pair: what is appended leaves in order, whatever
// it is (bytes, shared frames, file ranges); a full socket blocks it and it
// goes on where it stopped; streamed pieces grant their bytes back only once
// written; what the client has not started to take can be dropped, a piece
// begun cannot.
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "listener/client_socket.hpp"
#include "listener/output_queue.hpp"
#include "unit/socket_pair.hpp"

using edri::UniqueFd;
using edri::listener::ClientSocket;
using edri::listener::FileBody;
using edri::listener::OutputQueue;
using edri::listener::SharedFrame;
using edri::listener::StreamRef;
using edri::testing::SocketPair;

namespace {

// A file holding `text`, open for reading, as a FileBody of [offset, end).
FileBody file_with(const std::string& text, std::uint64_t offset) {
  char path[] = "/tmp/edri-output-queue-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::unlink(path);
  REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  return FileBody(UniqueFd(fd), offset, text.size() - offset);
}

struct Credits {
  std::vector<std::uint32_t> granted;
  void operator()(const StreamRef&, std::uint32_t bytes) { granted.push_back(bytes); }
};

OutputQueue::Written write(OutputQueue& q, ClientSocket& s, Credits& credits) {
  bool progress = false;
  return q.write(s, progress, [&](const StreamRef& r, std::uint32_t b) { credits(r, b); });
}

}  // namespace

TEST_CASE("output queue writes bytes, shared frames and file ranges in the order they came", "[listener][output]") {
  SocketPair pair;
  ClientSocket socket(std::move(pair.server), nullptr);
  OutputQueue q;
  q.append("head ");
  q.append(OutputQueue::Piece{file_with("0123456789", 4)});
  q.append(" middle ");
  q.append_shared(std::make_shared<const std::string>(std::string(5000, 'x')));  // queued as itself
  q.append_shared(std::make_shared<const std::string>("small"));                 // copied into the tail
  q.append(" tail");
  CHECK_FALSE(q.empty());
  Credits credits;
  REQUIRE(write(q, socket, credits) == OutputQueue::Written::All);
  CHECK(pair.read_all() == "head 456789 middle " + std::string(5000, 'x') + "small tail");
  CHECK(q.empty());
  CHECK(q.backlog() == 0);
  CHECK(credits.granted.empty());
}

TEST_CASE("output queue stops at a full socket and goes on from where it stopped", "[listener][output]") {
  SocketPair pair;
  ClientSocket socket(std::move(pair.server), nullptr);
  REQUIRE(socket.limit_send_buffer(4096));
  OutputQueue q;
  std::string sent;
  for (int i = 0; i < 64; ++i) sent += std::string(1000, static_cast<char>('a' + i % 26));
  q.append(sent);
  q.seal();
  Credits credits;
  REQUIRE(write(q, socket, credits) == OutputQueue::Written::Blocked);
  CHECK(q.backlog() > 0);
  CHECK(q.backlog() < sent.size());
  std::string got = pair.read_all();
  while (write(q, socket, credits) == OutputQueue::Written::Blocked) got += pair.read_all();
  got += pair.read_all();
  CHECK(got == sent);
  CHECK(q.backlog() == 0);
}

TEST_CASE("output queue grants a streamed piece's bytes once the socket took it whole", "[listener][output]") {
  SocketPair pair;
  ClientSocket socket(std::move(pair.server), nullptr);
  REQUIRE(socket.limit_send_buffer(4096));
  OutputQueue q;
  const StreamRef ref{3, 77, true};
  q.append(OutputQueue::Piece{std::string(100, 'a'), 0, 100, ref});
  q.append(OutputQueue::Piece{std::string(200000, 'b'), 0, 200000, ref});
  Credits credits;
  REQUIRE(write(q, socket, credits) == OutputQueue::Written::Blocked);
  CHECK(credits.granted == std::vector<std::uint32_t>{100});  // the second is begun, not taken
  while (write(q, socket, credits) == OutputQueue::Written::Blocked) (void)pair.read_all();
  CHECK(credits.granted == std::vector<std::uint32_t>{100, 200000});
}

TEST_CASE("output queue drops what was not begun and finishes the piece begun", "[listener][output]") {
  SocketPair pair;
  ClientSocket socket(std::move(pair.server), nullptr);
  REQUIRE(socket.limit_send_buffer(4096));
  OutputQueue q;
  q.append(OutputQueue::Piece{std::make_shared<const std::string>(std::string(100000, 'a'))});
  q.append(OutputQueue::Piece{std::make_shared<const std::string>(std::string(100000, 'b'))});
  q.append("tail");
  Credits credits;
  REQUIRE(write(q, socket, credits) == OutputQueue::Written::Blocked);
  q.drop_unsent();
  CHECK(q.backlog() < 100000);
  std::string got = pair.read_all();
  while (write(q, socket, credits) == OutputQueue::Written::Blocked) got += pair.read_all();
  got += pair.read_all();
  CHECK(got == std::string(100000, 'a'));
}

TEST_CASE("output queue says a closed client failed the write", "[listener][output]") {
  SocketPair pair;
  ClientSocket socket(std::move(pair.server), nullptr);
  pair.client.reset();
  OutputQueue q;
  q.append("answer");
  Credits credits;
  CHECK(write(q, socket, credits) == OutputQueue::Written::Failed);
}
