#include "compactor/estimate.h"

#include <simdjson.h>

#include <cmath>
#include <map>
#include <mutex>

#include "compactor/js_json.h"
#include "util/utf8.h"

namespace compactor {

int64_t Utf16Length(std::string_view utf8) {
  if (internal::IsValidUtf8(utf8)) return internal::Utf16LengthValid(utf8);
  return internal::Utf16LengthValid(internal::ReplaceInvalidUtf8(utf8));
}

namespace {

// Per-category character counts of one message, gathered in one forward pass
// so that field order does not matter.
struct Counts {
  std::string_view role;
  bool content_is_string = false;
  int64_t content_string = 0;
  int64_t text = 0, thinking = 0, tool_calls = 0, images = 0;
  int64_t command = 0, output = 0, summary = 0;
};

int64_t StringTokenLength(simdjson::ondemand::value v) {
  simdjson::ondemand::json_type t;
  if (v.type().get(t) || t != simdjson::ondemand::json_type::string) return 0;
  int64_t n = internal::JsonStringTokenUtf16Length(v.raw_json_token());
  return n < 0 ? 0 : n;
}

void CountBlock(simdjson::ondemand::object block, Counts* c) {
  std::string_view type;
  int64_t text = 0, thinking = 0, name = 0, args = 0;
  for (auto f : block) {
    std::string_view key;
    if (f.unescaped_key().get(key)) return;
    simdjson::ondemand::value v = f.value();
    if (key == "type") {
      if (v.get_string().get(type)) type = {};
    } else if (key == "text") {
      text = StringTokenLength(v);
    } else if (key == "thinking") {
      thinking = StringTokenLength(v);
    } else if (key == "name") {
      name = StringTokenLength(v);
    } else if (key == "arguments") {
      std::string_view raw;
      simdjson::ondemand::json_type t;
      if (v.type().get(t)) continue;
      if (t == simdjson::ondemand::json_type::object || t == simdjson::ondemand::json_type::array) {
        if (t == simdjson::ondemand::json_type::object) {
          simdjson::ondemand::object o;
          if (v.get_object().get(o) || o.raw_json().get(raw)) continue;
        } else {
          simdjson::ondemand::array a;
          if (v.get_array().get(a) || a.raw_json().get(raw)) continue;
        }
      } else {
        raw = v.raw_json_token();
      }
      auto len = JsCanonicalLength(raw);
      args = len.ok() ? *len : static_cast<int64_t>(raw.size());
    }
  }
  if (type == "text")
    c->text += text;
  else if (type == "thinking")
    c->thinking += thinking;
  else if (type == "toolCall")
    c->tool_calls += name + args;
  else if (type == "image")
    c->images += 1;
}

bool CountMessage(std::string_view json, Counts* c, std::string* role_storage) {
  thread_local simdjson::ondemand::parser parser;
  thread_local simdjson::padded_string buffer;
  if (buffer.size() < json.size()) buffer = simdjson::padded_string(json.size() * 2 + 64);
  std::memcpy(buffer.data(), json.data(), json.size());
  simdjson::ondemand::document doc;
  if (parser.iterate(buffer.data(), json.size(), buffer.size() + simdjson::SIMDJSON_PADDING)
          .get(doc))
    return false;
  simdjson::ondemand::object obj;
  if (doc.get_object().get(obj)) return false;
  for (auto f : obj) {
    std::string_view key;
    if (f.unescaped_key().get(key)) return false;
    simdjson::ondemand::value v = f.value();
    if (key == "role") {
      std::string_view r;
      if (!v.get_string().get(r)) role_storage->assign(r);
    } else if (key == "content") {
      simdjson::ondemand::json_type t;
      if (v.type().get(t)) continue;
      if (t == simdjson::ondemand::json_type::string) {
        c->content_is_string = true;
        c->content_string = StringTokenLength(v);
      } else if (t == simdjson::ondemand::json_type::array) {
        simdjson::ondemand::array arr;
        if (v.get_array().get(arr)) continue;
        for (auto item : arr) {
          simdjson::ondemand::object block;
          if (item.get_object().get(block)) continue;
          CountBlock(block, c);
        }
      }
    } else if (key == "command") {
      c->command = StringTokenLength(v);
    } else if (key == "output") {
      c->output = StringTokenLength(v);
    } else if (key == "summary") {
      // JavaScript's .length: a string's UTF-16 length, an array's element count.
      simdjson::ondemand::json_type t;
      simdjson::ondemand::array arr;
      size_t count = 0;
      if (!v.type().get(t) && t == simdjson::ondemand::json_type::array &&
          !v.get_array().get(arr) && !arr.count_elements().get(count)) {
        c->summary = static_cast<int64_t>(count);
      } else {
        c->summary = StringTokenLength(v);
      }
    }
  }
  c->role = *role_storage;
  return true;
}

int64_t CeilDiv4(int64_t chars) { return (chars + 3) / 4; }

}  // namespace

int64_t EstimateMessageTokens(std::string_view message_json) {
  Counts c;
  std::string role;
  if (!CountMessage(message_json, &c, &role)) return 0;
  int64_t chars = 0;
  switch (RoleFromName(c.role)) {
    case Role::kUser:
      chars = c.content_is_string ? c.content_string : c.text;
      break;
    case Role::kAssistant:
      chars = c.text + c.thinking + c.tool_calls;
      break;
    case Role::kToolResult:
    case Role::kCustom:
      chars = c.content_is_string ? c.content_string : c.text + c.images * kImageEstimateChars;
      break;
    case Role::kBashExecution:
      chars = c.command + c.output;
      break;
    case Role::kBranchSummary:
    case Role::kCompactionSummary:
      chars = c.summary;
      break;
    case Role::kOther:
      return 0;
  }
  return CeilDiv4(chars);
}

int64_t EstimateMessageTokens(const Message& m) {
  auto blocks = [&](bool images) {
    int64_t n = 0;
    for (const ContentBlock& b : m.content) {
      if (b.kind == ContentBlock::Kind::kText) n += Utf16Length(b.text);
      if (images && b.kind == ContentBlock::Kind::kImage) n += kImageEstimateChars;
    }
    return n;
  };
  int64_t chars = 0;
  switch (m.role) {
    case Role::kUser:
      chars = m.content_is_string ? Utf16Length(m.content_string) : blocks(false);
      break;
    case Role::kAssistant:
      for (const ContentBlock& b : m.content) {
        if (b.kind == ContentBlock::Kind::kText || b.kind == ContentBlock::Kind::kThinking)
          chars += Utf16Length(b.text);
        if (b.kind == ContentBlock::Kind::kToolCall)
          chars += Utf16Length(b.tool_name) + Utf16Length(b.arguments_json);
      }
      break;
    case Role::kToolResult:
    case Role::kCustom:
      chars = m.content_is_string ? Utf16Length(m.content_string) : blocks(true);
      break;
    case Role::kBashExecution:
      chars = Utf16Length(m.command) + Utf16Length(m.output);
      break;
    case Role::kBranchSummary:
    case Role::kCompactionSummary:
      chars = Utf16Length(m.summary);
      break;
    case Role::kOther:
      return 0;
  }
  return CeilDiv4(chars);
}

double CalculateContextTokens(const Usage& u) {
  if (u.total_tokens != 0 && !std::isnan(u.total_tokens)) return u.total_tokens;
  return u.input + u.output + u.cache_read + u.cache_write;
}

namespace {

// A valid usage: an assistant that is neither aborted nor errored and has usage.
bool ValidUsage(std::string_view json, Usage* usage) {
  auto parsed = ParseMessage(json);
  if (!parsed.ok()) return false;
  const Message& m = *parsed;
  if (m.role != Role::kAssistant || !m.usage) return false;
  if (m.stop_reason == "aborted" || m.stop_reason == "error") return false;
  *usage = *m.usage;
  return true;
}

}  // namespace

ContextEstimate EstimateContextTokens(const std::vector<ContextMessage>& messages) {
  return EstimateContextTokens(messages, TokenCounter());
}

ContextEstimate EstimateContextTokens(const std::vector<ContextMessage>& messages,
                                      const TokenCounter& counter) {
  ContextEstimate est;
  std::vector<int64_t> per(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    per[i] = counter.Message(messages[i].json());
    est.heuristic_sum += per[i];
  }
  for (size_t i = messages.size(); i-- > 0;) {
    if (messages[i].role != Role::kAssistant) continue;
    Usage u;
    if (!ValidUsage(messages[i].json(), &u)) continue;
    est.last_usage_index = i;
    est.usage_tokens = CalculateContextTokens(u);
    break;
  }
  size_t from = est.last_usage_index ? *est.last_usage_index + 1 : 0;
  for (size_t i = from; i < messages.size(); ++i) est.trailing_tokens += per[i];
  est.tokens = est.usage_tokens + static_cast<double>(est.trailing_tokens);
  est.per_message = std::move(per);
  return est;
}

}  // namespace compactor

