#include "compactor/entries.h"

#include "compactor/js_json.h"

namespace compactor {
namespace {

void Key(std::string& out, std::string_view key) {
  out += ",\"";
  out += key;
  out += "\":";
}

void Base(std::string& out, const EntryBase& b) {
  out += ",\"id\":";
  AppendJsString(out, b.id);
  out += ",\"parentId\":";
  if (b.parent_id.empty()) {
    out += "null";
  } else {
    AppendJsString(out, b.parent_id);
  }
  out += ",\"timestamp\":";
  AppendJsString(out, b.timestamp);
}

void Extra(std::string& out, const ExtraFields& extra) {
  for (const auto& [k, v] : extra) {
    out.push_back(',');
    AppendJsString(out, k);
    out.push_back(':');
    out += v;
  }
}

}  // namespace

std::string MakeCompactionEntry(const EntryBase& base, const CompactionEntryFields& f) {
  std::string out = "{\"type\":\"compaction\"";
  Base(out, base);
  Key(out, "summary");
  AppendJsString(out, f.summary);
  Key(out, "firstKeptEntryId");
  AppendJsString(out, f.first_kept_entry_id);
  Key(out, "tokensBefore");
  AppendJsNumber(out, f.tokens_before);
  if (!f.details_json.empty()) {
    Key(out, "details");
    out += f.details_json;
  }
  if (f.from_hook) {
    Key(out, "fromHook");
    out += *f.from_hook ? "true" : "false";
  }
  Extra(out, f.extra);
  out.push_back('}');
  return out;
}

std::string MakeBranchSummaryEntry(const EntryBase& base, const BranchSummaryEntryFields& f) {
  std::string out = "{\"type\":\"branch_summary\"";
  Base(out, base);
  Key(out, "fromId");
  AppendJsString(out, f.from_id);
  Key(out, "summary");
  AppendJsString(out, f.summary);
  if (!f.details_json.empty()) {
    Key(out, "details");
    out += f.details_json;
  }
  if (f.from_hook) {
    Key(out, "fromHook");
    out += *f.from_hook ? "true" : "false";
  }
  Extra(out, f.extra);
  out.push_back('}');
  return out;
}

std::string MakeCustomMessageEntry(const EntryBase& base, const CustomMessageEntryFields& f) {
  // pi writes custom_message with its own fields first and the base fields last.
  std::string out = "{\"type\":\"custom_message\",\"customType\":";
  AppendJsString(out, f.custom_type);
  Key(out, "content");
  out += f.content_json;
  Key(out, "display");
  out += f.display ? "true" : "false";
  if (!f.details_json.empty()) {
    Key(out, "details");
    out += f.details_json;
  }
  Extra(out, f.extra);
  Base(out, base);
  out.push_back('}');
  return out;
}

std::string MakeMessageEntry(const EntryBase& base, std::string_view message_json) {
  std::string out = "{\"type\":\"message\"";
  Base(out, base);
  Key(out, "message");
  out += message_json;
  out.push_back('}');
  return out;
}

std::string MakeSessionHeader(const SessionHeaderFields& f) {
  std::string out = "{\"type\":\"session\",\"version\":3,\"id\":";
  AppendJsString(out, f.id);
  Key(out, "timestamp");
  AppendJsString(out, f.timestamp);
  Key(out, "cwd");
  AppendJsString(out, f.cwd);
  if (!f.parent_session.empty()) {
    Key(out, "parentSession");
    AppendJsString(out, f.parent_session);
  }
  out.push_back('}');
  return out;
}

std::string JsStringArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out.push_back(',');
    AppendJsString(out, items[i]);
  }
  out.push_back(']');
  return out;
}

}  // namespace compactor
