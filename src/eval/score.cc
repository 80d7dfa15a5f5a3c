// Rendering a rebuilt context to text and deciding which facts it still holds
// (rules in docs/quality.md, "Matching").
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "compactor/eval.h"
#include "compactor/js_json.h"
#include "util/json_scan.h"

namespace compactor {
namespace {

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Tool-call arguments as "key: value" lines with string values unescaped, so
// a command with quotes reads the same as in prose.
std::string RenderArguments(std::string_view arguments_json) {
  auto parsed = internal::ParseJsonWithinLimit<nlohmann::ordered_json>(arguments_json);
  if (!parsed.ok() || !parsed->is_object()) return std::string(arguments_json);
  const nlohmann::ordered_json& j = *parsed;
  std::string out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    out += it.key();
    out += ": ";
    if (it.value().is_string()) {
      out += it.value().get<std::string>();
    } else {
      out += it.value().dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    }
    out += "\n";
  }
  return out;
}

std::string TextOf(const Message& m) {
  if (m.content_is_string) return m.content_string;
  std::string out;
  for (const ContentBlock& b : m.content) {
    if (b.kind == ContentBlock::Kind::kText || b.kind == ContentBlock::Kind::kThinking) {
      if (!out.empty()) out += "\n";
      out += b.text;
    }
  }
  return out;
}

// NormalizeForMatch, also recording (offset by `base`) the position of each
// collapsed whitespace run that contained a line break.
std::string NormalizeWithLines(std::string_view text, size_t base, std::vector<size_t>* breaks) {
  std::string out;
  out.reserve(text.size());
  bool space = false, newline = false;
  for (char ch : text) {
    if (ch == '`' || ch == '*' || ch == '"' || ch == '\'') continue;
    if (ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r' || ch == '\f' || ch == '\v') {
      space = !out.empty();
      newline = newline || ch == '\n';
      continue;
    }
    if (space) {
      if (newline && breaks) breaks->push_back(base + out.size());
      out.push_back(' ');
      space = false;
    }
    newline = false;
    out.push_back(ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch);
  }
  return out;
}

// Normalized text of all blocks joined with a separator that no needle
// contains, plus where each block starts.
struct Corpus {
  std::string text;
  std::vector<size_t> starts, ends;
  std::vector<bool> exchange;
  std::vector<size_t> line_breaks;  // sorted positions of line breaks (block ends included)

  // [from, to) of the line holding [pos, pos + len), clipped to its block.
  std::pair<size_t, size_t> LineAround(size_t pos, size_t len) const {
    size_t b = BlockAt(pos);
    size_t from = starts[b], to = ends[b];
    auto it = std::upper_bound(line_breaks.begin(), line_breaks.end(), pos);
    if (it != line_breaks.begin()) from = std::max(from, *(it - 1));
    auto next = std::lower_bound(line_breaks.begin(), line_breaks.end(), pos + len);
    if (next != line_breaks.end()) to = std::min(to, *next);
    return {from, to};
  }

