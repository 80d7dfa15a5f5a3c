#include "tokens/vocab_file.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <new>

#include "tokens/sha256.h"

namespace compactor::tokens {
namespace {

constexpr EncodingSpec kSpecs[] = {
    {Encoding::kO200kBase,
     "o200k_base",
     "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
     199998,
     {{{"<|endoftext|>", 199999}, {"<|endofprompt|>", 200018}, {"", 0}, {"", 0}, {"", 0}}}},
    {Encoding::kCl100kBase,
     "cl100k_base",
     "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
     100256,
     {{{"<|endoftext|>", 100257},
       {"<|fim_prefix|>", 100258},
       {"<|fim_middle|>", 100259},
       {"<|fim_suffix|>", 100260},
       {"<|endofprompt|>", 100276}}}},
};

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

bool DecodeBase64(std::string_view in, std::string* out) {
  out->clear();
  if (in.size() % 4 != 0 || in.empty()) return false;
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '=') {
      if (i + 2 < in.size()) return false;
      ++pad;
      continue;
    }
    if (pad) return false;
    int v = Base64Value(c);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return pad <= 2;
}

size_t AlignUp(size_t n) { return (n + kVocabAlign - 1) / kVocabAlign * kVocabAlign; }

// Slots for `n` entries at a load factor <= 1/2, which keeps linear-probe
// chains short for the misses the merge loop makes all the time.
int SlotBits(size_t n) { return std::countr_zero(std::bit_ceil(std::max<size_t>(16, n * 2))); }

// The size each section must have, from the header's counts.
uint64_t ExpectedSectionSize(int section, uint64_t rank_count, int short_bits, int long_bits) {
  switch (section) {
    case kByteTable:
      return 256 * sizeof(uint32_t);
    case kPairTable:
      return 65536 * sizeof(uint32_t);
    case kFilter:
      return (uint64_t{1} << RankTable::kFilterBits) / 8;
    case kShortTable:
      return (uint64_t{1} << short_bits) * sizeof(RankTable::Short);
    case kLongTable:
      return (uint64_t{1} << long_bits) * sizeof(RankTable::Long);
    case kOffsets:
      return (rank_count + 1) * sizeof(uint32_t);
    default:
      return 0;  // the blob: its size comes from the offsets
  }
}

// Where each table is, once the header has been checked.
RankTable::Tables TablesAt(const VocabHeader& h, const uint8_t* data) {
  auto at = [&](int s) { return data + h.sections[s].offset; };
  RankTable::Tables t;
  t.byte = reinterpret_cast<const uint32_t*>(at(kByteTable));
  t.pair = reinterpret_cast<const uint32_t*>(at(kPairTable));
  t.filter = reinterpret_cast<const uint64_t*>(at(kFilter));
  t.short_slots = reinterpret_cast<const RankTable::Short*>(at(kShortTable));
  t.short_bits = static_cast<int>(h.short_bits);
  t.short_max_probe = h.short_max_probe;
  t.long_slots = reinterpret_cast<const RankTable::Long*>(at(kLongTable));
  t.long_bits = static_cast<int>(h.long_bits);
  t.long_max_probe = h.long_max_probe;
  t.offsets = reinterpret_cast<const uint32_t*>(at(kOffsets));
  t.rank_count = h.rank_count;
  t.blob = reinterpret_cast<const char*>(at(kBlob));
  t.blob_size = h.sections[kBlob].size;
  t.token_count = h.token_count;
  return t;
}

// Writes every token's entry into the tables of `image`, whose byte and pair
// tables hold kNoRank and whose other tables are zero, and sets the header's
// probe bounds.
Status InsertTokens(const std::vector<std::string>& tokens, VocabHeader* header,
                    VocabImage* image) {
  VocabHeader& h = *header;
  uint8_t* base = image->data();
  auto* byte = reinterpret_cast<uint32_t*>(base + h.sections[kByteTable].offset);
  auto* pair = reinterpret_cast<uint32_t*>(base + h.sections[kPairTable].offset);
  auto* filter = reinterpret_cast<uint64_t*>(base + h.sections[kFilter].offset);
  auto* short_slots = reinterpret_cast<RankTable::Short*>(base + h.sections[kShortTable].offset);
  auto* long_slots = reinterpret_cast<RankTable::Long*>(base + h.sections[kLongTable].offset);
  const auto* offsets = reinterpret_cast<const uint32_t*>(base + h.sections[kOffsets].offset);
  const uint8_t* blob = base + h.sections[kBlob].offset;
  const size_t short_mask = (size_t{1} << h.short_bits) - 1;
  const size_t long_mask = (size_t{1} << h.long_bits) - 1;
  // The finished part of the tables answers the duplicate check; the probe
  // bounds grow as entries are placed.
  h.short_max_probe = h.long_max_probe = 0;
  RankTable::Tables tables = TablesAt(h, base);
  auto duplicate = [&](const uint8_t* p, size_t len) {
    tables.short_max_probe = h.short_max_probe;
    tables.long_max_probe = h.long_max_probe;
    return RankTable(tables).Find(p, len) != kNoRank;
  };
  auto add_to_filter = [&](uint64_t mixed) {
    uint64_t bit = RankTable::FilterBit(mixed);
    filter[bit >> 6] |= uint64_t{1} << (bit & 63);
  };
  for (size_t r = 0; r < tokens.size(); ++r) {
    size_t len = tokens[r].size();
    if (len == 0) continue;
    const uint8_t* p = blob + offsets[r];
    const auto rank = static_cast<uint32_t>(r);
    if (duplicate(p, len)) {
      return Status::Corruption("duplicate token at rank " + std::to_string(r));
    }
    if (len == 1) {
      byte[p[0]] = rank;
    } else if (len == 2) {
      pair[p[0] | (uint32_t{p[1]} << 8)] = rank;
    } else if (len <= 8) {
      uint64_t key = LoadPacked(p, len);
      uint64_t mixed = RankTable::ShortMix(key, len);
      add_to_filter(mixed);
      size_t i = mixed >> (64 - h.short_bits);
      uint32_t probe = 0;
      for (; short_slots[i].len != 0; ++probe) i = (i + 1) & short_mask;
      short_slots[i] = RankTable::Short{key, rank, static_cast<uint32_t>(len)};
      h.short_max_probe = std::max(h.short_max_probe, probe);
    } else {
      uint64_t hash = HashBytes(p, len);
      uint64_t mixed = RankTable::Mix(hash);
      add_to_filter(mixed);
      size_t i = mixed >> (64 - h.long_bits);
      uint32_t probe = 0;
      for (; long_slots[i].len != 0; ++probe) i = (i + 1) & long_mask;
      long_slots[i] = RankTable::Long{hash, rank, offsets[r], static_cast<uint32_t>(len), 0};
      h.long_max_probe = std::max(h.long_max_probe, probe);
    }
  }
  return Status::Ok();
}

Status CheckSections(const VocabHeader& h) {
  uint64_t end = kVocabHeaderSize;
  for (int s = 0; s < kVocabSections; ++s) {
    const VocabHeader::Section& sec = h.sections[s];
    uint64_t want = ExpectedSectionSize(s, h.rank_count, static_cast<int>(h.short_bits),
                                        static_cast<int>(h.long_bits));
    if (s == kBlob ? sec.size < kReadPadding : sec.size != want) {
      return Status::Corruption("section " + std::to_string(s) + " has " +
                                std::to_string(sec.size) + " bytes, expected " +
                                std::to_string(want));
    }
    if (sec.offset % kVocabAlign != 0 || sec.offset < end || sec.size > h.file_size ||
        sec.offset > h.file_size - sec.size) {
      return Status::Corruption("section " + std::to_string(s) + " at offset " +
                                std::to_string(sec.offset) + " is misplaced");
    }
    end = sec.offset + sec.size;
  }
  return Status::Ok();
}

// The checks that need only the header and the file size.
Status CheckHeader(const EncodingSpec& spec, const uint8_t* data, const VocabHeader& h,
                   size_t size) {
  if (std::memcmp(h.magic, kVocabMagic, sizeof h.magic) != 0) {
    return Status::Corruption("not a binary vocabulary (bad magic)");
  }
  if (h.version != kVocabFormatVersion) {
    return Status::Corruption("format version " + std::to_string(h.version) +
                              ", this build reads version " + std::to_string(kVocabFormatVersion) +
                              " (rebuild to reconvert)");
  }
  if (VocabChecksum(data + 16, kVocabHeaderSize - 16) != h.header_checksum) {
    return Status::Corruption("header checksum mismatch (damaged file)");
  }
  if (h.header_size != kVocabHeaderSize || h.file_size != size || size % kVocabAlign != 0) {
    return Status::Corruption("truncated or resized: the header says " +
                              std::to_string(h.file_size) + " bytes, the file has " +
                              std::to_string(size));
  }
  std::string_view name(h.encoding, strnlen(h.encoding, sizeof h.encoding));
  if (name != spec.name) {
    return Status::Corruption("holds encoding '" + std::string(name) + "', expected " +
                              std::string(spec.name));
  }
  std::string_view sha(h.source_sha256, sizeof h.source_sha256);
  if (sha != spec.sha256) {
    return Status::Corruption("made from a .tiktoken with sha256 " + std::string(sha) +
                              ", expected " + std::string(spec.sha256));
  }
  if (h.token_count != spec.ranks || h.rank_count < h.token_count || h.rank_count >= (1u << 24)) {
    return Status::Corruption("has " + std::to_string(h.token_count) + " tokens in " +
                              std::to_string(h.rank_count) + " ranks, expected " +
                              std::to_string(spec.ranks) + " tokens");
  }
  if (h.short_bits < 4 || h.short_bits > 30 || h.long_bits < 4 || h.long_bits > 30 ||
      h.filter_bits != RankTable::kFilterBits || h.short_max_probe >= (1u << h.short_bits) ||
      h.long_max_probe >= (1u << h.long_bits)) {
    return Status::Corruption("unexpected table sizes in the header");
  }
  return CheckSections(h);
}

}  // namespace

