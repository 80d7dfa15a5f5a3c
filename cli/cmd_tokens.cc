#include <fmt/format.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "compactor/context.h"
#include "compactor/env.h"
#include "compactor/estimate.h"

namespace compactor::cli {
namespace {

struct TokensArgs {
  std::string input;
  std::string leaf;
  bool text = false;
  bool json = false;
  bool strict = false;
  std::string tokenizer = "estimate";
  std::string vocab_dir;
  int64_t input_limit_mib = kDefaultInputLimitMib;
};

// Raw text: a regular file (or stdin redirected from one) is mapped; a pipe,
// FIFO or device is read in large blocks up to the input limit.
struct RawText {
  std::unique_ptr<MappedFile> mapped;
  std::string bytes;
  std::string_view view;
};

Result<RawText> ReadRawText(const std::string& path, int64_t limit_mib) {
  RawText out;
  Result<std::unique_ptr<MappedFile>> mapped = Env::Default()->MapFile(path);
  if (mapped.ok()) {
    out.mapped = std::move(mapped).value();
    out.view = std::string_view(out.mapped->data(), out.mapped->size());
    return out;
  }
  if (mapped.status().code() != StatusCode::kFailedPrecondition) return mapped.status();
  const std::string name = path == "/dev/stdin" ? "stdin" : path;
  Result<std::string> read =
      Env::Default()->ReadFileUpTo(path, static_cast<size_t>(limit_mib) << 20);
  if (!read.ok()) return ExplainInputLimit(read.status(), name, limit_mib);
  out.bytes = std::move(read).value();
  out.view = out.bytes;
  return out;
}

}  // namespace

void RegisterTokens(CLI::App& app) {
  auto args = std::make_shared<TokensArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tokens",
      "Token estimate (pi's chars/4 rule) of a session's context, or of raw text ('-' = stdin)");
  cmd->add_option("FILE", args->input, "session file, or '-' to read raw text from stdin")
      ->required();
  cmd->add_flag("--text", args->text, "treat FILE as raw text even if it is a session");
  cmd->add_option("--leaf", args->leaf,
                  "measure the context of this entry instead of the file's leaf");
  cmd->add_flag("--strict", args->strict, "treat a malformed session line as an error");
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->add_option("--tokenizer", args->tokenizer,
                  "estimate (default, pi's chars/4), o200k or cl100k (exact, tiktoken-compatible)");
  AddInputLimitArg(cmd, &args->input_limit_mib);
  cmd->add_option("--vocab-dir", args->vocab_dir,
                  "directory with o200k_base.tiktoken / cl100k_base.tiktoken (docs/tokenizers.md)");
  cmd->callback([args] {
    VocabOptions vocab;
    vocab.dir = args->vocab_dir;
    if (args->tokenizer != "estimate" && !ParseEncoding(args->tokenizer).ok()) {
      ExitCode() = Fail(Status::InvalidArgument("unknown tokenizer \"" + args->tokenizer +
                                                "\" (estimate, o200k, cl100k)"));
      return;
    }
    auto counter = TokenCounter::FromName(args->tokenizer, vocab);
    if (!counter.ok()) {
      ExitCode() = Fail(counter.status());
      return;
    }
    nlohmann::ordered_json j;
    std::string human;
    if (args->input == "-" || args->text) {
      Result<RawText> read =
          ReadRawText(args->input == "-" ? "/dev/stdin" : args->input, args->input_limit_mib);
      if (!read.ok()) {
        ExitCode() = Fail(read.status());
        return;
      }
      const std::string_view text = read->view;
      int64_t units = Utf16Length(text);
      int64_t tokens = counter->Text(text);
      j["source"] = args->input == "-" ? "stdin" : args->input;
      j["kind"] = "text";
      j["bytes"] = text.size();
      j["utf16Units"] = units;
      j["tokens"] = tokens;
      j["tokenizer"] = std::string(counter->name());
      human = counter->exact()
                  ? fmt::format("{} tokens ({}, {} bytes)\n", tokens, counter->name(), text.size())
                  : fmt::format("{} tokens (estimate: ceil({} UTF-16 units / 4), {} bytes)\n",
                                tokens, units, text.size());
    } else {
      SessionArgs sa{args->input, args->strict, false, !counter->exact(), args->input_limit_mib};
      auto loaded = LoadSession(sa);
      if (!loaded.ok()) {
        ExitCode() = Fail(loaded.status());
        return;
      }
      ContextOptions options;
      if (!args->leaf.empty()) options.leaf_id = args->leaf;
      auto ctx = BuildSessionContext(**loaded, options);
      if (!ctx.ok()) {
        ExitCode() = Fail(ctx.status());
        return;
      }
      // The size now: usage recorded before the latest compaction is stale.
      ContextEstimate est = EstimateCurrentContextTokens(**loaded, *ctx, *counter);
      j["source"] = args->input;
      j["kind"] = "session";
      j["messages"] = ctx->messages.size();
      j["tokens"] = est.tokens;
      j["heuristicSum"] = est.heuristic_sum;
      j["usageTokens"] = est.usage_tokens;
      j["trailingTokens"] = est.trailing_tokens;
      j["tokenizer"] = std::string(counter->name());
      human = fmt::format(
          "{} tokens in context ({} messages, {}): last usage {} + {} counted after it; message "
          "sum "
          "{}\n",
          est.tokens, ctx->messages.size(), counter->name(), est.usage_tokens, est.trailing_tokens,
          est.heuristic_sum);
    }
    if (args->json) {
      Print(j.dump() + "\n");
    } else {
      Print(human);
    }
  });
}

}  // namespace compactor::cli
