// Table-driven tests of the overflow classifier with real provider error
// texts (collected from pi, oh-my-pi and the providers' documentation).
#include "compactor/overflow.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "compactor/message.h"

namespace compactor {
namespace {

struct ErrorCase {
  const char* text;
  bool overflow;
  bool payload;
  OverflowReason reason;
  const char* matched_pattern;  // nullptr = do not check
};

OverflowInput ErrorInput(std::string_view text, int status = 0) {
  OverflowInput in;
  in.stop_reason = "error";
  in.error_message = text;
  in.http_status = status;
  return in;
}

constexpr OverflowReason kTok = OverflowReason::kTokenPattern;

// One real provider message (or one quoted in pi's and oh-my-pi's tests) per
// pattern row.
const ErrorCase kErrorCases[] = {
    // Anthropic
    {"400 {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt "
     "is "
     "too long: 213462 tokens > 200000 maximum\"}}",
     true, false, kTok, "prompt is too long"},
    // Bedrock
    {"ValidationException: Input is too long for requested model.", true, false, kTok,
     "input is too long for requested model"},
    // OpenAI
    {"400 Your input exceeds the context window of this model. Please adjust your input and try "
     "again.",
     true, false, kTok, "exceeds the context window"},
    // Gemini
    {"The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).",
     true, false, kTok, "input token count.*exceeds the maximum"},
    // xAI
    {"This model's maximum prompt length is 131072 but the request contains 537812 tokens.", true,
     false, kTok, "maximum prompt length is \\d+"},
    // Groq
    {"Please reduce the length of the messages or completion.", true, false, kTok,
     "reduce the length of the messages"},
    // OpenRouter
    {"This endpoint's maximum context length is 128000 tokens. However, you requested about 210000 "
     "tokens (200000 of text input, 10000 in the output).",
     true, false, kTok, "maximum context length is \\d+ tokens"},
    // Copilot (no "tokens" after the number: generic limit, not token evidence)
    {"prompt token count of 140000 exceeds the limit of 128000", true, false,
     OverflowReason::kGenericLimit, "exceeds the limit of \\d+"},
    // llama.cpp
    {"the request exceeds the available context size, try increasing it", true, false, kTok,
     "exceeds the available context size"},
    // 11
    {"requested tokens (9000) exceed context window of 8192", true, false, kTok, nullptr},
    // 12
    {"error: context size exceeded", true, false, kTok,
     "context (window|length|size).*(exceeded|overflow|too small)"},
    {"Context window overflow while processing prompt", true, false, kTok, nullptr},
    // 13
    {"input is too large to process. increase the physical batch size or n_ctx", true, false, kTok,
     "(prompt|input).*(too long|too large).*(context|n_ctx)"},
    // 14
    {"requested token count is greater than n_ctx", true, false, kTok,
     "requested tokens?.*(exceeds?|greater than).*(n_ctx|context)"},
    // LM Studio
    {"The number of tokens to keep from the initial prompt is greater than the context length.",
     true, false, kTok, nullptr},
    // MiniMax
    {"invalid params, context window exceeds limit (2013)", true, false, kTok,
     "context window exceeds limit"},
    // Kimi
    {"Your request exceeded model token limit: 262144 (requested: 300000)", true, false, kTok,
     "exceeded model token limit"},
    // Mistral
    {"Prompt contains 140000 tokens and 0 draft tokens, too large for model with 131072 maximum "
     "context length",
     true, false, kTok, nullptr},
    // z.ai
    {"Provider finish_reason: model_context_window_exceeded", true, false, kTok,
     "model_context_window_exceeded"},
    {"model_context_window_exceeded", true, false, kTok, "model_context_window_exceeded"},
    // Ollama
    {"prompt too long; exceeded max context length by 2048 tokens", true, false, kTok, nullptr},
    {"prompt too long; exceeded context length by 12 tokens", true, false, kTok, nullptr},
    // OpenAI error code
    {"400 {\"error\":{\"message\":\"This model's maximum context length is 128000 tokens.\","
     "\"type\":\"invalid_request_error\",\"code\":\"context_length_exceeded\"}}",
     true, false, kTok, nullptr},
    {"code: context_length_exceeded", true, false, kTok, "context[_ ]length[_ ]exceeded"},
    // 22, 23
    {"Too many tokens in request", true, false, kTok, "too many tokens"},
    {"Token limit exceeded for this model", true, false, kTok, "token limit exceeded"},
    // 28, 29 Anthropic 413 naming a token budget
    {"413 {\"error\":{\"type\":\"request_too_large\",\"message\":\"Request has 2500000 tokens\"}}",
     true, false, kTok, nullptr},
    {"tokens budget exceeded: request_too_large", true, false, kTok,
     "\\btokens?\\b[^\\n]*request_too_large"},
    // Ollama OpenAI-compatible
    {"the prompt filled the context window; no output was produced", true, false, kTok,
     "prompt filled the context window"},
    // Copilot token-qualified
    {"prompt token count of 140000 exceeds the limit of 128000 tokens", true, false, kTok, nullptr},
    // message cap
    {"chat history exceeds the 2000-message limit", true, false, kTok,
     "chat history exceeds the \\d+-message limit"},
    // Hugging Face TGI: HTTP 422 bodies, as the server sends them.
    {"422 {\"error\":\"Input validation error: `inputs` tokens + `max_new_tokens` must be <= "
     "4096. Given: 4000 `inputs` tokens and 500 `max_new_tokens`\",\"error_type\":\"validation\"}",
     true, false, kTok, nullptr},
    {"422 {\"error\":\"Input validation error: `inputs` must have less than 4096 tokens. Given: "
     "5000\",\"error_type\":\"validation\"}",
     true, false, kTok, nullptr},
    // vLLM's OpenAI-compatible server (HTTP 400).
    {"400 {\"error\":{\"message\":\"The decoder prompt (length 5000) is longer than the maximum "
     "model length of 4096. Make sure that `max_model_len` is no smaller than the number of text "
     "tokens.\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}}",
     true, false, kTok, nullptr},
    // No-body 400/413 rule (unanchored, as oh-my-pi)
    {"400 status code (no body)", true, false, OverflowReason::kNoBody, nullptr},
    {"413 status code (no body)", true, true, OverflowReason::kNoBody, nullptr},
    {"400 (no body)", true, false, OverflowReason::kNoBody, nullptr},
    {"400 status code: {\"error\":\"Error from inference backend: 400 status code (no body)\"}",
     true, false, OverflowReason::kNoBody, nullptr},
    {"Upstream rejected request: 400 status code (no body)", true, false, OverflowReason::kNoBody,
     nullptr},
    // Payload rejections (oh-my-pi 18.x): not token overflow.
    {"413 {\"error\":{\"type\":\"request_too_large\",\"message\":\"Request exceeds the maximum "
     "size\"}}",
     false, true, OverflowReason::kPayloadRejected, "request_too_large"},
    {"413 Request Entity Too Large: payload too large for request body", false, true,
     OverflowReason::kPayloadRejected, nullptr},
    {"Request exceeds the maximum size allowed by this model", false, true,
     OverflowReason::kPayloadRejected, "request exceeds the maximum size"},
    {"Payload Too Large", false, true, OverflowReason::kPayloadRejected, "payload too large"},
    {"HTTP error: entity too large", false, true, OverflowReason::kPayloadRejected,
     "entity too large"},
    {"413: the request body exceeds the 32 MB limit", false, true, OverflowReason::kPayloadRejected,
     nullptr},
    {"request exceeds the maximum number of bytes", false, true, OverflowReason::kPayloadRejected,
     nullptr},
    // Payload with the generic Copilot phrase: the generic phrase is no token evidence.
    {"413 payload too large: body exceeds the limit of 20971520", false, true,
     OverflowReason::kPayloadRejected, nullptr},
    // Negatives (oh-my-pi 15.7.2's unit tests and ours).
    {"413 Forbidden", false, false, OverflowReason::kNone, nullptr},
    {"400 Bad Request: invalid API key", false, false, OverflowReason::kNone, nullptr},
    {"429 status code (no body)", false, false, OverflowReason::kVetoed, nullptr},
    {"Throttling error: Too many tokens, please wait before trying again.", false, false,
     OverflowReason::kVetoed, nullptr},
    {"ThrottlingException: Too many tokens, please wait before trying again.", false, false,
     OverflowReason::kVetoed, nullptr},
    {"Service unavailable: context length exceeded on replica", false, false,
     OverflowReason::kVetoed, nullptr},
    {"Rate limit exceeded: too many tokens per minute", false, false, OverflowReason::kVetoed,
     nullptr},
    {"429 Too Many Requests", false, false, OverflowReason::kVetoed, nullptr},
    {"500 Internal Server Error", false, false, OverflowReason::kNone, nullptr},
    {"", false, false, OverflowReason::kNone, nullptr},
};

class ErrorTextTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ErrorTextTest, Classifies) {
  const ErrorCase& c = GetParam();
  OverflowVerdict v = ClassifyOverflow(ErrorInput(c.text));
  EXPECT_EQ(v.overflow, c.overflow) << c.text;
  EXPECT_EQ(v.payload, c.payload) << c.text;
  EXPECT_EQ(v.reason, c.reason) << c.text << " got " << OverflowReasonName(v.reason) << " via "
                                << v.matched;
  if (c.matched_pattern != nullptr) {
    EXPECT_EQ(v.matched, c.matched_pattern) << c.text;
  }
  EXPECT_EQ(IsContextOverflow(ErrorInput(c.text)), c.overflow);
}

INSTANTIATE_TEST_SUITE_P(RealBodies, ErrorTextTest, ::testing::ValuesIn(kErrorCases));

// A sample text for every row of the pattern table (J6: one positive per row).
const std::map<std::string, std::string>& RowSamples() {
  static const std::map<std::string, std::string> kSamples = {
      {R"(^(Throttling error|Service unavailable):)", "Service unavailable: try later"},
      {R"(rate limit)", "Rate limit reached for requests"},
      {R"(too many requests)", "429 Too Many Requests"},
      {R"(^\s*429\b)", "429 status code (no body)"},
      {R"(\bThrottlingException\b)", "ThrottlingException: Too many tokens"},
      {R"(prompt is too long)", "prompt is too long: 213462 tokens > 200000 maximum"},
      {R"(input is too long for requested model)", "Input is too long for requested model."},
      {R"(exceeds the context window)", "Your input exceeds the context window of this model"},
      {R"(input token count.*exceeds the maximum)",
       "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)"},
      {R"(maximum prompt length is \d+)",
       "This model's maximum prompt length is 131072 but the request contains 537812 tokens"},
      {R"(reduce the length of the messages)",
       "Please reduce the length of the messages or completion"},
      {R"(maximum context length is \d+ tokens)",
       "This endpoint's maximum context length is 128000 tokens. However, you requested about "
       "200000 tokens"},
      {R"(exceeds the available context size)",
       "the request exceeds the available context size, try increasing it"},
      {R"(requested tokens?.*exceed.*context (window|length|size))",
       "requested tokens (9000) exceed context window of 8192"},
      {R"(context (window|length|size).*(exceeded|overflow|too small))",
       "context size too small for this prompt"},
      {R"((prompt|input).*(too long|too large).*(context|n_ctx))", "input is too large for n_ctx"},
      {R"(requested tokens?.*(exceeds?|greater than).*(n_ctx|context))",
       "requested token count is greater than n_ctx"},
      {R"(greater than the context length)",
       "tokens to keep from the initial prompt is greater than the context length"},
      {R"(context window exceeds limit)", "invalid params, context window exceeds limit"},
      {R"(exceeded model token limit)",
       "Your request exceeded model token limit: 262144 (requested: 300000)"},
      {R"(too large for model with \d+ maximum context length)",
       "Prompt contains 140000 tokens, too large for model with 131072 maximum context length"},
      {R"(model_context_window_exceeded)", "Provider finish_reason: model_context_window_exceeded"},
      {R"(prompt too long; exceeded (?:max )?context length)",
       "prompt too long; exceeded max context length by 2048 tokens"},
      {R"(context[_ ]length[_ ]exceeded)", "context_length_exceeded"},
      {R"(too many tokens)", "too many tokens"},
      {R"(token limit exceeded)", "token limit exceeded"},
      {R"(request_too_large[^\n]*\btokens?\b)",
       "413 request_too_large: request has 2500000 tokens"},
      {R"(\btokens?\b[^\n]*request_too_large)", "too many tokens: request_too_large"},
      {R"(prompt filled the context window)", "prompt filled the context window"},
      {R"(exceeds the limit of \d+ tokens?\b)",
       "prompt token count of 140000 exceeds the limit of 128000 tokens"},
      {R"(chat history exceeds the \d+-message limit)",
       "chat history exceeds the 2000-message limit"},
      {R"(`?inputs`? tokens \+ `?max_new_tokens`? must be <= \d+)",
       "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 "
       "`inputs` tokens and 500 `max_new_tokens`"},
      {R"(`?inputs`? must have less than \d+ tokens)",
       "Input validation error: `inputs` must have less than 4096 tokens. Given: 5000"},
      {R"(decoder prompt \(length \d+\) is longer than the maximum model length)",
       "The decoder prompt (length 5000) is longer than the maximum model length of 4096."},
      {R"(\b4(?:00|13)\s*(?:status code)?\s*\(no body\))", "400 status code (no body)"},
      {R"(request_too_large)",
       "413 {\"error\":{\"type\":\"request_too_large\",\"message\":\"Request exceeds the "
       "maximum size\"}}"},
      {R"(request exceeds the maximum size)",
       "Request exceeds the maximum size allowed by this model"},
      {R"(payload too large)", "payload too large"},
      {R"(entity too large)", "Request Entity Too Large"},
      {R"(\b413\b.*\b(request|payload|entity)\b.*\btoo large\b)", "413 Request Entity Too Large"},
      {R"(\b413\s*(?:status code\s*)?\(no body\))", "413 status code (no body)"},
      {R"(\b413\b[^.\n]{0,120}\b(?:request|payload|entity|body)\b[^.\n]{0,60}\b(?:exceed|too large|limit))",
       "413: the request body exceeds the 32 MB limit"},
      {R"((?:payload|entity) too large)", "entity too large"},
      {R"(request exceeds the maximum (?:size|number of bytes))",
       "request exceeds the maximum number of bytes"},
      {R"(exceeds the limit of \d+)", "prompt token count of 140000 exceeds the limit of 128000"},
  };
  return kSamples;
}

TEST(OverflowTest, EveryRowCompilesAndMatchesItsSample) {
  const auto& rows = OverflowPatterns();
  const auto& samples = RowSamples();
  EXPECT_EQ(samples.size(), rows.size()) << "a row without a sample, or a sample without a row";
  for (size_t i = 0; i < rows.size(); ++i) {
    auto it = samples.find(std::string(rows[i].pattern));
    ASSERT_NE(it, samples.end()) << "no sample for row " << rows[i].pattern;
    EXPECT_TRUE(OverflowPatternMatches(i, it->second)) << rows[i].pattern << " vs " << it->second;
    // The sample's verdict follows the row's class.
    OverflowVerdict v = ClassifyOverflow(ErrorInput(it->second));
    switch (rows[i].cls) {
      case OverflowPatternClass::kVeto:
        EXPECT_FALSE(v.overflow) << it->second;
        break;
      case OverflowPatternClass::kToken:
      case OverflowPatternClass::kGeneric:
      case OverflowPatternClass::kNoBody:
        EXPECT_TRUE(v.overflow) << it->second;
        break;
      case OverflowPatternClass::kPayload:
        EXPECT_TRUE(v.payload) << it->second;
        break;
    }
  }
  EXPECT_FALSE(OverflowPatternMatches(rows.size(), "prompt is too long"));
}

TEST(OverflowTest, RowsDoNotMatchUnrelatedText) {
  const auto& rows = OverflowPatterns();
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_FALSE(OverflowPatternMatches(i, "400 Bad Request: invalid API key")) << rows[i].pattern;
    EXPECT_FALSE(OverflowPatternMatches(i, "")) << rows[i].pattern;
  }
}

