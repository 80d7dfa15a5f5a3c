// An outside program on the installed library (scripts/test_consumer.sh):
// opens a session, rebuilds pi's context and counts it with the o200k
// tokenizer, printing what `compactor tokens FILE --tokenizer o200k --json`
// reports, so the script can compare the two.
//
//   consumer SESSION VOCAB_DIR
#include <cstdio>
#include <string>

#include "compactor/context.h"
#include "compactor/estimate.h"
#include "compactor/session.h"
#include "compactor/tokenizer.h"
#include "compactor/version.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: consumer SESSION VOCAB_DIR\n");
    return 2;
  }
  compactor::LoadOptions load;
  load.message_observer = compactor::TokenEstimateObserver();
  auto session = compactor::Session::Open(argv[1], load);
  if (!session.ok()) {
    std::fprintf(stderr, "%s\n", session.status().ToString().c_str());
    return 1;
  }
  auto context = compactor::BuildSessionContext(**session);
  if (!context.ok()) {
    std::fprintf(stderr, "%s\n", context.status().ToString().c_str());
    return 1;
  }
  compactor::VocabOptions vocab;
  vocab.dir = argv[2];
  auto counter = compactor::TokenCounter::FromName("o200k", vocab);
  if (!counter.ok()) {
    std::fprintf(stderr, "%s\n", counter.status().ToString().c_str());
    return 1;
  }
  compactor::ContextEstimate estimate =
      compactor::EstimateCurrentContextTokens(**session, *context, *counter);
  std::printf("version %s\nentries %zu\nmessages %zu\ntokens %lld\n", compactor::kVersion,
              (*session)->size(), context->messages.size(),
              static_cast<long long>(estimate.tokens));
  return 0;
}
