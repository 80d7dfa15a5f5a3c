// The context builder: a session read from any bytes builds its context (pi's
// view and Compactor's strategy view) or fails with a Status, and a built
// context serializes as JSON.
#include <string>

#include "compactor/context.h"
#include "compactor/session.h"
#include "compactor/strategy.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto session = compactor::Session::FromString(std::string(compactor::fuzz::AsText(data, size)),
                                                "fuzz.jsonl");
  if (!session.ok()) return 0;
  for (bool expand : {false, true}) {
    compactor::ContextOptions options;
    if (expand) options.expander = compactor::StrategyExpander();
    auto context = compactor::BuildSessionContext(**session, options);
    if (context.ok()) FUZZ_CHECK(!compactor::ContextToJson(*context).empty());
  }
  for (size_t i = 0; i < (*session)->size(); ++i) (void)compactor::EntryMessage(**session, i);
  return 0;
}
