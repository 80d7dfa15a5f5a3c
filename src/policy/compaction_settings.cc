#include "compactor/compaction_settings.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "compactor/policy.h"
#include "compactor/tokenizer.h"

namespace compactor {
namespace {

struct NamedKeepPolicy {
  KeepPolicy policy;
  std::string_view name;
};
constexpr NamedKeepPolicy kKeepPolicies[] = {
    {KeepPolicy::kRecentTokens, "tokens"},
    {KeepPolicy::kLastTurns, "turns"},
    {KeepPolicy::kLastMessages, "messages"},
    {KeepPolicy::kOpencode, "opencode"},
};

}  // namespace

Status ValidateSettingRanges(const CompactionSettings& s) {
  if (s.reserve_tokens < 0) return Status::InvalidArgument("reserveTokens must not be negative");
  if (s.keep_recent_tokens < 0) {
    return Status::InvalidArgument("keepRecentTokens must not be negative");
  }
  if (s.context_window < 0) return Status::InvalidArgument("contextWindow must not be negative");
  if (s.keep_turns < 1) return Status::InvalidArgument("keepTurns must be at least 1");
  if (s.keep_messages < 1) return Status::InvalidArgument("keepMessages must be at least 1");
  return Status::Ok();
}

Result<KeepPolicy> ParseKeepPolicy(std::string_view name) {
  for (const auto& k : kKeepPolicies) {
    if (k.name == name) return k.policy;
  }
  return Status::InvalidArgument(fmt::format(
      "unknown keep policy \"{}\" (expected tokens, turns, messages or opencode)", name));
}

std::string_view KeepPolicyName(KeepPolicy policy) {
  for (const auto& k : kKeepPolicies) {
    if (k.policy == policy) return k.name;
  }
  return "tokens";
}

Result<std::optional<Encoding>> ParseTokenizerSetting(std::string_view name) {
  if (name == "estimate") return std::optional<Encoding>();
  Result<Encoding> encoding = ParseEncoding(name);
  if (!encoding.ok()) {
    return Status::InvalidArgument(
        fmt::format("unknown tokenizer \"{}\" (estimate, o200k, cl100k)", name));
  }
  return std::optional<Encoding>(*encoding);
}

std::string_view TokenizerSettingName(const std::optional<Encoding>& tokenizer) {
  if (!tokenizer) return "estimate";
  return *tokenizer == Encoding::kO200kBase ? "o200k" : "cl100k";
}

std::string SettingsToJson(const CompactionSettings& s) {
  nlohmann::ordered_json j;
  j["enabled"] = s.enabled;
  j["strategy"] = s.strategy;
  j["reserveTokens"] = s.reserve_tokens;
  j["keepRecentTokens"] = s.keep_recent_tokens;
  if (s.threshold_percent == std::floor(s.threshold_percent)) {
    j["thresholdPercent"] = static_cast<int64_t>(s.threshold_percent);
  } else {
    j["thresholdPercent"] = s.threshold_percent;
  }
  j["thresholdTokens"] = s.threshold_tokens;
  j["contextWindow"] = s.context_window;
  j["trigger"] = TriggerPresetName(s.trigger);
  j["keepPolicy"] = KeepPolicyName(s.keep_policy);
  j["keepTurns"] = s.keep_turns;
  j["keepMessages"] = s.keep_messages;
  j["tokenizer"] = TokenizerSettingName(s.tokenizer);
  j["pruning"] = {{"enabled", s.pruning.enabled},
                  {"protectTokens", s.pruning.protect_tokens},
                  {"minimumSavings", s.pruning.minimum_savings},
                  {"protectedTools", s.pruning.protected_tools}};
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace compactor
