// The server's request reader: the head parser (http1_request.h) and the
// body decoder (Http1ResponseReader::ForBody) on whatever a client sends.
// The head's end must not depend on how much of the input has arrived (nor
// on where a resumed scan starts); a
// head that parses has a method and target, and fields whose names are
// tokens and whose values hold no line end; the body's outcome must not
// depend on where its bytes are cut. The first byte picks the piece size.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "serve/http1_request.h"
#include "serve/http1_response.h"

namespace {

using compactor::serve::Http1ResponseReader;
using compactor::serve::RequestHead;

struct BodyOutcome : Http1ResponseReader::Sink {
  std::string bytes;
  size_t used = 0;
  Http1ResponseReader::State state = Http1ResponseReader::State::kMore;
  void HeadLine(std::string_view) override { FUZZ_CHECK(false); }
  bool Body(std::string_view data) override {
    bytes.append(data);
    return true;
  }
  bool operator==(const BodyOutcome& o) const {
    return bytes == o.bytes && state == o.state &&
           (state != Http1ResponseReader::State::kDone || used == o.used);
  }
};

BodyOutcome ReadBody(const RequestHead& head, std::string_view text, size_t step) {
  BodyOutcome out;
  auto reader = Http1ResponseReader::ForBody(
      head.chunked, static_cast<uint64_t>(std::max<int64_t>(0, head.length)));
  for (size_t at = 0; at < text.size() && reader.state() == Http1ResponseReader::State::kMore;
       at += step) {
    size_t used = 0;
    reader.Feed(text.substr(at, step), out, &used);
    FUZZ_CHECK(used <= step);
    out.used += used;
  }
  out.state = reader.state();
  FUZZ_CHECK(out.used <= text.size());
  FUZZ_CHECK(out.bytes.size() <= text.size());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text = compactor::fuzz::AsText(data + 1, size - 1);
  const size_t step = 1 + data[0] % 32;
  size_t end = compactor::serve::FindRequestHeadEnd(text);
  FUZZ_CHECK(end <= text.size());
  // A head found in a prefix is the same head in the whole input, and a
  // scan resumed where a prefix without one ended finds the same end.
  for (size_t cut = 0; cut < text.size(); cut += step) {
    size_t early = compactor::serve::FindRequestHeadEnd(text.substr(0, cut));
    FUZZ_CHECK(early == 0 || early == end);
    if (early == 0) FUZZ_CHECK(compactor::serve::FindRequestHeadEnd(text, cut) == end);
  }
  if (end == 0) return 0;
  RequestHead head;
  std::string why;
  int status = compactor::serve::ParseRequestHead(text.substr(0, end), &head, &why);
  FUZZ_CHECK((status == 0) == why.empty());
  if (status != 0) return 0;
  FUZZ_CHECK(!head.method.empty() && !head.target.empty());
  FUZZ_CHECK(!(head.chunked && head.length >= 0));
  for (const auto& [name, value] : head.headers) {
    FUZZ_CHECK(!name.empty() && name.find_first_of(" \t\r\n:") == std::string::npos);
    FUZZ_CHECK(value.find_first_of("\r\n") == std::string::npos);
  }
  std::string_view rest = text.substr(end);
  FUZZ_CHECK(ReadBody(head, rest, rest.size() + 1) == ReadBody(head, rest, step));
  return 0;
}