const EncodingSpec& SpecOf(Encoding encoding) {
  return kSpecs[encoding == Encoding::kO200kBase ? 0 : 1];
}

uint64_t VocabChecksum(const uint8_t* data, size_t size) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t lane[4] = {0x243F6A8885A308D3ull, 0x13198A2E03707344ull, 0xA4093822299F31D0ull,
                      0x082EFA98EC4E6C89ull};
  // Each step is a bijection of the lane for a fixed word and of the word for
  // a fixed lane, so one changed word always changes the result.
  auto step = [](uint64_t h, uint64_t w) {
    h = (h ^ w) * kMul;
    return h ^ (h >> 29);
  };
  size_t i = 0;
  for (; i + 32 <= size; i += 32) {
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, data + i + 8 * k, 8);
      lane[k] = step(lane[k], w);
    }
  }
  for (int k = 0; i + 8 <= size; i += 8, ++k) {
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    lane[k] = step(lane[k], w);
  }
  uint64_t h = size;
  for (uint64_t l : lane) h = std::rotl(h, 17) ^ RankTable::Mix(l);
  return h;
}

Result<std::vector<std::string>> ParseTiktoken(const EncodingSpec& spec, std::string_view content,
                                               bool verify_sha256) {
  const std::string file = std::string(spec.name) + kTiktokenSuffix;
  if (verify_sha256) {
    std::string got = Sha256Hex(content);
    if (got != spec.sha256) {
      return Status::Corruption(file + " has sha256 " + got + ", expected " +
                                std::string(spec.sha256) + " (reinstall with " +
                                kInstallVocabCommand + ")");
    }
  }
  std::vector<std::string> by_rank;
  by_rank.reserve(spec.ranks);
  size_t line_no = 0;
  std::string bytes;
  while (!content.empty()) {
    size_t nl = content.find('\n');
    std::string_view line = content.substr(0, nl);
    content = nl == std::string_view::npos ? std::string_view() : content.substr(nl + 1);
    ++line_no;
    if (line.empty()) continue;
    size_t sp = line.find(' ');
    auto bad = [&](std::string_view why) {
      return Status::Corruption(file + " line " + std::to_string(line_no) + ": " +
                                std::string(why));
    };
    if (sp == std::string_view::npos) return bad("expected '<base64> <rank>'");
    if (!DecodeBase64(line.substr(0, sp), &bytes) || bytes.empty()) return bad("bad base64");
    uint64_t rank = 0;
    std::string_view num = line.substr(sp + 1);
    if (num.empty() || num.size() > 9) return bad("bad rank");
    for (char c : num) {
      if (c < '0' || c > '9') return bad("bad rank");
      rank = rank * 10 + static_cast<uint64_t>(c - '0');
    }
    if (rank >= 1'000'000) return bad("rank out of range");
    if (rank >= by_rank.size()) by_rank.resize(rank + 1);
    if (!by_rank[rank].empty()) return bad("duplicate rank");
    by_rank[rank] = bytes;
  }
  size_t count = 0;
  for (const auto& t : by_rank) count += !t.empty();
  if (count != spec.ranks) {
    return Status::Corruption(file + " has " + std::to_string(count) + " tokens, expected " +
                              std::to_string(spec.ranks));
  }
  return by_rank;
}

