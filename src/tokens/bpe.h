// tiktoken's byte-pair merge: repeatedly merge the adjacent pair of parts
// whose concatenation has the lowest rank, the leftmost on ties, until no
// pair is a token. Two implementations with identical results: tiktoken's
// O(n*m) array loop, fastest for the short pieces that dominate, and a heap
// over a linked list, O(n log n), for long pieces (CJK runs, long words,
// punctuation or whitespace runs of hundreds of bytes).
#ifndef COMPACTOR_SRC_TOKENS_BPE_H_
#define COMPACTOR_SRC_TOKENS_BPE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tokens/rank_table.h"

namespace compactor::tokens {

// The array loop handles pieces up to kSmallMergeMax bytes; the tokenizer
// uses it up to kArrayMergeBest bytes, where it stops beating the heap
// (measured on the benchmark corpora: English, code, CJK).
inline constexpr size_t kSmallMergeMax = 96;
inline constexpr size_t kArrayMergeBest = 32;

// Both functions take a piece of len >= 2 bytes with kReadPadding readable
// bytes after it, write the start offset of every final part into `starts`
// followed by `len` (so part i is [starts[i], starts[i+1])), and return the
// number of parts.

// REQUIRES: len <= kSmallMergeMax; `starts` has room for len + 1 entries.
inline size_t SmallMerge(const RankTable& table, const uint8_t* p, size_t len, uint32_t* starts) {
  uint32_t ranks[kSmallMergeMax + 1];
  size_t m = len + 1;
  for (size_t i = 0; i + 1 < len; ++i) {
    starts[i] = static_cast<uint32_t>(i);
    ranks[i] = table.Find(p + i, 2);
  }
  starts[len - 1] = static_cast<uint32_t>(len - 1);
  ranks[len - 1] = kNoRank;
  starts[len] = static_cast<uint32_t>(len);
  ranks[len] = kNoRank;
  while (true) {
    uint32_t best = kNoRank;
    size_t bi = 0;
    for (size_t i = 0; i + 1 < m; ++i) {
      if (ranks[i] < best) {
        best = ranks[i];
        bi = i;
      }
    }
    if (best == kNoRank) break;
    if (bi > 0) {
      ranks[bi - 1] =
          bi + 2 < m ? table.Find(p + starts[bi - 1], starts[bi + 2] - starts[bi - 1]) : kNoRank;
    }
    ranks[bi] = bi + 3 < m ? table.Find(p + starts[bi], starts[bi + 3] - starts[bi]) : kNoRank;
    for (size_t i = bi + 1; i + 1 < m; ++i) {
      starts[i] = starts[i + 1];
      ranks[i] = ranks[i + 1];
    }
    --m;
  }
  return m - 1;
}

// Any len >= 2. `starts` is resized as needed.
size_t HeapMerge(const RankTable& table, const uint8_t* p, size_t len,
                 std::vector<uint32_t>* starts);

}  // namespace compactor::tokens

#endif  // COMPACTOR_SRC_TOKENS_BPE_H_
