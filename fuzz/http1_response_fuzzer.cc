// The built-in upstream client's response reader (Http1ResponseReader): what
// an upstream sends is untrusted, and its bytes arrive in whatever pieces
// the network makes, so the outcome (head lines, body, end state, whether
// the connection may be kept) must not depend on where the input is cut.
// The first byte picks the piece size, whether the request was a HEAD and
// whether the connection closes after the input.
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "serve/http1_response.h"

namespace {

using compactor::serve::Http1ResponseReader;

struct Outcome : Http1ResponseReader::Sink {
  std::vector<std::string> lines;
  std::string body;
  Http1ResponseReader::State state = Http1ResponseReader::State::kMore;
  bool reusable = false;
  void HeadLine(std::string_view line) override { lines.emplace_back(line); }
  bool Body(std::string_view data) override {
    body.append(data);
    return true;
  }
  bool operator==(const Outcome& o) const {
    return lines == o.lines && body == o.body && state == o.state && reusable == o.reusable;
  }
};

Outcome Read(std::string_view text, size_t step, bool head, bool eof) {
  Outcome out;
  Http1ResponseReader reader(head);
  size_t consumed = 0;
  for (size_t at = 0; at < text.size() && reader.state() == Http1ResponseReader::State::kMore;
       at += step) {
    size_t used = 0;
    reader.Feed(text.substr(at, step), out, &used);
    FUZZ_CHECK(used <= step);
    consumed += used;
  }
  FUZZ_CHECK(consumed <= text.size());
  FUZZ_CHECK(out.body.size() <= text.size());
  if (eof) reader.EndOfStream();
  out.state = reader.state();
  out.reusable = reader.reusable();
  FUZZ_CHECK(!out.reusable || out.state == Http1ResponseReader::State::kDone);
  FUZZ_CHECK((out.state == Http1ResponseReader::State::kFailed) == !reader.error().empty());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text = compactor::fuzz::AsText(data + 1, size - 1);
  bool head = (data[0] & 0x80) != 0;
  bool eof = (data[0] & 0x40) != 0;
  Outcome whole = Read(text, text.size() + 1, head, eof);
  Outcome pieces = Read(text, 1 + data[0] % 32, head, eof);
  FUZZ_CHECK(whole == pieces);
  return 0;
}