VocabImage::VocabImage(size_t size) {
  constexpr size_t kHuge = size_t{2} << 20;
  size_t bytes = (size + kHuge - 1) / kHuge * kHuge;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kHuge, bytes));
  if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  ::madvise(p, bytes, MADV_HUGEPAGE);  // a hint; failure is harmless
#endif
  std::memset(p, 0, size);
  data_.reset(p);
  size_ = size;
}

void VocabImage::Free::operator()(uint8_t* p) const { std::free(p); }

Result<VocabImage> BuildVocabImage(const EncodingSpec& spec, std::string_view source_sha256,
                                   const std::vector<std::string>& tokens) {
  size_t n_short = 0, n_long = 0, count = 0, blob_size = 0, max_len = 0;
  for (const std::string& t : tokens) {
    blob_size += t.size();
    max_len = std::max(max_len, t.size());
    if (t.empty()) continue;
    ++count;
    if (t.size() > 8) {
      ++n_long;
    } else if (t.size() > 2) {
      ++n_short;
    }
  }
  if (tokens.size() >= (1u << 24) || blob_size + kReadPadding > UINT32_MAX ||
      source_sha256.size() != 64 || spec.name.size() >= sizeof(VocabHeader::encoding)) {
    return Status::InvalidArgument("vocabulary too large for the binary format");
  }
  VocabHeader h{};
  std::memcpy(h.magic, kVocabMagic, sizeof h.magic);
  h.version = kVocabFormatVersion;
  h.header_size = kVocabHeaderSize;
  std::memcpy(h.encoding, spec.name.data(), spec.name.size());
  std::memcpy(h.source_sha256, source_sha256.data(), source_sha256.size());
  h.rank_count = static_cast<uint32_t>(tokens.size());
  h.token_count = static_cast<uint32_t>(count);
  h.max_token_len = static_cast<uint32_t>(max_len);
  h.short_bits = static_cast<uint32_t>(SlotBits(n_short));
  h.long_bits = static_cast<uint32_t>(SlotBits(n_long));
  h.filter_bits = RankTable::kFilterBits;
  size_t offset = kVocabHeaderSize;
  for (int s = 0; s < kVocabSections; ++s) {
    uint64_t size = s == kBlob
                        ? blob_size + kReadPadding
                        : ExpectedSectionSize(s, h.rank_count, static_cast<int>(h.short_bits),
                                              static_cast<int>(h.long_bits));
    h.sections[s] = {offset, size};
    offset = AlignUp(offset + size);
  }
  h.file_size = offset;

  VocabImage image(offset);
  uint8_t* base = image.data();
  std::memset(base + h.sections[kByteTable].offset, 0xFF, h.sections[kByteTable].size);
  std::memset(base + h.sections[kPairTable].offset, 0xFF, h.sections[kPairTable].size);
  auto* offsets = reinterpret_cast<uint32_t*>(base + h.sections[kOffsets].offset);
  uint8_t* blob = base + h.sections[kBlob].offset;
  uint32_t at = 0;
  for (size_t r = 0; r < tokens.size(); ++r) {
    offsets[r] = at;
    std::copy(tokens[r].begin(), tokens[r].end(), blob + at);
    at += static_cast<uint32_t>(tokens[r].size());
  }
  offsets[tokens.size()] = at;
  COMPACTOR_RETURN_IF_ERROR(InsertTokens(tokens, &h, &image));
  h.tables_checksum = VocabChecksum(base + kVocabHeaderSize, h.file_size - kVocabHeaderSize);
  std::memcpy(base, &h, sizeof h);
  h.header_checksum = VocabChecksum(base + 16, kVocabHeaderSize - 16);
  std::memcpy(base, &h, sizeof h);
  return image;
}

