#include "serve/remote_compaction.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "serve/compact_plan.h"

namespace compactor::serve {
namespace {

using Json = nlohmann::ordered_json;

// The encrypted_content of an item of the proxy's, or nullopt.
std::optional<std::string> ProxyContentOf(std::string_view raw) {
  Json item = Json::parse(raw, nullptr, /*allow_exceptions=*/false);
  if (!item.is_object()) return std::nullopt;
  auto content = item.find("encrypted_content");
  if (content == item.end() || !content->is_string()) return std::nullopt;
  const std::string& text = content->get_ref<const std::string&>();
  if (text.rfind(kProxyCompaction, 0) != 0 && text.rfind(kProxyCompactionRef, 0) != 0)
    return std::nullopt;
  return text;
}

Json Usage(int64_t input_tokens, int64_t output_tokens) {
  return {{"input_tokens", input_tokens},
          {"input_tokens_details", {{"cached_tokens", 0}}},
          {"output_tokens", output_tokens},
          {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", input_tokens + output_tokens}};
}

Json ResponseObject(const ClientRequest& request, const std::string& id, std::string_view status,
                    Json output, Json usage) {
  return {{"id", id},
          {"object", "response"},
          {"created_at", 0},
          {"status", status},
          {"error", nullptr},
          {"incomplete_details", nullptr},
          {"model", request.model},
          {"output", std::move(output)},
          {"usage", std::move(usage)}};
}

}  // namespace

bool UpstreamCompactsRemotely(std::string_view upstream_url) {
  size_t scheme = upstream_url.find("://");
  std::string_view rest =
      scheme == std::string_view::npos ? upstream_url : upstream_url.substr(scheme + 3);
  std::string_view host = rest.substr(0, rest.find_first_of("/:?"));
  for (std::string_view known : {"api.openai.com", "chatgpt.com"}) {
    if (host == known || (host.size() > known.size() && host.ends_with(known) &&
                          host[host.size() - known.size() - 1] == '.')) {
      return true;
    }
  }
  return false;
}

bool EndsInCompactionTrigger(const ClientRequest& request) {
  return !request.items.empty() && request.items.back().type == "compaction_trigger";
}

std::string ProxyCompactionContent(std::string_view key, std::string_view summary) {
  if (!key.empty()) return std::string(kProxyCompactionRef) + std::string(key);
  return std::string(kProxyCompaction) + std::string(summary);
}

Expansion ExpandProxyCompactions(const ClientRequest& request, const SummaryLookup& find) {
  Expansion e;
  std::string out;
  size_t copied = 0;
  bool any = false;
  for (const ClientItem& item : request.items) {
    if (item.kind != ClientItemKind::kCompaction) continue;
    std::optional<std::string> content = ProxyContentOf(request.Text(item));
    if (!content) continue;
    std::optional<std::string> text;
    if (content->rfind(kProxyCompaction, 0) == 0) {
      text = content->substr(kProxyCompaction.size());
    } else {
      std::string key = content->substr(kProxyCompactionRef.size());
      if (find) text = find(key);
      if (!text) {
        e.missing = std::move(key);
        return e;
      }
    }
    Json message = {
        {"type", "message"},
        {"role", "user"},
        {"content", Json::array({{{"type", "input_text"}, {"text", SummaryMessageText(*text)}}})}};
    out.append(request.body, copied, item.raw.begin - copied);
    out += message.dump();
    copied = item.raw.end;
    e.summary = std::move(*text);
    any = true;
  }
  if (!any) return e;
  out.append(request.body, copied, std::string::npos);
  e.body = std::move(out);
  return e;
}

TriggerAnswer CompactionAnswer(const ClientRequest& request, std::string_view content,
                               std::string_view summary, int64_t input_tokens,
                               std::string_view id) {
  const std::string response_id = "resp_compactor_" + std::string(id);
  Json item = {{"id", "cmp_compactor_" + std::string(id)},
               {"type", "compaction"},
               {"encrypted_content", std::string(content)}};
  Json usage = Usage(input_tokens, EstimateTextTokens(summary));
  TriggerAnswer a;
  if (!request.stream) {
    a.headers = {{"Content-Type", "application/json"}};
    a.body = ResponseObject(request, response_id, "completed", Json::array({item}), usage).dump();
    return a;
  }
  a.headers = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};
  int seq = 0;
  auto event = [&](std::string_view type, const Json& data) {
    Json e = {{"type", type}, {"sequence_number", seq++}};
    e.update(data);
    a.body += "event: " + std::string(type) + "\ndata: " + e.dump() + "\n\n";
  };
  Json empty = ResponseObject(request, response_id, "in_progress", Json::array(), nullptr);
  event("response.created", {{"response", empty}});
  event("response.in_progress", {{"response", empty}});
  event("response.output_item.added", {{"output_index", 0}, {"item", item}});
  event("response.output_item.done", {{"output_index", 0}, {"item", item}});
  event("response.completed", {{"response", ResponseObject(request, response_id, "completed",
                                                           Json::array({item}), usage)}});
  return a;
}

}  // namespace compactor::serve
