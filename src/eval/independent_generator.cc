// The independent generator (docs/quality.md, "Independent corpus"): a
// second source of evaluation sessions, written apart from the first
// (generator.cc) with its own domains, vocabulary, user and agent, so that no
// single generator's phrasing is what a summarizer is tuned to. What it
// stresses: values revised more than once, false fixes (a different command
// succeeding after an error, `cmd | tail` exiting 0 after a failure), piped
// commands, options considered and rejected, steps asked for early and done
// later, terminal noise (spinners, box drawing, `cd ... && sed -i` dumps), and
// values that appear only in a tool's output and are referred to later
// without being repeated. Deterministic from the seed (its own xorshift
// stream, integer arithmetic, no clock).
#include <algorithm>
#include <cstdio>
#include <set>

#include "compactor/entries.h"
#include "compactor/estimate.h"
#include "compactor/eval.h"
#include "compactor/js_json.h"

namespace compactor {
namespace {

// xorshift64*: a stream of its own, unrelated to the first generator's.
class Dice {
 public:
  explicit Dice(uint64_t seed) : s_((seed + 0x51ED27u) * 0xD1B54A32D192ED03ULL) {
    if (s_ == 0) s_ = 0x9E3779B97F4A7C15ULL;
    Roll();
  }
  uint64_t Roll() {
    s_ ^= s_ >> 12;
    s_ ^= s_ << 25;
    s_ ^= s_ >> 27;
    return s_ * 0x2545F4914F6CDD1DULL;
  }
  size_t Under(size_t n) { return n == 0 ? 0 : static_cast<size_t>(Roll() % n); }
  int Between(int lo, int hi) {
    return lo + static_cast<int>(Under(static_cast<size_t>(hi - lo) + 1));
  }
  bool Percent(int p) { return static_cast<int>(Under(100)) < p; }
  template <typename T>
  const T& Any(const std::vector<T>& v) {
    return v[Under(v.size())];
  }

