// RecycledBlocks: an allocator whose small blocks go back to a free list of
// the thread, not to malloc, for buffers taken and given back often.
//
// An idle WebSocket session gives its message buffer back (the 1.5 KB that
// Beast's read takes as it starts), so a busy one takes it again for each
// message: above glibc's per-thread cache (1,032 bytes), each take cost a
// trip through malloc's bins, 5 % of WebSocket echo at c=8. The listener
// is one thread; the free list is that thread's, and bounded.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace edri::listener {

namespace recycled_blocks {
inline constexpr std::size_t kBlockBytes = 2048;  // Beast's first read takes 1,536
inline constexpr std::size_t kMostKept = 256;     // 512 KiB at most, per thread

// The blocks given back and not taken again. Blocks still on the list when
// the thread ends are freed with it.
struct FreeList {
  std::vector<void*> blocks;
  FreeList() { blocks.reserve(kMostKept); }
  ~FreeList() {
    for (void* p : blocks) ::operator delete(p);
  }
};
inline FreeList& free_list() {
  thread_local FreeList list;
  return list;
}
}  // namespace recycled_blocks

template <class T>
struct RecycledBlocks {
  using value_type = T;
  RecycledBlocks() = default;
  template <class U>
  RecycledBlocks(const RecycledBlocks<U>&) noexcept {}

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes > recycled_blocks::kBlockBytes) return static_cast<T*>(::operator new(bytes));
    auto& list = recycled_blocks::free_list().blocks;
    if (list.empty()) return static_cast<T*>(::operator new(recycled_blocks::kBlockBytes));
    void* p = list.back();
    list.pop_back();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    auto& list = recycled_blocks::free_list().blocks;
    if (n * sizeof(T) > recycled_blocks::kBlockBytes || list.size() >= recycled_blocks::kMostKept) {
      ::operator delete(p);
      return;
    }
    list.push_back(p);  // within the capacity reserved: never allocates
  }
  friend bool operator==(const RecycledBlocks&, const RecycledBlocks&) { return true; }
  friend bool operator!=(const RecycledBlocks&, const RecycledBlocks&) { return false; }
};

}  // namespace edri::listener
