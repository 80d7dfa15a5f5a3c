// Token bytes -> rank, as a read-only view over tables laid out once by the
// vocabulary converter (tokens/vocab_file.h) and used in place: from a mapped
// binary vocabulary file, or from an image built in memory. Tokens of up to 8
// bytes (74% of o200k, and nearly every lookup the merge loop makes) are
// packed into a uint64 key so a lookup is one multiply and usually one cache
// line, without a string compare; longer tokens go to a second table keyed by
// a 64-bit hash and confirmed with memcmp.
//
// The hash functions below define where every entry sits in the files: any
// change to them needs a new vocabulary format version (kVocabFormatVersion).
#ifndef COMPACTOR_SRC_TOKENS_RANK_TABLE_H_
#define COMPACTOR_SRC_TOKENS_RANK_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

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
  // Slot of the table of tokens of 3..8 bytes (16 bytes, file layout).
  struct Short {
    uint64_t key;  // LoadPacked(token)
    uint32_t rank;
    uint32_t len;  // 0: empty slot
  };
  // Slot of the table of tokens of 9+ bytes (24 bytes, file layout).
  struct Long {
    uint64_t hash;  // HashBytes(token)
    uint32_t rank;
    uint32_t offset;  // of the token's bytes in the blob
    uint32_t len;     // 0: empty slot
    uint32_t pad;     // 0
  };
  static_assert(sizeof(Short) == 16 && sizeof(Long) == 24);

  // The one-hash Bloom filter has 2^kFilterBits bits.
  static constexpr int kFilterBits = 22;

  // Where the tables are. Everything points into memory that must outlive
  // the view and stay unchanged; 8-byte alignment is enough. The lookups
  // never read outside these tables and always end, whatever they contain
  // (a damaged file gives wrong ranks, never a crash): probes stop after
  // max_probe slots and blob ranges are checked against blob_size.
  struct Tables {
    const uint32_t* byte = nullptr;    // 256 ranks, indexed by the byte
    const uint32_t* pair = nullptr;    // 65536 ranks, indexed by p[0] | p[1] << 8
    const uint64_t* filter = nullptr;  // 2^kFilterBits bits
    const Short* short_slots = nullptr;
    int short_bits = 0;            // 2^short_bits slots (>= 1), linear probing
    uint32_t short_max_probe = 0;  // the farthest any entry sits from its home slot
    const Long* long_slots = nullptr;
    int long_bits = 0;
    uint32_t long_max_probe = 0;
    const uint32_t* offsets = nullptr;  // rank_count + 1 blob offsets
    uint32_t rank_count = 0;            // ranks 0..rank_count-1 (gaps have no bytes)
    const char* blob = nullptr;         // token bytes by rank, then kReadPadding bytes
    size_t blob_size = 0;               // bytes of the blob, padding included
    size_t token_count = 0;             // ranks that have bytes
  };

  RankTable() = default;
  explicit RankTable(const Tables& t)
      : t_(t),
        short_mask_((size_t{1} << t.short_bits) - 1),
        long_mask_((size_t{1} << t.long_bits) - 1),
        short_shift_(64 - t.short_bits),
        long_shift_(64 - t.long_bits) {}

  uint32_t Find(const uint8_t* p, size_t len) const {
    if (len <= 2) {
      // Direct tables: every initial pair of the merge loop lands here, in
      // 256 KB that stay cached.
      return len == 2 ? t_.pair[p[0] | (uint32_t{p[1]} << 8)] : t_.byte[p[0]];
    }
    if (len <= 8) {
      uint64_t key = LoadPacked(p, len);
      uint64_t mixed = ShortMix(key, len);
      if (!MayContain(t_.filter, mixed)) return kNoRank;
      size_t i = mixed >> short_shift_;
      for (uint32_t probe = 0;; ++probe) {
        const Short& s = t_.short_slots[i];
        if (s.key == key && s.len == len) return s.rank;
        if (s.len == 0 || probe == t_.short_max_probe) return kNoRank;
        i = (i + 1) & short_mask_;
      }
    }
    uint64_t h = HashBytes(p, len);
    uint64_t mixed = Mix(h);
    if (!MayContain(t_.filter, mixed)) return kNoRank;
    size_t i = mixed >> long_shift_;
    for (uint32_t probe = 0;; ++probe) {
      const Long& s = t_.long_slots[i];
      if (s.len == 0) return kNoRank;
      if (s.hash == h && s.len == len && size_t{s.offset} + len <= t_.blob_size &&
          std::memcmp(t_.blob + s.offset, p, len) == 0) {
        return s.rank;
      }
      if (probe == t_.long_max_probe) return kNoRank;
      i = (i + 1) & long_mask_;
    }
  }

  // Bytes of `rank`; empty when there is no such rank.
  std::string_view Bytes(uint32_t rank) const {
    if (rank >= t_.rank_count) return {};
    uint32_t begin = t_.offsets[rank], end = t_.offsets[rank + 1];
    if (begin > end || end > t_.blob_size) return {};  // only in a damaged file
    return std::string_view(t_.blob + begin, end - begin);
  }
  size_t size() const { return t_.token_count; }

  // A full 64-bit mix before taking the top bits (the slot) and the low bits
  // (the filter bit): multiplicative hashing alone lets keys that differ only
  // in their high bytes (UTF-8 continuation bytes) pile up in one
  // linear-probe cluster.
  static uint64_t Mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ull;
    x ^= x >> 33;
    return x;
  }
  static uint64_t ShortMix(uint64_t key, size_t len) { return Mix(key ^ (uint64_t{len} << 61)); }

  // One-hash Bloom filter over the tokens of 3+ bytes, on the low bits of the
  // mixed hash (the slot uses the high ones). Most lookups the merge loop
  // makes are misses (spans that are not tokens); the 512 KB filter answers
  // ~95% of them from L2 instead of a cache miss into the multi-MB tables.
  static uint64_t FilterBit(uint64_t mixed) { return mixed & ((uint64_t{1} << kFilterBits) - 1); }
  static bool MayContain(const uint64_t* filter, uint64_t mixed) {
    uint64_t bit = FilterBit(mixed);
    return (filter[bit >> 6] >> (bit & 63)) & 1;
  }

 private:
  Tables t_;
  size_t short_mask_ = 0, long_mask_ = 0;
  int short_shift_ = 64, long_shift_ = 64;
};

}  // namespace compactor::tokens

#endif  // COMPACTOR_SRC_TOKENS_RANK_TABLE_H_