  size_t BlockAt(size_t pos) const {
    auto it = std::upper_bound(starts.begin(), starts.end(), pos);
    return static_cast<size_t>(it - starts.begin()) - 1;
  }
};

Corpus BuildCorpus(const std::vector<RenderedBlock>& blocks) {
  Corpus c;
  for (const RenderedBlock& b : blocks) {
    if (!c.text.empty()) c.text += " \x1e ";
    c.starts.push_back(c.text.size());
    c.text += NormalizeWithLines(b.text, c.text.size(), &c.line_breaks);
    c.ends.push_back(c.text.size());
    c.exchange.push_back(b.exchange);
  }
  return c;
}

// Positions of `needle` (normalized) in `hay` at word boundaries. The view's
// ends count as boundaries.
std::vector<size_t> FindAll(std::string_view hay, std::string_view needle) {
  std::vector<size_t> out;
  if (needle.empty()) return out;
  size_t pos = 0;
  while (true) {
    pos = hay.find(needle, pos);
    if (pos == std::string_view::npos) break;
    bool left_ok = pos == 0 || !IsWordChar(needle.front()) || !IsWordChar(hay[pos - 1]);
    size_t end = pos + needle.size();
    bool right_ok = end >= hay.size() || !IsWordChar(needle.back()) || !IsWordChar(hay[end]);
    if (left_ok && right_ok) out.push_back(pos);
    ++pos;
  }
  return out;
}

bool Contains(const std::string& hay, std::string_view needle, size_t from, size_t to) {
  std::string_view region = std::string_view(hay).substr(from, to - from);
  return !FindAll(region, needle).empty();
}

struct Occurrence {
  size_t pos, len;
};

std::vector<Occurrence> Occurrences(const Corpus& c, const Fact& f) {
  std::vector<Occurrence> out;
  std::vector<std::string> needles = {NormalizeForMatch(f.text)};
  for (const std::string& v : f.variants) needles.push_back(NormalizeForMatch(v));
  for (const std::string& n : needles)
    for (size_t p : FindAll(c.text, n)) out.push_back({p, n.size()});
  std::sort(out.begin(), out.end(), [](const Occurrence& a, const Occurrence& b) {
    return a.pos < b.pos || (a.pos == b.pos && a.len > b.len);
  });
  return out;
}

// The text around an occurrence where qualifiers and supersession markers
// count: kQualifierWindow characters either side, inside the occurrence's
// line. Qualifiers also count anywhere in a tool call with its result.
std::pair<size_t, size_t> NearbyRegion(const Corpus& c, const Occurrence& o) {
  auto [line_from, line_to] = c.LineAround(o.pos, o.len);
  size_t from = o.pos >= kQualifierWindow ? o.pos - kQualifierWindow : 0;
  return {std::max(from, line_from), std::min(o.pos + o.len + kQualifierWindow, line_to)};
}

std::pair<size_t, size_t> QualifierRegion(const Corpus& c, const Occurrence& o) {
  size_t b = c.BlockAt(o.pos);
  if (c.exchange[b]) return {c.starts[b], c.ends[b]};
  return NearbyRegion(c, o);
}

// Words that mark a statement as describing a change (docs/quality.md).
constexpr std::string_view kSupersessionMarkers[] = {
    "superseded",
    "supersedes",
    "changed to",
    "changed from",
    "decision changed",
    "plan changed",
    "change of plan",
    "instead",
    "no longer",
    "replaced",
    "replacing",
    "revised",
    "reverted",
    "switched to",
    "switched from",
    "previously",
    "originally",
    "dropped",
    "abandoned",
    "obsolete",
    "outdated",
    "rather than",
    "->",
    "\xe2\x86\x92" /* → */,
};

bool QualifiersHold(const Corpus& c, const Fact& f, const Occurrence& o) {
  auto [from, to] = QualifierRegion(c, o);
  for (const auto& group : f.qualifiers) {
    bool any = false;
    for (const std::string& alt : group) {
      if (Contains(c.text, NormalizeForMatch(alt), from, to)) {
        any = true;
        break;
      }
    }
    if (!any) return false;
  }
  return true;
}

// Markers that an item names something replaced or turned down, by where
// the replaced thing stands: after the marker ("instead of X"), before it
// ("X -> Y", "X was dropped"), or anywhere in the item ("superseded").
// Direction matters: "use X instead of Y" marks Y, not X.
constexpr std::string_view kMarkBefore[] = {
    "instead of",   "rather than",     "replacing",       "replaced",   "switched from",
    "changed from", "moved away from", "no longer",       "dropped",    "abandoned",
    "rejected",     "ruled out",       "decided against", "was:",       "(was",
    "formerly",     "previously",      "originally",      "~~",         "reverted",
    "not use",      "don't use",       "do not use",      "stop using", "not going with"};
constexpr std::string_view kMarkAfter[] = {"->",          "\xe2\x86\x92" /* → */,
                                           "superseded",  "was replaced",
                                           "is replaced", "replaced by",
                                           "no longer",   "was dropped",
                                           "dropped",     "rejected",
                                           "ruled out",   "abandoned",
                                           "reverted",    "(old)",
                                           "(was",        "~~",
                                           "changed to",  "switched to",
                                           "instead",     "not chosen",
                                           "turned down", "declined",
                                           "was wrong",   "not used",
                                           "is out"};
constexpr std::string_view kMarkAnywhere[] = {
    "superseded",       "supersedes",   "obsolete",   "outdated",    "revised",    "change of plan",
    "decision changed", "plan changed", "considered", "alternative", "not adopted"};

bool MarkedAsReplaced(std::string_view item, size_t pos, size_t len, bool replaced_by_next) {
  if (replaced_by_next) return true;
  for (std::string_view m : kMarkAnywhere)
    if (!FindAll(item, m).empty()) return true;
  for (std::string_view m : kMarkBefore)
    for (size_t p : FindAll(item, m))
      if (p + m.size() <= pos) return true;
  for (std::string_view m : kMarkAfter) {
    for (size_t p : FindAll(item, m)) {
      if (p < pos + len) continue;
      // "X instead of Y" replaces Y, and "use X instead" adopts X: a bare
      // "instead" marks X only when a clause ends between them ("X was too
      // slow, so Y instead").
      if (m == "instead" &&
          (item.substr(p + m.size()).starts_with(" of") ||
           item.substr(pos + len, p - pos - len).find_first_of(",;") == std::string_view::npos))
        continue;
      return true;
    }
  }
  return false;
}

// A summary item with its normalized text, where facts are looked up.
struct ParsedItem {
  SummaryItem item;
  std::string norm;
};

std::vector<ParsedItem> SummaryItemsOf(const std::vector<RenderedBlock>& blocks) {
  std::vector<ParsedItem> out;
  for (const RenderedBlock& b : blocks) {
    // A branch summary tells what happened on an abandoned branch: history,
    // like the verbatim messages, not a claim about the current state.
    if (!b.summary || b.role == Role::kBranchSummary) continue;
    for (SummaryItem& item : ParseSummaryItems(b.text)) {
      std::string norm = NormalizeForMatch(item.text);
      out.push_back({std::move(item), std::move(norm)});
    }
  }
  return out;
}

struct ItemHit {
  const ParsedItem* item;
  size_t pos, len;
};

std::vector<ItemHit> HitsIn(const std::vector<ParsedItem>& items, const Fact& f) {
  std::vector<std::string> needles = {NormalizeForMatch(f.text)};
  for (const std::string& v : f.variants) needles.push_back(NormalizeForMatch(v));
  std::vector<ItemHit> out;
  for (const ParsedItem& it : items)
    for (const std::string& n : needles)
      for (size_t p : FindAll(it.norm, n)) out.push_back({&it, p, n.size()});
  return out;
}

// The wrong claim the summary makes about `f`, or "" (docs/quality.md, "Status").
std::string StatusError(const Fact& f, const std::vector<ItemHit>& hits) {
  for (const ItemHit& h : hits) {
    const SummaryItem& item = h.item->item;
    const bool marked = MarkedAsReplaced(h.item->norm, h.pos, h.len, item.replaced_by_next);
    if (!f.superseded_by.empty()) {
      if (!marked) return "stale-as-current";
      continue;
    }
    if (f.status == "rejected") {
      if (!marked) return "rejected-as-decided";
      continue;
    }
    if (f.status == "done") {
      if (ItemClaimsOpen(item) && !marked) return "done-as-pending";
      continue;
    }
    if (f.kind == FactKind::kError && f.fixed) {
      if (!*f.fixed && ItemClaimsDone(item)) return "false-resolved";
      if (*f.fixed && ItemClaimsOpen(item)) return "fixed-as-open";
      continue;
    }
    if ((f.kind == FactKind::kGoal || f.kind == FactKind::kConstraint) &&
        (item.section == SummarySection::kDone || item.checked))
      return "under-done";
  }
  return "";
}

}  // namespace

