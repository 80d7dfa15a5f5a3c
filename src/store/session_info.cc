// The list's view of a session from its bytes (session_info.h).
#include "store/session_info.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "compactor/js_json.h"
#include "compactor/message.h"
#include "compactor/session.h"
#include "compactor/writer.h"

namespace compactor::store_internal {
namespace {

constexpr size_t kMaxTitleBytes = 200;

// One line, cut at a character boundary.
std::string OneLine(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (s.size() > kMaxTitleBytes) {
    size_t cut = kMaxTitleBytes;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    s.resize(cut);
  }
  return s;
}

// The line around offset `at` of `bytes` (without its newline).
std::string_view LineAt(std::string_view bytes, size_t at) {
  size_t begin = bytes.rfind('\n', at == 0 ? 0 : at - 1);
  begin = begin == std::string_view::npos || at == 0 ? 0 : begin + 1;
  size_t end = bytes.find('\n', at);
  return bytes.substr(begin, (end == std::string_view::npos ? bytes.size() : end) - begin);
}

// An entry line parsed alone; discarded (not an object) when it is not one.
nlohmann::json ParseLine(std::string_view line) {
  return nlohmann::json::parse(line, nullptr, false);
}

// The string member `key` of `j`, else "" (value() would throw on another type).
std::string StringMember(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// The list's view of a session file, from its bytes without parsing every
// entry (a list of many large sessions must not load them all): entries
// are its lines after the header; the name is the latest session_info
// entry's (found from the end); the first prompt is the first user message
// (found from the start); the last activity is the last entry's timestamp
// (entries are appended in time order). A last line without its newline is
// a torn append, not an entry (as readers skip it).
}  // namespace

void FillFromBytes(std::string_view bytes, StoredSessionInfo* info) {
  size_t first = bytes.find('\n');
  std::string_view body = first == std::string_view::npos ? "" : bytes.substr(first + 1);
  info->entries = static_cast<size_t>(std::count(body.begin(), body.end(), '\n'));
  constexpr std::string_view kInfo = "\"session_info\"";
  for (size_t at = body.rfind(kInfo); at != std::string_view::npos;
       at = at == 0 ? std::string_view::npos : body.rfind(kInfo, at - 1)) {
    nlohmann::json e = ParseLine(LineAt(body, at));
    if (StringMember(e, "type") != "session_info") continue;
    std::string name = StringMember(e, "name");
    if (!name.empty()) {
      info->title = OneLine(std::move(name));
      info->named = true;
    }
    break;
  }
  constexpr std::string_view kUser = "\"user\"";
  for (size_t at = info->named ? std::string_view::npos : body.find(kUser);
       at != std::string_view::npos; at = body.find(kUser, at + 1)) {
    std::string_view line = LineAt(body, at);
    nlohmann::json e = ParseLine(line);
    if (StringMember(e, "type") != "message" || !e.contains("message") ||
        StringMember(e["message"], "role") != "user") {
      at = static_cast<size_t>(line.data() + line.size() - body.data());  // the next line
      continue;
    }
    auto m =
        ParseMessage(e["message"].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    if (m.ok()) info->title = OneLine(m->JoinedText());
    break;
  }
  std::string_view rest = body;
  while (!rest.empty() && rest.back() == '\n') rest.remove_suffix(1);
  while (!rest.empty()) {
    size_t nl = rest.rfind('\n');
    std::string_view line = nl == std::string_view::npos ? rest : rest.substr(nl + 1);
    nlohmann::json e = ParseLine(line);
    if (std::string ts = StringMember(e, "timestamp"); !ts.empty()) {
      double ms = ParseIsoTimestampMs(ts);
      if (!std::isnan(ms) && ms > 0) info->last_activity_ms = static_cast<int64_t>(ms);
      break;
    }
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(0, nl);
  }
}

std::string StringMemberOfLine(std::string_view line, const char* key) {
  return StringMember(ParseLine(line), key);
}

bool SafeSessionId(std::string_view id) {
  if (id.empty() || id.size() > 128 || id.front() == '.') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

Result<std::string> ImportedSessionId(std::string_view jsonl) {
  auto s = Session::FromString(std::string(jsonl), "the imported session");
  if (!s.ok()) return Status::InvalidArgument(s.status().message());
  std::string id = (*s)->header().id;
  if (!SafeSessionId(id))
    return Status::InvalidArgument("the session id cannot name a file: " + id);
  return id;
}

}  // namespace compactor::store_internal
