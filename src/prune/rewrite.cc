// Rewriting tool results in place: the planned messages get a new content and
// "prunedAt"; every other byte of the file is kept.
#include <string>
#include <unordered_map>

#include "compactor/js_json.h"
#include "compactor/prune.h"
#include "compactor/writer.h"
#include "util/file.h"
#include "util/json_scan.h"
#include "util/utf8.h"

namespace compactor {
namespace {

// The message with content [{"type":"text","text":replacement}] at the
// content's position and "prunedAt" appended, as oh-my-pi's in-place
// assignment followed by JSON.stringify writes it.
std::string RewriteMessage(std::string_view message_json, std::string_view replacement,
                           int64_t now_ms) {
  std::string content = R"([{"type":"text","text":)";
  AppendJsString(content, replacement);
  content += "}]";
  std::string m = internal::SetMember(message_json, "content", content);
  return internal::SetMember(m, "prunedAt", JsNumber(static_cast<double>(now_ms)));
}

std::string RewriteLine(std::string_view line, std::string_view replacement, int64_t now_ms) {
  std::string_view message = internal::FindMember(line, "message");
  return internal::SetMember(line, "message", RewriteMessage(message, replacement, now_ms));
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() &&
         (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

Result<std::string> ApplyRewrite(const Session& session, const RewritePlan& plan,
                                 const ApplyOptions& options) {
  const int64_t now = EnvOrDefault(options.env)->NowMs();
  std::unordered_map<size_t, const ReplacedOutput*> by_entry;
  for (const ReplacedOutput& r : plan.outputs) {
    if (r.entry_index >= session.size())
      return Status::InvalidArgument("plan names entry index " + std::to_string(r.entry_index) +
                                     " beyond the session's " + std::to_string(session.size()));
    const Entry& e = session.entry(r.entry_index);
    if (e.type != EntryType::kMessage || e.role != Role::kToolResult)
      return Status::InvalidArgument("plan names entry " + std::string(e.id) +
                                     ", which is not a tool result");
    by_entry[r.entry_index] = &r;
  }

  if (!options.original_text) {
    std::string out = session.HeaderJson();
    out.push_back('\n');
    for (size_t i = 0; i < session.size(); ++i) {
      std::string line(TrimRight(session.EntryJson(i)));
      auto it = by_entry.find(i);
      if (it != by_entry.end()) line = RewriteLine(line, it->second->replacement, now);
      out += line;
      out.push_back('\n');
    }
    return out;
  }

  // Line number -> planned output, then one pass over the original bytes.
  std::unordered_map<uint32_t, std::pair<size_t, const ReplacedOutput*>> by_line;
  for (const auto& [index, r] : by_entry) by_line[session.entry(index).line] = {index, r};
  std::string_view text = *options.original_text;
  std::string out;
  out.reserve(text.size() + 64 * by_line.size());
  size_t pos = 0;
  uint32_t line_no = 0;
  size_t found = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(pos, end - pos);
    ++line_no;
    auto it = by_line.find(line_no);
    if (it == by_line.end()) {
      out.append(line);
    } else {
      std::string sanitized;
      if (!internal::IsValidUtf8(line)) {
        sanitized = internal::ReplaceInvalidUtf8(line);
        line = sanitized;
      }
      const size_t index = it->second.first;
      // The line must hold the very message the plan was made from.
      if (internal::FindMember(line, "message") != session.MessageJson(index))
        return Status::FailedPrecondition(
            session.path() + ":" + std::to_string(line_no) +
            ": the file does not match the loaded session (changed since it was read?)");
      out += RewriteLine(line, it->second.second->replacement, now);
      found++;
    }
    if (nl != std::string_view::npos) out.push_back('\n');
    pos = end + 1;
  }
  if (found != by_line.size())
    return Status::FailedPrecondition(session.path() +
                                      ": the file is shorter than the loaded session");
  return out;
}

Result<WriteRewrittenResult> WriteRewrittenSession(const Session& session, const std::string& path,
                                                   const RewritePlan& plan,
                                                   const WriteRewrittenOptions& options) {
  WriteRewrittenResult result;
  if (plan.outputs.empty()) return result;
  Env* env = EnvOrDefault(options.env);
  ApplyOptions apply;
  apply.env = env;
  auto rebuild = [&](std::string_view bytes) -> Result<std::string> {
    apply.original_text = bytes;
    return ApplyRewrite(session, plan, apply);
  };
  bool in_place = options.output_path.empty() || options.output_path == path;
  if (!in_place) {
    // -o naming the session itself under another name (a link) is in place too.
    Result<FileInfo> out = env->Stat(options.output_path);
    Result<FileInfo> in = env->Stat(path);
    in_place = out.ok() && in.ok() && out->identity.inode == in->identity.inode &&
               out->identity.device == in->identity.device;
  }
  if (in_place) {
    SessionRewriteOptions rewrite;
    rewrite.keep_backup = options.rewrite.keep_backup;
    rewrite.backup_suffix = options.rewrite.backup_suffix;
    rewrite.lock_timeout_ms = options.lock_timeout_ms;
    rewrite.grace_ms = options.grace_ms;
    rewrite.env = env;
    COMPACTOR_ASSIGN_OR_RETURN(SessionRewriteResult done,
                               RewriteSessionFile(path, rebuild, rewrite));
    result.output_path = path;
    if (options.rewrite.keep_backup) result.backup_path = path + options.rewrite.backup_suffix;
    result.carried_bytes = done.carried_before_rename + done.carried_after_rename;
    return result;
  }
  COMPACTOR_ASSIGN_OR_RETURN(internal::FileBytes bytes, internal::FileBytes::Open(env, path));
  COMPACTOR_ASSIGN_OR_RETURN(std::string text,
                             rebuild(std::string_view(bytes.data(), bytes.size())));
  if (bytes.truncated()) return internal::TruncatedWhileRead(path, /*nothing_written=*/true);
  COMPACTOR_RETURN_IF_ERROR(
      WriteFileAtomic(options.output_path, text, RewriteOptions{false, ".bak", env}));
  result.output_path = options.output_path;
  return result;
}

}  // namespace compactor