std::string NormalizeForMatch(std::string_view text) {
  return NormalizeWithLines(text, 0, nullptr);
}

std::vector<RenderedBlock> RenderContext(const std::vector<ContextMessage>& messages) {
  std::vector<Message> parsed;
  parsed.reserve(messages.size());
  for (const ContextMessage& cm : messages) {
    auto m = ParseMessage(cm.json());
    parsed.push_back(m.ok() ? std::move(*m) : Message{});
  }
  // Tool results answering a call in the context are rendered with the call.
  std::unordered_map<std::string, size_t> result_of;
  for (size_t i = 0; i < parsed.size(); ++i)
    if (parsed[i].role == Role::kToolResult && !parsed[i].tool_call_id.empty())
      result_of.emplace(parsed[i].tool_call_id, i);
  std::vector<bool> consumed(parsed.size(), false);

  std::vector<RenderedBlock> out;
  for (size_t i = 0; i < parsed.size(); ++i) {
    const Message& m = parsed[i];
    const bool synthesized = !messages[i].origin.empty();
    auto add = [&](std::string text, bool exchange, bool summary) {
      if (text.empty()) return;
      RenderedBlock b;
      b.message_index = i;
      b.role = m.role;
      b.exchange = exchange;
      b.summary = summary;
      b.text = std::move(text);
      out.push_back(std::move(b));
    };
    switch (m.role) {
      case Role::kAssistant: {
        add(TextOf(m), false, false);
        for (const ContentBlock& b : m.content) {
          if (b.kind != ContentBlock::Kind::kToolCall) continue;
          std::string text =
              "[tool call] " + b.tool_name + "\n" + RenderArguments(b.arguments_json);
          auto it = result_of.find(b.tool_call_id);
          if (it != result_of.end() && it->second > i) {
            const Message& r = parsed[it->second];
            consumed[it->second] = true;
            text += r.is_error ? "[tool error]\n" : "[tool result]\n";
            text += TextOf(r);
          }
          add(std::move(text), true, false);
        }
        break;
      }
      case Role::kToolResult:
        if (!consumed[i])
          add((m.is_error ? "[tool error]\n" : "[tool result]\n") + TextOf(m), false, false);
        break;
      case Role::kBashExecution: {
        std::string text = "[bash] " + m.command + "\n" + m.output;
        if (m.exit_code) text += "\nexit code " + JsNumber(*m.exit_code);
        add(std::move(text), true, false);
        break;
      }
      case Role::kCompactionSummary:
      case Role::kBranchSummary:
        add(m.summary, false, true);
        break;
      default:
        add(TextOf(m), false, synthesized);
    }
  }
  return out;
}

