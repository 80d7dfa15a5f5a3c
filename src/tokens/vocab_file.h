// The binary vocabulary format (docs/tokenizers.md, "Binary vocabulary
// format"): the rank tables of one encoding laid out exactly as RankTable
// reads them, behind a fixed header, so that loading a vocabulary is a
// mapping and a few checks instead of parsing 200,000 base64 lines and
// building hash tables. tools/vocab_convert.cc writes the files at build
// time from the .tiktoken files; Tokenizer::Load maps them.
#ifndef COMPACTOR_SRC_TOKENS_VOCAB_FILE_H_
#define COMPACTOR_SRC_TOKENS_VOCAB_FILE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compactor/status.h"
#include "compactor/tokenizer.h"
#include "tokens/rank_table.h"

namespace compactor::tokens {

// What is known about an encoding before any file is read.
struct EncodingSpec {
  Encoding encoding;
  std::string_view name;
  std::string_view sha256;  // of the .tiktoken file, pinned in openai/tiktoken
  size_t ranks;             // ordinary tokens
  std::array<std::pair<std::string_view, uint32_t>, 5> specials;  // unused entries are ""
};
const EncodingSpec& SpecOf(Encoding encoding);

// "<name>.cvocab" is the binary form, "<name>.tiktoken" the source.
inline constexpr char kBinarySuffix[] = ".cvocab";
inline constexpr char kTiktokenSuffix[] = ".tiktoken";

inline constexpr char kVocabMagic[8] = {'C', 'M', 'P', 'V', 'O', 'C', 'A', 'B'};
// Bump on any change of the layout or of the hash functions in rank_table.h.
inline constexpr uint32_t kVocabFormatVersion = 1;
inline constexpr size_t kVocabHeaderSize = 320;
// Every section starts at a multiple of this, and the file size is one too.
inline constexpr size_t kVocabAlign = 64;

// The tables of a vocabulary file, in file order.
enum VocabSection { kByteTable, kPairTable, kFilter, kShortTable, kLongTable, kOffsets, kBlob };
inline constexpr int kVocabSections = 7;

// The header: the first kVocabHeaderSize bytes of the file, little-endian.
struct VocabHeader {
  char magic[8];             // kVocabMagic
  uint64_t header_checksum;  // VocabChecksum of header bytes [16, kVocabHeaderSize)
  uint32_t version;          // kVocabFormatVersion
  uint32_t header_size;      // kVocabHeaderSize
  uint64_t file_size;        // the whole file
  char encoding[16];         // "o200k_base", NUL-padded
  char source_sha256[64];    // lower-case hex sha256 of the .tiktoken it was made from
  uint32_t rank_count;       // offsets has rank_count + 1 entries
  uint32_t token_count;      // ranks that have bytes (ordinary tokens)
  uint32_t max_token_len;    // bytes of the longest token
  uint32_t short_bits;       // the short table has 2^short_bits slots
  uint32_t long_bits;        // the long table has 2^long_bits slots
  uint32_t filter_bits;      // RankTable::kFilterBits
  uint32_t short_max_probe;  // the farthest a short entry sits from its home slot
  uint32_t long_max_probe;   // the same for the long table
  uint64_t tables_checksum;  // VocabChecksum of bytes [kVocabHeaderSize, file_size)
  struct Section {
    uint64_t offset;  // from the start of the file, a multiple of kVocabAlign
    uint64_t size;    // bytes
  } sections[kVocabSections];
  uint8_t reserved[56];  // 0
};
static_assert(sizeof(VocabHeader) == kVocabHeaderSize);

// A 64-bit checksum of `size` bytes (a multiple of 8), four interleaved
// multiply-xorshift lanes over little-endian words. Not cryptographic: it
// catches damaged files, and any single changed word with certainty.
// Hand-written: it runs at 10+ GB/s (4x zlib's crc32, the nearest packaged
// checksum), and the format needs one fixed, documented function.
uint64_t VocabChecksum(const uint8_t* data, size_t size);

// Tokens by rank (an empty string is a gap: no token has that rank) from the
// content of a .tiktoken file. kCorruption, naming the line, for a bad file;
// with `verify_sha256`, first for a sha256 other than the pin.
Result<std::vector<std::string>> ParseTiktoken(const EncodingSpec& spec, std::string_view content,
                                               bool verify_sha256);

// Owned bytes aligned to 2 MB (huge-page advised: the tables are several MB
// of random accesses, and TLB misses cost as much as cache misses).
class VocabImage {
 public:
  VocabImage() = default;
  // Zero-filled. Throws std::bad_alloc.
  explicit VocabImage(size_t size);
  const uint8_t* data() const { return data_.get(); }
  uint8_t* data() { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t size_ = 0;
};

// The binary file for `tokens` (by rank, as ParseTiktoken returns them),
// recording `source_sha256` (hex). Deterministic: the same tokens give the
// same bytes. kCorruption on a duplicate token.
Result<VocabImage> BuildVocabImage(const EncodingSpec& spec, std::string_view source_sha256,
                                   const std::vector<std::string>& tokens);

struct VocabView {
  RankTable table;
  size_t max_token_len = 0;
};

// Checks a binary vocabulary and returns the tables in it, pointing into
// `data` (which must outlive them; 8-byte aligned). Checks the size, magic,
// version and header checksum, the file size against `size`, the encoding
// and the sha256 pin of `spec`, the token count, the table sizes and the
// section layout, the end of the blob and the 256 byte tokens: all from the
// header and two pages, so a load reads almost nothing of a mapped file.
// With `check_tables`, also the checksum of every table (reads the whole
// file: ~10 ms for o200k). kCorruption says which check failed (the caller
// adds the path). Whatever the tables hold, lookups stay inside them.
Result<VocabView> ViewVocabImage(const EncodingSpec& spec, const uint8_t* data, size_t size,
                                 bool check_tables);

}  // namespace compactor::tokens

#endif  // COMPACTOR_SRC_TOKENS_VOCAB_FILE_H_