TEST(OverflowTest, NoBodyRuleOnlyFor400And413) {
  EXPECT_FALSE(IsContextOverflow(ErrorInput("401 status code (no body)")));
  EXPECT_FALSE(IsContextOverflow(ErrorInput("404 (no body)")));
  EXPECT_FALSE(IsContextOverflow(ErrorInput("4000 status code (no body)")));
  EXPECT_TRUE(IsContextOverflow(ErrorInput("400   status code   (no body)")));
}

TEST(OverflowTest, CaseInsensitive) {
  EXPECT_TRUE(IsContextOverflow(ErrorInput("PROMPT IS TOO LONG")));
  EXPECT_TRUE(IsContextOverflow(ErrorInput("Context_Length_Exceeded")));
}

TEST(OverflowTest, Http429StatusVetoesEvenTokenWording) {
  EXPECT_FALSE(IsContextOverflow(ErrorInput("too many tokens", 429)));
  EXPECT_TRUE(IsContextOverflow(ErrorInput("too many tokens", 400)));
}

TEST(OverflowTest, Bare413StatusWithoutEvidenceIsPayload) {
  OverflowVerdict v = ClassifyOverflow(ErrorInput("Request failed", 413));
  EXPECT_FALSE(v.overflow);
  EXPECT_TRUE(v.payload);
  OverflowVerdict tok = ClassifyOverflow(ErrorInput("prompt is too long", 413));
  EXPECT_TRUE(tok.overflow);
  EXPECT_FALSE(tok.payload);
}