 private:
  uint64_t s_;
};

// What someone says, and the fact it states (the text occurs in the line).
struct Said {
  std::string line;
  std::string fact;
  std::vector<std::string> alt;
};

// A command that fails, with its output and the line that identifies the error.
struct Failure {
  std::string command;
  std::string output;
  int exit_code = 1;
  std::string fact;
  std::vector<std::string> alt;
};

// A value seen only in a command's output, and a later message that relies
// on it without repeating it.
struct ToolValue {
  std::string command;
  std::string output;
  std::string fact;
  std::vector<std::string> alt;
  std::string later;
};

struct Domain {
  std::string slug, cwd;
  Said goal;
  std::vector<Said> rules;
  std::vector<Said> value_chain;  // the original, then revisions (the last wins)
  std::vector<std::string> looked_at, changed;
  std::string check;  // the command the real fix is proven by
  Failure fixed;
  Failure false_fix;                      // never fixed...
  std::string other_ok, other_ok_output;  // ...though this different command then succeeds
  std::string false_claim;                // what the agent says after it
  Failure piped;                          // fails, but `| tail` exits 0
  std::string piped_claim;
  std::vector<ToolValue> values;
  std::string decision_line;  // names the option chosen and the one rejected
  Said decision;
  std::vector<std::string> reason;
  Said rejected;
  Said done_step;  // asked for at the start, done in the middle
  std::string done_file, done_prose;
  Said next;
};

std::vector<Domain> Domains() {
  std::vector<Domain> d(3);
  // --- A Go log shipper.
  d[0].slug = "tailpipe";
  d[0].cwd = "/srv/src/tailpipe";
  d[0].goal = {
      "ok so the shipper drops lines whenever the collector restarts. i need tailpipe to "
      "buffer to disk while the collector is down and replay in order once it's back.",
      "buffer to disk while the collector is down",
      {"buffer to disk", "disk buffer", "spool to disk", "spools to disk"}};
  d[0].rules = {
      {"no cgo anywhere, we cross-compile for arm64.", "no cgo", {"without cgo", "cgo-free"}},
      {"keep the public flags backwards compatible, ops scripts call them.",
       "keep the public flags backwards compatible",
       {"flags backwards compatible", "backwards-compatible flags", "don't break the flags"}},
      {"stdlib only for the spool. no bbolt, no badger.",
       "stdlib only for the spool",
       {"standard library only", "no bbolt", "stdlib-only spool"}},
  };
  d[0].value_chain = {
      {"cap the spool at 256 MiB per host.", "256 MiB", {"256mib", "256 mb"}},
      {"scratch that, the small boxes only have 2G of disk. cap the spool at 64 MiB.",
       "64 MiB",
       {"64mib", "64 mb"}},
      {"one more correction on the cap: ops found headroom, 96 MiB it is.",
       "96 MiB",
       {"96mib", "96 mb"}},
  };
  d[0].looked_at = {"internal/ship/sender.go", "internal/ship/backoff.go", "cmd/tailpipe/main.go",
                    "docs/ops.md"};
  d[0].changed = {"internal/spool/spool.go", "internal/spool/spool_test.go",
                  "internal/ship/sender.go", "cmd/tailpipe/flags.go", "internal/spool/replay.go"};
  d[0].check = "go test ./internal/spool/...";
  d[0].fixed = {
      "go test ./internal/spool/...",
      "--- FAIL: TestReplayOrder (0.02s)\n    spool_test.go:88: replayed seq 7 before seq "
      "6\nFAIL\nFAIL\tgithub.com/acme/tailpipe/internal/spool\t0.031s\nFAIL",
      1,
      "replayed seq 7 before seq 6",
      {}};
  d[0].false_fix = {"go test ./internal/ship/...",
                    "--- FAIL: TestBackoffCap (0.00s)\n    backoff_test.go:41: backoff 30s exceeds "
                    "cap 10s\nFAIL\nFAIL\tgithub.com/acme/tailpipe/internal/ship\t0.012s\nFAIL",
                    1,
                    "backoff 30s exceeds cap 10s",
                    {"TestBackoffCap"}};
  d[0].other_ok = "go test ./internal/spool/... ./cmd/...";
  d[0].other_ok_output =
      "ok  \tgithub.com/acme/tailpipe/internal/spool\t0.044s\nok  \t"
      "github.com/acme/tailpipe/cmd/tailpipe\t0.019s";
  d[0].false_claim = "Tests are green now, so that's sorted. Moving on to the flags.";
  d[0].piped = {"go test -race ./internal/ship/... 2>&1 | tail -n 12",
                "==================\nWARNING: DATA RACE\nWrite at 0x00c0001a4018 by goroutine "
                "23:\n  github.com/acme/tailpipe/internal/ship.(*Sender).reconnect()\n"
                "==================\n--- FAIL: TestSenderReconnect (1.20s)\n    testing.go:1465: "
                "race detected during execution of test\nFAIL\nFAIL\t"
                "github.com/acme/tailpipe/internal/ship\t1.262s\nFAIL",
                0,
                "FAIL: TestSenderReconnect",
                {"TestSenderReconnect fails", "DATA RACE"}};
  d[0].piped_claim = "Exit 0 from the race run, good.";
  d[0].values = {
      {"cat deploy/tailpipe.yaml",
       "collector: collector.internal:4317\nflush_every: 750ms\nmax_batch_bytes: 524288\n"
       "tls:\n  ca: /etc/tailpipe/ca.pem\n",
       "750ms",
       {"750 ms"},
       "keep the flush interval that's in the deployed config, don't invent a new one."},
      {"go test -run '^$' -bench BenchmarkShip -benchtime 2s ./internal/ship/",
       "goos: linux\ngoarch: amd64\npkg: github.com/acme/tailpipe/internal/ship\n"
       "BenchmarkShip-8   \t   41234\t     58213 ns/op\t    4096 B/op\t      12 allocs/op\n"
       "PASS\nok  \tgithub.com/acme/tailpipe/internal/ship\t2.611s",
       "58213 ns/op",
       {"58213 ns", "58213ns/op", "58,213 ns/op"},
       "whatever you do, the spool path can't be slower than the baseline bench from earlier."},
      {"journalctl -u tailpipe -n 40 --no-pager",
       "Mar 11 09:14:02 edge-7 tailpipe[812]: send failed: rpc error: code = Unavailable desc = "
       "connection refused (collector.internal:4317)\nMar 11 09:14:03 edge-7 tailpipe[812]: "
       "dropping 1290 lines\n",
       "code = Unavailable desc = connection refused",
       {},
       "the replay should log exactly the error text the collector gave us in that journal, the "
       "alert rule greps for it."},
  };
  d[0].decision_line =
      "Two ways to lay out the spool: one file per segment with an fsync per batch, or a single "
      "append-only file with an index. Going with segment files, because deleting a replayed "
      "segment is an unlink and a torn write only loses the last segment. The single append-only "
      "file is out: compacting it needs a second copy, and the small boxes don't have the disk.";
  d[0].decision = {"", "segment files", {"one file per segment", "segment-per-file"}};
  d[0].reason = {"unlink", "torn write", "last segment"};
  d[0].rejected = {"", "single append-only file", {"a single append-only file with an index"}};
  d[0].done_step = {"when the spool works, add a CHANGELOG entry under Unreleased.",
                    "add a CHANGELOG entry under Unreleased",
                    {"changelog entry under unreleased"}};
  d[0].done_file = "CHANGELOG.md";
  d[0].done_prose = "Spool works end to end; CHANGELOG entry under Unreleased is in.";
  d[0].next = {
      "Next: run the soak test on the staging box (tailpipe-soak.sh, two hours) before "
      "tagging.",
      "run the soak test on the staging box",
      {"soak test on the staging box", "soak test on staging"}};

  // --- A Rust thumbnail service.
  d[1].slug = "thumbd";
  d[1].cwd = "/home/kit/thumbd";
  d[1].goal = {
      "thumbd needs to serve webp thumbnails as well as jpeg, picked from the Accept "
      "header. that's the whole job today.",
      "serve webp thumbnails",
      {"webp thumbnails", "webp support", "webp output"}};
  d[1].rules = {
      {"no unsafe blocks, the crate has forbid(unsafe_code) for a reason.",
       "no unsafe blocks",
       {"no unsafe", "forbid(unsafe_code)", "without unsafe"}},
      {"don't bump the MSRV.",
       "don't bump the MSRV",
       {"do not bump the msrv", "keep the msrv", "msrv unchanged"}},
      {"clippy -D warnings has to pass before anything is committed.",
       "clippy -D warnings",
       {"clippy with -d warnings", "clippy clean"}},
  };
  d[1].value_chain = {
      {"thumbnails are 512px on the long edge.", "512px", {"512 px"}},
      {"hmm no, product wants 640px on the long edge now.", "640px", {"640 px"}},
      {"ugh, they changed it again: 720px long edge, final answer.", "720px", {"720 px"}},
  };
  d[1].looked_at = {"src/main.rs", "src/negotiate.rs", "benches/resize.rs", "src/cache.rs"};
  d[1].changed = {"src/encode.rs", "tests/accept.rs", "src/negotiate.rs", "src/handler.rs",
                  "src/config.rs"};
  d[1].check = "cargo test --test accept";
  d[1].fixed = {
      "cargo test --test accept",
      "running 7 tests\n.....F.\nfailures:\n\n---- prefers_webp_when_q_equal stdout ----\n"
      "thread 'prefers_webp_when_q_equal' panicked at tests/accept.rs:41:5:\nassertion "
      "`left == right` failed\n  left: \"image/jpeg\"\n right: \"image/webp\"\n\ntest "
      "result: FAILED. 6 passed; 1 failed; 0 ignored\nerror: test failed, to rerun pass "
      "`--test accept`",
      101,
      "thread prefers_webp_when_q_equal panicked",
      {"prefers_webp_when_q_equal"}};
  d[1].false_fix = {"cargo clippy --all-targets -- -D warnings",
                    "    Checking thumbd v0.4.2 (/home/kit/thumbd)\nerror: this `if` has identical "
                    "blocks\n  --> src/negotiate.rs:58:9\n   |\n58 | /         } else if q_webp "
                    "== q_jpeg {\n\nerror: could not compile `thumbd` (lib) due to 1 previous "
                    "error",
                    101,
                    "this if has identical blocks",
                    {"identical blocks"}};
  d[1].other_ok = "cargo build --release";
  d[1].other_ok_output =
      "   Compiling thumbd v0.4.2 (/home/kit/thumbd)\n    Finished `release` profile [optimized] "
      "target(s) in 41.07s";
  d[1].false_claim = "Release build is green, so clippy is happy again.";
  d[1].piped = {"cargo test 2>&1 | tail -n 8",
                "test resize::keeps_aspect_ratio ... FAILED\n\nfailures:\n    "
                "resize::keeps_aspect_ratio\n\ntest result: FAILED. 23 passed; 1 failed; 0 "
                "ignored; 0 measured; 0 filtered out; finished in 0.84s\n\nerror: test failed, to "
                "rerun pass `--lib`",
                0,
                "resize::keeps_aspect_ratio",
                {"keeps_aspect_ratio"}};
  d[1].piped_claim = "That exits 0, the suite is fine.";
  d[1].values = {
      {"cat config/thumbd.toml",
       "[server]\nbind = \"0.0.0.0:8080\"\nworkers = 6\n\n[jpeg]\nquality = 82\n"
       "progressive = true\n\n[cache]\nttl_secs = 86400\n",
       "quality = 82",
       {"quality 82", "quality of 82", "quality=82", "quality: 82"},
       "for webp use the same encoder quality the jpeg section of the config has, don't pick "
       "your own."},
      {"cargo bench --bench resize -- --save-baseline before",
       "resize/1920x1080->512   time:   [3.8121 ms 3.8412 ms 3.8730 ms]\n"
       "resize/4000x3000->512   time:   [14.902 ms 15.017 ms 15.160 ms]\n",
       "3.8412 ms",
       {"3.84 ms", "3.8412ms"},
       "and webp encoding has to stay within twice this morning's 1080p resize time."},
      {"curl -sI -H 'Accept: image/webp' localhost:8080/t/abc.jpg",
       "HTTP/1.1 406 Not Acceptable\ncontent-length: 0\nx-thumbd-reason: no encoder for "
       "image/webp\n",
       "no encoder for image/webp",
       {},
       "keep that x-thumbd-reason text for unsupported types stable, the CDN rule matches on "
       "it."},
  };
  d[1].decision_line =
      "Picking the image crate's webp encoder over libwebp-sys: it is pure Rust, so no unsafe "
      "and no C toolchain in the build image. libwebp-sys is off the table even though it "
      "compresses a bit better.";
  d[1].decision = {"", "the image crate's webp encoder", {"image crates webp encoder"}};
  d[1].reason = {"pure rust", "no unsafe", "c toolchain"};
  d[1].rejected = {"", "libwebp-sys", {}};
  d[1].done_step = {"once webp works, bump the crate version to 0.5.0.",
                    "bump the crate version to 0.5.0",
                    {"bump the version to 0.5.0", "version 0.5.0"}};
  d[1].done_file = "Cargo.toml";
  d[1].done_prose = "webp path works; crate version bumped to 0.5.0 in Cargo.toml.";
  d[1].next = {"Next up: deploy to the canary pool and watch the 406 rate for an hour.",
               "deploy to the canary pool",
               {"canary pool", "canary deploy"}};

  // --- A Terraform and Helm rollout.
  d[2].slug = "ledger-eks";
  d[2].cwd = "/work/infra-live";
  d[2].goal = {
      "we're moving ledger-svc off the old autoscaling group onto the eks cluster. for "
      "this session: a helm chart plus the terraform for its IRSA role, applied to "
      "staging.",
      "onto the eks cluster",
      {"ledger-svc to eks", "move ledger-svc to eks", "migrate ledger-svc to eks"}};
  d[2].rules = {
      {"nothing touches prod today, staging only.",
       "nothing touches prod",
       {"staging only", "no prod changes", "don't touch prod"}},
      {"terraform goes through make plan / make apply, never raw terraform apply.",
       "never raw terraform apply",
       {"no raw terraform apply", "only make apply", "make plan / make apply"}},
      {"every resource gets the cost-center tag.",
       "cost-center tag",
       {"cost-center tags", "tagged with cost-center"}},
  };
  d[2].value_chain = {
      {"start with 3 replicas.", "3 replicas", {}},
      {"actually make it 2 replicas in staging, it's a cost thing.", "2 replicas", {}},
      {"correction from finance: 1 replica in staging until the load test.", "1 replica", {}},
  };
  d[2].looked_at = {"modules/irsa/main.tf", "envs/staging/ledger/terragrunt.hcl",
                    "charts/_template/values.yaml", "docs/runbooks/ledger.md"};
  d[2].changed = {"envs/staging/ledger/irsa.tf", "charts/ledger-svc/Chart.yaml",
                  "charts/ledger-svc/templates/deployment.yaml", "charts/ledger-svc/values.yaml",
                  "envs/staging/ledger/outputs.tf"};
  d[2].check = "make plan ENV=staging STACK=ledger";
  d[2].fixed = {"make plan ENV=staging STACK=ledger",
                "Error: Missing required argument\n\n  on irsa.tf line 12, in module "
                "\"ledger_irsa\":\n  12: module \"ledger_irsa\" {\n\nThe argument "
                "\"oidc_provider_arn\" is required, but no definition was found.\nmake: *** "
                "[Makefile:31: plan] Error 1",
                2,
                "The argument oidc_provider_arn is required",
                {"oidc_provider_arn is required"}};
  d[2].false_fix = {"helm lint charts/ledger-svc",
                    "==> Linting charts/ledger-svc\n[ERROR] templates/deployment.yaml: unable to "
                    "parse YAML: error converting YAML to JSON: yaml: line 31: mapping values are "
                    "not allowed in this context\n\nError: 1 chart(s) linted, 1 chart(s) failed",
                    1,
                    "mapping values are not allowed in this context",
                    {}};
  d[2].other_ok = "helm lint charts/_template";
  d[2].other_ok_output = "==> Linting charts/_template\n\n1 chart(s) linted, 0 chart(s) failed";
  d[2].false_claim = "Lint passes now, so the template is OK.";
  d[2].piped = {
      "kubectl -n ledger rollout status deploy/ledger-svc --timeout=120s 2>&1 | tail -n 3",
      "Waiting for deployment \"ledger-svc\" rollout to finish: 0 of 1 updated replicas "
      "are available...\nerror: deployment \"ledger-svc\" exceeded its progress "
      "deadline",
      0,
      "exceeded its progress deadline",
      {}};
  d[2].piped_claim = "Rollout command came back 0, so it's rolled out.";
  d[2].values = {
      {"kubectl -n legacy get configmap ledger-env -o yaml",
       "apiVersion: v1\ndata:\n  LEDGER_DB_POOL: \"40\"\n  LEDGER_RPC_TIMEOUT: 2500ms\n"
       "kind: ConfigMap\nmetadata:\n  name: ledger-env\n",
       "2500ms",
       {"2500 ms", "2.5s"},
       "the chart has to carry the rpc timeout the old ASG config uses, same value."},
      {"hey -z 30s https://ledger.legacy.internal/healthz",
       "Summary:\n  Total:\t30.0021 secs\n  Slowest:\t0.2140 secs\n  Requests/sec:\t1873.4412\n\n"
       "Latency distribution:\n  95% in 0.0412 secs\n",
       "1873.4412",
       {"1873.44", "1873 requests/sec", "1873 rps", "1,873"},
       "the eks pods need to at least match the old requests/sec figure from that hey run."},
      {"aws iam get-role --role-name ledger-svc-irsa --query Role.Arn --output text",
       "arn:aws:iam::381492027755:role/ledger-svc-irsa\n",
       "381492027755",
       {},
       "the service account annotation needs that role ARN exactly as aws printed it."},
  };
  d[2].decision_line =
      "For secrets: External Secrets operator pulling from SSM, not sealed-secrets, since SSM is "
      "where the autoscaling group already reads them and rotation keeps working unchanged.";
  d[2].decision = {"", "External Secrets operator", {"external-secrets", "externalsecrets"}};
  d[2].reason = {"ssm", "rotation"};
  d[2].rejected = {"", "sealed-secrets", {}};
  d[2].done_step = {"after the plan is clean, add the app to argocd.",
                    "add the app to argocd",
                    {"add ledger-svc to argocd", "argocd app"}};
  d[2].done_file = "argocd/apps/staging.yaml";
  d[2].done_prose = "Plan is clean; ledger-svc app added to argocd for staging.";
  d[2].next = {"Next: run the k6 load test against staging before anyone raises replicas.",
               "run the k6 load test against staging",
               {"k6 load test"}};
  return d;
}

// ---------------------------------------------------------------------------
// Writing pi v3 entries.

class Transcript {
 public:
  Transcript(uint64_t seed, Dice& dice, const std::string& cwd) : dice_(dice) {
    clock_ms_ = 1773225600000LL + static_cast<int64_t>(seed % 97) * 86400000LL;  // 2026-03-11
    char uuid[48];
    std::snprintf(uuid, sizeof(uuid), "%08llx-%04llx-7%03llx-9%03llx-%012llx",
                  static_cast<unsigned long long>(dice_.Roll() & 0xffffffffULL),
                  static_cast<unsigned long long>(dice_.Roll() & 0xffffULL),
                  static_cast<unsigned long long>(dice_.Roll() & 0xfffULL),
                  static_cast<unsigned long long>(dice_.Roll() & 0xfffULL),
                  static_cast<unsigned long long>(dice_.Roll() & 0xffffffffffffULL));
    out_ = MakeSessionHeader({uuid, FormatIsoTimestamp(clock_ms_), cwd, ""}) + "\n";
  }

