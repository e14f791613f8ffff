// BlobArena: allocation, claims across processes, release, and reclamation
// of what a dead process held or nobody claimed.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "transport/blob_arena.hpp"

using edri::transport::BlobArena;
using edri::transport::BlobHandle;
using edri::transport::kBlobBlockBytes;

namespace {

// Runs `f` in a child process; its exit status (f's return value).
template <class F>
int in_child(F f) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(f());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("blobs are runs of blocks: a full area refuses, a freed one serves again", "[blob]") {
  auto arena = BlobArena::create(8 * kBlobBlockBytes);
  CHECK(arena.capacity() == 8 * kBlobBlockBytes);
  auto a = arena.allocate(3 * kBlobBlockBytes);  // 3 blocks
  auto b = arena.allocate(kBlobBlockBytes + 1);  // 2 blocks
  auto c = arena.allocate(1);                    // 1 block
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  CHECK(arena.used_bytes() == 6 * kBlobBlockBytes);
  CHECK_FALSE(arena.allocate(3 * kBlobBlockBytes));  // 2 blocks left
  CHECK_FALSE(arena.allocate(9 * kBlobBlockBytes));  // never fits
  std::memset(arena.data(*b), 'b', b->length);
  arena.release(*a);
  CHECK(arena.used_bytes() == 3 * kBlobBlockBytes);
  auto d = arena.allocate(3 * kBlobBlockBytes);  // a's place again
  REQUIRE(d);
  CHECK(d->first_block == a->first_block);
  CHECK(d->generation != a->generation);
  CHECK(arena.data(*b)[kBlobBlockBytes] == std::byte{'b'});  // b untouched
  // A stale handle (a's) can be neither claimed nor released.
  CHECK_FALSE(arena.claim(*a));
  arena.release(*a);
  CHECK(arena.used_bytes() == 6 * kBlobBlockBytes);
}

TEST_CASE("another process claims a blob, reads it in place and frees it", "[blob]") {
  auto arena = BlobArena::create(4 * kBlobBlockBytes);
  auto h = arena.allocate(100);
  REQUIRE(h);
  std::memcpy(arena.data(*h), "hello blob", 10);
  // The child inherits the mapping, as an exec'd child maps the memfd.
  CHECK(in_child([&] {
          if (!arena.claim(*h) || std::memcmp(arena.data(*h), "hello blob", 10) != 0) return 1;
          arena.release(*h);
          return 0;
        }) == 0);
  CHECK(arena.used_bytes() == 0);
  // The producer's release after a claim by another is not its to make.
  auto g = arena.allocate(100);
  REQUIRE(g);
  CHECK(in_child([&] { return arena.claim(*g) ? 0 : 1; }) == 0);
  arena.release(*g);
  CHECK(arena.used_bytes() == kBlobBlockBytes);
}

TEST_CASE("the blobs of a dead process are reclaimed: so are those nobody claimed", "[blob]") {
  auto arena = BlobArena::create(4 * kBlobBlockBytes);
  auto held = arena.allocate(10);
  REQUIRE(held);
  pid_t child = ::fork();
  if (child == 0) ::_exit(arena.claim(*held) ? 0 : 1);
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WEXITSTATUS(status) == 0);
  // The child died holding it: only reclamation frees it.
  CHECK(arena.used_bytes() == kBlobBlockBytes);
  CHECK(arena.reclaim_dead(child) == 1);
  CHECK(arena.used_bytes() == 0);

  // Unclaimed past the deadline: lost in transit.
  auto lost = arena.allocate(10);
  auto claimed = arena.allocate(10);
  REQUIRE(lost);
  REQUIRE(claimed);
  REQUIRE(arena.claim(*claimed));
  CHECK(arena.reclaim_unclaimed(5) == 0);  // too young
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  CHECK(arena.reclaim_unclaimed(1) == 1);  // `lost` only: `claimed` has a holder
  CHECK_FALSE(arena.claim(*lost));
  CHECK(arena.used_bytes() == kBlobBlockBytes);
  arena.release(*claimed);
  CHECK(arena.used_bytes() == 0);
}
