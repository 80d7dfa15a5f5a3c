// The message parser (ParseMessage): any bytes parse or fail with a Status;
// a parsed message's text can be joined.
#include "compactor/message.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto message = compactor::ParseMessage(compactor::fuzz::AsText(data, size));
  if (message.ok()) (void)message->JoinedText();
  return 0;
}
