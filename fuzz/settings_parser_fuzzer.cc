// The settings parser: any document parses (with warnings) or fails with a
// Status; parsed settings validate without crashing.
#include "compactor/settings.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto loaded = compactor::ParseSettingsJson(compactor::fuzz::AsText(data, size), "fuzz.json");
  if (loaded.ok()) (void)compactor::ValidateSettings(loaded->settings);
  return 0;
}
