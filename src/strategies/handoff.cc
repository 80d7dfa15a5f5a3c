// The "handoff" strategy (oh-my-pi): the whole context summarized into a
// handoff document that starts a new session file; the old file is left as
// it is (docs/strategies.md).
#include "compactor/js_json.h"
#include "compactor/strategy.h"
#include "compactor/writer.h"
#include "strategies/support.h"

namespace compactor {
namespace internal {
namespace {

std::string Dir(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
}

// The new session's lines up to its first message: the header, then the old
// context's model and thinking level so the new session continues with them.
// *parent receives the id of the last entry written (empty: none). Entry ids
// come from `env`.
std::string SessionStart(const Session& session, const SessionContext& ctx,
                         const SessionHeaderFields& header, Env* env, std::vector<std::string>* ids,
                         std::string* parent) {
  const std::string& ts = header.timestamp;
  std::string jsonl = MakeSessionHeader(header) + "\n";
  auto next_id = [&] {
    std::string id = NewEntryId(session, *ids, env);
    ids->push_back(id);
    return id;
  };
  if (ctx.model) {
    std::string id = next_id();
    std::string line = "{\"type\":\"model_change\",\"id\":";
    AppendJsString(line, id);
    line += ",\"parentId\":null,\"timestamp\":";
    AppendJsString(line, ts);
    line += ",\"provider\":";
    AppendJsString(line, ctx.model->provider);
    line += ",\"modelId\":";
    AppendJsString(line, ctx.model->model_id);
    line += "}";
    jsonl += line + "\n";
    *parent = id;
  }
  if (ctx.thinking_level != "off") {
    std::string id = next_id();
    std::string line = "{\"type\":\"thinking_level_change\",\"id\":";
    AppendJsString(line, id);
    line += ",\"parentId\":";
    if (parent->empty()) {
      line += "null";
    } else {
      AppendJsString(line, *parent);
    }
    line += ",\"timestamp\":";
    AppendJsString(line, ts);
    line += ",\"thinkingLevel\":";
    AppendJsString(line, ctx.thinking_level);
    line += "}";
    jsonl += line + "\n";
    *parent = id;
  }
  return jsonl;
}

class Handoff final : public CompactionStrategy {
 public:
  std::string_view name() const override { return "handoff"; }
  std::string_view description() const override {
    return "oh-my-pi: a handoff document of the whole context starts a new session file; the old "
           "one is left as it is";
  }
  StrategyNeeds needs() const override { return {.summarizer = true}; }
  CompactionOutput output() const override { return CompactionOutput::kNewSession; }
  // It summarizes everything, like summary without a kept tail; run it with
  // `compactor eval --strategy handoff`.
  bool evaluated_by_default() const override { return false; }

  Status Compute(const Session& session, const CompactOptions& o, const Summarizer& summarizer,
                 ComputedCompaction* out) const override {
    CompactionResult& r = out->result;
    COMPACTOR_ASSIGN_OR_RETURN(MeasuredContext mc,
                               MeasureContext(session, o, StrategyExpander(), &r));
    const SessionContext& ctx = mc.ctx;
    if (ctx.messages.size() < 2) {
      r.skipped_reason = "nothing to summarize";
      return Status::Ok();
    }
    COMPACTOR_ASSIGN_OR_RETURN(bool below, SkipBelowThreshold(o, &r));
    if (below) return Status::Ok();
    std::vector<Message> all = ParseAll({&ctx.messages}, o.env);
    FileOps ops;
    ExtractFileOps(all, ops);
    FileLists lists = ComputeFileLists(ops);
    SummaryRequest req;
    req.kind = SummaryKind::kHandoff;
    req.messages = all;
    req.read_files = lists.read_files;
    req.modified_files = lists.modified_files;
    req.max_output_tokens =
        DefaultMaxOutputTokens(SummaryKind::kHandoff, o.settings.reserve_tokens);
    std::string preserve;
    ApplyCompactingHooks(o, session, all, &req, &preserve, &r.hook_errors);
    COMPACTOR_ASSIGN_OR_RETURN(std::string doc, SummarizeInPasses(summarizer, req));
    doc += FormatFileOperations(lists);

    SessionHeaderFields h;
    h.timestamp = FormatIsoTimestamp(NowMs(o));
    h.id = NewUuidV7(o.env);
    h.cwd = session.header().cwd;
    h.parent_session = session.path();
    std::string file_ts = h.timestamp;
    for (char& c : file_ts)
      if (c == ':' || c == '.') c = '-';
    std::string dir = o.handoff_dir.empty() ? Dir(session.path()) : o.handoff_dir;
    r.output_path = dir + "/" + file_ts + "_" + h.id + ".jsonl";

    std::vector<std::string> ids;
    std::string parent;
    std::string jsonl = SessionStart(session, ctx, h, o.env, &ids, &parent);
    std::string content = "<handoff-context>\n" + doc +
                          "\n</handoff-context>\n\nThis is the handoff document of the previous "
                          "session (" +
                          session.path() + "). Continue the work from here.";
    CustomMessageEntryFields cf;
    cf.custom_type = "handoff";
    AppendJsString(cf.content_json, content);
    cf.display = true;
    std::string parent_session;
    AppendJsString(parent_session, session.path());
    cf.details_json = DetailsJson(lists, ",\"parentSession\":" + parent_session);
    EntryBase base{NewEntryId(session, ids, o.env), parent, h.timestamp};
    r.entry_id = base.id;
    r.entry_json = MakeCustomMessageEntry(base, cf);
    jsonl += r.entry_json + "\n";
    out->new_session_jsonl = std::move(jsonl);
    r.summary = doc;
    r.messages_summarized = all.size();
    r.summarized_tokens = mc.est.heuristic_sum;
    r.tokens_after = mc.counter.Text(content);
    r.read_files = lists.read_files;
    r.modified_files = lists.modified_files;
    r.compacted = true;
    return Status::Ok();
  }
};

}  // namespace

const CompactionStrategy& HandoffStrategy() {
  static const Handoff kStrategy;
  return kStrategy;
}

}  // namespace internal
}  // namespace compactor
