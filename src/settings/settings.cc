#include "compactor/settings.h"

#include <fmt/format.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "compactor/policy.h"
#include "compactor/strategy.h"
#include "compactor/tokenizer.h"
#include "util/json_scan.h"

namespace compactor {
namespace {

using Json = nlohmann::ordered_json;

// A registered strategy (strategy.h) or "off" (oh-my-pi: no automatic compaction).
bool KnownStrategy(std::string_view s) { return s == "off" || FindStrategy(s) != nullptr; }

std::string TypeName(const Json& v) {
  if (v.is_number()) return "a number";
  if (v.is_boolean()) return "a boolean";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}

// Collects values into a CompactionSettings, reporting problems by key path.
class Reader {
 public:
  Reader(std::string_view name, CompactionSettings base) : name_(name), s_(std::move(base)) {}

  Status Error(std::string_view key, std::string_view what) const {
    return Status::InvalidArgument(fmt::format("settings file {}: {}: {}", name_, key, what));
  }
  void Warn(std::string message) { warnings_.push_back({std::string(name_), std::move(message)}); }

  Status Bool(const Json& v, std::string_view key, bool& out) {
    if (!v.is_boolean()) return Error(key, "expected true or false, got " + TypeName(v));
    out = v.get<bool>();
    return Status::Ok();
  }
  Status String(const Json& v, std::string_view key, std::string& out) {
    if (!v.is_string()) return Error(key, "expected a string, got " + TypeName(v));
    out = v.get<std::string>();
    if (out.empty()) return Error(key, "must not be empty");
    return Status::Ok();
  }
  Status Number(const Json& v, std::string_view key, double& out) {
    if (!v.is_number()) return Error(key, "expected a number, got " + TypeName(v));
    out = v.get<double>();
    if (!std::isfinite(out)) return Error(key, "must be finite");
    return Status::Ok();
  }
  // An integral number >= min (token counts may be written as 16384.0 but not 0.5).
  Status Integer(const Json& v, std::string_view key, int64_t min, int64_t& out) {
    double d = 0;
    COMPACTOR_RETURN_IF_ERROR(Number(v, key, d));
    if (d != std::floor(d) || std::fabs(d) > 9.0e15) {
      return Error(key, fmt::format("expected a whole number, got {}", v.dump()));
    }
    if (d < static_cast<double>(min)) {
      return Error(key, fmt::format("must be at least {}, got {}", min, v.dump()));
    }
    out = static_cast<int64_t>(d);
    return Status::Ok();
  }
  Status Int(const Json& v, std::string_view key, int min, int& out) {
    int64_t x = 0;
    COMPACTOR_RETURN_IF_ERROR(Integer(v, key, min, x));
    if (x > std::numeric_limits<int>::max()) return Error(key, "is too large");
    out = static_cast<int>(x);
    return Status::Ok();
  }

  Status Pruning(const Json& obj, std::string_view prefix) {
    if (!obj.is_object()) return Error(prefix, "expected an object, got " + TypeName(obj));
    PruningSettings& p = s_.pruning;
    for (const auto& [key, v] : obj.items()) {
      std::string path = fmt::format("{}.{}", prefix, key);
      if (key == "enabled") {
        COMPACTOR_RETURN_IF_ERROR(Bool(v, path, p.enabled));
      } else if (key == "protectTokens") {
        COMPACTOR_RETURN_IF_ERROR(Integer(v, path, 0, p.protect_tokens));
      } else if (key == "minimumSavings") {
        COMPACTOR_RETURN_IF_ERROR(Integer(v, path, 0, p.minimum_savings));
      } else if (key == "protectedTools") {
        if (!v.is_array())
          return Error(path, "expected an array of tool names, got " + TypeName(v));
        std::vector<std::string> tools;
        for (const auto& t : v) {
          if (!t.is_string())
            return Error(path, "expected tool names (strings), got " + TypeName(t));
          tools.push_back(t.get<std::string>());
        }
        p.protected_tools = std::move(tools);
      } else {
        Warn(fmt::format("unknown key \"{}\" (ignored)", path));
      }
    }
    return Status::Ok();
  }