  int64_t tokens() const { return tokens_; }
  std::string Jsonl() const { return out_; }

  std::string User(const std::string& text) {
    clock_ms_ += dice_.Between(20000, 400000);
    std::string m = "{\"role\":\"user\",\"content\":";
    AppendJsString(m, text);
    m += ",\"timestamp\":" + std::to_string(clock_ms_) + "}";
    return Add(m);
  }

  // Assistant text, optionally with one tool call (name, arguments JSON).
  std::string Agent(const std::string& text, const std::string& tool = "",
                    const std::string& args = "") {
    clock_ms_ += dice_.Between(2000, 40000);
    std::string content = "[";
    if (!text.empty()) {
      content += "{\"type\":\"text\",\"text\":";
      AppendJsString(content, text);
      content += "}";
    }
    if (!tool.empty()) {
      call_id_ = "call_" + std::to_string(++calls_) + "_" + std::to_string(dice_.Under(1000000));
      content += std::string(text.empty() ? "" : ",") + "{\"type\":\"toolCall\",\"id\":\"" +
                 call_id_ + "\",\"name\":\"" + tool + "\",\"arguments\":" + args + "}";
    }
    content += "]";
    const int64_t output = std::max<int64_t>(8, static_cast<int64_t>(content.size()) / 4);
    const int64_t input = 3100 + tokens_;
    std::string m =
        "{\"role\":\"assistant\",\"content\":" + content +
        ",\"api\":\"openai-completions\",\"provider\":\"openai\",\"model\":\"gpt-5\","
        "\"usage\":{\"input\":" +
        std::to_string(input) + ",\"output\":" + std::to_string(output) +
        ",\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":" + std::to_string(input + output) +
        ",\"cost\":{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,"
        "\"total\":0}},\"stopReason\":\"" +
        (tool.empty() ? "stop" : "toolUse") + "\",\"timestamp\":" + std::to_string(clock_ms_) + "}";
    return Add(m);
  }