TEST(OverflowTest, ErrorTextIgnoredForSuccessfulStops) {
  OverflowInput in;
  in.stop_reason = "stop";
  in.error_message = "prompt is too long";
  EXPECT_FALSE(IsContextOverflow(in, 0));
}

TEST(OverflowTest, ErrorTextWithoutStopReasonIsAnError) {
  OverflowInput in;
  in.error_message = "prompt is too long";
  EXPECT_TRUE(IsContextOverflow(in));
}

TEST(OverflowTest, UsageOverWindow) {
  OverflowInput in;
  in.stop_reason = "stop";
  in.input = 100000;
  in.cache_read = 20000;
  in.output = 50;
  EXPECT_FALSE(IsContextOverflow(in, 0)) << "no window, no usage rule";
  EXPECT_FALSE(IsContextOverflow(in, 120000)) << "equal is not over";
  EXPECT_TRUE(IsContextOverflow(in, 119999));
  EXPECT_EQ(ClassifyOverflow(in, 119999).reason, OverflowReason::kUsageOverWindow);
  in.cache_read = 0;
  in.cache_write = 20000;  // cache writes are input too (ours)
  EXPECT_TRUE(IsContextOverflow(in, 119999));
  in.stop_reason = "length";
  EXPECT_TRUE(IsContextOverflow(in, 119999));
  in.stop_reason = "aborted";
  EXPECT_FALSE(IsContextOverflow(in, 119999));
}

