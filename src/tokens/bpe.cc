#include "tokens/bpe.h"

#include <algorithm>
#include <functional>

namespace compactor::tokens {
namespace {

struct Candidate {
  // (rank << 32) | start: a min-heap on it pops the lowest rank first and
  // the leftmost pair on ties, exactly the pair tiktoken's loop picks.
  uint64_t key;
  uint32_t end;  // end of the pair's second part
  uint32_t start() const { return static_cast<uint32_t>(key); }
  bool operator>(const Candidate& o) const { return key > o.key; }
};

inline Candidate Make(uint32_t rank, uint32_t start, uint32_t end) {
  return {(uint64_t{rank} << 32) | start, end};
}

constexpr uint32_t kDead = 0xFFFFFFFFu;

}  // namespace

size_t HeapMerge(const RankTable& table, const uint8_t* p, size_t len,
                 std::vector<uint32_t>* starts) {
  // next[s]: start of the part after the part starting at s (len for the
  // last); kDead for offsets that no longer start a part.
  thread_local std::vector<uint32_t> next, prev;
  thread_local std::vector<Candidate> heap;
  next.resize(len);
  prev.resize(len);
  for (size_t i = 0; i < len; ++i) {
    next[i] = static_cast<uint32_t>(i + 1);
    prev[i] = static_cast<uint32_t>(i - 1);  // wraps for 0; never read there
  }
  heap.clear();
  auto push = [](Candidate c) {
    heap.push_back(c);
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  };
  for (size_t i = 0; i + 1 < len; ++i) {
    uint32_t r = table.Find(p + i, 2);
    if (r != kNoRank) {
      heap.push_back(Make(r, static_cast<uint32_t>(i), static_cast<uint32_t>(i + 2)));
    }
  }
  std::make_heap(heap.begin(), heap.end(), std::greater<>());
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    Candidate c = heap.back();
    heap.pop_back();
    uint32_t start = c.start();
    uint32_t mid = next[start];
    if (mid == kDead || mid >= len || next[mid] != c.end) continue;  // stale
    next[mid] = kDead;
    next[start] = c.end;
    if (c.end < len) prev[c.end] = start;
    if (start > 0) {
      uint32_t ps = prev[start];
      uint32_t r = table.Find(p + ps, c.end - ps);
      if (r != kNoRank) push(Make(r, ps, c.end));
    }
    if (c.end < len) {
      uint32_t ne = next[c.end];
      uint32_t r = table.Find(p + start, ne - start);
      if (r != kNoRank) push(Make(r, start, ne));
    }
  }
  starts->clear();
  for (uint32_t s = 0; s < len; s = next[s]) starts->push_back(s);
  size_t parts = starts->size();
  starts->push_back(static_cast<uint32_t>(len));
  return parts;
}

}  // namespace compactor::tokens
