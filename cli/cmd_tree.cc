#include <fmt/format.h>

#include <unordered_set>

#include "commands.h"
#include "common.h"
#include "compactor/context.h"
#include "compactor/js_json.h"
#include "compactor/message.h"
#include "compactor/report.h"

namespace compactor::cli {
namespace {

struct TreeArgs {
  SessionArgs session;
  std::string leaf;
  bool json = false;
  int width = 72;
};

std::string OneLine(std::string s, size_t max) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (s.size() > max) {
    size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    s = s.substr(0, cut) + "…";
  }
  return s;
}

std::string Describe(const Session& s, size_t i, size_t width) {
  const Entry& e = s.entry(i);
  switch (e.type) {
    case EntryType::kMessage: {
      auto m = ParseMessage(s.MessageJson(i));
      std::string text;
      if (m.ok()) {
        text = m->JoinedText();
        if (m->role == Role::kAssistant && text.empty()) {
          for (const ContentBlock& b : m->content)
            if (b.kind == ContentBlock::Kind::kToolCall) text += "→" + b.tool_name + " ";
        }
        if (m->role == Role::kBashExecution) text = "$ " + m->command;
        if (m->role == Role::kToolResult)
          text = m->tool_name + (m->is_error ? " (error): " : ": ") + text;
      }
      return std::string(e.role_name) + ": " + OneLine(text, width);
    }
    case EntryType::kCompaction:
      return fmt::format("[compaction] keeps from {}, {} tokens before", e.first_kept_entry_id,
                         e.tokens_before);
    case EntryType::kBranchSummary: {
      auto summary = s.StringField(i, "summary");
      return "[branch summary] " + OneLine(summary.value_or(""), width);
    }
    case EntryType::kThinkingLevelChange:
      return fmt::format("[thinking {}]", e.thinking_level);
    case EntryType::kModelChange:
      return fmt::format("[model {}/{}]", e.provider, e.model);
    case EntryType::kLabel:
      return fmt::format("[label {} = {}]", e.target_id,
                         e.has_label ? e.label : std::string_view("(cleared)"));
    case EntryType::kSessionInfo:
      return fmt::format("[name \"{}\"]", e.name);
    case EntryType::kCustom:
      return "[custom " + s.StringField(i, "customType").value_or("") + "]";
    case EntryType::kCustomMessage:
      return "[custom message " + s.StringField(i, "customType").value_or("") + "]";
    case EntryType::kUnknown:
      return fmt::format("[{}]", e.type_name);
  }
  return "";
}

}  // namespace

void RegisterTree(CLI::App& app) {
  auto args = std::make_shared<TreeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tree", "Draw the session tree: active path marked *, labels, compactions, branch summaries");
  AddSessionArgs(cmd, &args->session);
  cmd->add_option("--leaf", args->leaf, "mark the path to this entry instead of the file's leaf");
  cmd->add_option("--width", args->width, "characters of message text per line (default 72)");
  cmd->add_flag("--json", args->json,
                "print the tree as JSON, version 2: {version,leafId,entries:[{id,parentId,type,"
                "active,...}]} in file order");
  cmd->callback([args] {
    auto loaded = LoadWithContext(args->session, args->leaf);
    if (!loaded.ok()) {
      ExitCode() = Fail(loaded.status());
      return;
    }
    const Session& s = *loaded->session;
    const SessionContext* ctx = &loaded->context;
    if (args->json) {
      WriteTreeJson(s, *ctx, [](std::string_view piece) { Print(piece); });
      Print("\n");
      return;
    }
    std::unordered_set<size_t> active(ctx->path.begin(), ctx->path.end());
    auto children = s.Children();
    const size_t width = static_cast<size_t>(std::max(args->width, 10));

    // Depth-first; indentation grows only at branch points so long linear
    // sessions stay readable.
    std::string out;
    struct Item {
      size_t index;
      std::string prefix;     // drawn before this node
      std::string child_pre;  // prefix for its children
    };
    std::vector<Item> stack;
    auto roots = s.Roots();
    for (size_t k = roots.size(); k-- > 0;) stack.push_back({roots[k], "", ""});
    while (!stack.empty()) {
      Item it = std::move(stack.back());
      stack.pop_back();
      const Entry& e = s.entry(it.index);
      std::string line = it.prefix + (active.count(it.index) ? "* " : "  ") + std::string(e.id) +
                         " " + Describe(s, it.index, width);
      if (auto l = s.LabelOf(e.id)) line += "  <" + *l + ">";
      if (ctx->leaf_id && *ctx->leaf_id == e.id) line += "  ← leaf";
      out += line + "\n";
      const auto& ch = children[it.index];
      if (ch.size() == 1) {
        stack.push_back({ch[0], it.child_pre, it.child_pre});
      } else {
        for (size_t k = ch.size(); k-- > 0;) {
          bool last = k + 1 == ch.size();
          stack.push_back({ch[k], it.child_pre + (last ? "└─ " : "├─ "),
                           it.child_pre + (last ? "   " : "│  ")});
        }
      }
      if (out.size() > (1 << 20)) {
        Print(out);
        out.clear();
      }
    }
    Print(out);
  });
}

}  // namespace compactor::cli