std::vector<FactOutcome> ScoreFacts(const std::vector<Fact>& facts,
                                    const std::vector<RenderedBlock>& blocks) {
  const Corpus c = BuildCorpus(blocks);
  std::map<std::string, const Fact*> by_id;
  for (const Fact& f : facts) by_id.emplace(f.id, &f);
  std::map<std::string, std::vector<Occurrence>> occ;
  for (const Fact& f : facts) occ.emplace(f.id, Occurrences(c, f));

  const std::vector<ParsedItem> items = SummaryItemsOf(blocks);
  std::vector<FactOutcome> out;
  for (const Fact& f : facts) {
    FactOutcome r;
    r.id = f.id;
    r.kind = f.kind;
    r.stale = !f.superseded_by.empty();
    r.status = f.status;
    const std::vector<ItemHit> hits = HitsIn(items, f);
    r.in_summary = !hits.empty();
    r.status_error = StatusError(f, hits);
    const auto& mine = occ[f.id];
    r.mentioned = !mine.empty();
    if (!r.stale && f.status.empty()) {
      for (const Occurrence& o : mine) {
        if (QualifiersHold(c, f, o)) {
          r.retained = true;
          break;
        }
      }
    } else if (r.stale) {
      // Follow the chain to the fact that is current at the end.
      const Fact* current = &f;
      for (int guard = 0; guard < 16 && !current->superseded_by.empty(); ++guard) {
        auto it = by_id.find(current->superseded_by);
        if (it == by_id.end()) break;
        current = it->second;
      }
      size_t last_current = std::string::npos;
      for (const Occurrence& o : occ[current->id])
        last_current = last_current == std::string::npos ? o.pos : std::max(last_current, o.pos);
      for (const Occurrence& o : mine) {
        auto [from, to] = NearbyRegion(c, o);
        bool marked = false;
        for (std::string_view m : kSupersessionMarkers)
          marked = marked || Contains(c.text, m, from, to);
        bool corrected_later = last_current != std::string::npos && last_current > o.pos;
        if (!marked && !corrected_later) {
          r.stale_as_current = true;
          break;
        }
      }
    }
    const bool expected = !r.stale && f.status.empty();
    r.status_right = r.status_error.empty() && (expected ? r.retained : !r.stale_as_current);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace compactor