  void Result(const std::string& tool, const std::string& text, bool is_error) {
    clock_ms_ += dice_.Between(100, 90000);
    std::string m = "{\"role\":\"toolResult\",\"toolCallId\":\"" + call_id_ + "\",\"toolName\":\"" +
                    tool + "\",\"content\":[{\"type\":\"text\",\"text\":";
    AppendJsString(m, text);
    m += "}],\"isError\":" + std::string(is_error ? "true" : "false") +
         ",\"timestamp\":" + std::to_string(clock_ms_) + "}";
    Add(m);
  }

  // pi's bash tool: a non-zero exit is an error result with the code appended.
  std::string Shell(const std::string& text, const std::string& command, const std::string& output,
                    int exit_code) {
    std::string args = "{\"command\":";
    AppendJsString(args, command);
    args += ",\"timeout\":600}";
    std::string id = Agent(text, "bash", args);
    std::string body = output.empty() ? "(no output)" : output;
    if (exit_code != 0) body += "\n\nCommand exited with code " + std::to_string(exit_code);
    Result("bash", body, exit_code != 0);
    return id;
  }

  std::string Open(const std::string& text, const std::string& path, const std::string& content) {
    std::string args = "{\"path\":";
    AppendJsString(args, path);
    args += "}";
    std::string id = Agent(text, "read", args);
    Result("read", content, false);
    return id;
  }