namespace compactor {

TokenCounter::TokenCounter(std::shared_ptr<const Tokenizer> tokenizer)
    : tokenizer_(std::move(tokenizer)) {}

Result<TokenCounter> TokenCounter::FromName(std::string_view name, const VocabOptions& vocab) {
  if (name.empty() || name == "estimate") return TokenCounter();
  ASSIGN_OR_RETURN(Encoding enc, ParseEncoding(name));
  static std::mutex mu;
  static std::map<std::pair<int, std::string>, std::shared_ptr<const Tokenizer>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_pair(static_cast<int>(enc), vocab.dir);
  auto it = cache.find(key);
  if (it != cache.end()) return TokenCounter(it->second);
  ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, Tokenizer::Load(enc, vocab));
  std::shared_ptr<const Tokenizer> shared(std::move(tok));
  cache[key] = shared;
  return TokenCounter(shared);
}

std::string_view TokenCounter::name() const {
  if (!tokenizer_) return "estimate";
  return tokenizer_->encoding() == Encoding::kO200kBase ? "o200k" : "cl100k";
}

int64_t TokenCounter::Text(std::string_view text) const {
  if (!tokenizer_) return (Utf16Length(text) + 3) / 4;
  return static_cast<int64_t>(tokenizer_->Count(text));
}

