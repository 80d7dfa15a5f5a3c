// What the stores share about a session's bytes: the list's view of a
// session (title, entries, last activity) read without parsing every entry,
// and the rule for session ids. Private to the store module.
#ifndef COMPACTOR_SRC_STORE_SESSION_INFO_H_
#define COMPACTOR_SRC_STORE_SESSION_INFO_H_

#include <string>
#include <string_view>

#include "compactor/status.h"
#include "compactor/store.h"

namespace compactor::store_internal {

// Fills `info`'s entries, title, named and last_activity_ms from the bytes
// of a session file (header line first): entries are its lines after the
// header; the name is the latest session_info entry's; the first prompt is
// the first user message; the last activity is the last entry's timestamp
// (left as it was when no entry has one).
void FillFromBytes(std::string_view bytes, StoredSessionInfo* info);

// The string member `key` of the JSON object text `line`, else "".
std::string StringMemberOfLine(std::string_view line, const char* key);

// 1..128 characters of A-Z a-z 0-9 . _ - not starting with '.': an id that
// can name a file (the directory store) and that every store accepts.
bool SafeSessionId(std::string_view id);

// The header id of a whole session file to import (SessionStore::Import):
// kInvalidArgument when it is not a session or its id is not SafeSessionId.
Result<std::string> ImportedSessionId(std::string_view jsonl);

}  // namespace compactor::store_internal

#endif  // COMPACTOR_SRC_STORE_SESSION_INFO_H_
