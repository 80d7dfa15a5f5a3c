#include "compactor/estimate.h"

#include <simdjson.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "compactor/js_json.h"
#include "tokens/estimate_internal.h"
#include "util/json_scan.h"
#include "util/kernel.h"
#include "util/simdjson_alloc.h"
#include "util/utf8.h"

namespace compactor {

int64_t Utf16Length(std::string_view utf8) { return internal::Utf16Length(utf8); }

namespace {

// Per-category character counts of one message, gathered in one forward pass
// so that field order does not matter.
struct Counts {
  std::string_view role;
  bool content_is_string = false;
  int64_t content_string = 0;
  int64_t text = 0, thinking = 0, tool_calls = 0, images = 0;
  int64_t command = 0, output = 0, summary = 0;
  // Blocks with a "type" key equal to "toolCall" (any of them, if repeated).
  int64_t tool_call_blocks = 0;
  // Set by MeasureMessageObject: collect file tool calls (fast mode only).
  internal::MessageMeasure* calls = nullptr;
};

// A JSON string token without escapes: its body, or nullopt (not a string, or
// escaped, which a caller must unescape another way).
std::optional<std::string_view> PlainStringBody(std::string_view raw) {
  while (!raw.empty() &&
         (raw.back() == ' ' || raw.back() == '\t' || raw.back() == '\n' || raw.back() == '\r'))
    raw.remove_suffix(1);
  if (raw.size() < 2 || raw.front() != '"' || raw.back() != '"') return std::nullopt;
  raw = raw.substr(1, raw.size() - 2);
  if (raw.find('\\') != std::string_view::npos) return std::nullopt;
  return raw;
}

// The top-level "path" member of a tool call's arguments, seen while they are
// measured.
struct PathCapture {
  int seen = 0;
  std::string_view raw;  // the first one's raw token
};

int64_t StringTokenLength(simdjson::ondemand::value v) {
  simdjson::ondemand::json_type t;
  if (v.type().get(t) || t != simdjson::ondemand::json_type::string) return 0;
  int64_t n = internal::JsonStringTokenUtf16Length(v.raw_json_token());
  return n < 0 ? 0 : n;
}

std::string_view TrimJsonSpace(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// Count of bytes below 0x20 (raw control characters, which JSON.stringify would escape).
int64_t ControlBytes(std::string_view s) {
  int64_t n = 0;
  for (unsigned char c : s) n += c < 0x20;
  return n;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int Hex4(const char* p) {
  int v = 0;
  for (int k = 0; k < 4; ++k) {
    int h = HexDigit(p[k]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

// JSON.stringify(s).length for the string whose JSON token is `token`, read
// from the escaped text (no unescaping). -1 for anything the full path would
// treat differently: malformed escapes, lone surrogates, raw control bytes.
int64_t CanonicalStringLength(std::string_view token) {
  token = TrimJsonSpace(token);
  if (token.size() < 2 || token.front() != '"' || token.back() != '"') return -1;
  std::string_view body = token.substr(1, token.size() - 2);
  internal::JsonStringBodyScan scan = internal::ScanJsonStringBody(body);
  if (scan.controls != 0) return -1;
  int64_t n = 2 + scan.units;
  if (!scan.long_runs && scan.u_escapes == 0) {
    // A run of one backslash at the end escapes the closing quote: malformed.
    if (body.size() >= 1 && body.back() == '\\' &&
        (body.size() < 2 || body[body.size() - 2] != '\\'))
      return -1;
    // Only two-byte escapes, each written back as it is except \/ (one unit).
    return n - scan.slash_escapes;
  }
  const char* p = body.data();
  const char* e = p + body.size();
  while (p < e) {
    p = static_cast<const char*>(std::memchr(p, '\\', static_cast<size_t>(e - p)));
    if (p == nullptr) break;
    if (p + 1 >= e) return -1;  // the closing quote was escaped
    switch (p[1]) {
      case '"':
      case '\\':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':
        p += 2;  // written back the same way: two units for two bytes
        break;
      case '/':
        n -= 1;  // written unescaped
        p += 2;
        break;
      case 'u': {
        if (e - p < 6) return -1;
        int u = Hex4(p + 2);
        if (u < 0) return -1;
        if (u >= 0xD800 && u < 0xDC00) {
          // A pair (12 bytes) is one code point, two units; a lone half is left to the full path.
          if (e - p < 12 || p[6] != '\\' || p[7] != 'u') return -1;
          int lo = Hex4(p + 8);
          if (lo < 0xDC00 || lo >= 0xE000) return -1;
          n -= 10;
          p += 12;
          break;
        }
        if (u >= 0xDC00 && u < 0xE000) return -1;
        if (u == '"' || u == '\\' || u == '\b' || u == '\f' || u == '\n' || u == '\r' ||
            u == '\t') {
          n -= 4;  // becomes a two-character escape
        } else if (u >= 0x20) {
          n -= 5;  // becomes the character itself
        }          // other control characters stay \u00XX
        p += 6;
        break;
      }
      default:
        return -1;
    }
  }
  return n;
}

// JSON.stringify(value).length of a value being iterated, measured from its
// raw tokens (pi charges tool-call arguments this way). Returns -1 where the
// value needs the full path (JsCanonicalLength): escaped keys (duplicates
// would need unescaping), numbers that are not short integers, malformed
// tokens; the iterator is then unusable.
int64_t CanonicalLengthFast(simdjson::ondemand::value v, PathCapture* path = nullptr) {
  simdjson::ondemand::json_type t;
  if (v.type().get(t)) return -1;
  switch (t) {
    case simdjson::ondemand::json_type::object: {
      simdjson::ondemand::object o;
      if (v.get_object().get(o)) return -1;
      struct Member {
        std::string_view key;
        int64_t value_length;
      };
      // One member list per nesting level, reused across calls.
      thread_local std::vector<std::vector<Member>> stack;
      thread_local size_t depth = 0;
      if (stack.size() <= depth) stack.resize(depth + 1);
      stack[depth].clear();
      ++depth;
      int64_t total = 2;
      bool ok = true;
      for (auto field_result : o) {
        simdjson::ondemand::field field;
        if (std::move(field_result).get(field)) {
          ok = false;
          break;
        }
        // The raw key runs from after its opening quote to the closing one.
        const char* k = field.key().raw();
        size_t len = 0;
        while (k[len] != '"' && k[len] != '\\') ++len;
        if (k[len] == '\\') {
          ok = false;
          break;
        }
        std::string_view key(k, len);
        if (path && key == "path" && path->seen++ == 0) path->raw = field.value().raw_json_token();
        int64_t value_length = CanonicalLengthFast(field.value());
        if (value_length < 0) {
          ok = false;
          break;
        }
        // stack[depth - 1] may have moved while nested objects grew the stack.
        std::vector<Member>& mine = stack[depth - 1];
        bool duplicate = false;
        for (Member& m : mine) {
          if (m.key == key) {  // JSON.parse keeps the last value at the first position
            total += value_length - m.value_length;
            m.value_length = value_length;
            duplicate = true;
            break;
          }
        }
        if (duplicate) continue;
        if (ControlBytes(key) != 0) {
          ok = false;
          break;
        }
        total += (mine.empty() ? 0 : 1) + 2 + internal::Utf16LengthValid(key) + 1 + value_length;
        mine.push_back({key, value_length});
      }
      --depth;
      return ok ? total : -1;
    }
    case simdjson::ondemand::json_type::array: {
      simdjson::ondemand::array a;
      if (v.get_array().get(a)) return -1;
      int64_t total = 2;
      bool first = true;
      for (auto item_result : a) {
        simdjson::ondemand::value item;
        if (std::move(item_result).get(item)) return -1;
        int64_t n = CanonicalLengthFast(item);
        if (n < 0) return -1;
        total += n + (first ? 0 : 1);
        first = false;
      }
      return total;
    }
    case simdjson::ondemand::json_type::string:
      return CanonicalStringLength(v.raw_json_token());
    case simdjson::ondemand::json_type::number: {
      // Short integers are written back as they are (JSON has no leading
      // zeros); everything else goes through the full path's number printer.
      std::string_view raw = TrimJsonSpace(v.raw_json_token());
      bool negative = !raw.empty() && raw[0] == '-';
      std::string_view digits = raw.substr(negative ? 1 : 0);
      if (digits.empty() || digits.size() > 15) return -1;
      if (digits.size() > 1 && digits[0] == '0') return -1;
      for (char c : digits)
        if (c < '0' || c > '9') return -1;
      if (digits == "0") return 1;  // -0 prints as 0
      return static_cast<int64_t>(raw.size());
    }
    case simdjson::ondemand::json_type::boolean:
    case simdjson::ondemand::json_type::null: {
      std::string_view raw = TrimJsonSpace(v.raw_json_token());
      if (raw == "true" || raw == "null") return 4;
      if (raw == "false") return 5;
      return -1;
    }
  }
  return -1;
}

// Adds the file tool call a toolCall block makes, if any; marks the message's
// calls unknown where a reparse could read the block differently.
void RecordFileCall(int type_keys, int name_keys, int args_keys, std::string_view raw_name,
                    const PathCapture& path, internal::MessageMeasure* m) {
  if (type_keys > 1 || name_keys > 1 || args_keys > 1 || path.seen > 1) {
    m->file_calls_known = false;
    return;
  }
  if (name_keys == 0 || path.seen == 0) return;
  const bool name_is_string = !raw_name.empty() && raw_name[0] == '"';
  std::optional<std::string_view> tool = PlainStringBody(raw_name);
  if (name_is_string && !tool) {
    m->file_calls_known = false;  // an escaped name
    return;
  }
  if (!tool || (*tool != "read" && *tool != "write" && *tool != "edit")) return;
  if (path.raw.empty() || path.raw[0] != '"') return;  // not a string: no path
  std::optional<std::string_view> p = PlainStringBody(path.raw);
  if (!p) {
    m->file_calls_known = false;  // an escaped path
    return;
  }
  if (!p->empty()) m->file_calls.push_back({(*tool)[0], *p});
}

// Counts one content block. Fast mode measures tool-call arguments from raw
// tokens and gives up (false) on any error; the full mode reparses them and
// tolerates errors as it always did.
template <bool kFast>
bool CountBlock(simdjson::ondemand::object block, Counts* c) {
  std::string_view type;
  int64_t text = 0, thinking = 0, name = 0, args = 0;
  bool saw_tool_call = false;
  // What the file-operation rules read (kFast with c->calls only).
  int type_keys = 0, name_keys = 0, args_keys = 0;
  std::string_view raw_name;
  PathCapture path;
  for (auto f : block) {
    std::string_view key;
    if (f.unescaped_key().get(key)) return !kFast;
    simdjson::ondemand::value v = f.value();
    if (key == "type") {
      ++type_keys;
      if (v.get_string().get(type)) {
        if (kFast) return false;
        type = {};
      }
      saw_tool_call |= type == "toolCall";
    } else if (key == "text") {
      text = StringTokenLength(v);
    } else if (key == "thinking") {
      thinking = StringTokenLength(v);
    } else if (key == "name") {
      if (name_keys++ == 0) raw_name = v.raw_json_token();
      name = StringTokenLength(v);
    } else if (key == "arguments") {
      if constexpr (kFast) {
        args = CanonicalLengthFast(v, args_keys++ == 0 && c->calls ? &path : nullptr);
        if (args < 0) return false;
      } else {
        std::string_view raw;
        simdjson::ondemand::json_type t;
        if (v.type().get(t)) continue;
        if (t == simdjson::ondemand::json_type::object ||
            t == simdjson::ondemand::json_type::array) {
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
  }
  // Any "type" of "toolCall" (not only the last): a repeated key then marks the
  // calls unknown, as a parse that reads the first one could disagree.
  if (kFast && c->calls && saw_tool_call)
    RecordFileCall(type_keys, name_keys, args_keys, raw_name, path, c->calls);
  if (type == "text")
    c->text += text;
  else if (type == "thinking")
    c->thinking += thinking;
  else if (type == "toolCall")
    c->tool_calls += name + args;
  else if (type == "image")
    c->images += 1;
  c->tool_call_blocks += saw_tool_call;
  return true;
}

using internal::OtherField;

template <bool kFast>
bool CountObject(simdjson::ondemand::object obj, Counts* c, std::string* role_storage,
                 const OtherField* other = nullptr) {
  int role_keys = 0, content_keys = 0;
  for (auto f : obj) {
    std::string_view key;
    if (f.unescaped_key().get(key)) return false;
    simdjson::ondemand::value v = f.value();
    role_keys += key == "role";
    content_keys += key == "content";
    if (key == "role") {
      std::string_view r;
      if (!v.get_string().get(r)) {
        role_storage->assign(r);
      } else if (kFast) {
        return false;
      }
    } else if (key == "content") {
      // A repeated "content" counts its last value only, as JSON.parse keeps.
      c->content_is_string = false;
      c->content_string = c->text = c->thinking = c->tool_calls = c->images = 0;
      c->tool_call_blocks = 0;
      if (c->calls) c->calls->file_calls.clear();
      simdjson::ondemand::json_type t;
      if (v.type().get(t)) {
        if (kFast) return false;
        continue;
      }
      if (t == simdjson::ondemand::json_type::string) {
        c->content_is_string = true;
        c->content_string = StringTokenLength(v);
      } else if (t == simdjson::ondemand::json_type::array) {
        simdjson::ondemand::array arr;
        if (v.get_array().get(arr)) {
          if (kFast) return false;
          continue;
        }
        for (auto item : arr) {
          simdjson::ondemand::object block;
          if (item.get_object().get(block)) {
            if (kFast) {
              // Non-object items count nothing; errors end the fast path.
              simdjson::ondemand::json_type it;
              if (item.type().get(it) || it == simdjson::ondemand::json_type::object) return false;
            }
            continue;
          }
          if (!CountBlock<kFast>(block, c)) return false;
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
    } else if (other) {
      (*other)(key, v);
    }
  }
  c->role = *role_storage;
  if (c->calls && (role_keys > 1 || content_keys > 1)) c->calls->file_calls_known = false;
  return true;
}

int64_t CeilDiv4(int64_t chars) { return (chars + 3) / 4; }

int64_t EstimateFromCounts(const Counts& c) {
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

template <bool kFast>
bool CountMessage(std::string_view json, Counts* c, std::string* role_storage) {
  thread_local simdjson::ondemand::parser parser;
  thread_local simdjson::padded_string buffer;
  internal::GrowPadded(buffer, json.size());
  internal::ReserveOnDemand(parser, json.size());
  std::memcpy(buffer.data(), json.data(), json.size());
  simdjson::ondemand::document doc;
  if (parser.iterate(buffer.data(), json.size(), buffer.size() + simdjson::SIMDJSON_PADDING)
          .get(doc))
    return false;
  simdjson::ondemand::object obj;
  if (doc.get_object().get(obj)) return false;
  return CountObject<kFast>(obj, c, role_storage);
}

}  // namespace

namespace internal {

bool MeasureMessageObject(simdjson::ondemand::object message, MessageMeasure* out,
                          const OtherField* other) {
  Counts c;
  out->file_calls.clear();
  out->file_calls_known = true;
  c.calls = out;
  std::string& role = out->role;
  role.clear();
  if (!CountObject<true>(message, &c, &role, other)) return false;
  out->tokens = EstimateFromCounts(c);
  out->tool_call_blocks = c.tool_call_blocks;
  return true;
}

int64_t EstimateMessageTokensFull(std::string_view message_json) {
  Counts c;
  std::string role;
  if (!CountMessage<false>(message_json, &c, &role)) return 0;
  return EstimateFromCounts(c);
}

std::optional<int64_t> EstimateMessageTokensFast(std::string_view message_json) {
#ifndef COMPACTOR_KERNEL
  // The copy of this function compiled for the active CPU kernel, if any.
  if (auto* kernel = ActiveKernel().estimate_fast) {
    int64_t tokens = 0;
    if (!kernel(message_json, &tokens)) return std::nullopt;
    return tokens;
  }
#endif
  Counts c;
  std::string role;
  if (!CountMessage<true>(message_json, &c, &role)) return std::nullopt;
  return EstimateFromCounts(c);
}

}  // namespace internal

namespace {

// pi's estimate as the session indexer's per-message observer.
class EstimateObserver final : public MessageObserver {
 public:
  bool Measure(simdjson::ondemand::object message, internal::MessageMeasure* out,
               const internal::OtherField* other) const override {
    return internal::MeasureMessageObject(message, out, other);
  }
  const MessageObserver* ForKernel(const internal::KernelTable& kernel) const override {
#ifdef COMPACTOR_KERNEL
    // Only the baseline instance (TokenEstimateObserver()) is handed out, and
    // asked; a kernel's instance has nothing to map to.
    (void)kernel;
    return this;
#else
    return kernel.estimate_observer != nullptr ? kernel.estimate_observer() : this;
#endif
  }
};

const EstimateObserver kEstimateObserver;

}  // namespace

#ifndef COMPACTOR_KERNEL
const MessageObserver* TokenEstimateObserver() { return &kEstimateObserver; }
#endif

int64_t EstimateMessageTokens(std::string_view message_json) {
  // The walks below recurse once per nesting level. Session lines were
  // checked when read; a message from elsewhere (a provider's reply, a
  // library caller) nested deeper is charged as its text, chars/4.
  if (internal::JsonNestingExceeds(message_json, internal::kMaxJsonNesting))
    return CeilDiv4(static_cast<int64_t>(message_json.size()));
  if (auto fast = internal::EstimateMessageTokensFast(message_json)) return *fast;
  return internal::EstimateMessageTokensFull(message_json);
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

namespace {

ContextEstimate EstimateContext(const Session* session, const std::vector<ContextMessage>& messages,
                                const TokenCounter& counter) {
  ContextEstimate est;
  std::vector<int64_t> per(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    per[i] = session ? ContextMessageTokens(*session, messages[i], counter)
                     : counter.Message(messages[i].json());
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

}  // namespace

ContextEstimate EstimateContextTokens(const std::vector<ContextMessage>& messages,
                                      const TokenCounter& counter) {
  return EstimateContext(nullptr, messages, counter);
}

ContextEstimate EstimateContextTokens(const Session& session,
                                      const std::vector<ContextMessage>& messages,
                                      const TokenCounter& counter) {
  return EstimateContext(&session, messages, counter);
}

int64_t EntryMessageTokens(const Session& session, size_t index, const TokenCounter& counter) {
  const Entry& e = session.entry(index);
  if (!counter.exact() && e.estimate >= 0) return e.estimate;
  return counter.Message(session.MessageJson(index));
}

int64_t ContextMessageTokens(const Session& session, const ContextMessage& message,
                             const TokenCounter& counter) {
  // A stored message is a view of its entry's message: the loader may have measured it.
  if (!counter.exact() && message.owned.empty() && message.entry_index < session.size()) {
    const Entry& e = session.entry(message.entry_index);
    if (e.estimate >= 0 && message.stored.data() == session.MessageJson(message.entry_index).data())
      return e.estimate;
  }
  return counter.Message(message.json());
}

}  // namespace compactor

namespace compactor {

TokenCounter::TokenCounter(std::shared_ptr<const Tokenizer> tokenizer)
    : tokenizer_(std::move(tokenizer)) {}

Result<TokenCounter> TokenCounter::FromName(std::string_view name, const VocabOptions& vocab) {
  if (name.empty() || name == "estimate") return TokenCounter();
  COMPACTOR_ASSIGN_OR_RETURN(Encoding enc, ParseEncoding(name));
  static std::mutex mu;
  static std::map<std::pair<int, std::string>, std::shared_ptr<const Tokenizer>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_pair(static_cast<int>(enc), vocab.dir);
  auto it = cache.find(key);
  if (it != cache.end()) return TokenCounter(it->second);
  COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, Tokenizer::Load(enc, vocab));
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
  ContextEstimate est = EstimateContextTokens(session, context.messages, counter);
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

#ifdef COMPACTOR_KERNEL
extern "C" bool COMPACTOR_KERNEL_ENTRY(estimate_fast)(std::string_view message_json,
                                                      int64_t* tokens) {
  std::optional<int64_t> n = compactor::internal::EstimateMessageTokensFast(message_json);
  if (n) *tokens = *n;
  return n.has_value();
}

extern "C" const compactor::MessageObserver* COMPACTOR_KERNEL_ENTRY(estimate_observer)() {
  return &compactor::kEstimateObserver;
}
#endif
