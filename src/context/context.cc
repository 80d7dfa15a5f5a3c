#include "compactor/context.h"

#include <atomic>
#include <cmath>
#include <memory>

#include "compactor/js_json.h"
#include "util/json_scan.h"

namespace compactor {
namespace {

// Appends `,"key":<raw>` when the entry has the field (pi copies the value;
// an absent field is undefined and JSON.stringify drops it).
void AppendRawField(std::string& out, const Session& s, size_t index, std::string_view key,
                    std::string_view as_key) {
  std::string_view raw = s.FieldJson(index, key);
  if (raw.empty()) return;
  out += ",\"";
  out += as_key;
  out += "\":";
  out += raw;
}

void AppendTimestamp(std::string& out, double ms) {
  out += ",\"timestamp\":";
  AppendJsNumber(out, ms);  // NaN (unparsable ISO time) prints null, as JSON.stringify does
}

ContextMessage FromEntry(const Session& s, size_t index) {
  const Entry& e = s.entry(index);
  ContextMessage m;
  m.entry_index = index;
  switch (e.type) {
    case EntryType::kMessage:
      m.role = e.role;
      m.stored = s.MessageJson(index);
      if (m.stored.empty()) m.owned = "null";  // a message entry without a message object
      break;
    case EntryType::kCustomMessage:
      m.role = Role::kCustom;
      m.owned = "{\"role\":\"custom\"";
      AppendRawField(m.owned, s, index, "customType", "customType");
      AppendRawField(m.owned, s, index, "content", "content");
      AppendRawField(m.owned, s, index, "display", "display");
      AppendRawField(m.owned, s, index, "details", "details");
      AppendTimestamp(m.owned, e.timestamp_ms);
      m.owned += "}";
      break;
    case EntryType::kBranchSummary:
      m.role = Role::kBranchSummary;
      m.owned = "{\"role\":\"branchSummary\"";
      AppendRawField(m.owned, s, index, "summary", "summary");
      AppendRawField(m.owned, s, index, "fromId", "fromId");
      AppendTimestamp(m.owned, e.timestamp_ms);
      m.owned += "}";
      break;
    case EntryType::kCompaction:
      m.role = Role::kCompactionSummary;
      m.owned = "{\"role\":\"compactionSummary\"";
      AppendRawField(m.owned, s, index, "summary", "summary");
      AppendRawField(m.owned, s, index, "tokensBefore", "tokensBefore");
      AppendTimestamp(m.owned, e.timestamp_ms);
      m.owned += "}";
      break;
    default:
      break;
  }
  return m;
}

// pi's per-entry mapping (docs/session-format.md): which entries yield a message.
bool YieldsMessage(const Entry& e) {
  switch (e.type) {
    case EntryType::kMessage:
    case EntryType::kCustomMessage:
      return true;
    case EntryType::kBranchSummary:
      return !e.summary_empty;
    default:
      return false;
  }
}

}  // namespace

std::optional<ContextMessage> EntryMessage(const Session& session, size_t index) {
  const Entry& e = session.entry(index);
  if (e.type == EntryType::kCompaction || YieldsMessage(e)) return FromEntry(session, index);
  return std::nullopt;
}

std::string MakeCompactionSummaryJson(std::string_view summary, double tokens_before,
                                      double timestamp_ms) {
  std::string out = "{\"role\":\"compactionSummary\",\"summary\":";
  AppendJsString(out, summary);
  out += ",\"tokensBefore\":";
  AppendJsNumber(out, tokens_before);
  AppendTimestamp(out, timestamp_ms);
  out += "}";
  return out;
}

std::string MakeUserTextMessageJson(std::string_view text, double timestamp_ms) {
  std::string out = "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":";
  AppendJsString(out, text);
  out += "}]";
  AppendTimestamp(out, timestamp_ms);
  out += "}";
  return out;
}

std::string MakeBranchSummaryJson(std::string_view summary, std::string_view from_id,
                                  double timestamp_ms) {
  std::string out = "{\"role\":\"branchSummary\",\"summary\":";
  AppendJsString(out, summary);
  out += ",\"fromId\":";
  AppendJsString(out, from_id);
  AppendTimestamp(out, timestamp_ms);
  out += "}";
  return out;
}

Result<SessionContext> BuildSessionContext(const Session& session, const ContextOptions& options) {
  SessionContext ctx;
  std::optional<size_t> leaf;
  if (options.leaf_id) {
    leaf = session.Find(*options.leaf_id);
    if (!leaf) {
      return Status::InvalidArgument(session.path() + ": no entry with id \"" + *options.leaf_id +
                                     "\" (--leaf)");
    }
  } else {
    leaf = session.Leaf();
  }
  if (!leaf) return ctx;
  ctx.leaf_id = session.entry(*leaf).id;
  ctx.path = session.PathTo(*leaf);

  // The model comes from the last model change or assistant message: note
  // where, and copy its strings once.
  const Entry* model_from = nullptr;
  for (size_t k = 0; k < ctx.path.size(); ++k) {
    const Entry& e = session.entry(ctx.path[k]);
    switch (e.type) {
      case EntryType::kThinkingLevelChange:
        ctx.thinking_level = e.thinking_level;
        ctx.thinking_level_set = e.has_thinking_level;
        break;
      case EntryType::kModelChange:
        model_from = &e;
        break;
      case EntryType::kMessage:
        if (e.role == Role::kAssistant) model_from = &e;
        break;
      case EntryType::kCompaction:
        ctx.compaction_path_index = k;
        break;
      default:
        break;
    }
  }

  if (model_from) {
    ctx.model = ModelRef{std::string(model_from->provider), std::string(model_from->model),
                         model_from->has_provider, model_from->has_model};
  }
  ctx.messages.reserve(ctx.path.size());
  auto emit = [&](size_t k) {
    const Entry& e = session.entry(ctx.path[k]);
    if (YieldsMessage(e)) ctx.messages.push_back(FromEntry(session, ctx.path[k]));
  };
  if (ctx.compaction_path_index) {
    const size_t c = *ctx.compaction_path_index;
    const Entry& comp = session.entry(ctx.path[c]);
    if (options.expander && options.expander->Expand({session, ctx.path, c}, &ctx.messages)) {
      for (size_t k = c + 1; k < ctx.path.size(); ++k) emit(k);
      return ctx;
    }
    ctx.messages.clear();  // a declined expansion leaves nothing behind
    ctx.messages.push_back(FromEntry(session, ctx.path[c]));
    bool found = false;
    for (size_t k = 0; k < c; ++k) {
      const Entry& e = session.entry(ctx.path[k]);
      if (!found && e.id == comp.first_kept_entry_id) found = true;
      if (found) emit(k);
    }
    for (size_t k = c + 1; k < ctx.path.size(); ++k) emit(k);
  } else {
    for (size_t k = 0; k < ctx.path.size(); ++k) emit(k);
  }
  return ctx;
}

ContextCache::ContextCache(const ContextOptions& options) : expander_(options.expander) {}

void ContextCache::Reset() {
  session_ = nullptr;
  ctx_.reset();
}

bool ContextCache::Extend(const Session& session, size_t leaf) {
  if (!ctx_ || session_ != &session || generation_ != session.generation()) return false;
  // The new entries between the cached leaf and `leaf`, bottom up. Entries
  // read since the last build always have earlier parents, so the walk ends.
  std::vector<size_t> added;
  size_t cur = leaf;
  while (cur != leaf_) {
    if (cur < built_size_) return false;  // an older entry: another branch
    const Entry& e = session.entry(cur);
    // A compaction changes what comes before it: the builder (and the
    // expander) decide that.
    if (e.type == EntryType::kCompaction) return false;
    added.push_back(cur);
    std::optional<size_t> parent = session.Parent(cur);
    if (!parent) return false;
    cur = *parent;
  }
  if (added.empty()) return true;  // the same leaf
  if (ctx_.use_count() > 1) {
    // Somebody holds the previous snapshot; it must not change under them.
    ctx_ = std::make_shared<SessionContext>(*ctx_);
  } else {
    // The holders that let it go may have read it on other threads.
    std::atomic_thread_fence(std::memory_order_acquire);
  }
  SessionContext& ctx = *ctx_;
  for (size_t k = added.size(); k-- > 0;) {
    const size_t index = added[k];
    const Entry& e = session.entry(index);
    ctx.path.push_back(index);
    switch (e.type) {
      case EntryType::kThinkingLevelChange:
        ctx.thinking_level = e.thinking_level;
        ctx.thinking_level_set = e.has_thinking_level;
        break;
      case EntryType::kModelChange:
        ctx.model =
            ModelRef{std::string(e.provider), std::string(e.model), e.has_provider, e.has_model};
        break;
      case EntryType::kMessage:
        if (e.role == Role::kAssistant) {
          ctx.model =
              ModelRef{std::string(e.provider), std::string(e.model), e.has_provider, e.has_model};
        }
        break;
      default:
        break;
    }
    if (YieldsMessage(e)) ctx.messages.push_back(FromEntry(session, index));
  }
  ctx.leaf_id = std::string(session.entry(leaf).id);
  leaf_ = leaf;
  built_size_ = session.size();
  return true;
}

Result<std::shared_ptr<const SessionContext>> ContextCache::Get(
    const Session& session, const std::optional<std::string>& leaf_id) {
  std::optional<size_t> leaf;
  if (leaf_id) {
    leaf = session.Find(*leaf_id);
  } else {
    leaf = session.Leaf();
  }
  if (leaf && Extend(session, *leaf)) {
    ++extended_;
    return std::shared_ptr<const SessionContext>(ctx_);
  }
  ContextOptions co;
  co.leaf_id = leaf_id;
  co.expander = expander_;
  COMPACTOR_ASSIGN_OR_RETURN(SessionContext built, BuildSessionContext(session, co));
  ++rebuilt_;
  auto fresh = std::make_shared<SessionContext>(std::move(built));
  if (!leaf) {
    Reset();  // an empty session: nothing to extend
    return std::shared_ptr<const SessionContext>(std::move(fresh));
  }
  ctx_ = fresh;
  session_ = &session;
  generation_ = session.generation();
  built_size_ = session.size();
  leaf_ = *leaf;
  return std::shared_ptr<const SessionContext>(std::move(fresh));
}

std::string ContextJsonTail(const SessionContext& ctx) {
  std::string out = "]";
  if (ctx.thinking_level_set) {
    out += ",\"thinkingLevel\":";
    AppendJsString(out, ctx.thinking_level);
  }
  out += ",\"model\":";
  if (ctx.model) {
    out += "{";
    bool first = true;
    if (ctx.model->has_provider) {
      out += "\"provider\":";
      AppendJsString(out, ctx.model->provider);
      first = false;
    }
    if (ctx.model->has_model_id) {
      if (!first) out += ",";
      out += "\"modelId\":";
      AppendJsString(out, ctx.model->model_id);
    }
    out += "}";
  } else {
    out += "null";
  }
  out += "}";
  return out;
}

std::string ContextToJson(const SessionContext& ctx) {
  size_t total = 128;
  for (const ContextMessage& m : ctx.messages) total += m.json().size() + 1;
  std::string out;
  out.reserve(total);
  out += "{\"leafId\":";
  if (ctx.leaf_id) {
    AppendJsString(out, *ctx.leaf_id);
  } else {
    out += "null";
  }
  out += ",\"messages\":[";
  for (size_t i = 0; i < ctx.messages.size(); ++i) {
    if (i) out.push_back(',');
    out += ctx.messages[i].json();
  }
  out += ContextJsonTail(ctx);
  return out;
}

}  // namespace compactor
