// The directory store (compactor/store.h): pi session files under a writable
// directory and read-only ones, indexed by their header's id.
#include <algorithm>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "compactor/entries.h"
#include "compactor/store.h"
#include "compactor/writer.h"
#include "store/session_info.h"

namespace compactor {
namespace {

constexpr size_t kMaxHeaderBytes = 1u << 20;

std::string Join(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The string member `key` of `j`, else "" (value() would throw on another type).
std::string StringMember(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// One {"KEY_NAME": ..., "VALUE_NAME": ...} line of the store's own index
// files, read into `out`; a torn or malformed line (a crash while it was
// appended) is skipped. The last line of a key wins.
void ReadIndexLines(std::string_view text, const char* key_name, const char* value_name,
                    std::map<std::string, std::string>* out) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    auto j = nlohmann::json::parse(line, nullptr, false);
    std::string key = StringMember(j, key_name);
    if (key.empty() || !j.contains(value_name) || !j[value_name].is_string()) continue;
    (*out)[key] = j[value_name].get<std::string>();
  }
}

class DirectoryStore final : public SessionStore {
 public:
  explicit DirectoryStore(DirectoryStoreOptions o) : o_(std::move(o)), env_(EnvOrDefault(o_.env)) {}

  Status Open() {
    if (!o_.dir.empty()) {
      COMPACTOR_RETURN_IF_ERROR(env_->CreateDirs(o_.dir));
      COMPACTOR_RETURN_IF_ERROR(LoadConversations());
      COMPACTOR_RETURN_IF_ERROR(LoadSummaries());
    }
    std::lock_guard<std::mutex> lock(mu_);
    Scan();
    return Status::Ok();
  }

  Status SetConversation(std::string_view conversation, std::string_view session_id) override {
    if (o_.dir.empty()) return Status::FailedPrecondition("the store has no writable directory");
    nlohmann::json line = {{"conversation", conversation}, {"session", session_id}};
    std::lock_guard<std::mutex> lock(conv_mu_);
    Status s = AppendIndexLine(ConversationsPath(), line);
    if (s.ok()) conversations_[std::string(conversation)] = std::string(session_id);
    return s;
  }

  Result<std::string> ClaimConversation(std::string_view conversation,
                                        std::string_view session_id) override {
    if (o_.dir.empty()) return Status::FailedPrecondition("the store has no writable directory");
    std::lock_guard<std::mutex> lock(conv_mu_);
    auto it = conversations_.find(std::string(conversation));
    if (it != conversations_.end()) return it->second;
    nlohmann::json line = {{"conversation", conversation}, {"session", session_id}};
    COMPACTOR_RETURN_IF_ERROR(AppendIndexLine(ConversationsPath(), line));
    conversations_[std::string(conversation)] = std::string(session_id);
    return std::string(session_id);
  }

  Status PutSummary(std::string_view key, std::string_view summary) override {
    if (o_.dir.empty()) return Status::FailedPrecondition("the store has no writable directory");
    nlohmann::json line = {{"key", key}, {"summary", summary}};
    std::lock_guard<std::mutex> lock(summary_mu_);
    auto it = summaries_.find(std::string(key));
    if (it != summaries_.end() && it->second == summary) return Status::Ok();
    Status s = AppendIndexLine(SummariesPath(), line);
    if (s.ok()) summaries_[std::string(key)] = std::string(summary);
    return s;
  }

  // In-process: a set of claimed keys (one process owns a directory store's
  // writes; serve instances sharing one need the database).
  Result<std::unique_ptr<SummaryClaim>> TryClaimSummary(std::string_view key) override {
    std::lock_guard<std::mutex> lock(summary_mu_);
    if (!claimed_.insert(std::string(key)).second) return std::unique_ptr<SummaryClaim>();
    return std::unique_ptr<SummaryClaim>(std::make_unique<KeyClaim>(this, std::string(key)));
  }

  std::optional<std::string> FindSummary(std::string_view key) override {
    std::lock_guard<std::mutex> lock(summary_mu_);
    auto it = summaries_.find(std::string(key));
    if (it == summaries_.end()) return std::nullopt;
    return it->second;
  }

  // Appends `line` to one of the store's index files (created atomically
  // with its folder when missing), synced.
  Status AppendIndexLine(const std::string& path, const nlohmann::json& line) {
    const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    Status s;
    if (env_->Stat(path).ok()) {
      AppendOptions ao;
      ao.fsync = true;
      ao.env = env_;
      s = AppendLines(path, {text}, ao);
    } else {
      COMPACTOR_RETURN_IF_ERROR(env_->CreateDirs(Join(o_.dir, ".compactor")));
      RewriteOptions ro;
      ro.keep_backup = false;
      ro.env = env_;
      s = WriteFileAtomic(path, text + "\n", ro);
    }
    return s;
  }

