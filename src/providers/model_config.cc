// The "models" object of the settings file (docs/providers.md).
#include <nlohmann/json.hpp>

#include "compactor/provider_api.h"
#include "compactor/providers.h"
#include "util/json_scan.h"

namespace compactor {
namespace {

using Json = nlohmann::ordered_json;

Status KeyError(const std::string& model, std::string_view key, std::string_view what) {
  return Status::InvalidArgument("models." + model + "." + std::string(key) + ": " +
                                 std::string(what));
}

bool IsEnvName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// "a, b, c or d": the registered API names.
std::string RegisteredNames() {
  std::string out;
  std::span<const ProviderApi* const> apis = ProviderApis();
  for (size_t i = 0; i < apis.size(); ++i) {
    if (i > 0) out += i + 1 == apis.size() ? " or " : ", ";
    out += apis[i]->name();
  }
  return out;
}

Status ReadString(const Json& obj, const std::string& model, const char* key, std::string* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_string()) return KeyError(model, key, "must be a string");
  *out = it->get<std::string>();
  return Status::Ok();
}

Status ReadInt(const Json& obj, const std::string& model, const char* key, int64_t* out,
               int64_t min_value) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_number()) return KeyError(model, key, "must be a number");
  double v = it->get<double>();
  if (v < static_cast<double>(min_value) || v > 1e15 || v != static_cast<double>(int64_t(v))) {
    return KeyError(model, key, "must be an integer >= " + std::to_string(min_value));
  }
  *out = static_cast<int64_t>(v);
  return Status::Ok();
}

Result<ModelConfig> ParseOne(const std::string& name, const Json& obj) {
  if (!obj.is_object()) return KeyError(name, "", "must be an object");
  ModelConfig m;
  m.name = name;
  std::string provider;
  COMPACTOR_RETURN_IF_ERROR(ReadString(obj, name, "provider", &provider));
  if (provider.empty()) return KeyError(name, "provider", "is required");
  const ProviderApi* api = FindProviderApi(provider);
  if (api == nullptr) {
    return KeyError(name, "provider",
                    "unknown provider \"" + provider + "\" (expected " + RegisteredNames() + ")");
  }
  m.api = provider;
  COMPACTOR_RETURN_IF_ERROR(ReadString(obj, name, "baseUrl", &m.base_url));
  COMPACTOR_RETURN_IF_ERROR(ReadString(obj, name, "model", &m.model_id));
  if (m.model_id.empty()) COMPACTOR_RETURN_IF_ERROR(ReadString(obj, name, "modelId", &m.model_id));
  COMPACTOR_RETURN_IF_ERROR(ReadInt(obj, name, "contextWindow", &m.context_window, 0));
  COMPACTOR_RETURN_IF_ERROR(ReadInt(obj, name, "maxOutputTokens", &m.max_output_tokens, 0));
  COMPACTOR_RETURN_IF_ERROR(ReadString(obj, name, "apiKeyEnv", &m.api_key_env));
  if (!m.api_key_env.empty() && !IsEnvName(m.api_key_env)) {
    // Never echo the value: it may be a pasted key.
    return KeyError(
        name, "apiKeyEnv",
        "must be the NAME of an environment variable (letters, digits, '_'), not a key");
  }
  if (auto it = obj.find("reasoning"); it != obj.end() && !it->is_null()) {
    if (!it->is_boolean()) return KeyError(name, "reasoning", "must be true or false");
    m.reasoning = it->get<bool>();
  }
  COMPACTOR_RETURN_IF_ERROR(ReadString(obj, name, "reasoningEffort", &m.reasoning_effort));
  static const char* kLevels[] = {"", "off", "minimal", "low", "medium", "high", "xhigh"};
  bool known = false;
  for (const char* l : kLevels) known = known || m.reasoning_effort == l;
  if (!known) {
    return KeyError(name, "reasoningEffort", "must be off, minimal, low, medium, high or xhigh");
  }
  if (auto it = obj.find("headers"); it != obj.end() && !it->is_null()) {
    if (!it->is_object()) return KeyError(name, "headers", "must be an object of strings");
    for (auto h = it->begin(); h != it->end(); ++h) {
      if (!h.value().is_string()) return KeyError(name, "headers." + h.key(), "must be a string");
      m.headers[h.key()] = h.value().get<std::string>();
    }
  }
  if (auto it = obj.find("stream"); it != obj.end() && !it->is_null()) {
    if (!it->is_boolean()) return KeyError(name, "stream", "must be true or false");
    m.stream = it->get<bool>();
  }
  COMPACTOR_RETURN_IF_ERROR(ReadString(obj, name, "maxTokensField", &m.max_tokens_field));
  if (!m.max_tokens_field.empty() && m.max_tokens_field != "max_tokens" &&
      m.max_tokens_field != "max_completion_tokens") {
    return KeyError(name, "maxTokensField", "must be max_tokens or max_completion_tokens");
  }
  if (auto it = obj.find("fallbacks"); it != obj.end() && !it->is_null()) {
    if (!it->is_array()) return KeyError(name, "fallbacks", "must be an array of model names");
    for (const Json& f : *it) {
      if (!f.is_string()) return KeyError(name, "fallbacks", "must be an array of model names");
      m.fallbacks.push_back(f.get<std::string>());
    }
  }
  COMPACTOR_RETURN_IF_ERROR(ReadInt(obj, name, "timeoutMs", &m.timeout_ms, 1));
  COMPACTOR_RETURN_IF_ERROR(ReadInt(obj, name, "connectTimeoutMs", &m.connect_timeout_ms, 1));

  if (api->base_url_is_endpoint()) {
    if (m.base_url.empty()) return KeyError(name, "baseUrl", "is required for a remote endpoint");
  } else if (m.model_id.empty()) {
    return KeyError(name, "model", "is required");
  }
  if (m.base_url.empty()) m.base_url = std::string(api->default_base_url());
  while (m.base_url.size() > 1 && m.base_url.back() == '/' && !api->base_url_is_endpoint()) {
    m.base_url.pop_back();
  }
  return m;
}

}  // namespace

