// RecycledBlocks: small blocks come back from the thread's free list, large
// ones go to the heap, and the list is bounded.
#include <catch2/catch.hpp>

#include <vector>

#include "listener/recycled_blocks.hpp"

using edri::listener::RecycledBlocks;
namespace rb = edri::listener::recycled_blocks;

TEST_CASE("a small block given back is the next one taken", "[recycled_blocks]") {
  RecycledBlocks<char> a;
  char* first = a.allocate(1536);
  a.deallocate(first, 1536);
  char* again = a.allocate(100);  // any size up to a block
  CHECK(again == first);
  a.deallocate(again, 100);
}

TEST_CASE("a large block is not kept", "[recycled_blocks]") {
  RecycledBlocks<char> a;
  const auto kept = rb::free_list().blocks.size();
  char* big = a.allocate(rb::kBlockBytes + 1);
  a.deallocate(big, rb::kBlockBytes + 1);
  CHECK(rb::free_list().blocks.size() == kept);
}

TEST_CASE("the free list keeps at most kMostKept blocks", "[recycled_blocks]") {
  RecycledBlocks<char> a;
  std::vector<char*> taken;
  for (std::size_t i = 0; i < rb::kMostKept + 10; ++i) taken.push_back(a.allocate(64));
  for (char* p : taken) a.deallocate(p, 64);
  CHECK(rb::free_list().blocks.size() == rb::kMostKept);
  CHECK(rb::free_list().blocks.capacity() == rb::kMostKept);  // never grew
}
