// File-operation tracking and the summary footer (compaction-algorithms.md A8).
#include "compactor/file_ops.h"

#include <algorithm>

#include "summarize/text_util.h"

namespace compactor {
namespace {

// Next code point of valid-or-not UTF-8 (invalid bytes map to U+FFFD).
uint32_t NextCodePoint(std::string_view s, size_t& i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  auto cont = [&](size_t k) {
    return k < s.size() && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80;
  };
  if (c < 0x80) {
    ++i;
    return c;
  }
  if (c >= 0xC2 && c <= 0xDF && cont(i + 1)) {
    uint32_t cp = ((c & 0x1F) << 6) | (s[i + 1] & 0x3F);
    i += 2;
    return cp;
  }
  if (c >= 0xE0 && c <= 0xEF && cont(i + 1) && cont(i + 2)) {
    uint32_t cp = ((c & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
    i += 3;
    return cp;
  }
  if (c >= 0xF0 && c <= 0xF4 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
    uint32_t cp = ((c & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6) |
                  (s[i + 3] & 0x3F);
    i += 4;
    return cp;
  }
  ++i;
  return 0xFFFD;
}

// The first UTF-16 unit of a code point: enough to order by code units, since
// two different code points with equal first units differ in the second.
inline uint32_t SortKey(uint32_t cp, uint32_t* second) {
  if (cp < 0x10000) {
    *second = 0;
    return cp;
  }
  uint32_t v = cp - 0x10000;
  *second = 0xDC00 + (v & 0x3FF);
  return 0xD800 + (v >> 10);
}

}  // namespace

bool JsStringLess(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  uint32_t pending_a = 0, pending_b = 0;  // low surrogates still to compare
  while (true) {
    uint32_t ua, ub;
    bool has_a = pending_a != 0 || i < a.size();
    bool has_b = pending_b != 0 || j < b.size();
    if (!has_a || !has_b) return !has_a && has_b;
    if (pending_a != 0) {
      ua = pending_a;
      pending_a = 0;
    } else {
      ua = SortKey(NextCodePoint(a, i), &pending_a);
    }
    if (pending_b != 0) {
      ub = pending_b;
      pending_b = 0;
    } else {
      ub = SortKey(NextCodePoint(b, j), &pending_b);
    }
    if (ua != ub) return ua < ub;
  }
}

void ExtractFileOps(const Message& message, FileOps& ops) {
  if (message.role != Role::kAssistant || message.content_is_string) return;
  for (const ContentBlock& b : message.content) {
    if (b.kind != ContentBlock::Kind::kToolCall) continue;
    if (b.tool_name != "read" && b.tool_name != "write" && b.tool_name != "edit") continue;
    std::optional<std::string> path = summarize::JsonStringMember(b.arguments_json, "path");
    if (!path || path->empty()) continue;
    if (b.tool_name == "read") {
      ops.read.insert(std::move(*path));
    } else if (b.tool_name == "write") {
      ops.written.insert(std::move(*path));
    } else {
      ops.edited.insert(std::move(*path));
    }
  }
}

void ExtractFileOps(std::span<const Message> messages, FileOps& ops) {
  for (const Message& m : messages) ExtractFileOps(m, ops);
}

void SeedFileOps(std::span<const std::string> read_files,
                 std::span<const std::string> modified_files, FileOps& ops) {
  for (const std::string& f : read_files) ops.read.insert(f);
  for (const std::string& f : modified_files) ops.edited.insert(f);
}

FileLists ComputeFileLists(const FileOps& ops) {
  FileLists lists;
  std::set<std::string> modified = ops.edited;
  modified.insert(ops.written.begin(), ops.written.end());
  for (const std::string& f : ops.read) {
    if (!modified.count(f)) lists.read_files.push_back(f);
  }
  lists.modified_files.assign(modified.begin(), modified.end());
  auto js_less = [](const std::string& a, const std::string& b) { return JsStringLess(a, b); };
  std::sort(lists.read_files.begin(), lists.read_files.end(), js_less);
  std::sort(lists.modified_files.begin(), lists.modified_files.end(), js_less);
  return lists;
}

std::string FormatFileOperations(const FileLists& lists) {
  // Appends only: g++ 12 warns falsely (-Wrestrict) on `"literal" + string`.
  std::string out;
  auto block = [&out](std::string_view tag, const std::vector<std::string>& files) {
    if (files.empty()) return;
    out.append("\n\n<").append(tag).append(">\n");
    for (size_t i = 0; i < files.size(); ++i) {
      if (i > 0) out.push_back('\n');
      out.append(files[i]);
    }
    out.append("\n</").append(tag).append(">");
  };
  block("read-files", lists.read_files);
  block("modified-files", lists.modified_files);
  return out;
}

}  // namespace compactor
