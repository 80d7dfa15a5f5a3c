#include "compactor/file_ops.h"

#include <simdjson.h>
#include <string.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "prepare/file_ops_internal.h"
#include "util/simdjson_alloc.h"
#include "util/utf8.h"

namespace compactor {
namespace {

using Json = nlohmann::json;

Json ParseOrNull(std::string_view text) {
  if (text.empty()) return Json();
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? Json() : j;
}

// Next code point of UTF-8 `s` at `i` (advancing `i`); an invalid sequence
// decodes as U+FFFD, as Node's decoder does.
uint32_t NextCodePoint(std::string_view s, size_t& i) {
  uint32_t cp;
  i += internal::DecodeUtf8(s, i, &cp);
  return cp;
}

void AddPath(const Json& arguments, const std::string& tool, FileOps& ops) {
  if (!arguments.is_object()) return;
  auto it = arguments.find("path");
  if (it == arguments.end() || !it->is_string()) return;
  std::string path = it->get<std::string>();
  if (!path.empty()) internal::AddFileOp(tool, std::move(path), ops);
}

bool IsFileTool(std::string_view name) {
  return name == "read" || name == "write" || name == "edit";
}

}  // namespace

bool Utf16Less(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  uint16_t ua[2], ub[2];
  int na = 0, nb = 0, pa = 0, pb = 0;
  for (;;) {
    if (pa == na) {
      if (i >= a.size()) {
        na = 0;
      } else {
        na = internal::ToUtf16(NextCodePoint(a, i), ua);
      }
      pa = 0;
    }
    if (pb == nb) {
      if (j >= b.size()) {
        nb = 0;
      } else {
        nb = internal::ToUtf16(NextCodePoint(b, j), ub);
      }
      pb = 0;
    }
    if (na == 0 || nb == 0) return na == 0 && nb != 0;
    if (ua[pa] != ub[pb]) return ua[pa] < ub[pb];
    ++pa;
    ++pb;
  }
}

namespace {

// Adds the "path" of a file tool call's arguments (JSON text): the last
// "path" member, as JSON.parse keeps. simdjson's DOM (a write's arguments hold
// a whole file, which nlohmann would copy into a tree); text it rejects goes
// to the nlohmann parse as before.
void AddArgumentsPath(std::string_view arguments_json, const std::string& tool, FileOps& ops) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(arguments_json.data(), arguments_json.size(), true).get(root)) {
    AddPath(ParseOrNull(arguments_json), tool, ops);
    return;
  }
  simdjson::dom::object args;
  if (root.get_object().get(args)) return;
  std::optional<std::string_view> path;
  for (simdjson::dom::key_value_pair member : args) {
    if (member.key != "path") continue;
    std::string_view value;
    path = member.value.get_string().get(value) ? std::nullopt : std::optional(value);
  }
  if (path && !path->empty()) internal::AddFileOp(tool, std::string(*path), ops);
}

}  // namespace

void ExtractFileOps(const Message& message, FileOps& ops) {
  if (message.role != Role::kAssistant) return;
  for (const ContentBlock& block : message.content) {
    if (block.kind != ContentBlock::Kind::kToolCall || !IsFileTool(block.tool_name)) continue;
    AddArgumentsPath(block.arguments_json, block.tool_name, ops);
  }
}

void ExtractFileOpsFromJson(std::string_view message_json, FileOps& ops) {
  // Most messages call no tool: skip them without parsing. memmem rather than
  // string_view::find, which stops at every '"' of the message.
  static constexpr std::string_view kNeedle = "\"toolCall\"";
  if (memmem(message_json.data(), message_json.size(), kNeedle.data(), kNeedle.size()) == nullptr)
    return;
  internal::ExtractFileOpsFromToolCallJson(message_json, ops);
}