  std::string Change(const std::string& text, const std::string& path, const std::string& before,
                     const std::string& after) {
    std::string args = "{\"path\":";
    AppendJsString(args, path);
    args += ",\"oldText\":";
    AppendJsString(args, before);
    args += ",\"newText\":";
    AppendJsString(args, after);
    args += "}";
    std::string id = Agent(text, "edit", args);
    Result("edit", "Successfully replaced text in " + path + ".", false);
    return id;
  }

  std::string Create(const std::string& text, const std::string& path, const std::string& content) {
    std::string args = "{\"path\":";
    AppendJsString(args, path);
    args += ",\"content\":";
    AppendJsString(args, content);
    args += "}";
    std::string id = Agent(text, "write", args);
    Result("write", "Successfully wrote " + std::to_string(content.size()) + " bytes to " + path,
           false);
    return id;
  }

 private:
  std::string Add(const std::string& message) {
    std::string id;
    do {
      char buf[16];
      std::snprintf(buf, sizeof(buf), "%08llx",
                    static_cast<unsigned long long>(dice_.Roll() & 0xffffffffULL));
      id = buf;
    } while (!ids_.insert(id).second);
    out_ += MakeMessageEntry({id, parent_, FormatIsoTimestamp(clock_ms_)}, message) + "\n";
    parent_ = id;
    tokens_ += EstimateMessageTokens(message);
    return id;
  }