  // Reads the compaction keys of `obj`. `top_level_lenient`: unknown keys are
  // other applications' settings (a pi settings.json) and are not reported.
  Status Keys(const Json& obj, std::string_view prefix, bool lenient) {
    for (const auto& [key, v] : obj.items()) {
      std::string path = prefix.empty() ? key : fmt::format("{}.{}", prefix, key);
      if (key == "enabled") {
        COMPACTOR_RETURN_IF_ERROR(Bool(v, path, s_.enabled));
      } else if (key == "strategy") {
        COMPACTOR_RETURN_IF_ERROR(String(v, path, s_.strategy));
        if (!KnownStrategy(s_.strategy)) {
          return Error(path, fmt::format("unknown strategy \"{}\" (expected {} or off)",
                                         s_.strategy, StrategyNames()));
        }
      } else if (key == "reserveTokens") {
        COMPACTOR_RETURN_IF_ERROR(Integer(v, path, 0, s_.reserve_tokens));
      } else if (key == "keepRecentTokens") {
        COMPACTOR_RETURN_IF_ERROR(Integer(v, path, 0, s_.keep_recent_tokens));
      } else if (key == "thresholdPercent") {
        COMPACTOR_RETURN_IF_ERROR(Number(v, path, s_.threshold_percent));
      } else if (key == "thresholdTokens") {
        COMPACTOR_RETURN_IF_ERROR(
            Integer(v, path, std::numeric_limits<int64_t>::min(), s_.threshold_tokens));
      } else if (key == "contextWindow") {
        COMPACTOR_RETURN_IF_ERROR(Integer(v, path, 0, s_.context_window));
      } else if (key == "trigger") {
        std::string name;
        COMPACTOR_RETURN_IF_ERROR(String(v, path, name));
        Result<TriggerPreset> preset = ParseTriggerPreset(name);
        if (!preset.ok()) {
          return Error(path, fmt::format("unknown trigger preset \"{}\" (expected one of {})", name,
                                         TriggerPresetNames()));
        }
        s_.trigger = *preset;
      } else if (key == "keepPolicy") {
        std::string name;
        COMPACTOR_RETURN_IF_ERROR(String(v, path, name));
        Result<KeepPolicy> policy = ParseKeepPolicy(name);
        if (!policy.ok()) return Error(path, policy.status().message());
        s_.keep_policy = *policy;
      } else if (key == "keepTurns") {
        COMPACTOR_RETURN_IF_ERROR(Int(v, path, 1, s_.keep_turns));
      } else if (key == "keepMessages") {
        COMPACTOR_RETURN_IF_ERROR(Int(v, path, 1, s_.keep_messages));
      } else if (key == "tokenizer") {
        // Parsed once every key is read (ParseSettingsJson): an unknown name is
        // reported after type errors of later keys, as a whole-file error.
        std::string name;
        COMPACTOR_RETURN_IF_ERROR(String(v, path, name));
        tokenizer_name_ = std::move(name);
      } else if (key == "pruning") {
        COMPACTOR_RETURN_IF_ERROR(Pruning(v, path));
      } else if (key == "compaction" && prefix.empty()) {
        continue;  // handled by the caller
      } else if (key == "models" && prefix.empty()) {
        continue;  // summarizer models: ParseModelConfigs (providers.h)
      } else if (key == "serve" && prefix.empty()) {
        continue;  // compactor serve's section: ResolveServeDefaults (serve.h)
      } else if (!lenient) {
        Warn(fmt::format("unknown key \"{}\" (ignored)", path));
      }
    }
    return Status::Ok();
  }

  // The settings read; the tokenizer name, if any, still to be parsed.
  LoadedSettings Take() && { return {std::move(s_), std::move(warnings_)}; }
  const std::optional<std::string>& tokenizer_name() const { return tokenizer_name_; }

