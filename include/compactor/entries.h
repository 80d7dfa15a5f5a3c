// Building new session entries as pi writes them: pi 0.73.1's key orders
// (pi's SessionManager) and JSON.stringify's escaping and numbers, so a
// file Compactor appended to diffs cleanly against a pi-written one.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_ENTRIES_H_
#define COMPACTOR_INCLUDE_COMPACTOR_ENTRIES_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace compactor {

// Fields every entry shares. parent_id empty = null (a root).
struct EntryBase {
  std::string id;
  std::string parent_id;
  std::string timestamp;  // ISO-8601, e.g. NowIsoTimestamp()
};

// Extra top-level fields appended after pi's own (name, raw JSON value). pi
// ignores fields it does not know; Compactor uses them for what pi has no
// field for (method, tokensAfter, preserveData, ...).
using ExtraFields = std::vector<std::pair<std::string, std::string>>;

struct CompactionEntryFields {
  std::string summary;
  std::string first_kept_entry_id;
  double tokens_before = 0;
  std::string details_json;       // raw JSON; empty = omitted
  std::optional<bool> from_hook;  // omitted when unset
  ExtraFields extra;
};
std::string MakeCompactionEntry(const EntryBase& base, const CompactionEntryFields& f);

struct BranchSummaryEntryFields {
  std::string from_id;  // pi: the branch point (the new parent) or "root"
  std::string summary;
  std::string details_json;
  std::optional<bool> from_hook;
  ExtraFields extra;
};
std::string MakeBranchSummaryEntry(const EntryBase& base, const BranchSummaryEntryFields& f);

struct CustomMessageEntryFields {
  std::string custom_type;
  std::string content_json;  // raw JSON: a string or a block array
  bool display = true;
  std::string details_json;  // empty = omitted
  ExtraFields extra;
};
std::string MakeCustomMessageEntry(const EntryBase& base, const CustomMessageEntryFields& f);

// {"type":"message",...,"message":<message_json>}
std::string MakeMessageEntry(const EntryBase& base, std::string_view message_json);

struct SessionHeaderFields {
  std::string id;
  std::string timestamp;
  std::string cwd;
  std::string parent_session;  // empty = omitted
};
std::string MakeSessionHeader(const SessionHeaderFields& f);

// JSON array of strings, e.g. for details.readFiles.
std::string JsStringArray(const std::vector<std::string>& items);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_ENTRIES_H_
