// UTF-8 validation and WHATWG-style repair. tiktoken only sees Unicode strings:
// when Node reads bytes that are not valid UTF-8, each maximal invalid subpart
// becomes one U+FFFD. Doing the same here makes our ids match for such input.
#ifndef COMPACTOR_SRC_TOKENS_UTF8_H_
#define COMPACTOR_SRC_TOKENS_UTF8_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace compactor::tokens {

// Offset of the first byte that starts an invalid sequence, or npos.
size_t FindInvalidUtf8(std::string_view s);

// `s` with every maximal invalid subpart replaced by U+FFFD (EF BF BD), as the
// WHATWG UTF-8 decoder does.
std::string RepairUtf8(std::string_view s);

}  // namespace compactor::tokens

#endif  // COMPACTOR_SRC_TOKENS_UTF8_H_
