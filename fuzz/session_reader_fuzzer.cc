// The session reader (Session::FromString): any bytes load or fail with a
// Status, and every entry the index holds can be read back.
#include <string>

#include "compactor/session.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using compactor::Session;
  auto session =
      Session::FromString(std::string(compactor::fuzz::AsText(data, size)), "fuzz.jsonl");
  if (!session.ok()) return 0;
  const Session& s = **session;
  for (size_t i = 0; i < s.size(); ++i) {
    const compactor::Entry& e = s.entry(i);
    (void)e;
  }
  return 0;
}