  std::optional<std::string> FindConversation(std::string_view conversation) override {
    std::lock_guard<std::mutex> lock(conv_mu_);
    auto it = conversations_.find(std::string(conversation));
    if (it == conversations_.end()) return std::nullopt;
    return it->second;
  }

  Result<std::vector<StoredSessionInfo>> List() override {
    std::vector<std::string> ids;
    {
      std::lock_guard<std::mutex> lock(mu_);
      Scan();
      for (const auto& [id, slot] : by_id_) ids.push_back(id);
    }
    std::vector<StoredSessionInfo> out;
    for (const std::string& id : ids) {
      auto info = Info(id);
      if (info.ok()) out.push_back(std::move(*info));  // a file removed meanwhile is left out
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
      return a.last_activity_ms > b.last_activity_ms;
    });
    return out;
  }

  Result<StoredSessionInfo> Info(std::string_view id) override {
    COMPACTOR_ASSIGN_OR_RETURN(Slot slot, Find(id));
    COMPACTOR_ASSIGN_OR_RETURN(FileInfo fi, env_->Stat(slot.path));
    if (slot.info && slot.info_identity == fi.identity) return *slot.info;
    COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> map, env_->MapFile(slot.path));
    StoredSessionInfo info;
    info.id = std::string(id);
    info.path = slot.path;
    info.read_only = slot.read_only;
    info.size_bytes = fi.identity.size;
    info.last_activity_ms = fi.identity.mtime_ns / 1'000'000;
    store_internal::FillFromBytes(std::string_view(map->data(), map->size()), &info);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_id_.find(info.id);
    if (it != by_id_.end() && it->second.path == slot.path) {
      it->second.info = info;
      it->second.info_identity = fi.identity;
    }
    return info;
  }

  Result<bool> ReadOnly(std::string_view id) override {
    COMPACTOR_ASSIGN_OR_RETURN(Slot slot, Find(id));
    return slot.read_only;
  }

  Result<std::unique_ptr<Session>> Load(std::string_view id, const LoadOptions& options) override {
    COMPACTOR_ASSIGN_OR_RETURN(Slot slot, Find(id));
    LoadOptions lo = options;
    lo.env = env_;
    return Session::Open(slot.path, lo);
  }

  Result<std::string> Export(std::string_view id) override {
    COMPACTOR_ASSIGN_OR_RETURN(Slot slot, Find(id));
    COMPACTOR_ASSIGN_OR_RETURN(std::string text, env_->ReadFile(slot.path));
    const size_t end = text.rfind('\n');
    text.resize(end == std::string::npos ? 0 : end + 1);  // without a torn last line
    return text;
  }

  Result<std::string> Create(std::string_view wanted, std::string_view cwd,
                             const std::vector<std::string>& lines) override {
    std::string id = wanted.empty() ? NewUuidV7(env_) : std::string(wanted);
    if (!store_internal::SafeSessionId(id))
      return Status::InvalidArgument("the session id cannot name a file: " + id);
    if (!wanted.empty() && Find(id).ok())
      return Status::FailedPrecondition("session " + id + " exists");
    std::string ts = NowIsoTimestamp(env_);
    std::string header = MakeSessionHeader({id, ts, std::string(cwd), ""}) + "\n";
    for (const std::string& line : lines) header += line + "\n";
    COMPACTOR_RETURN_IF_ERROR(Write(id, ts, header));
    return id;
  }

  Result<std::string> Import(std::string_view jsonl) override {
    COMPACTOR_ASSIGN_OR_RETURN(std::string id, store_internal::ImportedSessionId(jsonl));
    if (Find(id).ok()) return Status::FailedPrecondition("session " + id + " exists");
    std::string text(jsonl);
    if (!text.empty() && text.back() != '\n') text += '\n';
    COMPACTOR_RETURN_IF_ERROR(Write(id, NowIsoTimestamp(env_), text));
    return id;
  }

  Status Append(std::string_view id, const std::vector<std::string>& lines,
                const StoreAppendOptions& options) override {
    COMPACTOR_ASSIGN_OR_RETURN(Slot slot, Writable(id));
    AppendOptions ao;
    ao.fsync = options.sync;
    ao.env = env_;
    Status s;
    if (!options.expected_entries) {
      s = AppendLines(slot.path, lines, ao);
    } else {
      const size_t expected = *options.expected_entries;
      // Unchanged since the caller's copy was read: no need to count again.
      std::optional<FileIdentity> read;
      if (const Session* l = options.loaded;
          l != nullptr && l->size() == expected && l->path() == slot.path) {
        read = l->file_identity();
      }
      s = AppendComputedLines(
          slot.path, read, lines,
          [&](const Session& now) -> Result<std::vector<std::string>> {
            if (now.size() != expected) return Changed(id, expected, now.size());
            return lines;
          },
          ao);
    }
    return s;
  }

