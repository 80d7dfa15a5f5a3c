#include <fmt/format.h>

#include "commands.h"
#include "common.h"
#include "compactor/context.h"
#include "compactor/js_json.h"
#include "compactor/message.h"
#include "compactor/strategy.h"

namespace compactor::cli {
namespace {

struct ContextArgs {
  SessionArgs session;
  std::string leaf;
  bool json = false;
  bool full = false;
  bool expand = false;
};

// Streams the contract object without building one large string: the
// messages go from the session's bytes to stdout with writev.
void PrintContextJson(const Session& session, const SessionContext& ctx) {
  std::string head = "{\"leafId\":";
  if (ctx.leaf_id) {
    AppendJsString(head, *ctx.leaf_id);
  } else {
    head += "null";
  }
  head += ",\"messages\":[";
  const std::string tail = ContextJsonTail(ctx) + "\n";
  GatherWriter out;
  out.Add(head);
  // Messages echoed from a large mapped file are given back to the kernel in
  // 8 MiB steps once written, so memory stays flat however long the context.
  const char* pending = nullptr;
  size_t pending_len = 0;
  for (size_t i = 0; i < ctx.messages.size(); ++i) {
    if (i) out.Add(",");
    std::string_view m = ctx.messages[i].json();
    out.Add(m);
    if (ctx.messages[i].owned.empty() && !m.empty()) {
      if (pending == nullptr || m.data() < pending) {
        pending = m.data();
        pending_len = m.size();
      } else {
        pending_len = static_cast<size_t>(m.data() + m.size() - pending);
      }
      if (pending_len > (8u << 20)) {
        out.Flush();
        session.ReleaseBytes(std::string_view(pending, pending_len));
        pending = nullptr;
      }
    }
  }
  out.Add(tail);
  out.Flush();
}

std::string Clip(const std::string& s, bool full) {
  constexpr size_t kMax = 2000;
  if (full || s.size() <= kMax) return s;
  size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) +
         fmt::format("\n[... {} more bytes; --full shows everything]", s.size() - cut);
}

void PrintTranscript(const Session& session, const SessionContext& ctx, bool full) {
  std::string out;
  out += fmt::format("session {}  leaf {}  thinking {}  model {}\n", session.header().id,
                     ctx.leaf_id.value_or("(none)"), ctx.thinking_level,
                     ctx.model ? ctx.model->provider + "/" + ctx.model->model_id : "(none)");
  for (const ContextMessage& cm : ctx.messages) {
    auto parsed = ParseMessage(cm.json());
    std::string_view id = session.entry(cm.entry_index).id;
    if (!parsed.ok()) {
      out += fmt::format("\n── (unreadable message) [{}] ──\n", id);
      continue;
    }
    const Message& m = *parsed;
    std::string title(RoleName(m.role));
    if (m.role == Role::kOther) title = m.role_name;
    if (m.role == Role::kAssistant)
      title += " " + m.model + (m.stop_reason.empty() ? "" : " (" + m.stop_reason + ")");
    if (m.role == Role::kToolResult) title += " " + m.tool_name + (m.is_error ? " ERROR" : "");
    if (m.role == Role::kCustom) title += " " + m.custom_type;
    out += fmt::format("\n── {} [{}] ──\n", title, id);
    switch (m.role) {
      case Role::kBashExecution:
        out += "$ " + m.command + "\n" + Clip(m.output, full) + "\n";
        if (m.exit_code) out += fmt::format("(exit code {})\n", *m.exit_code);
        break;
      case Role::kBranchSummary:
      case Role::kCompactionSummary:
        out += Clip(m.summary, full) + "\n";
        break;
      default:
        if (m.content_is_string) out += Clip(m.content_string, full) + "\n";
        for (const ContentBlock& b : m.content) {
          switch (b.kind) {
            case ContentBlock::Kind::kText:
              out += Clip(b.text, full) + "\n";
              break;
            case ContentBlock::Kind::kThinking:
              out += "[thinking] " + Clip(b.text, full) + "\n";
              break;
            case ContentBlock::Kind::kToolCall:
              out += "[tool call " + b.tool_name + "] " + Clip(b.arguments_json, full) + "\n";
              break;
            case ContentBlock::Kind::kImage:
              out += fmt::format("[image {} , {} base64 bytes]\n", b.mime_type, b.data_length);
              break;
            case ContentBlock::Kind::kOther:
              out += "[" + b.type + " block]\n";
              break;
          }
        }
        if (!m.error_message.empty()) out += "[error] " + m.error_message + "\n";
    }
    if (out.size() > (1 << 20)) {
      Print(out);
      out.clear();
    }
  }
  Print(out);
}

}  // namespace

void RegisterContext(CLI::App& app) {
  auto args = std::make_shared<ContextArgs>();
  CLI::App* cmd = app.add_subcommand(
      "context", "Rebuild the context the model sees (pi's buildSessionContext) for the leaf");
  AddSessionArgs(cmd, &args->session);
  cmd->add_option("--leaf", args->leaf, "build for this entry id instead of the file's last entry");
  cmd->add_flag(
      "--json", args->json,
      "print {\"leafId\",\"messages\",\"thinkingLevel\",\"model\"} (messages as pi builds them)");
  cmd->add_flag("--full", args->full, "transcript: do not clip long texts");
  cmd->add_flag("--expand", args->expand,
                "rebuild Compactor's own compactions (user-prompts) instead of pi's view of them");
  cmd->callback([args] {
    auto session = LoadSession(args->session);
    if (!session.ok()) {
      ExitCode() = Fail(session.status());
      return;
    }
    ContextOptions options;
    if (!args->leaf.empty()) options.leaf_id = args->leaf;
    if (args->expand) options.expander = StrategyExpander();
    auto ctx = BuildSessionContext(**session, options);
    if (!ctx.ok()) {
      ExitCode() = Fail(ctx.status());
      return;
    }
    if (args->json) {
      PrintContextJson(**session, *ctx);
    } else {
      PrintTranscript(**session, *ctx, args->full);
    }
  });
}

}  // namespace compactor::cli
