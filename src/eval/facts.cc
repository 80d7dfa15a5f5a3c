// Fact kinds and the `<name>.facts.json` file format (docs/quality.md).
#include <nlohmann/json.hpp>

#include "compactor/eval.h"
#include "util/json_scan.h"

namespace compactor {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kKindNames[kFactKindCount] = {
    "goal",  "constraint", "file_modified", "file_read", "command",
    "error", "decision",   "next_step",     "value",
};

}  // namespace

std::string_view FactKindName(FactKind kind) { return kKindNames[static_cast<int>(kind)]; }

Result<FactKind> ParseFactKind(std::string_view name) {
  for (int i = 0; i < kFactKindCount; ++i)
    if (kKindNames[i] == name) return static_cast<FactKind>(i);
  return Status::InvalidArgument("unknown fact kind \"" + std::string(name) + "\"");
}

std::string FactFileToJson(const FactFile& file) {
  Json j;
  j["session"] = file.session;
  j["source"] = file.source;
  j["seed"] = file.seed;
  if (!file.split.empty()) j["split"] = file.split;
  Json facts = Json::array();
  for (const Fact& f : file.facts) {
    Json o;
    o["id"] = f.id;
    o["kind"] = std::string(FactKindName(f.kind));
    o["text"] = f.text;
    o["variants"] = f.variants;
    o["qualifiers"] = f.qualifiers;
    if (!f.superseded_by.empty()) o["supersededBy"] = f.superseded_by;
    if (f.exit_code) o["exitCode"] = *f.exit_code;
    if (f.fixed) o["fixed"] = *f.fixed;
    if (!f.status.empty()) o["status"] = f.status;
    o["entryId"] = f.entry_id;
    if (!f.note.empty()) o["note"] = f.note;
    facts.push_back(std::move(o));
  }
  j["facts"] = std::move(facts);
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

Result<FactFile> ParseFactFile(std::string_view json, std::string_view name) {
  const std::string where(name);
  if (internal::JsonNestingExceeds(json, internal::kMaxJsonNesting))
    return Status::InvalidArgument(where + ": " + internal::JsonTooDeepMessage());
  try {
    Json j = Json::parse(json);
    if (!j.is_object()) return Status::InvalidArgument(where + ": not a JSON object");
    FactFile file;
    file.session = j.value("session", "");
    file.source = j.value("source", "");
    file.seed = j.value("seed", uint64_t{0});
    file.split = j.value("split", "");
    if (!file.split.empty() && file.split != "tuning" && file.split != "held-out")
      return Status::InvalidArgument(where + ": unknown split \"" + file.split +
                                     "\" (tuning, held-out)");
    if (!j.contains("facts") || !j["facts"].is_array())
      return Status::InvalidArgument(where + ": \"facts\" must be an array");
    for (const Json& o : j["facts"]) {
      Fact f;
      f.id = o.at("id").get<std::string>();
      auto kind = ParseFactKind(o.at("kind").get<std::string>());
      if (!kind.ok()) return Status::InvalidArgument(where + ": " + kind.status().message());
      f.kind = *kind;
      f.text = o.at("text").get<std::string>();
      if (f.text.empty()) return Status::InvalidArgument(where + ": fact " + f.id + " has no text");
      if (o.contains("variants")) f.variants = o["variants"].get<std::vector<std::string>>();
      if (o.contains("qualifiers"))
        f.qualifiers = o["qualifiers"].get<std::vector<std::vector<std::string>>>();
      f.superseded_by = o.value("supersededBy", "");
      if (o.contains("exitCode") && !o["exitCode"].is_null())
        f.exit_code = o["exitCode"].get<int>();
      if (o.contains("fixed") && !o["fixed"].is_null()) f.fixed = o["fixed"].get<bool>();
      f.status = o.value("status", "");
      if (!f.status.empty() && f.status != "done" && f.status != "rejected")
        return Status::InvalidArgument(where + ": fact " + f.id + " has unknown status \"" +
                                       f.status + "\" (done, rejected)");
      f.entry_id = o.value("entryId", "");
      f.note = o.value("note", "");
      file.facts.push_back(std::move(f));
    }
    for (const Fact& f : file.facts) {
      if (f.superseded_by.empty()) continue;
      bool found = false;
      for (const Fact& g : file.facts) found = found || g.id == f.superseded_by;
      if (!found)
        return Status::InvalidArgument(where + ": fact " + f.id +
                                       " is superseded by unknown fact " + f.superseded_by);
    }
    return file;
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(where + ": " + e.what());
  }
}

Result<FactFile> ReadFactFile(const std::string& path, Env* env) {
  Result<std::string> text = EnvOrDefault(env)->ReadFile(path);
  if (!text.ok()) return Status::NotFound(path + ": cannot open fact file");
  return ParseFactFile(*text, path);
}

}  // namespace compactor
