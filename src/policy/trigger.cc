#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "compactor/policy.h"

namespace compactor {
namespace {

struct PresetName {
  TriggerPreset preset;
  std::string_view name;
};
constexpr PresetName kPresets[] = {
    {TriggerPreset::kPi, "pi"},
    {TriggerPreset::kOmp, "omp"},
    {TriggerPreset::kKimi, "kimi"},
    {TriggerPreset::kCodex, "codex"},
    {TriggerPreset::kOpencode, "opencode"},
    {TriggerPreset::kNexus, "nexus"},
    {TriggerPreset::kNominal, "nominal"},
};

// The constants of each anchor's trigger (docs/settings.md gives the rules).
constexpr double kOmpReserveFraction = 0.15;     // oh-my-pi effectiveReserveTokens
constexpr double kKimiTriggerRatio = 0.85;       // Kimi Code triggerRatio
constexpr int64_t kKimiReservedContext = 50000;  // Kimi Code reservedContextSize
constexpr int64_t kOpencodeReserveCap = 20000;   // OpenCode: min(20000, maxOutputTokens)
constexpr int64_t kOpencodeOutputMax = 32000;    // OpenCode: OUTPUT_TOKEN_MAX
constexpr int64_t kNexusMinReserve = 10000;      // Nexus: max(Window / 5, 10000)
constexpr int64_t kNominalThreshold = 100000;    // Nominal Code: COMPACTION_TOKEN_THRESHOLD

bool NeedsWindow(TriggerPreset preset) { return preset != TriggerPreset::kNominal; }

// The user's threshold override, resolved as oh-my-pi's resolveThresholdTokens
// does: fixed tokens win over the percentage; both are clamped.
Result<std::optional<Threshold>> Override(int64_t window, const CompactionSettings& s) {
  if (s.threshold_tokens > 0) {
    Threshold t;
    t.window = window;
    if (window > 0) {
      t.value = std::min(window - 1, std::max<int64_t>(1, s.threshold_tokens));
      t.rule = fmt::format("thresholdTokens {} clamped to [1, window - 1 = {}]", s.threshold_tokens,
                           window - 1);
    } else {
      t.value = s.threshold_tokens;
      t.rule = fmt::format("thresholdTokens {}", s.threshold_tokens);
    }
    return std::optional<Threshold>(t);
  }
  if (std::isfinite(s.threshold_percent) && s.threshold_percent > 0) {
    if (window <= 0) {
      return Status::InvalidArgument(
          "thresholdPercent needs the context window: set contextWindow in the settings or pass "
          "the model's window");
    }
    double p = std::clamp(s.threshold_percent, 1.0, 99.0);
    Threshold t;
    t.window = window;
    t.value = static_cast<int64_t>(std::floor(static_cast<double>(window) * p / 100.0));
    t.rule = fmt::format("thresholdPercent {} (clamped to {}) of window {}", s.threshold_percent, p,
                         window);
    return std::optional<Threshold>(t);
  }
  return std::optional<Threshold>();
}

Status TooSmall(TriggerPreset preset, int64_t window, int64_t reserve, std::string_view what) {
  return Status::InvalidArgument(fmt::format(
      "context window {} is not larger than the {} preset's reserve {} ({}): every check would "
      "trigger a compaction; raise contextWindow, lower reserveTokens or set thresholdTokens",
      window, TriggerPresetName(preset), reserve, what));
}

}  // namespace

std::string_view TriggerPresetName(TriggerPreset preset) {
  for (const auto& p : kPresets) {
    if (p.preset == preset) return p.name;
  }
  return "unknown";
}

Result<TriggerPreset> ParseTriggerPreset(std::string_view name) {
  for (const auto& p : kPresets) {
    if (p.name == name) return p.preset;
  }
  return Status::InvalidArgument(fmt::format("unknown trigger preset \"{}\" (expected one of {})",
                                             name, TriggerPresetNames()));
}

std::string TriggerPresetNames() {
  std::string out;
  for (const auto& p : kPresets) {
    if (!out.empty()) out += ", ";
    out += p.name;
  }
  return out;
}

Result<Threshold> ResolveThreshold(TriggerPreset preset, int64_t window,
                                   const CompactionSettings& s, const TriggerModelInfo& model) {
  if (window <= 0) window = s.context_window;
  if (NeedsWindow(preset) && window <= 0) {
    return Status::InvalidArgument(fmt::format(
        "the {} trigger needs the model's context window: set contextWindow in the settings",
        TriggerPresetName(preset)));
  }
  COMPACTOR_ASSIGN_OR_RETURN(std::optional<Threshold> over, Override(window, s));
  Threshold t;
  t.window = window;
  switch (preset) {
    case TriggerPreset::kPi: {
      if (over) return *over;
      t.comparison = Comparison::kGreater;
      t.value = window - s.reserve_tokens;
      if (t.value <= 0) return TooSmall(preset, window, s.reserve_tokens, "reserveTokens");
      t.rule = fmt::format("window - reserveTokens = {} - {}", window, s.reserve_tokens);
      return t;
    }
    case TriggerPreset::kOmp: {
      if (over) return *over;
      t.comparison = Comparison::kGreater;
      int64_t reserve = std::max(
          static_cast<int64_t>(std::floor(static_cast<double>(window) * kOmpReserveFraction)),
          s.reserve_tokens);
      t.value = window - reserve;
      if (t.value <= 0) {
        return TooSmall(preset, window, reserve, "max(15% of window, reserveTokens)");
      }
      t.rule = fmt::format("window - max(15% of window, reserveTokens) = {} - {}", window, reserve);
      return t;
    }
    case TriggerPreset::kKimi: {
      t.comparison = Comparison::kGreaterOrEqual;
      if (over) {
        over->comparison = Comparison::kGreaterOrEqual;
        return *over;
      }
      // used >= max * 0.85 || (50000 < max && used + 50000 >= max): the smallest
      // integer count that fires.
      int64_t ratio =
          static_cast<int64_t>(std::ceil(static_cast<double>(window) * kKimiTriggerRatio));
      t.value = ratio;
      t.rule = fmt::format("0.85 x window {}", window);
      if (window > kKimiReservedContext && window - kKimiReservedContext < ratio) {
        t.value = window - kKimiReservedContext;
        t.rule = fmt::format("window - 50000 = {} - 50000 (below 0.85 x window)", window);
      }
      if (t.value <= 0) return TooSmall(preset, window, window - t.value, "0.85 x window");
      return t;
    }
    case TriggerPreset::kCodex: {
      t.comparison = Comparison::kGreaterOrEqual;
      // Integer arithmetic as in codex's (context_window * 9) / 10.
      t.value = (window * 9) / 10;
      t.rule = fmt::format("90% of window {}", window);
      if (over && over->value < t.value) {
        t.value = over->value;
        t.rule = over->rule + fmt::format(" (below the 90% limit {})", (window * 9) / 10);
      }
      if (t.value <= 0) return TooSmall(preset, window, window - t.value, "10% of window");
      return t;
    }
    case TriggerPreset::kOpencode: {
      t.comparison = Comparison::kGreaterOrEqual;
      if (over) {
        over->comparison = Comparison::kGreaterOrEqual;
        return *over;
      }
      int64_t max_output = model.max_output_tokens > 0
                               ? std::min(model.max_output_tokens, kOpencodeOutputMax)
                               : kOpencodeOutputMax;
      int64_t reserved = std::min(kOpencodeReserveCap, max_output);
      t.value = window - reserved;
      if (t.value <= 0) return TooSmall(preset, window, reserved, "min(20000, max output)");
      t.rule = fmt::format("window - min(20000, max output) = {} - {}", window, reserved);
      return t;
    }
    case TriggerPreset::kNexus: {
      if (over) return *over;
      t.comparison = Comparison::kGreater;
      int64_t reserve = std::max(window / 5, kNexusMinReserve);
      t.value = window - reserve;
      if (t.value <= 0) return TooSmall(preset, window, reserve, "max(window / 5, 10000)");
      t.rule = fmt::format("window - max(window / 5, 10000) = {} - {}", window, reserve);
      return t;
    }
    case TriggerPreset::kNominal: {
      t.comparison = Comparison::kGreaterOrEqual;
      if (over) {
        over->comparison = Comparison::kGreaterOrEqual;
        return *over;
      }
      t.window = 0;
      t.value = kNominalThreshold;
      t.rule = "fixed 100000";
      return t;
    }
  }
  return Status::Internal("unhandled trigger preset");
}

Result<TriggerDecision> ShouldCompact(double tokens, int64_t window, const CompactionSettings& s,
                                      TriggerPreset preset, const TriggerModelInfo& model) {
  TriggerDecision d;
  d.preset = preset;
  d.tokens = tokens;
  if (!s.enabled) {
    d.reason = "compaction disabled";
    return d;
  }
  if (s.strategy == "off") {
    d.reason = "compaction strategy is \"off\"";
    return d;
  }
  COMPACTOR_ASSIGN_OR_RETURN(d.threshold, ResolveThreshold(preset, window, s, model));
  bool greater = d.threshold.comparison == Comparison::kGreater;
  double v = static_cast<double>(d.threshold.value);
  // NaN (pi: a usage with a missing field) never exceeds a threshold.
  d.compact = greater ? tokens > v : tokens >= v;
  std::string_view op;
  if (d.compact) {
    op = greater ? ">" : ">=";
  } else {
    op = greater ? "<=" : "<";
  }
  d.reason = fmt::format("{} {} {} ({}: {})", tokens, op, d.threshold.value,
                         TriggerPresetName(preset), d.threshold.rule);
  return d;
}

Result<TriggerDecision> ShouldCompact(double tokens, int64_t window, const CompactionSettings& s,
                                      const TriggerModelInfo& model) {
  return ShouldCompact(tokens, window, s, s.trigger, model);
}

}  // namespace compactor