 private:
  std::string_view name_;
  CompactionSettings s_;
  std::optional<std::string> tokenizer_name_;
  std::vector<SettingsWarning> warnings_;
};

}  // namespace

std::string SettingsWarning::ToString() const { return file + ": " + message; }

Result<LoadedSettings> ParseSettingsJson(std::string_view json, std::string_view name,
                                         const CompactionSettings& base) {
  Result<Json> parsed = internal::ParseJsonWithinLimit<Json>(json, /*ignore_comments=*/true);
  if (!parsed.ok()) {
    std::string detail = parsed.status().message();
    // Not JSON (rather than nested too deep): re-parse with exceptions only to
    // get nlohmann's position-bearing message.
    if (parsed.status().code() == StatusCode::kInvalidArgument) {
      try {
        Json ignored = Json::parse(json, nullptr, true, true);
        (void)ignored;
      } catch (const Json::exception& e) {
        detail = fmt::format("invalid JSON ({})", e.what());
      }
    }
    return Status::InvalidArgument(fmt::format("settings file {}: {}", name, detail));
  }
  const Json& doc = *parsed;
  if (!doc.is_object()) {
    return Status::InvalidArgument(
        fmt::format("settings file {}: expected a JSON object, got {}", name, TypeName(doc)));
  }
  Reader reader(name, base);
  auto nested = doc.find("compaction");
  bool has_nested = nested != doc.end();
  if (has_nested && !nested->is_object()) {
    return Status::InvalidArgument(fmt::format(
        "settings file {}: compaction: expected an object, got {}", name, TypeName(*nested)));
  }
  // A pi-style file carries other applications' settings at the top level.
  COMPACTOR_RETURN_IF_ERROR(reader.Keys(doc, "", /*lenient=*/has_nested));
  if (has_nested) COMPACTOR_RETURN_IF_ERROR(reader.Keys(*nested, "compaction", /*lenient=*/false));
  const std::optional<std::string> tokenizer = reader.tokenizer_name();
  LoadedSettings loaded = std::move(reader).Take();
  Status valid = ValidateSettings(loaded.settings);
  if (valid.ok() && tokenizer) {
    Result<std::optional<Encoding>> parsed = ParseTokenizerSetting(*tokenizer);
    if (parsed.ok()) {
      loaded.settings.tokenizer = *parsed;
    } else {
      valid = parsed.status();
    }
  }
  if (!valid.ok()) {
    return Status::InvalidArgument(fmt::format("settings file {}: {}", name, valid.message()));
  }
  return loaded;
}

Status ValidateSettings(const CompactionSettings& s) {
  COMPACTOR_RETURN_IF_ERROR(ValidateSettingRanges(s));
  if (!KnownStrategy(s.strategy)) {
    return Status::InvalidArgument(fmt::format("unknown strategy \"{}\"", s.strategy));
  }
  return Status::Ok();
}

namespace {

// An Env error's text without its leading "PATH: " (the caller names the file).
std::string Detail(const Status& s, const std::string& path) {
  std::string_view m = s.message();
  if (m.starts_with(path) && m.substr(path.size()).starts_with(": "))
    m.remove_prefix(path.size() + 2);
  return std::string(m);
}

// The settings file's identity; nullopt when it does not exist.
Result<std::optional<FileIdentity>> StatSettings(Env* env, const std::string& path) {
  Result<FileInfo> info = env->Stat(path);
  if (!info.ok()) {
    if (info.status().code() == StatusCode::kNotFound) return std::optional<FileIdentity>();
    return Status::IoError(fmt::format("settings file {}: {}", path, Detail(info.status(), path)));
  }
  if (info->kind == FileKind::kDirectory)
    return Status::IoError(fmt::format("settings file {}: is a directory", path));
  return std::optional<FileIdentity>(info->identity);
}

}  // namespace

Result<LoadedSettings> LoadSettingsFile(const std::string& path, const CompactionSettings& base,
                                        Env* env) {
  Result<std::string> text = EnvOrDefault(env)->ReadFile(path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound)
      return Status::NotFound(fmt::format("settings file {}: not found", path));
    return Status::IoError(fmt::format("settings file {}: {}", path, Detail(text.status(), path)));
  }
  return ParseSettingsJson(*text, path, base);
}

SettingsSource::SettingsSource(std::optional<std::string> path, CompactionSettings base, Env* env)
    : path_(std::move(path)), base_(std::move(base)), env_(EnvOrDefault(env)), current_(base_) {}

Result<CompactionSettings> SettingsSource::Get() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!path_) return current_;
  COMPACTOR_ASSIGN_OR_RETURN(std::optional<FileIdentity> stamp, StatSettings(env_, *path_));
  if (!stamp) {
    stamp_.reset();
    cached_error_.reset();
    return Status::NotFound(fmt::format("settings file {}: not found", *path_));
  }
  if (stamp_ && *stamp_ == *stamp) {
    if (cached_error_) return *cached_error_;
    return current_;
  }
  stamp_ = stamp;
  ++reload_count_;
  Result<LoadedSettings> loaded = LoadSettingsFile(*path_, base_, env_);
  if (!loaded.ok()) {
    cached_error_ = loaded.status();
    return loaded.status();
  }
  cached_error_.reset();
  current_ = std::move(loaded->settings);
  warnings_ = std::move(loaded->warnings);
  return current_;
}

std::vector<SettingsWarning> SettingsSource::warnings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return warnings_;
}

CompactionSettings SettingsSource::last_good() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

int SettingsSource::reload_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reload_count_;
}

}  // namespace compactor