Result<std::vector<ModelConfig>> ParseModelConfigs(std::string_view settings_json) {
  Result<Json> parsed = internal::ParseJsonWithinLimit<Json>(settings_json);
  if (!parsed.ok()) return Status::InvalidArgument("settings: " + parsed.status().message());
  const Json& doc = *parsed;
  if (!doc.is_object()) return Status::InvalidArgument("settings: not a JSON object");
  std::vector<ModelConfig> out;
  auto it = doc.find("models");
  if (it == doc.end() || it->is_null()) return out;
  if (!it->is_object()) {
    return Status::InvalidArgument("models: must be an object mapping names to model settings");
  }
  for (auto m = it->begin(); m != it->end(); ++m) {
    if (m.key().empty()) return Status::InvalidArgument("models: a model name is empty");
    COMPACTOR_ASSIGN_OR_RETURN(ModelConfig config, ParseOne(m.key(), m.value()));
    out.push_back(std::move(config));
  }
  return out;
}

Result<ModelConfig> FindModel(std::span<const ModelConfig> models, std::string_view name) {
  std::string names;
  for (const ModelConfig& m : models) {
    if (m.name == name) return m;
    names += (names.empty() ? "" : ", ") + m.name;
  }
  return Status::NotFound(
      "no model named \"" + std::string(name) + "\" in the settings (" +
      (names.empty() ? std::string("none configured") : "configured: " + names) + ")");
}

Result<std::vector<ModelConfig>> ResolveCandidates(std::span<const ModelConfig> models,
                                                   std::string_view name) {
  COMPACTOR_ASSIGN_OR_RETURN(ModelConfig primary, FindModel(models, name));
  std::vector<ModelConfig> out;
  out.push_back(primary);
  for (const std::string& f : primary.fallbacks) {
    bool seen = false;
    for (const ModelConfig& c : out) seen = seen || c.name == f;
    if (seen) continue;
    auto found = FindModel(models, f);
    if (!found.ok()) {
      return Status::InvalidArgument("models." + primary.name +
                                     ".fallbacks: " + found.status().message());
    }
    out.push_back(std::move(found).value());
  }
  return out;
}

}  // namespace compactor
