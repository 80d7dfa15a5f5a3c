#include "compactor/message.h"

#include <simdjson.h>

#include <cmath>

#include "compactor/js_json.h"
#include "util/js_canonical.h"
#include "util/json_scan.h"
#include "util/utf8.h"

namespace compactor {

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kUser:
      return "user";
    case Role::kAssistant:
      return "assistant";
    case Role::kToolResult:
      return "toolResult";
    case Role::kBashExecution:
      return "bashExecution";
    case Role::kCustom:
      return "custom";
    case Role::kBranchSummary:
      return "branchSummary";
    case Role::kCompactionSummary:
      return "compactionSummary";
    case Role::kOther:
      return "other";
  }
  return "other";
}

Role RoleFromName(std::string_view n) {
  if (n == "user") return Role::kUser;
  if (n == "assistant") return Role::kAssistant;
  if (n == "toolResult") return Role::kToolResult;
  if (n == "bashExecution") return Role::kBashExecution;
  if (n == "custom") return Role::kCustom;
  if (n == "branchSummary") return Role::kBranchSummary;
  if (n == "compactionSummary") return Role::kCompactionSummary;
  return Role::kOther;
}

std::string Message::JoinedText() const {
  if (content_is_string) return content_string;
  std::string out;
  for (const ContentBlock& b : content) {
    if (b.kind != ContentBlock::Kind::kText) continue;
    if (!out.empty()) out.push_back('\n');
    out += b.text;
  }
  return out;
}

namespace {

using simdjson::dom::element;

std::string Str(element e, const char* key) {
  std::string_view sv;
  if (e[key].get_string().get(sv)) return {};
  return std::string(sv);
}

double Num(element e, const char* key, double fallback) {
  element v;
  if (e[key].get(v)) return fallback;
  double d = 0;
  if (v.is_double() || v.is_int64() || v.is_uint64()) {
    if (!v.get_double().get(d)) return d;
  }
  return fallback;
}

bool Bool(element e, const char* key) {
  bool b = false;
  if (e[key].get_bool().get(b)) return false;
  return b;
}

void ParseBlocks(simdjson::dom::array arr, std::vector<ContentBlock>* out) {
  for (element b : arr) {
    ContentBlock block;
    block.type = Str(b, "type");
    if (block.type == "text") {
      block.kind = ContentBlock::Kind::kText;
      block.text = Str(b, "text");
    } else if (block.type == "thinking") {
      block.kind = ContentBlock::Kind::kThinking;
      block.text = Str(b, "thinking");
      block.redacted = Bool(b, "redacted");
    } else if (block.type == "image") {
      block.kind = ContentBlock::Kind::kImage;
      block.mime_type = Str(b, "mimeType");
      std::string_view data;
      if (!b["data"].get_string().get(data)) block.data_length = data.size();
    } else if (block.type == "toolCall") {
      block.kind = ContentBlock::Kind::kToolCall;
      block.tool_call_id = Str(b, "id");
      block.tool_name = Str(b, "name");
      element args;
      // JSON.stringify of the parsed arguments, written from the tree we hold.
      if (!b["arguments"].get(args)) internal::AppendJsCanonical(block.arguments_json, args);
    }
    out->push_back(std::move(block));
  }
}

void ParseContent(element m, Message* msg) {
  element c;
  if (m["content"].get(c)) return;
  std::string_view sv;
  simdjson::dom::array arr;
  if (!c.get_string().get(sv)) {
    msg->content_is_string = true;
    msg->content_string.assign(sv);
  } else if (!c.get_array().get(arr)) {
    ParseBlocks(arr, &msg->content);
  }
}

}  // namespace

Result<Message> ParseMessage(std::string_view json) {
  thread_local simdjson::dom::parser parser;
  element root;
  auto err = parser.parse(json.data(), json.size(), true).get(root);
  std::string repaired;
  // JSON.parse reads what simdjson refuses here: lone surrogates, huge numbers.
  if (err && internal::RepairForJsonParse(json, err, &repaired)) {
    err = parser.parse(repaired.data(), repaired.size(), true).get(root);
  }
  if (err)
    return Status::Corruption(std::string("message is not valid JSON: ") +
                              simdjson::error_message(err));
  if (!root.is_object()) return Status::Corruption("message is not a JSON object");
  Message m;
  m.role_name = Str(root, "role");
  m.role = RoleFromName(m.role_name);
  m.timestamp = Num(root, "timestamp", std::nan(""));
  ParseContent(root, &m);
  switch (m.role) {
    case Role::kAssistant: {
      m.api = Str(root, "api");
      m.provider = Str(root, "provider");
      m.model = Str(root, "model");
      m.stop_reason = Str(root, "stopReason");
      m.error_message = Str(root, "errorMessage");
      element u;
      if (!root["usage"].get(u) && u.is_object()) {
        Usage usage;
        usage.input = Num(u, "input", 0);
        usage.output = Num(u, "output", 0);
        usage.cache_read = Num(u, "cacheRead", 0);
        usage.cache_write = Num(u, "cacheWrite", 0);
        usage.total_tokens = Num(u, "totalTokens", 0);
        m.usage = usage;
      }
      break;
    }
    case Role::kToolResult:
      m.tool_call_id = Str(root, "toolCallId");
      m.tool_name = Str(root, "toolName");
      m.is_error = Bool(root, "isError");
      break;
    case Role::kBashExecution: {
      m.command = Str(root, "command");
      m.output = Str(root, "output");
      m.full_output_path = Str(root, "fullOutputPath");
      double code = Num(root, "exitCode", std::nan(""));
      if (!std::isnan(code)) m.exit_code = code;
      m.cancelled = Bool(root, "cancelled");
      m.truncated = Bool(root, "truncated");
      m.exclude_from_context = Bool(root, "excludeFromContext");
      break;
    }
    case Role::kCustom:
      m.custom_type = Str(root, "customType");
      m.display = Bool(root, "display");
      break;
    case Role::kBranchSummary:
      m.summary = Str(root, "summary");
      m.from_id = Str(root, "fromId");
      break;
    case Role::kCompactionSummary:
      m.summary = Str(root, "summary");
      m.tokens_before = Num(root, "tokensBefore", 0);
      break;
    default:
      break;
  }
  return m;
}

}  // namespace compactor
