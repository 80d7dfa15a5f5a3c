#include "tokens/rank_table.h"

#include <bit>

namespace compactor::tokens {

Status RankTable::Build(std::vector<std::string> tokens) {
  size_t n_short = 0, n_long = 0;
  offsets_.assign(tokens.size() + 1, 0);
  blob_.clear();
  for (size_t r = 0; r < tokens.size(); ++r) {
    offsets_[r] = static_cast<uint32_t>(blob_.size());
    blob_ += tokens[r];
    if (tokens[r].empty()) continue;
    (tokens[r].size() <= 8 ? n_short : n_long)++;
  }
  offsets_[tokens.size()] = static_cast<uint32_t>(blob_.size());
  blob_.append(kReadPadding, '\0');
  count_ = n_short + n_long;

  // Load factor <= 1/2 keeps linear-probe chains short for the misses the
  // merge loop makes all the time.
  size_t short_cap = std::bit_ceil(std::max<size_t>(16, n_short * 2));
  size_t long_cap = std::bit_ceil(std::max<size_t>(16, n_long * 2));
  short_.assign(short_cap, Short{0, 0, 0});
  long_.assign(long_cap, Long{0, 0, 0, 0, 0});
  short_mask_ = short_cap - 1;
  long_mask_ = long_cap - 1;
  short_shift_ = 64 - std::countr_zero(short_cap);

  for (size_t r = 0; r < tokens.size(); ++r) {
    size_t len = tokens[r].size();
    if (len == 0) continue;
    const auto* p = reinterpret_cast<const uint8_t*>(blob_.data() + offsets_[r]);
    if (Find(p, len) != kNoRank) {
      return Status::Corruption("duplicate token at rank " + std::to_string(r));
    }
    if (len <= 8) {
      uint64_t key = LoadPacked(p, len);
      size_t i = ShortSlot(key, len);
      while (short_[i].len != 0) i = (i + 1) & short_mask_;
      short_[i] = Short{key, static_cast<uint32_t>(r), static_cast<uint32_t>(len)};
    } else {
      uint64_t h = HashBytes(p, len);
      size_t i = h & long_mask_;
      while (long_[i].len != 0) i = (i + 1) & long_mask_;
      long_[i] = Long{h, static_cast<uint32_t>(r), offsets_[r], static_cast<uint32_t>(len), 0};
    }
  }
  return Status::Ok();
}

}  // namespace compactor::tokens