int64_t TokenCounter::Message(std::string_view json) const {
  if (!tokenizer_) return EstimateMessageTokens(json);
  auto m = ParseMessage(json);
  return m.ok() ? Message(*m) : 0;
}

int64_t TokenCounter::Message(const compactor::Message& m) const {
  if (!tokenizer_) return EstimateMessageTokens(m);
  const Tokenizer& t = *tokenizer_;
  auto count = [&](std::string_view s) { return static_cast<int64_t>(t.Count(s)); };
  int64_t n = 0;
  auto blocks = [&] {
    for (const ContentBlock& b : m.content) {
      if (b.kind == ContentBlock::Kind::kText || b.kind == ContentBlock::Kind::kThinking)
        n += count(b.text);
      if (b.kind == ContentBlock::Kind::kToolCall)
        n += count(b.tool_name) + count(b.arguments_json);
      if (b.kind == ContentBlock::Kind::kImage) n += kImageExactTokens;
    }
  };
  switch (m.role) {
    case Role::kUser:
    case Role::kAssistant:
    case Role::kToolResult:
    case Role::kCustom:
      if (m.content_is_string) n += count(m.content_string);
      blocks();
      break;
    case Role::kBashExecution:
      n = count(m.command) + count(m.output);
      break;
    case Role::kBranchSummary:
    case Role::kCompactionSummary:
      n = count(m.summary);
      break;
    case Role::kOther:
      break;
  }
  return n;
}

}  // namespace compactor

namespace compactor {

ContextEstimate EstimateCurrentContextTokens(const Session& session, const SessionContext& context,
                                             const TokenCounter& counter) {
  ContextEstimate est = EstimateContextTokens(context.messages, counter);
  if (!context.compaction_path_index) return est;
  for (size_t k = *context.compaction_path_index + 1; k < context.path.size(); ++k) {
    const Entry& e = session.entry(context.path[k]);
    if (e.type == EntryType::kMessage && e.role == Role::kAssistant && e.has_usage &&
        e.stop_reason != "aborted" && e.stop_reason != "error") {
      return est;  // fresh usage after the compaction
    }
  }
  est.usage_tokens = 0;
  est.last_usage_index.reset();
  est.trailing_tokens = est.heuristic_sum;
  est.tokens = static_cast<double>(est.heuristic_sum);
  return est;
}

}  // namespace compactor