Result<VocabView> ViewVocabImage(const EncodingSpec& spec, const uint8_t* data, size_t size,
                                 bool check_tables) {
  if (size < kVocabHeaderSize) {
    return Status::Corruption("truncated: " + std::to_string(size) + " bytes, less than the " +
                              std::to_string(kVocabHeaderSize) + "-byte header");
  }
  if (reinterpret_cast<uintptr_t>(data) % 8 != 0) {
    return Status::Internal("vocabulary image not 8-byte aligned");
  }
  VocabHeader h;
  std::memcpy(&h, data, sizeof h);
  COMPACTOR_RETURN_IF_ERROR(CheckHeader(spec, data, h, size));
  if (check_tables &&
      VocabChecksum(data + kVocabHeaderSize, size - kVocabHeaderSize) != h.tables_checksum) {
    return Status::Corruption("tables checksum mismatch (damaged file)");
  }
  RankTable::Tables t = TablesAt(h, data);
  if (t.offsets[t.rank_count] + kReadPadding != h.sections[kBlob].size ||
      h.max_token_len > t.offsets[t.rank_count]) {
    return Status::Corruption("token offsets do not match the blob");
  }
  // The merge relies on every single byte being a token.
  for (int b = 0; b < 256; ++b) {
    if (t.byte[b] == kNoRank) {
      return Status::Corruption("lacks the token for byte " + std::to_string(b));
    }
  }
  return VocabView{RankTable(t), h.max_token_len};
}

}  // namespace compactor::tokens