  Status Replace(std::string_view id, std::string_view jsonl,
                 std::optional<size_t> expected_entries) override {
    COMPACTOR_ASSIGN_OR_RETURN(Slot slot, Writable(id));
    SessionRewriteOptions ro;
    ro.env = env_;
    auto r = RewriteSessionFile(
        slot.path,
        [&](std::string_view old_bytes) -> Result<std::string> {
          if (expected_entries) {
            COMPACTOR_ASSIGN_OR_RETURN(auto now,
                                       Session::FromString(std::string(old_bytes), slot.path));
            if (now->size() != *expected_entries)
              return Changed(id, *expected_entries, now->size());
          }
          return std::string(jsonl);
        },
        ro);
    return r.ok() ? Status::Ok() : r.status();
  }

 private:
  class KeyClaim final : public SummaryClaim {
   public:
    KeyClaim(DirectoryStore* store, std::string key) : store_(store), key_(std::move(key)) {}
    ~KeyClaim() override {
      std::lock_guard<std::mutex> lock(store_->summary_mu_);
      store_->claimed_.erase(key_);
    }

   private:
    DirectoryStore* store_;
    std::string key_;
  };

  struct Slot {
    std::string path;
    bool read_only = false;
    std::optional<StoredSessionInfo> info;  // cached for info_identity
    FileIdentity info_identity;
  };
  struct Seen {
    FileIdentity identity;
    std::string id;  // empty: not a session
  };

  std::string ConversationsPath() const { return Join(o_.dir, ".compactor/conversations.jsonl"); }
  std::string SummariesPath() const { return Join(o_.dir, ".compactor/summaries.jsonl"); }

  Status LoadSummaries() {
    auto text = env_->ReadFile(SummariesPath());
    if (!text.ok()) {
      if (text.status().code() == StatusCode::kNotFound) return Status::Ok();
      return text.status();
    }
    std::lock_guard<std::mutex> lock(summary_mu_);
    ReadIndexLines(*text, "key", "summary", &summaries_);
    return Status::Ok();
  }

