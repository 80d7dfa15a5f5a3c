#include "tokens/rank_table.h"

#include <sys/mman.h>

#include <bit>
#include <cstdlib>
#include <new>

namespace compactor::tokens {

template <typename T>
void RankTable::Slab<T>::Assign(size_t n, const T& value) {
  std::free(data);
  constexpr size_t kHuge = size_t{2} << 20;
  size_t bytes = (n * sizeof(T) + kHuge - 1) / kHuge * kHuge;
  data = static_cast<T*>(std::aligned_alloc(kHuge, bytes));
  if (data == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  ::madvise(data, bytes, MADV_HUGEPAGE);  // a hint; failure is harmless
#endif
  size = n;
  for (size_t i = 0; i < n; ++i) data[i] = value;
}

Status RankTable::Build(std::vector<std::string> tokens) {
  size_t n_short = 0, n_long = 0, n_tiny = 0;
  offsets_.assign(tokens.size() + 1, 0);
  blob_.clear();
  for (size_t r = 0; r < tokens.size(); ++r) {
    offsets_[r] = static_cast<uint32_t>(blob_.size());
    blob_ += tokens[r];
    if (tokens[r].empty()) continue;
    (tokens[r].size() <= 2 ? n_tiny : tokens[r].size() <= 8 ? n_short : n_long)++;
  }
  offsets_[tokens.size()] = static_cast<uint32_t>(blob_.size());
  blob_.append(kReadPadding, '\0');
  count_ = n_tiny + n_short + n_long;
  std::fill(std::begin(byte_), std::end(byte_), kNoRank);
  pair_.Assign(65536, kNoRank);
  filter_.Assign(size_t{1} << (kFilterBits - 6), 0);

  // Load factor <= 1/2 keeps linear-probe chains short for the misses the
  // merge loop makes all the time.
  size_t short_cap = std::bit_ceil(std::max<size_t>(16, n_short * 2));
  size_t long_cap = std::bit_ceil(std::max<size_t>(16, n_long * 2));
  short_.Assign(short_cap, Short{0, 0, 0});
  long_.Assign(long_cap, Long{0, 0, 0, 0, 0});
  short_mask_ = short_cap - 1;
  long_mask_ = long_cap - 1;
  short_shift_ = 64 - std::countr_zero(short_cap);
  long_shift_ = 64 - std::countr_zero(long_cap);

  for (size_t r = 0; r < tokens.size(); ++r) {
    size_t len = tokens[r].size();
    if (len == 0) continue;
    const auto* p = reinterpret_cast<const uint8_t*>(blob_.data() + offsets_[r]);
    if (Find(p, len) != kNoRank) {
      return Status::Corruption("duplicate token at rank " + std::to_string(r));
    }
    if (len == 1) {
      byte_[p[0]] = static_cast<uint32_t>(r);
    } else if (len == 2) {
      pair_[p[0] | (uint32_t{p[1]} << 8)] = static_cast<uint32_t>(r);
    } else if (len <= 8) {
      uint64_t key = LoadPacked(p, len);
      AddToFilter(Mix(key ^ (uint64_t{len} << 61)));
      size_t i = ShortSlot(key, len);
      while (short_[i].len != 0) i = (i + 1) & short_mask_;
      short_[i] = Short{key, static_cast<uint32_t>(r), static_cast<uint32_t>(len)};
    } else {
      uint64_t h = HashBytes(p, len);
      AddToFilter(Mix(h));
      size_t i = LongSlot(h);
      while (long_[i].len != 0) i = (i + 1) & long_mask_;
      long_[i] = Long{h, static_cast<uint32_t>(r), offsets_[r], static_cast<uint32_t>(len), 0};
    }
  }
  return Status::Ok();
}

}  // namespace compactor::tokens
