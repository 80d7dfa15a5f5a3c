// SHA-256 (FIPS 180-4), used once per vocabulary load to check the file
// against the pin from openai/tiktoken. A 60-line implementation avoids
// linking OpenSSL into the library for this one call; the test checks it
// against the FIPS example vectors and sha256sum.
#ifndef COMPACTOR_SRC_TOKENS_SHA256_H_
#define COMPACTOR_SRC_TOKENS_SHA256_H_

#include <string>
#include <string_view>

namespace compactor::tokens {

// Lower-case hex digest of `data`.
std::string Sha256Hex(std::string_view data);

}  // namespace compactor::tokens

#endif  // COMPACTOR_SRC_TOKENS_SHA256_H_
