// Token bytes -> rank, built once per vocabulary. Tokens of up to 8 bytes (74%
// of o200k, and nearly every lookup the merge loop makes) are packed into a
// uint64 key so a lookup is one multiply and usually one cache line, without a
// string compare; longer tokens go to a second table keyed by a 64-bit hash
// and confirmed with memcmp.
#ifndef COMPACTOR_SRC_TOKENS_RANK_TABLE_H_
#define COMPACTOR_SRC_TOKENS_RANK_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/status.h"

namespace compactor::tokens {

inline constexpr uint32_t kNoRank = 0xFFFFFFFFu;

// Bytes that may always be read past the end of any slice passed to the
// lookups (the callers pad their buffers this much).
inline constexpr size_t kReadPadding = 8;

inline uint64_t LoadPacked(const uint8_t* p, size_t len) {  // len 1..8, 8 bytes readable
  uint64_t k;
  std::memcpy(&k, p, 8);
  return len == 8 ? k : k & ((uint64_t{1} << (8 * len)) - 1);
}

// 64-bit hash of a byte string (len >= 1, kReadPadding readable past the end).
inline uint64_t HashBytes(const uint8_t* p, size_t len) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h = len * 0xD6E8FEB86659FD93ull;
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 32;
  }
  if (i < len) {
    h = (h ^ LoadPacked(p + i, len - i)) * kMul;
    h ^= h >> 32;
  }
  return h * kMul;
}

class RankTable {
 public:
  // `tokens[r]` is the byte string of rank r; empty strings are gaps (no
  // token has that rank). kCorruption on a duplicate token.
  Status Build(std::vector<std::string> tokens);

  uint32_t Find(const uint8_t* p, size_t len) const {
    if (len <= 2) {
      // Direct tables: every initial pair of the merge loop lands here, in
      // 256 KB that stay cached.
      return len == 2 ? pair_[p[0] | (uint32_t{p[1]} << 8)] : byte_[p[0]];
    }
    if (len <= 8) {
      uint64_t key = LoadPacked(p, len);
      uint64_t mixed = Mix(key ^ (uint64_t{len} << 61));
      if (!MayContain(mixed)) return kNoRank;
      size_t i = mixed >> short_shift_;
      while (true) {
        const Short& s = short_[i];
        if (s.key == key && s.len == len) return s.rank;
        if (s.len == 0) return kNoRank;
        i = (i + 1) & short_mask_;
      }
    }
    uint64_t h = HashBytes(p, len);
    uint64_t mixed = Mix(h);
    if (!MayContain(mixed)) return kNoRank;
    size_t i = mixed >> long_shift_;
    while (true) {
      const Long& s = long_[i];
      if (s.len == 0) return kNoRank;
      if (s.hash == h && s.len == len && std::memcmp(blob_.data() + s.offset, p, len) == 0) {
        return s.rank;
      }
      i = (i + 1) & long_mask_;
    }
  }

  // Bytes of `rank`; empty when there is no such rank.
  std::string_view Bytes(uint32_t rank) const {
    if (rank >= offsets_.size() - 1) return {};
    return std::string_view(blob_).substr(offsets_[rank], offsets_[rank + 1] - offsets_[rank]);
  }
  size_t size() const { return count_; }

 private:
  struct Short {
    uint64_t key;
    uint32_t rank;
    uint32_t len;  // 0: empty slot
  };
  struct Long {
    uint64_t hash;
    uint32_t rank;
    uint32_t offset;  // into blob_
    uint32_t len;     // 0: empty slot
    uint32_t pad;
  };

  // A full 64-bit mix before taking the top bits: multiplicative hashing
  // alone lets keys that differ only in their high bytes (UTF-8 continuation
  // bytes) pile up in one linear-probe cluster.
  static uint64_t Mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ull;
    x ^= x >> 33;
    return x;
  }
  size_t ShortSlot(uint64_t key, size_t len) const {
    return Mix(key ^ (uint64_t{len} << 61)) >> short_shift_;
  }
  size_t LongSlot(uint64_t hash) const { return Mix(hash) >> long_shift_; }

  // One-hash Bloom filter over the tokens of 3+ bytes, on the low bits of the
  // mixed hash (the slot uses the high ones). Most lookups the merge loop
  // makes are misses (spans that are not tokens); the 512 KB filter answers
  // ~95% of them from L2 instead of a cache miss into the multi-MB tables.
  static constexpr int kFilterBits = 22;
  bool MayContain(uint64_t mixed) const {
    uint64_t bit = mixed & ((uint64_t{1} << kFilterBits) - 1);
    return (filter_[bit >> 6] >> (bit & 63)) & 1;
  }
  void AddToFilter(uint64_t mixed) {
    uint64_t bit = mixed & ((uint64_t{1} << kFilterBits) - 1);
    filter_[bit >> 6] |= uint64_t{1} << (bit & 63);
  }

  // Huge-page backed when the kernel allows: the tables are several MB of
  // random accesses, and TLB misses cost as much as cache misses.
  template <typename T>
  struct Slab {
    T* data = nullptr;
    size_t size = 0;
    Slab() = default;
    Slab(const Slab&) = delete;
    Slab& operator=(const Slab&) = delete;
    ~Slab() { std::free(data); }
    void Assign(size_t n, const T& value);
    T& operator[](size_t i) { return data[i]; }
    const T& operator[](size_t i) const { return data[i]; }
  };

  uint32_t byte_[256];
  Slab<uint32_t> pair_;  // 65536 entries, indexed by the two bytes
  Slab<Short> short_;    // tokens of 3..8 bytes
  Slab<Long> long_;      // longer tokens
  Slab<uint64_t> filter_;
  size_t short_mask_ = 0, long_mask_ = 0;
  int short_shift_ = 64, long_shift_ = 64;
  std::string blob_;               // all token bytes by rank, plus padding
  std::vector<uint32_t> offsets_;  // rank -> offset in blob_, plus one end offset
  size_t count_ = 0;
};

}  // namespace compactor::tokens

#endif  // COMPACTOR_SRC_TOKENS_RANK_TABLE_H_