  Dice& dice_;
  int64_t clock_ms_ = 0;
  int64_t tokens_ = 0;
  int calls_ = 0;
  std::string call_id_, parent_, out_;
  std::set<std::string> ids_;
};

// ---------------------------------------------------------------------------
// Filler: what makes a real session long, and what a summary should drop.

std::string Source(Dice& dice, const std::string& path, int lines) {
  static const std::vector<std::string> kWords = {
      "segment", "offset", "writer", "flush",  "retry",   "budget",  "cursor", "ack",
      "header",  "frame",  "window", "reader", "encoder", "replica", "lease",  "drain"};
  std::string out;
  for (int i = 1; i <= lines; ++i) {
    out += std::to_string(i) + "\t";
    switch (dice.Under(4)) {
      case 0:
        out += "// " + dice.Any(kWords) + " handling for " + path;
        break;
      case 1:
        out += "    let " + dice.Any(kWords) + "_" + std::to_string(i) + " = " + dice.Any(kWords) +
               ".next()?;";
        break;
      case 2:
        out += "    if " + dice.Any(kWords) + ".len() > " + std::to_string(dice.Between(2, 9000)) +
               " { return Err(" + dice.Any(kWords) + "); }";
        break;
      default:
        out += "}";
    }
    out += "\n";
  }
  return out;
}

// One round of filler: a long build with spinners, a plan with box drawing,
// a `cd && sed -i` edit, a verbose test log, a search, or a big file.
void Filler(Transcript& t, Dice& dice, const Domain& d) {
  const std::string& file = dice.Any(d.looked_at);
  switch (dice.Under(6)) {
    case 0: {
      std::string log;
      const char* spin[] = {"\xe2\xa0\x8b", "\xe2\xa0\x99", "\xe2\xa0\xb9", "\xe2\xa0\xb8"};
      for (int i = 0; i < dice.Between(30, 90); ++i)
        log += std::string(spin[i % 4]) + " [build " + std::to_string(i % 7 + 1) + "/7] RUN step " +
               std::to_string(i) + " \xe2\x94\x82 " +
               std::string(static_cast<size_t>(i % 20 + 1), '=') + ">\n";
      log += "DONE " + std::to_string(dice.Between(20, 300)) + ".4s\n";
      t.Shell("", "docker build -t " + d.slug + ":dev .", log, 0);
      break;
    }
    case 1: {
      std::string plan = "\xe2\x95\xb7\n";
      for (int i = 0; i < dice.Between(20, 60); ++i)
        plan += "\xe2\x94\x82 " + std::string(i % 3 == 0 ? "# " : "  ") + "resource." +
                dice.Any(std::vector<std::string>{"a", "b", "c"}) + std::to_string(i) +
                " will be read during apply\n";
      plan += "\xe2\x95\xb5\n";
      t.Shell("Dry look at what changes.", "make diff 2>&1 | cat", plan, 0);
      break;
    }
    case 2: {
      const std::string a = dice.Any(std::vector<std::string>{"tmpDir", "retries", "bufSize"});
      t.Shell("",
              "cd " + d.cwd + " && sed -i 's/" + a + "/" + a + "2/g' " + file + " && sed -i " +
                  "'s/" + a + "2/" + a + "/g' " + file,
              "", 0);
      break;
    }
    case 3: {
      std::string log;
      for (int i = 0; i < dice.Between(60, 200); ++i)
        log += "=== RUN   Test" + std::to_string(i) + "\n--- PASS: Test" + std::to_string(i) +
               " (0.0" + std::to_string(i % 10) + "s)\n";
      t.Shell("", d.check + " -v 2>&1 | head -n 400", log, 0);
      break;
    }
    case 4: {
      std::string hits;
      for (int i = 0; i < dice.Between(15, 60); ++i)
        hits += file + ":" + std::to_string(dice.Between(1, 900)) + ":    " +
                dice.Any(std::vector<std::string>{"flush()", "retry()", "drain()"}) + "\n";
      t.Shell("", "rg -n 'flush|retry|drain' .", hits, 0);
      break;
    }
    default:
      t.Open("", file, Source(dice, file, dice.Between(80, 260)));
  }
}

void FillTo(Transcript& t, Dice& dice, const Domain& d, int64_t until) {
  while (t.tokens() < until) Filler(t, dice, d);
}

// ---------------------------------------------------------------------------
// The session.

class Story {
 public:
  Story(const GeneratorOptions& o, const Domain& d)
      : seed_(o.seed), d_(d), dice_(o.seed), t_(o.seed, dice_, d.cwd) {
    // Short, medium and long sessions.
    static const int kScalePercent[] = {35, 100, 180};
    target_ = std::max<int64_t>(40000, o.target_tokens * kScalePercent[o.seed % 3] / 100);
    revisions_ = dice_.Percent(60) ? 2 : 1;
  }