namespace internal {

void ExtractFileOpsFromToolCallJson(std::string_view message_json, FileOps& ops) {
  // One forward pass with simdjson On-Demand (no DOM of the long thinking and
  // text blocks). A repeated key counts its last value, as JSON.parse keeps
  // (checked against pi): the last "role", the last "content" array, and in
  // each block its last "type", "name", "arguments" and arguments' "path".
  thread_local simdjson::ondemand::parser parser;
  thread_local simdjson::padded_string buffer;
  internal::GrowPadded(buffer, message_json.size());
  internal::ReserveOnDemand(parser, message_json.size());
  std::memcpy(buffer.data(), message_json.data(), message_json.size());
  simdjson::ondemand::document doc;
  if (parser.iterate(buffer.data(), message_json.size(), buffer.size() + simdjson::SIMDJSON_PADDING)
          .get(doc))
    return;
  simdjson::ondemand::object m;
  if (doc.get_object().get(m)) return;
  struct Op {
    std::string tool, path;
  };
  std::vector<Op> found;  // from the last "content"
  bool assistant = false;
  for (auto field_result : m) {
    simdjson::ondemand::field field;
    std::string_view key;
    if (std::move(field_result).get(field) || field.unescaped_key().get(key)) return;
    simdjson::ondemand::value v = field.value();
    if (key == "role") {
      std::string_view role;
      assistant = !v.get_string().get(role) && role == "assistant";
    } else if (key == "content") {
      found.clear();
      simdjson::ondemand::json_type ct;
      if (v.type().get(ct)) return;
      if (ct != simdjson::ondemand::json_type::array) continue;
      simdjson::ondemand::array content;
      if (v.get_array().get(content)) return;
      for (auto item_result : content) {
        simdjson::ondemand::value item;
        if (std::move(item_result).get(item)) return;
        simdjson::ondemand::json_type t;
        if (item.type().get(t)) return;
        if (t != simdjson::ondemand::json_type::object) continue;
        simdjson::ondemand::object block;
        if (item.get_object().get(block)) return;
        bool is_call = false;
        std::string name;
        std::optional<std::string> path;
        for (auto bf_result : block) {
          simdjson::ondemand::field bf;
          std::string_view bk;
          if (std::move(bf_result).get(bf) || bf.unescaped_key().get(bk)) return;
          simdjson::ondemand::value bv = bf.value();
          if (bk == "type") {
            std::string_view type;
            is_call = !bv.get_string().get(type) && type == "toolCall";
          } else if (bk == "name") {
            std::string_view n;
            name.assign(bv.get_string().get(n) ? std::string_view() : n);
          } else if (bk == "arguments") {
            path.reset();
            simdjson::ondemand::json_type at;
            if (bv.type().get(at)) return;
            if (at != simdjson::ondemand::json_type::object) continue;
            simdjson::ondemand::object args;
            if (bv.get_object().get(args)) return;
            for (auto af_result : args) {
              simdjson::ondemand::field af;
              std::string_view ak;
              if (std::move(af_result).get(af) || af.unescaped_key().get(ak)) return;
              if (ak != "path") continue;
              std::string_view p;
              if (af.value().get_string().get(p)) {
                path.reset();  // a later non-string "path" hides an earlier one
              } else {
                path.emplace(p);
              }
            }
          }
        }
        if (!is_call || !IsFileTool(name) || !path || path->empty()) continue;
        found.push_back({std::move(name), std::move(*path)});
      }
    }
  }
  if (!assistant) return;
  for (Op& op : found) AddFileOp(op.tool, std::move(op.path), ops);
}

void AddFileOp(std::string_view tool, std::string path, FileOps& ops) {
  if (tool == "read") {
    ops.read.insert(std::move(path));
  } else if (tool == "write") {
    ops.written.insert(std::move(path));
  } else if (tool == "edit") {
    ops.edited.insert(std::move(path));
  }
}

}  // namespace internal

void SeedFileOpsFromDetails(std::string_view details_json, FileOps& ops) {
  Json d = ParseOrNull(details_json);
  if (!d.is_object()) return;
  if (auto it = d.find("readFiles"); it != d.end() && it->is_array()) {
    for (const Json& f : *it) {
      if (f.is_string()) ops.read.insert(f.get<std::string>());
    }
  }
  if (auto it = d.find("modifiedFiles"); it != d.end() && it->is_array()) {
    for (const Json& f : *it) {
      if (f.is_string()) ops.edited.insert(f.get<std::string>());
    }
  }
}

FileLists ComputeFileLists(const FileOps& ops) {
  std::set<std::string> modified = ops.edited;
  modified.insert(ops.written.begin(), ops.written.end());
  FileLists lists;
  for (const std::string& f : ops.read) {
    if (!modified.count(f)) lists.read_files.push_back(f);
  }
  lists.modified_files.assign(modified.begin(), modified.end());
  auto less = [](const std::string& a, const std::string& b) { return Utf16Less(a, b); };
  std::sort(lists.read_files.begin(), lists.read_files.end(), less);
  std::sort(lists.modified_files.begin(), lists.modified_files.end(), less);
  return lists;
}

std::string FormatFileOperations(const FileLists& lists) {
  std::string out;
  auto section = [&out](std::string_view tag, const std::vector<std::string>& files) {
    if (files.empty()) return;
    out += "\n\n<";
    out += tag;
    out += ">\n";
    for (size_t i = 0; i < files.size(); ++i) {
      if (i) out += '\n';
      out += files[i];
    }
    out += "\n</";
    out += tag;
    out += '>';
  };
  section("read-files", lists.read_files);
  section("modified-files", lists.modified_files);
  return out;
}

}  // namespace compactor

namespace compactor {

void ExtractFileOps(std::span<const Message> messages, FileOps& ops) {
  for (const Message& m : messages) ExtractFileOps(m, ops);
}

void SeedFileOps(std::span<const std::string> read_files,
                 std::span<const std::string> modified_files, FileOps& ops) {
  for (const std::string& f : read_files) ops.read.insert(f);
  for (const std::string& f : modified_files) ops.edited.insert(f);
}

}  // namespace compactor
