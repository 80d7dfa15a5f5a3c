// The SSE layer (SseParser): the events of a byte stream do not depend on how
// it is cut into chunks (libcurl hands them over at arbitrary boundaries).
#include <string>
#include <vector>

#include "compactor/provider_api.h"
#include "fuzz_util.h"

namespace {

std::vector<std::string> Events(std::string_view body, size_t step) {
  std::vector<std::string> out;
  compactor::SseParser parser;
  auto on_event = [&out](std::string_view event, std::string_view data) {
    out.push_back(std::string(event) + '\0' + std::string(data));
  };
  for (size_t at = 0; at < body.size(); at += step) parser.Feed(body.substr(at, step), on_event);
  parser.Flush(on_event);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view body = compactor::fuzz::AsText(data + 1, size - 1);
  std::vector<std::string> whole = Events(body, body.size() + 1);
  std::vector<std::string> chunked = Events(body, 1 + data[0] % 32);
  FUZZ_CHECK(whole == chunked);
  return 0;
}