  GeneratedSession Write() {
    Opening();
    Exploring();
    FillTo(t_, dice_, d_, target_ * 20 / 100);
    FirstChange();
    FillTo(t_, dice_, d_, target_ * 40 / 100);
    Revision(1);
    FalseFix();
    FillTo(t_, dice_, d_, target_ * 55 / 100);
    PipedRun();
    DoneStep();
    if (revisions_ == 2) Revision(2);
    LaterReferences();
    // The kept tail of a default compaction (20k tokens) holds only the end.
    FillTo(t_, dice_, d_, std::max(target_ * 90 / 100, t_.tokens() + 26000));
    Ending();
    return Output();
  }

 private:
  void Plant(FactKind kind, const std::string& text, const std::vector<std::string>& alt,
             const std::string& entry, std::vector<std::vector<std::string>> qualifiers = {}) {
    Fact f;
    f.id = std::string(FactKindName(kind)) + "-" + std::to_string(facts_.size() + 1);
    f.kind = kind;
    f.text = text;
    f.variants = alt;
    f.qualifiers = std::move(qualifiers);
    f.entry_id = entry;
    facts_.push_back(std::move(f));
  }
  Fact& Last() { return facts_.back(); }

  static std::vector<std::vector<std::string>> Outcome(int code) {
    // pi prints nothing for a success: in the verbatim context, a result
    // that is not an error is the outcome.
    if (code == 0)
      return {{"exit 0", "exit code 0", "passes", "passed", "passing", "succeeded", "success",
               "successful", "ok", "green", "clean", "works", "[tool result]"}};
    const std::string c = std::to_string(code);
    return {{"exit " + c, "exit code " + c, "exited with code " + c, "failed", "fails", "failing",
             "error", "broken", "red", "[tool error]"}};
  }

  void Opening() {
    std::string text = d_.goal.line + "\n\n";
    for (const Said& r : d_.rules) text += "- " + r.line + "\n";
    text += "- " + d_.value_chain[0].line + "\n\n" + d_.done_step.line;
    const std::string id = t_.User(text);
    Plant(FactKind::kGoal, d_.goal.fact, d_.goal.alt, id);
    for (const Said& r : d_.rules) Plant(FactKind::kConstraint, r.fact, r.alt, id);
    Plant(FactKind::kConstraint, d_.value_chain[0].fact, d_.value_chain[0].alt, id);
    value_ids_.push_back(Last().id);
    Plant(FactKind::kNextStep, d_.done_step.fact, d_.done_step.alt, id);
    Last().status = "done";
  }

  void Exploring() {
    const size_t reads = 2 + dice_.Under(2);
    for (size_t i = 0; i < reads && i < d_.looked_at.size(); ++i) {
      const std::string id = t_.Open(i == 0 ? "Looking around first." : "", d_.looked_at[i],
                                     Source(dice_, d_.looked_at[i], dice_.Between(40, 140)));
      Plant(FactKind::kFileRead, d_.looked_at[i], {}, id);
    }
    for (const ToolValue& v : d_.values) {
      const std::string id = t_.Shell("", v.command, Padded(v.output), 0);
      Plant(FactKind::kValue, v.fact, v.alt, id);
    }
    const std::string id = t_.Agent(d_.decision_line);
    Plant(FactKind::kDecision, d_.decision.fact, d_.decision.alt, id, {d_.reason});
    Plant(FactKind::kDecision, d_.rejected.fact, d_.rejected.alt, id);
    Last().status = "rejected";
  }