  // Reads the conversation index; a torn or malformed line (a crash while
  // it was appended) is skipped.
  Status LoadConversations() {
    auto text = env_->ReadFile(ConversationsPath());
    if (!text.ok()) {
      if (text.status().code() == StatusCode::kNotFound) return Status::Ok();
      return text.status();
    }
    std::string_view rest = *text;
    std::lock_guard<std::mutex> lock(conv_mu_);
    while (!rest.empty()) {
      size_t nl = rest.find('\n');
      std::string_view line = rest.substr(0, nl);
      rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_object() || !j["conversation"].is_string() || !j["session"].is_string()) continue;
      conversations_[j["conversation"].get<std::string>()] = j["session"].get<std::string>();
    }
    return Status::Ok();
  }

  static Status Changed(std::string_view id, size_t expected, size_t now) {
    return Status::FailedPrecondition("session " + std::string(id) +
                                      " changed since it was read (" + std::to_string(expected) +
                                      " entries then, " + std::to_string(now) + " now)");
  }

  // The slot of `id`, scanning the directories again when it is not known.
  Result<Slot> Find(std::string_view id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_id_.find(std::string(id));
    if (it == by_id_.end()) {
      Scan();
      it = by_id_.find(std::string(id));
    }
    if (it == by_id_.end()) return Status::NotFound("no session " + std::string(id));
    return it->second;
  }

  Result<Slot> Writable(std::string_view id) {
    COMPACTOR_ASSIGN_OR_RETURN(Slot slot, Find(id));
    if (slot.read_only)
      return Status::FailedPrecondition("session " + std::string(id) + " is read-only");
    return slot;
  }

  // Writes a new session file `<timestamp>_<id>.jsonl` (pi's naming) in the
  // writable directory, atomically and synced, and indexes it.
  Status Write(const std::string& id, std::string ts, std::string_view contents) {
    if (o_.dir.empty()) return Status::FailedPrecondition("the store has no writable directory");
    for (char& c : ts)
      if (c == ':' || c == '.') c = '-';
    std::string path = Join(o_.dir, ts + "_" + id + ".jsonl");
    if (env_->Stat(path).ok()) return Status::FailedPrecondition(path + ": exists");
    RewriteOptions ro;
    ro.keep_backup = false;
    ro.env = env_;
    COMPACTOR_RETURN_IF_ERROR(WriteFileAtomic(path, contents, ro));
    std::lock_guard<std::mutex> lock(mu_);
    by_id_[id] = Slot{path, false, std::nullopt, {}};
    return Status::Ok();
  }

  // Rebuilds the index from the directories. REQUIRES: mu_ held.
  void Scan() {
    std::map<std::string, Slot> next;
    std::map<std::string, Seen> seen;
    if (!o_.dir.empty()) Walk(o_.dir, false, 0, &next, &seen);
    for (const std::string& d : o_.read_only_dirs) Walk(d, true, 0, &next, &seen);
    for (auto& [id, slot] : next) {
      auto old = by_id_.find(id);
      if (old != by_id_.end() && old->second.path == slot.path) {
        slot.info = std::move(old->second.info);
        slot.info_identity = old->second.info_identity;
      }
    }
    by_id_ = std::move(next);
    seen_ = std::move(seen);
  }

  void Walk(const std::string& dir, bool read_only, int depth, std::map<std::string, Slot>* out,
            std::map<std::string, Seen>* seen) {
    if (depth > o_.max_depth) return;
    auto names = env_->ListDir(dir);
    if (!names.ok()) return;  // unreadable or vanished: nothing to serve from it
    for (const std::string& name : *names) {
      if (name.empty() || name.front() == '.') continue;
      std::string path = Join(dir, name);
      auto fi = env_->Stat(path);
      if (!fi.ok()) continue;
      if (fi->kind == FileKind::kDirectory) {
        Walk(path, read_only, depth + 1, out, seen);
        continue;
      }
      if (fi->kind != FileKind::kRegular || !EndsWith(name, ".jsonl")) continue;
      std::string id = HeaderId(path, fi->identity);
      (*seen)[path] = Seen{fi->identity, id};
      if (!id.empty() && out->count(id) == 0) (*out)[id] = Slot{path, read_only, std::nullopt, {}};
    }
  }

  // The header id of the file at `path`; "" when it is not a session. Read
  // again only when the file was replaced (another inode) since the last scan.
  std::string HeaderId(const std::string& path, const FileIdentity& identity) {
    auto old = seen_.find(path);
    if (old != seen_.end() && old->second.identity.device == identity.device &&
        old->second.identity.inode == identity.inode && !old->second.id.empty())
      return old->second.id;
    auto map = env_->MapFile(path);
    if (!map.ok()) return "";
    std::string_view bytes((*map)->data(), std::min((*map)->size(), kMaxHeaderBytes));
    size_t nl = bytes.find('\n');
    if (nl == std::string_view::npos) return "";
    LoadOptions lo;
    lo.env = env_;
    lo.threads = 1;
    auto s = Session::FromString(std::string(bytes.substr(0, nl + 1)), path, lo);
    if (!s.ok()) return "";
    return (*s)->header().id;
  }

  const DirectoryStoreOptions o_;
  Env* const env_;
  std::mutex mu_;
  std::map<std::string, Slot> by_id_;  // guarded by mu_
  std::map<std::string, Seen> seen_;   // path -> what it was at the last scan; guarded by mu_
  std::mutex conv_mu_;
  std::map<std::string, std::string> conversations_;  // guarded by conv_mu_
  std::mutex summary_mu_;
  std::map<std::string, std::string> summaries_;  // key -> text; guarded by summary_mu_
  std::set<std::string> claimed_;                 // keys claimed; guarded by summary_mu_
};

}  // namespace

namespace {
class TrivialClaim final : public SummaryClaim {};
}  // namespace

Result<std::unique_ptr<SummaryClaim>> SessionStore::TryClaimSummary(std::string_view /*key*/) {
  return std::unique_ptr<SummaryClaim>(std::make_unique<TrivialClaim>());
}

Status SessionStore::PutSummary(std::string_view /*key*/, std::string_view /*summary*/) {
  return Status::Unsupported("this session store has no summary cache");
}

std::optional<std::string> SessionStore::FindSummary(std::string_view /*key*/) {
  return std::nullopt;
}

Result<std::unique_ptr<SessionStore>> NewDirectoryStore(const DirectoryStoreOptions& options) {
  auto store = std::make_unique<DirectoryStore>(options);
  COMPACTOR_RETURN_IF_ERROR(store->Open());
  return std::unique_ptr<SessionStore>(std::move(store));
}

}  // namespace compactor
