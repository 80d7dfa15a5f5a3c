#include "tokens/bpe.h"

#include <algorithm>
#include <functional>

namespace compactor::tokens {
namespace {

struct Candidate {
  uint32_t rank;
  uint32_t start;  // first part of the pair
  uint32_t end;    // end of its second part
  // Min-heap on (rank, start): lowest rank first, leftmost on ties, exactly
  // the pair tiktoken's loop picks.
  bool operator>(const Candidate& o) const {
    return rank != o.rank ? rank > o.rank : start > o.start;
  }
};

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
    if (r != kNoRank) push({r, static_cast<uint32_t>(i), static_cast<uint32_t>(i + 2)});
  }
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    Candidate c = heap.back();
    heap.pop_back();
    uint32_t mid = next[c.start];
    if (mid == kDead || mid >= len || next[mid] != c.end) continue;  // stale
    next[mid] = kDead;
    next[c.start] = c.end;
    if (c.end < len) prev[c.end] = c.start;
    if (c.start > 0) {
      uint32_t ps = prev[c.start];
      uint32_t r = table.Find(p + ps, c.end - ps);
      if (r != kNoRank) push({r, ps, c.end});
    }
    if (c.end < len) {
      uint32_t ne = next[c.end];
      uint32_t r = table.Find(p + c.start, ne - c.start);
      if (r != kNoRank) push({r, c.start, ne});
    }
  }
  starts->clear();
  for (uint32_t s = 0; s < len; s = next[s]) starts->push_back(s);
  size_t parts = starts->size();
  starts->push_back(static_cast<uint32_t>(len));
  return parts;
}

}  // namespace compactor::tokens