TEST(OverflowTest, LengthStopWithZeroOutputNearWindow) {
  OverflowInput in;
  in.stop_reason = "length";
  in.input = 99000;
  in.output = 0;
  EXPECT_TRUE(IsContextOverflow(in, 100000));
  EXPECT_EQ(ClassifyOverflow(in, 100000).reason, OverflowReason::kLengthZeroOutput);
  in.input = 98999;
  EXPECT_FALSE(IsContextOverflow(in, 100000));
  in.input = 99500;
  in.output = 1;  // an output cap is not an overflow
  EXPECT_FALSE(IsContextOverflow(in, 100000));
  in.stop_reason = "stop";
  in.output = 0;
  EXPECT_FALSE(IsContextOverflow(in, 100000));
}

TEST(OverflowTest, PlainLengthStopIsNotOverflow) {
  OverflowInput in;
  in.stop_reason = "length";
  in.input = 5000;
  in.output = 4096;
  EXPECT_FALSE(IsContextOverflow(in, 128000));
}

TEST(OverflowTest, StoredAssistantMessage) {
  auto msg = ParseMessage(
      R"j({"role":"assistant","content":[],"stopReason":"error","errorMessage":"400 status code (no body)","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0}})j");
  ASSERT_TRUE(msg.ok()) << msg.status().ToString();
  EXPECT_TRUE(IsContextOverflow(*msg));
  auto silent = ParseMessage(
      R"({"role":"assistant","content":[{"type":"text","text":"ok"}],"stopReason":"stop","usage":{"input":130000,"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":130010}})");
  ASSERT_TRUE(silent.ok());
  EXPECT_TRUE(IsContextOverflow(*silent, 128000));
  EXPECT_FALSE(IsContextOverflow(*silent, 200000));
}

TEST(OverflowTest, InvalidUtf8InBodyIsFine) {
  std::string text = "prompt is too long \xff\xfe";
  EXPECT_TRUE(IsContextOverflow(ErrorInput(text)));
}

TEST(OverflowTest, LearnedWindow) {
  EXPECT_EQ(LearnedWindowFromOverflow(100000), 85000);
  EXPECT_EQ(LearnedWindowFromOverflow(7), 5);
  EXPECT_EQ(LearnedWindowFromOverflow(0), 0);
}

}  // namespace
}  // namespace compactor