  // A real config file, benchmark run or log is longer than the line that
  // matters: the value sits among 40-90 lines like it.
  std::string Padded(const std::string& output) {
    static const std::vector<std::string> kKeys = {"region", "owner", "pool", "shard", "mode",
                                                   "zone",   "tier",  "lane", "slot",  "queue"};
    std::string before, after;
    const int lines = dice_.Between(40, 90);
    for (int i = 0; i < lines; ++i) {
      std::string line = "  " + dice_.Any(kKeys) + "_" + std::to_string(i) + ": " +
                         dice_.Any(kKeys) + "-" + std::to_string(dice_.Between(1, 99)) + "\n";
      (i < lines / 3 ? before : after) += line;
    }
    return before + output + after;
  }

  void FirstChange() {
    const std::string a = t_.Create("", d_.changed[0], Source(dice_, d_.changed[0], 60));
    Plant(FactKind::kFileModified, d_.changed[0], {}, a);
    const std::string b = t_.Create("Test first.", d_.changed[1], Source(dice_, d_.changed[1], 40));
    Plant(FactKind::kFileModified, d_.changed[1], {}, b);
    const std::string fail = t_.Shell("", d_.fixed.command, d_.fixed.output, d_.fixed.exit_code);
    Plant(FactKind::kError, d_.fixed.fact, d_.fixed.alt, fail);
    Last().fixed = true;
    t_.Change("Off by one in the ordering; fixing.", d_.changed[0], "i + 1", "i");
    const std::string ok = t_.Shell("", d_.check, "ok\n", 0);
    Plant(FactKind::kCommand, d_.check, {}, ok, Outcome(0));
    t_.Agent("Passes.");
  }

  void Revision(size_t n) {
    const Said& v = d_.value_chain[n];
    const std::string id = t_.User(v.line);
    Plant(FactKind::kConstraint, v.fact, v.alt, id);
    // The one before is superseded by this one.
    for (Fact& f : facts_)
      if (f.id == value_ids_.back()) f.superseded_by = Last().id;
    value_ids_.push_back(Last().id);
    const std::string& file = d_.changed[1 + n];
    const std::string e = t_.Change("Applying that.", file, "limit", "limit /* " + v.fact + " */");
    Plant(FactKind::kFileModified, file, {}, e);
  }

  void FalseFix() {
    const Failure& f = d_.false_fix;
    const std::string fail = t_.Shell("", f.command, f.output, f.exit_code);
    Plant(FactKind::kError, f.fact, f.alt, fail);
    Last().fixed = false;
    Plant(FactKind::kCommand, f.command, {}, fail, Outcome(f.exit_code));
    const std::string ok = t_.Shell("Trying it another way.", d_.other_ok, d_.other_ok_output, 0);
    Plant(FactKind::kCommand, d_.other_ok, {}, ok, Outcome(0));
    t_.Agent(d_.false_claim);
  }

  void PipedRun() {
    const Failure& f = d_.piped;
    const std::string id = t_.Shell("Full suite.", f.command, f.output, f.exit_code);
    Plant(FactKind::kError, f.fact, f.alt, id);
    Last().fixed = false;
    t_.Agent(d_.piped_claim);
  }

  void DoneStep() {
    const std::string id = t_.Change("", d_.done_file, "## Unreleased", "## Unreleased\n- spool");
    Plant(FactKind::kFileModified, d_.done_file, {}, id);
    t_.Agent(d_.done_prose);
  }

  void LaterReferences() {
    std::string text;
    for (const ToolValue& v : d_.values) text += v.later + " ";
    text.pop_back();
    t_.User(text);
    t_.Agent("Understood, I'll check all of that against what we measured before calling it done.");
  }

  void Ending() {
    const std::string& file = d_.changed[4];
    const std::string id = t_.Create("Last piece.", file, Source(dice_, file, 30));
    Plant(FactKind::kFileModified, file, {}, id);
    const std::string next = t_.Agent("Wired up. " + d_.next.line);
    Plant(FactKind::kNextStep, d_.next.fact, d_.next.alt, next);
  }

  GeneratedSession Output() {
    GeneratedSession out;
    char name[32];
    std::snprintf(name, sizeof(name), "ind-%04llu", static_cast<unsigned long long>(seed_));
    out.name = name;
    out.jsonl = t_.Jsonl();
    out.facts.session = out.name + ".jsonl";
    out.facts.source = "generated-independent";
    out.facts.seed = seed_;
    out.facts.split = HeldOutSeed(seed_) ? "held-out" : "tuning";
    out.facts.facts = facts_;
    return out;
  }

  const uint64_t seed_;
  const Domain& d_;
  Dice dice_;
  Transcript t_;
  int64_t target_ = 0;
  int revisions_ = 1;
  std::vector<Fact> facts_;
  std::vector<std::string> value_ids_;
};

}  // namespace

GeneratedSession GenerateIndependentSession(const GeneratorOptions& options) {
  static const std::vector<Domain> kDomains = Domains();
  // Seeds walk the domains in a different order from the split rule's.
  return Story(options, kDomains[(options.seed / 2 + options.seed) % kDomains.size()]).Write();
}

}  // namespace compactor
