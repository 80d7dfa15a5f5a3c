// Deterministic generator of evaluation sessions (docs/quality.md,
// "Generated corpus"): multi-hour coding sessions in pi v3 format with probe
// facts planted at known entries. Everything derives from the seed: no clock,
// no random device, no locale; integer arithmetic only, so the bytes are the
// same on every platform.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "compactor/entries.h"
#include "compactor/estimate.h"
#include "compactor/eval.h"
#include "compactor/js_json.h"
#include "compactor/writer.h"

namespace compactor {
namespace {

// splitmix64: tiny, fully specified, identical everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ULL + 0x1234567ULL) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n).
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(Next() % n); }
  int Range(int lo, int hi) {
    return lo + static_cast<int>(Below(static_cast<size_t>(hi - lo + 1)));
  }
  bool Chance(int percent) { return static_cast<int>(Below(100)) < percent; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(v.size())];
  }
  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[Below(i)]);
  }

 private:
  uint64_t s_;
};

// ---------------------------------------------------------------------------
// Scenario data: what a session is about. Texts are written so that the
// fact's canonical text occurs verbatim where it is stated.

struct PhraseSpec {
  std::string sentence;  // what the user or assistant says
  std::string text;      // canonical fact text (occurs in sentence)
  std::vector<std::string> variants;
  std::vector<std::vector<std::string>> qualifiers;
};

struct ErrorSpec {
  std::string command_key;  // which command shows it: "test", "typecheck", "run"
  std::string output;       // the failing output (contains text)
  std::string text;
  std::vector<std::string> variants;
  std::string fix_file;     // file the fix edits
  std::string explanation;  // assistant's diagnosis
};

struct Revision {
  PhraseSpec stale;    // stated first
  PhraseSpec current;  // the user's later change
  FactKind kind;       // kDecision or kConstraint
};

struct Scenario {
  std::string name, cwd, lang;
  PhraseSpec goal;
  std::vector<PhraseSpec> constraints;
  std::vector<PhraseSpec> decisions;
  std::vector<Revision> revisions;
  std::vector<ErrorSpec> errors;
  std::vector<std::string> modify_files, read_files;
  // Significant commands: key -> command text.
  std::vector<std::pair<std::string, std::string>> commands;
  std::vector<PhraseSpec> next_steps;
};

const std::vector<std::vector<std::string>> kSuccessWords = {
    {"exit 0", "exit code 0", "exited with code 0", "succeeded", "passed", "passes", "passing",
     "success", "successful", "successfully", "ok", "green", "done", "clean", "no errors"}};

std::vector<std::vector<std::string>> FailureWords(int code) {
  std::string c = std::to_string(code);
  return {{"exit " + c, "exit code " + c, "exited with code " + c, "failed", "fails", "failing",
           "failure", "error", "errors", "broken"}};
}

Scenario TypeScriptScenario() {
  Scenario s;
  s.name = "payments-api";
  s.cwd = "/home/dev/work/payments-api";
  s.lang = "ts";
  s.goal = {
      "I want to add per-client rate limiting to the public payments API: every API key gets "
      "its own budget of requests per minute, and clients over budget get a 429 with a "
      "Retry-After header.",
      "add per-client rate limiting to the public payments API",
      {"per-client rate limiting", "rate limiting to the public payments api",
       "rate limiting for the payments api"},
      {}};
  s.constraints = {
      {"Use pnpm, not npm, for every command in this repo.",
       "use pnpm, not npm",
       {"pnpm, not npm", "pnpm instead of npm", "pnpm not npm"},
       {}},
      {"Never modify anything under src/generated/ - that code is produced by the OpenAPI "
       "generator.",
       "never modify anything under src/generated/",
       {"do not modify src/generated/", "don't modify src/generated/", "never touch src/generated/",
        "src/generated/ must not be modified", "never edit src/generated/"},
       {}},
      {"Prefer zod schemas over hand-written validation for request parsing.",
       "prefer zod schemas over hand-written validation",
       {"zod schemas over hand-written validation", "zod over hand-written validation"},
       {}},
      {"Don't add new runtime dependencies without asking me first.",
       "don't add new runtime dependencies without asking",
       {"no new runtime dependencies", "do not add new runtime dependencies",
        "don't add new runtime dependencies"},
       {}},
      {"Never log the raw API key; log only its last four characters.",
       "never log the raw API key",
       {"do not log the raw api key", "don't log the raw api key",
        "raw api key must not be logged"},
       {}},
  };
  s.decisions = {
      {"Decision: I'll use a sliding-window counter rather than fixed windows, because fixed "
       "windows let a client burst to twice the limit at the window boundary.",
       "sliding-window counter",
       {"sliding window counter", "sliding-window", "sliding window"},
       {{"burst", "bursts", "boundary"}}},
      {"Decision: the limiter runs as Fastify onRequest middleware, since that hook fires before "
       "body parsing and rejected requests cost almost nothing.",
       "onRequest middleware",
       {"onrequest hook"},
       {{"before body parsing", "body parsing", "cost almost nothing", "cheap"}}},
      {"Decision: limits are keyed by the API key's id, not the client IP, because several "
       "merchants share egress IPs behind the same proxy.",
       "keyed by the API key's id",
       {"keyed by api key id", "keyed by the api key id", "key by api key id"},
       {{"egress", "share", "proxy", "shared ip"}}},
      {"Decision: Retry-After is computed from the oldest request in the window, so clients get "
       "the exact wait instead of a fixed 60 seconds.",
       "Retry-After is computed from the oldest request in the window",
       {"retry-after from the oldest request", "retry-after computed from the oldest request"},
       {{"exact wait", "fixed 60"}}},
  };
  s.revisions = {
      {{"Decision: store the counters in Redis so that all API replicas share one budget per key.",
        "store the counters in Redis",
        {"counters in redis"},
        {}},
       {"Change of plan: the edge workers cannot reach Redis, so use an in-memory LRU store per "
        "worker and divide each budget by the worker count.",
        "in-memory LRU store",
        {"in-memory lru", "in memory lru store"},
        {{"edge workers", "edge", "cannot reach redis", "can't reach redis"}}},
       FactKind::kDecision},
      {{"It must run on Node 18, the payments hosts are still on it.",
        "must run on Node 18",
        {"target node 18", "runs on node 18"},
        {}},
       {"Update: the payments hosts moved to Node 20 last week, so target Node 20 from now on; "
        "Node "
        "18 support is dropped.",
        "target Node 20",
        {"targets node 20", "must run on node 20", "node 20 from now on"},
        {}},
       FactKind::kConstraint},
  };
  s.errors = {
      {"test",
       "AssertionError: expected 429 to be 200 // Object.is equality\n"
       " ❯ test/ratelimit.test.ts:48:32\n     46|     const res = await app.inject(req);\n"
       "     47|     // second key must not share the first key's budget\n"
       "     48|     expect(res.statusCode).toBe(200);\n",
       "expected 429 to be 200",
       {"expected 429 to be 200"},
       "src/ratelimit/store.ts",
       "The second key is limited because the store keys by route only; the key id is missing "
       "from the bucket key."},
      {"test",
       "TypeError: Cannot read properties of undefined (reading 'windowMs')\n"
       "    at resolveLimit (src/ratelimit/config.ts:31:24)\n"
       "    at onRequest (src/ratelimit/middleware.ts:18:17)\n"
       "    at hookRunner (node_modules/fastify/lib/hooks.js:249:5)\n",
       "Cannot read properties of undefined (reading 'windowMs')",
       {"reading windowms", "(reading 'windowMs')"},
       "src/ratelimit/config.ts",
       "Routes without an explicit plan fall through to an undefined plan; the config needs a "
       "default plan."},
      {"typecheck",
       "src/ratelimit/middleware.ts(42,31): error TS2345: Argument of type 'string' is not "
       "assignable to parameter of type 'Duration'.\n",
       "TS2345: Argument of type 'string' is not assignable to parameter of type 'Duration'",
       {"ts2345"},
       "src/ratelimit/middleware.ts",
       "The header value is parsed as a string; it has to go through toDuration() first."},
      {"test",
       "Error: Timed out in waitFor after 5000ms: Retry-After header missing\n"
       "    at test/retry-after.test.ts:77:11\n",
       "Retry-After header missing",
       {"retry-after header missing", "timed out in waitfor after 5000ms"},
       "src/ratelimit/headers.ts",
       "The 429 path returns before the header hook runs, so the header never gets set."},
  };
  s.modify_files = {
      "src/ratelimit/store.ts",   "src/ratelimit/config.ts", "src/ratelimit/middleware.ts",
      "src/ratelimit/headers.ts", "src/server.ts",           "test/ratelimit.test.ts",
      "test/retry-after.test.ts", "docs/rate-limits.md"};
  s.read_files = {"src/routes/charges.ts",  "src/routes/refunds.ts", "src/auth/api-key.ts",
                  "src/plugins/metrics.ts", "package.json",          "src/config/env.ts",
                  "src/routes/webhooks.ts"};
  s.commands = {{"test", "pnpm vitest run test/ratelimit.test.ts"},
                {"test2", "pnpm vitest run test/retry-after.test.ts"},
                {"typecheck", "pnpm typecheck"},
                {"lint", "pnpm lint"},
                {"build", "pnpm build"}};
  s.next_steps = {
      {"Next step: add an integration test that drives the checkout route past its budget.",
       "add an integration test that drives the checkout route past its budget",
       {"integration test for the checkout route",
        "integration test that drives the checkout route"},
       {}},
      {"Next step: expose the limiter counters on the /metrics endpoint for the dashboard.",
       "expose the limiter counters on the /metrics endpoint",
       {"limiter counters on /metrics", "expose the limiter counters"},
       {}},
  };
  return s;
}

Scenario PythonScenario() {
  Scenario s;
  s.name = "inventory-service";
  s.cwd = "/srv/src/inventory-service";
  s.lang = "py";
  s.goal = {
      "Goal for today: add a bulk CSV import endpoint to the inventory service so warehouse "
      "staff can upload stock counts for a whole site at once.",
      "add a bulk CSV import endpoint to the inventory service",
      {"bulk csv import endpoint", "bulk import endpoint for csv"},
      {}};
  s.constraints = {
      {"Use uv, not pip, to install or run anything.",
       "use uv, not pip",
       {"uv, not pip", "uv instead of pip", "uv not pip"},
       {}},
      {"Never edit an Alembic migration that is already merged; add a new revision instead.",
       "never edit an Alembic migration that is already merged",
       {"do not edit merged alembic migrations", "never edit merged migrations",
        "don't edit merged migrations", "never edit an alembic migration"},
       {}},
      {"Prefer pydantic v2 models over dataclasses for anything that crosses the API boundary.",
       "prefer pydantic v2 models over dataclasses",
       {"pydantic v2 models over dataclasses", "pydantic models instead of dataclasses"},
       {}},
      {"Every new endpoint must come with tests in tests/api/.",
       "every new endpoint must come with tests",
       {"new endpoints must have tests", "every new endpoint needs tests"},
       {}},
      {"Never return stack traces to API clients.",
       "never return stack traces to API clients",
       {"no stack traces to api clients", "do not return stack traces"},
       {}},
  };
  s.decisions = {
      {"Decision: rows are validated all-or-nothing per file, because a half-applied stock count "
       "leaves a site in an inconsistent state.",
       "all-or-nothing per file",
       {"all or nothing per file", "all-or-nothing"},
       {{"half-applied", "inconsistent"}}},
      {"Decision: the import runs as a background job with a status URL, because large sites "
       "upload 200k rows and the request would time out.",
       "background job with a status URL",
       {"background job with a status url", "background job"},
       {{"time out", "timeout", "200k rows"}}},
      {"Decision: SKUs are matched case-insensitively after trimming, since the warehouse "
       "scanners emit trailing spaces.",
       "SKUs are matched case-insensitively",
       {"case-insensitive sku matching", "skus matched case-insensitively"},
       {{"trailing spaces", "scanners"}}},
  };
  s.revisions = {
      {{"Decision: parse the uploads with pandas read_csv, it handles the quoting edge cases.",
        "parse the uploads with pandas",
        {"pandas read_csv", "parse with pandas"},
        {}},
       {"Change of plan: pandas adds 60 MB to the container image, so use the stdlib csv module "
        "instead of pandas.",
        "use the stdlib csv module",
        {"stdlib csv module", "standard library csv module"},
        {{"60 mb", "image"}}},
       FactKind::kDecision},
      {{"Insert rows in batches of 500.",
        "batches of 500",
        {"batch size 500", "batch size of 500"},
        {}},
       {"Correction: the DBA says batches of 500 lock the stock table too long; use batches of 100 "
        "instead.",
        "batches of 100",
        {"batch size 100", "batch size of 100"},
        {}},
       FactKind::kConstraint},
  };
  s.errors = {
      {"test",
       "FAILED tests/api/test_import.py::test_rejects_unknown_sku - assert 200 == 422\n"
       "E       assert 200 == 422\n"
       "E        +  where 200 = <Response [200]>.status_code\n",
       "assert 200 == 422",
       {"test_rejects_unknown_sku"},
       "app/importer/validate.py",
       "Unknown SKUs are skipped silently instead of failing validation."},
      {"test",
       "sqlalchemy.exc.IntegrityError: (psycopg.errors.UniqueViolation) duplicate key value "
       "violates unique constraint \"stock_site_sku_key\"\n"
       "DETAIL:  Key (site_id, sku)=(12, AB-1001) already exists.\n",
       "duplicate key value violates unique constraint \"stock_site_sku_key\"",
       {"stock_site_sku_key", "uniqueviolation"},
       "app/importer/writer.py",
       "The writer inserts instead of upserting; existing (site, sku) rows need ON CONFLICT DO "
       "UPDATE."},
      {"typecheck",
       "app/importer/jobs.py:58: error: Argument 1 to \"enqueue\" has incompatible type "
       "\"ImportJob | None\"; expected \"ImportJob\"  [arg-type]\n"
       "Found 1 error in 1 file (checked 64 source files)\n",
       "Argument 1 to \"enqueue\" has incompatible type",
       {"incompatible type \"importjob | none\"", "[arg-type]"},
       "app/importer/jobs.py",
       "create_job can return None when the site is archived; the route must handle that."},
      {"test",
       "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start "
       "byte\n  File \"app/importer/parse.py\", line 22, in read_rows\n",
       "'utf-8' codec can't decode byte 0xff",
       {"unicodedecodeerror", "can't decode byte 0xff"},
       "app/importer/parse.py",
       "Excel exports start with a UTF-16 BOM; the parser must sniff the encoding."},
  };
  s.modify_files = {"app/importer/parse.py",        "app/importer/validate.py",
                    "app/importer/writer.py",       "app/importer/jobs.py",
                    "app/api/imports.py",           "tests/api/test_import.py",
                    "tests/importer/test_parse.py", "docs/bulk-import.md"};
  s.read_files = {"app/models/stock.py", "app/api/stock.py", "app/db/session.py",
                  "pyproject.toml",      "app/settings.py",  "alembic/versions/0042_stock_site.py",
                  "app/api/deps.py"};
  s.commands = {{"test", "uv run pytest tests/api/test_import.py -q"},
                {"test2", "uv run pytest tests/importer -q"},
                {"typecheck", "uv run mypy app"},
                {"lint", "uv run ruff check app tests"},
                {"build", "uv run alembic upgrade head"}};
  s.next_steps = {
      {"Next step: add a progress counter to the import status endpoint.",
       "add a progress counter to the import status endpoint",
       {"progress counter to the import status endpoint",
        "progress counter on the status endpoint"},
       {}},
      {"Next step: load-test the importer with the 200k-row file from the Leeds site.",
       "load-test the importer with the 200k-row file",
       {"load-test the importer", "load test the importer with the 200k-row file"},
       {}},
  };
  return s;
}

// ---------------------------------------------------------------------------
// Noise text (tool output that carries no fact)

const std::vector<std::string> kNouns = {"ledger",  "invoice", "cursor", "batch",  "payload",
                                         "account", "entry",   "report", "record", "session",
                                         "client",  "handler", "schema", "result", "buffer"};
const std::vector<std::string> kVerbs = {"load",  "build", "format", "resolve", "merge", "parse",
                                         "check", "apply", "emit",   "fetch",   "store", "map"};
const std::vector<std::string> kFields = {"id",    "amount", "currency", "status",  "createdAt",
                                          "owner", "count",  "label",    "version", "region"};

std::string Ident(Rng& r) {
  std::string v = r.Pick(kVerbs), n = r.Pick(kNouns);
  n[0] = static_cast<char>(n[0] - 'a' + 'A');
  return v + n;
}

std::string FileContent(Rng& r, const std::string& lang, const std::string& path, int functions) {
  std::string out;
  if (lang == "ts") {
    out += "// " + path +
           "\nimport type { FastifyInstance } from \"fastify\";\nimport { z } from \"zod\";\n\n";
    for (int i = 0; i < functions; ++i) {
      std::string fn = Ident(r), f1 = r.Pick(kFields), f2 = r.Pick(kFields), n = r.Pick(kNouns);
      out += "export async function " + fn + "(" + n +
             ": Record<string, unknown>, opts: { strict?: boolean } = {}) {\n";
      out += "  const " + f1 + " = " + n + "[\"" + f1 + "\"] ?? null;\n";
      out += "  if (" + f1 + " === null && opts.strict) {\n";
      out += "    throw new Error(`" + fn + ": missing " + f1 + " on " + n + "`);\n  }\n";
      out += "  const parsed = z.object({ " + f2 + ": z.string().optional() }).safeParse(" + n +
             ");\n";
      out += "  if (!parsed.success) return { ok: false as const, issues: parsed.error.issues };\n";
      for (int k = r.Range(1, 5); k > 0; --k)
        out += "  // " + r.Pick(kVerbs) + " the " + r.Pick(kNouns) + " before we " +
               r.Pick(kVerbs) + " it\n";
      out +=
          "  return { ok: true as const, " + f1 + ", " + f2 + ": parsed.data." + f2 + " };\n}\n\n";
    }
  } else {
    out += "\"\"\"" + path +
           "\"\"\"\nfrom __future__ import annotations\n\nimport logging\n\nlog = "
           "logging.getLogger(__name__)\n\n";
    for (int i = 0; i < functions; ++i) {
      std::string fn = r.Pick(kVerbs) + "_" + r.Pick(kNouns), f1 = r.Pick(kFields),
                  n = r.Pick(kNouns);
      out += "def " + fn + "(" + n + ": dict, *, strict: bool = False) -> dict:\n";
      out += "    value = " + n + ".get(\"" + f1 + "\")\n";
      out += "    if value is None and strict:\n        raise ValueError(f\"" + fn + ": missing " +
             f1 + "\")\n";
      for (int k = r.Range(1, 5); k > 0; --k)
        out += "    # " + r.Pick(kVerbs) + " the " + r.Pick(kNouns) + " before we " +
               r.Pick(kVerbs) + " it\n";
      out += "    log.debug(\"" + fn + " %s\", value)\n    return {\"" + f1 + "\": value}\n\n\n";
    }
  }
  return out;
}

std::string TestLog(Rng& r, const Scenario& s, const std::string& command, int cases,
                    const std::string& failure) {
  std::string out;
  if (s.lang == "ts") {
    out += "\n> " + s.name + "@2.14.0 test\n> " + command.substr(5) + "\n\n RUN  v1.6.0 " + s.cwd +
           "\n\n";
    for (int i = 0; i < cases; ++i)
      out += " \xe2\x9c\x93 test/" + r.Pick(kNouns) + ".test.ts > " + Ident(r) + " handles " +
             r.Pick(kFields) + " (" + std::to_string(r.Range(1, 90)) + "ms)\n";
    if (!failure.empty()) {
      out +=
          "\n\xe2\x8e\xaf\xe2\x8e\xaf\xe2\x8e\xaf Failed Tests 1 "
          "\xe2\x8e\xaf\xe2\x8e\xaf\xe2\x8e\xaf\n\n" +
          failure;
      out += "\n Test Files  1 failed (" + std::to_string(cases / 8 + 2) +
             ")\n      Tests  1 failed (" + std::to_string(cases + 1) + ")\n";
    } else {
      out += "\n Test Files  " + std::to_string(cases / 8 + 1) + " passed\n      Tests  " +
             std::to_string(cases) + " passed (" + std::to_string(cases) + ")\n";
    }
    out += "   Duration  " + std::to_string(r.Range(2, 40)) + "." +
           std::to_string(r.Range(10, 99)) + "s\n";
  } else {
    out +=
        "============================= test session starts ==============================\n"
        "platform linux -- Python 3.12.3, pytest-8.2.0\nrootdir: " +
        s.cwd + "\ncollected " + std::to_string(cases) + " items\n\n";
    for (int i = 0; i < cases; i += 20)
      out += "tests/" + r.Pick(kNouns) + "/test_" + r.Pick(kNouns) + ".py " +
             std::string(std::min(20, cases - i), '.') + "\n";
    if (!failure.empty()) {
      out +=
          "\n=================================== FAILURES ===================================\n" +
          failure;
      out +=
          "=========================== short test summary info ============================\n1 "
          "failed in " +
          std::to_string(r.Range(2, 30)) + ".41s\n";
    } else {
      out +=
          "\n" + std::to_string(cases) + " passed in " + std::to_string(r.Range(2, 30)) + ".12s\n";
    }
  }
  return out;
}

std::string GrepOutput(Rng& r, const Scenario& s, int lines) {
  std::string out;
  std::vector<std::string> files = s.read_files;
  files.insert(files.end(), s.modify_files.begin(), s.modify_files.end());
  for (int i = 0; i < lines; ++i)
    out += r.Pick(files) + ":" + std::to_string(r.Range(1, 400)) + ":  const " + r.Pick(kFields) +
           " = " + Ident(r) + "(" + r.Pick(kNouns) + ");\n";
  return out;
}

std::string GitLog(Rng& r, int lines) {
  std::string out;
  for (int i = 0; i < lines; ++i) {
    char hash[8];
    for (char& c : hash) c = "0123456789abcdef"[r.Below(16)];
    out += std::string(hash, 7) + " " + r.Pick(kVerbs) + " " + r.Pick(kNouns) + " " +
           r.Pick(kFields) + " handling\n";
  }
  return out;
}

// ---------------------------------------------------------------------------
// Session builder

class Builder {
 public:
  Builder(uint64_t seed, const Scenario& s) : rng_(seed), s_(s) {
    // 2026-03-02T08:00Z plus a seed-dependent day offset.
    now_ms_ = 1772438400000LL + static_cast<int64_t>(seed % 200) * 86400000LL;
    std::string uuid;
    for (int i = 0; i < 32; ++i) uuid += "0123456789abcdef"[rng_.Below(16)];
    uuid = uuid.substr(0, 8) + "-" + uuid.substr(8, 4) + "-7" + uuid.substr(13, 3) + "-8" +
           uuid.substr(17, 3) + "-" + uuid.substr(20, 12);
    lines_.push_back(MakeSessionHeader({uuid, FormatIsoTimestamp(now_ms_), s.cwd, ""}));
  }

  Rng& rng() { return rng_; }
  int64_t tokens() const { return context_tokens_; }
  std::vector<Fact>& facts() { return facts_; }
  const std::string& last_id() const { return last_id_; }

  std::string User(const std::string& text) {
    Advance(30000, 600000);
    std::string m = "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":";
    AppendJsString(m, text);
    m += "}],\"timestamp\":" + std::to_string(now_ms_) + "}";
    return Append(m);
  }

  // Assistant text with an optional tool call; returns the entry id.
  std::string Assistant(const std::string& text, const std::string& tool = "",
                        const std::string& args_json = "") {
    Advance(3000, 60000);
    std::string content = "[";
    if (!text.empty()) {
      content += "{\"type\":\"text\",\"text\":";
      AppendJsString(content, text);
      content += "}";
    }
    if (!tool.empty()) {
      if (!text.empty()) content += ",";
      call_id_ = "toolu_";
      for (int i = 0; i < 24; ++i)
        call_id_ += "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789"[rng_.Below(58)];
      content += "{\"type\":\"toolCall\",\"id\":\"" + call_id_ + "\",\"name\":\"" + tool +
                 "\",\"arguments\":" + args_json + "}";
    }
    content += "]";
    // Usage as a caching provider reports it: the whole context so far is
    // read from or written to the cache, output is this message.
    const int64_t out_tokens = std::max<int64_t>(20, (Utf16Length(content) + 3) / 4);
    const int64_t prompt = kSystemPromptTokens + context_tokens_;
    const int64_t input = rng_.Range(1, 12);
    const int64_t write = std::min<int64_t>(prompt - input, prompt - cached_);
    const int64_t read = prompt - input - write;
    cached_ = prompt;
    const int64_t total = input + out_tokens + read + write;
    // Prices in millionths of a dollar per token (Sonnet-class).
    auto cost = [](int64_t tokens, int64_t micro_per_mtok) {
      return static_cast<double>(tokens * micro_per_mtok) / 1e12;
    };
    const double ci = cost(input, 3000000), co = cost(out_tokens, 15000000),
                 cr = cost(read, 300000), cw = cost(write, 3750000);
    std::string m =
        "{\"role\":\"assistant\",\"content\":" + content +
        ",\"api\":\"anthropic-messages\",\"provider\":\"anthropic\",\"model\":"
        "\"claude-sonnet-4-5\",\"usage\":{\"input\":" +
        std::to_string(input) + ",\"output\":" + std::to_string(out_tokens) +
        ",\"cacheRead\":" + std::to_string(read) + ",\"cacheWrite\":" + std::to_string(write) +
        ",\"totalTokens\":" + std::to_string(total) + ",\"cost\":{\"input\":" + JsNumber(ci) +
        ",\"output\":" + JsNumber(co) + ",\"cacheRead\":" + JsNumber(cr) +
        ",\"cacheWrite\":" + JsNumber(cw) + ",\"total\":" + JsNumber(ci + co + cr + cw) +
        "}},\"stopReason\":\"" + (tool.empty() ? "stop" : "toolUse") +
        "\",\"timestamp\":" + std::to_string(now_ms_) + "}";
    return Append(m);
  }

  std::string ToolResult(const std::string& tool, const std::string& text, bool is_error) {
    Advance(200, 45000);
    std::string m = "{\"role\":\"toolResult\",\"toolCallId\":\"" + call_id_ + "\",\"toolName\":\"" +
                    tool + "\",\"content\":[{\"type\":\"text\",\"text\":";
    AppendJsString(m, text);
    m += "}],\"isError\":" + std::string(is_error ? "true" : "false") +
         ",\"timestamp\":" + std::to_string(now_ms_) + "}";
    return Append(m);
  }

  // pi's bash tool: non-zero exits are errors with the code appended.
  std::string Bash(const std::string& prose, const std::string& command, const std::string& output,
                   int exit_code) {
    std::string args = "{\"command\":";
    AppendJsString(args, command);
    args += "}";
    std::string call = Assistant(prose, "bash", args);
    std::string text = output.empty() ? "(no output)" : output;
    if (exit_code != 0) text += "\n\nCommand exited with code " + std::to_string(exit_code);
    ToolResult("bash", text, exit_code != 0);
    return call;
  }

  std::string Read(const std::string& prose, const std::string& path, const std::string& content) {
    std::string args = "{\"path\":";
    AppendJsString(args, path);
    args += "}";
    std::string call = Assistant(prose, "read", args);
    ToolResult("read", content, false);
    return call;
  }

  std::string Edit(const std::string& prose, const std::string& path, const std::string& old_text,
                   const std::string& new_text) {
    std::string args = "{\"path\":";
    AppendJsString(args, path);
    args += ",\"oldText\":";
    AppendJsString(args, old_text);
    args += ",\"newText\":";
    AppendJsString(args, new_text);
    args += "}";
    std::string call = Assistant(prose, "edit", args);
    ToolResult("edit", "Successfully replaced text in " + path + ".", false);
    return call;
  }

  std::string Write(const std::string& prose, const std::string& path, const std::string& content) {
    std::string args = "{\"path\":";
    AppendJsString(args, path);
    args += ",\"content\":";
    AppendJsString(args, content);
    args += "}";
    std::string call = Assistant(prose, "write", args);
    ToolResult("write",
               "Successfully wrote " + std::to_string(content.size()) + " bytes to " + path, false);
    return call;
  }

  void Plant(FactKind kind, const PhraseSpec& p, const std::string& entry_id, const std::string& id,
             const std::string& superseded_by = "") {
    Fact f;
    f.id = id;
    f.kind = kind;
    f.text = p.text;
    f.variants = p.variants;
    f.qualifiers = p.qualifiers;
    f.superseded_by = superseded_by;
    f.entry_id = entry_id;
    facts_.push_back(std::move(f));
  }

  std::string Jsonl() const {
    std::string out;
    for (const std::string& l : lines_) out += l + "\n";
    return out;
  }

 private:
  static constexpr int64_t kSystemPromptTokens = 4200;

  void Advance(int lo, int hi) { now_ms_ += rng_.Range(lo, hi); }

  std::string NewId() {
    while (true) {
      std::string id;
      for (int i = 0; i < 8; ++i) id += "0123456789abcdef"[rng_.Below(16)];
      if (ids_.insert(id).second) return id;
    }
  }

  std::string Append(const std::string& message_json) {
    std::string id = NewId();
    lines_.push_back(MakeMessageEntry({id, last_id_, FormatIsoTimestamp(now_ms_)}, message_json));
    last_id_ = id;
    context_tokens_ += EstimateMessageTokens(message_json);
    return id;
  }

  Rng rng_;
  const Scenario& s_;
  int64_t now_ms_ = 0;
  int64_t context_tokens_ = 0;
  int64_t cached_ = 0;
  std::string last_id_;
  std::string call_id_;
  std::set<std::string> ids_;
  std::vector<std::string> lines_;
  std::vector<Fact> facts_;
};

std::string CommandOf(const Scenario& s, const std::string& key) {
  for (const auto& [k, c] : s.commands)
    if (k == key) return c;
  return s.commands.front().second;
}

std::string CommandOutput(Rng& r, const Scenario& s, const std::string& key,
                          const std::string& failure) {
  const std::string cmd = CommandOf(s, key);
  if (key == "test" || key == "test2") return TestLog(r, s, cmd, r.Range(20, 160), failure);
  if (!failure.empty()) return failure;
  // Wrapped in package scripts that report the outcome, as most repos do.
  if (key == "typecheck")
    return s.lang == "ts" ? "\n> " + s.name + "@2.14.0 typecheck\n> tsc --noEmit\n\nDone in " +
                                std::to_string(r.Range(3, 19)) + ".4s\n"
                          : "Success: no issues found in 64 source files\n";
  if (key == "lint")
    return s.lang == "ts" ? "\n> eslint src --max-warnings 0\n\nNo problems found. Done in " +
                                std::to_string(r.Range(2, 9)) + ".1s\n"
                          : "All checks passed!\n";
  if (s.lang == "ts")
    return "\n> " + s.name +
           "@2.14.0 build\n> tsup src/index.ts --format esm\n\nCLI Building entry: "
           "src/index.ts\nESM dist/index.js 148.20 KB\nESM \xe2\x9a\xa1\xef\xb8\x8f Build success "
           "in 812ms\n";
  return "INFO  [alembic.runtime.migration] Context impl PostgresqlImpl.\nINFO  "
         "[alembic.runtime.migration] Will assume transactional DDL.\nINFO  "
         "[alembic.runtime.migration] Running upgrade 0042_stock_site -> 0043_import_jobs, add "
         "import jobs\nDone: database is at head.\n";
}

// Agents do not always announce decisions the same way: vary the lead-in of
// a "Decision: ..." sentence (the fact text and its reason stay verbatim).
std::string Reword(Rng& r, const std::string& sentence) {
  static const std::string kPrefix = "Decision: ";
  if (sentence.rfind(kPrefix, 0) != 0) return sentence;
  static const std::vector<std::string> kLeadIns = {
      "Decision: ", "I'll go with this: ", "Plan: ", "", "Design choice: ", "Settled: "};
  std::string rest = sentence.substr(kPrefix.size());
  const std::string& lead = r.Pick(kLeadIns);
  if (lead.empty() && !rest.empty() && rest[0] >= 'a' && rest[0] <= 'z')
    rest[0] = static_cast<char>(rest[0] - 'a' + 'A');
  return lead + rest;
}

}  // namespace

GeneratedSession GenerateEvalSession(const GeneratorOptions& options) {
  const uint64_t seed = options.seed;
  const Scenario scenario = seed % 2 == 1 ? TypeScriptScenario() : PythonScenario();
  const Scenario& s = scenario;
  Builder b(seed, s);
  Rng& r = b.rng();
  const int64_t target =
      options.target_tokens * (75 + static_cast<int64_t>(r.Below(51))) / 100;  // +-25%

  // What this session plants, chosen by seed.
  std::vector<size_t> cons(s.constraints.size());
  for (size_t i = 0; i < cons.size(); ++i) cons[i] = i;
  r.Shuffle(cons);
  cons.resize(static_cast<size_t>(r.Range(3, 4)));
  std::vector<size_t> decs(s.decisions.size());
  for (size_t i = 0; i < decs.size(); ++i) decs[i] = i;
  r.Shuffle(decs);
  decs.resize(std::min<size_t>(decs.size(), static_cast<size_t>(r.Range(2, 3))));
  std::vector<size_t> errs(s.errors.size());
  for (size_t i = 0; i < errs.size(); ++i) errs[i] = i;
  r.Shuffle(errs);
  errs.resize(static_cast<size_t>(r.Range(2, 3)));
  // The last error stays open: a later passing run of the same command would
  // contradict it.
  const size_t unfixed = errs.size() - 1;
  std::vector<std::string> modify = s.modify_files;
  r.Shuffle(modify);
  modify.resize(static_cast<size_t>(r.Range(5, 7)));
  std::vector<std::string> reads = s.read_files;
  r.Shuffle(reads);
  reads.resize(static_cast<size_t>(r.Range(3, 5)));
  // Fix files of the chosen errors are modified too.
  for (size_t e : errs)
    if (std::find(modify.begin(), modify.end(), s.errors[e].fix_file) == modify.end())
      modify.push_back(s.errors[e].fix_file);
  const PhraseSpec& next = r.Pick(s.next_steps);
  const bool revise_constraint = r.Chance(70);

  std::string open_key;                  // command key of the error left open
  std::map<std::string, int> last_exit;  // significant command -> final exit code
  std::map<std::string, std::string> command_entry;
  int fact_no = 0;
  auto fid = [&](const char* prefix) { return std::string(prefix) + std::to_string(++fact_no); };
  auto run_cmd = [&](const std::string& key, const std::string& prose, const std::string& failure,
                     int code) {
    std::string cmd = CommandOf(s, key);
    std::string id =
        b.Bash(prose, cmd, CommandOutput(r, s, key, failure), failure.empty() ? 0 : code);
    last_exit[cmd] = failure.empty() ? 0 : code;
    command_entry[cmd] = id;
    return id;
  };
  auto noise = [&](int rounds) {
    for (int i = 0; i < rounds; ++i) {
      switch (r.Below(4)) {
        case 0:
          b.Bash("Let me search for related call sites.",
                 "grep -rn \"" + r.Pick(kFields) + "\" " + (s.lang == "ts" ? "src" : "app"),
                 GrepOutput(r, s, r.Range(20, 140)), 0);
          break;
        case 1:
          b.Bash("Checking recent history for context.", "git log --oneline -n 40", GitLog(r, 40),
                 0);
          break;
        case 2: {
          std::string p = r.Pick(reads);
          b.Read("Re-reading " + p + " to double-check the call shape.", p,
                 FileContent(r, s.lang, p, r.Range(8, 30)));
          break;
        }
        default:
          b.Bash("Quick look at the working tree.", "git status --short && git diff --stat",
                 " M " + r.Pick(modify) + "\n M " + r.Pick(modify) + "\n 2 files changed, " +
                     std::to_string(r.Range(10, 200)) + " insertions(+), " +
                     std::to_string(r.Range(1, 60)) + " deletions(-)\n",
                 0);
      }
    }
  };

  // --- Opening: goal and the first constraints (one of them later revised).
  const Revision& rev_dec = s.revisions[0];
  const Revision& rev_con = s.revisions[1];
  // Constraints as a bullet list or as plain prose, by seed.
  const bool bullets = r.Chance(50);
  const std::string sep = bullets ? "\n- " : " ";
  std::string opening = s.goal.sentence + (bullets ? "\n\nConstraints:\n- " : "\n\n") +
                        s.constraints[cons[0]].sentence + sep + s.constraints[cons[1]].sentence;
  if (revise_constraint) opening += sep + rev_con.stale.sentence;
  const std::string open_id = b.User(opening);
  b.Plant(FactKind::kGoal, s.goal, open_id, fid("goal-"));
  b.Plant(FactKind::kConstraint, s.constraints[cons[0]], open_id, fid("constraint-"));
  b.Plant(FactKind::kConstraint, s.constraints[cons[1]], open_id, fid("constraint-"));
  std::string stale_con_id;
  if (revise_constraint) {
    stale_con_id = fid("constraint-");
    b.Plant(FactKind::kConstraint, rev_con.stale, open_id, stale_con_id, "pending");
  }

  // --- Exploration: reads (files only read are facts) and noise.
  b.Bash("I'll start with the project layout.",
         "ls -R " + std::string(s.lang == "ts" ? "src" : "app") + " | head -80",
         GrepOutput(r, s, 30), 0);
  for (const std::string& p : reads) {
    std::string id = b.Read("Reading " + p + ".", p, FileContent(r, s.lang, p, r.Range(10, 40)));
    b.Plant(FactKind::kFileRead, {"", p, {}, {}}, id, fid("read-"));
  }
  noise(r.Range(2, 4));

  // --- The first decision that will be revised. It keeps its "Decision:"
  // lead-in (the others vary) so that what is tested is how a summary treats
  // a revised decision, not whether it noticed the decision at all.
  const std::string stale_dec_entry =
      b.Assistant(rev_dec.stale.sentence + " I'll wire that in first.");
  const std::string stale_dec_id = fid("decision-");
  b.Plant(FactKind::kDecision, rev_dec.stale, stale_dec_entry, stale_dec_id, "pending");

  // --- Topics: one per modified file; decisions, errors and constraints spread over them.
  const size_t tail_files = 1;  // the last file is edited in the kept tail
  const size_t middle = modify.size() - tail_files;
  const int64_t middle_budget = target * 82 / 100;
  size_t dec_i = 0, err_i = 0;
  bool revised = false, extra_constraint = false, con_revised = !revise_constraint;
  for (size_t t = 0; t < middle; ++t) {
    const std::string& path = modify[t];
    if (dec_i < decs.size() && (t % 2 == 0 || t + 2 >= middle)) {
      const PhraseSpec& d = s.decisions[decs[dec_i++]];
      b.Plant(FactKind::kDecision, d, b.Assistant(Reword(r, d.sentence)), fid("decision-"));
    }
    b.Read("Let me look at " + path + " before changing it.", path,
           FileContent(r, s.lang, path, r.Range(10, 35)));
    std::string before = FileContent(r, s.lang, path, 1), after = FileContent(r, s.lang, path, 2);
    std::string edit_id = t % 3 == 2
                              ? b.Write("Writing the new version of " + path + ".", path, after)
                              : b.Edit("Updating " + path + ".", path, before, after);
    b.Plant(FactKind::kFileModified, {"", path, {}, {}}, edit_id, fid("modified-"));
    // An error shows up in this topic?
    if (err_i < errs.size() && (t % 2 == 1 || t + 2 >= middle)) {
      const ErrorSpec& e = s.errors[errs[err_i]];
      const bool fixed = err_i != unfixed;
      std::string id = run_cmd(e.command_key, "Running the checks.", e.output, 1);
      Fact f;
      f.id = fid("error-");
      f.kind = FactKind::kError;
      f.text = e.text;
      f.variants = e.variants;
      f.fixed = fixed;
      f.entry_id = id;
      b.facts().push_back(f);
      b.Assistant(e.explanation);
      noise(r.Range(1, 3));
      if (fixed) {
        b.Edit("Fixing it in " + e.fix_file + ".", e.fix_file,
               FileContent(r, s.lang, e.fix_file, 1), FileContent(r, s.lang, e.fix_file, 1));
        run_cmd(e.command_key, "Re-running.", "", 0);
        b.Assistant("That fixed it.");
      } else {
        open_key = e.command_key;
        b.Assistant(
            "I can't fix this one without more information; leaving it open and moving on.");
      }
      ++err_i;
    } else {
      // Never re-run the command whose failure was left open: its last outcome stays the failure.
      std::vector<std::string> keys;
      for (const char* k : {"test", "test2", "lint", "typecheck"})
        if (k != open_key) keys.push_back(k);
      run_cmd(r.Pick(keys), "Checking.", "", 0);
    }
    // User interjections at fixed fractions of the middle.
    if (!extra_constraint && t + 1 >= middle / 3) {
      extra_constraint = true;
      const PhraseSpec& c = s.constraints[cons[2]];
      std::string id = b.User("One more thing: " + c.sentence);
      b.Plant(FactKind::kConstraint, c, id, fid("constraint-"));
      if (cons.size() > 3) {
        const PhraseSpec& c4 = s.constraints[cons[3]];
        std::string id4 = b.User("And: " + c4.sentence);
        b.Plant(FactKind::kConstraint, c4, id4, fid("constraint-"));
      }
    }
    if (!revised && t + 1 >= middle / 2) {
      revised = true;
      std::string id = b.User(rev_dec.current.sentence);
      std::string cur = fid("decision-");
      b.Plant(FactKind::kDecision, rev_dec.current, id, cur);
      for (Fact& f : b.facts())
        if (f.id == stale_dec_id) f.superseded_by = cur;
      b.Assistant("Understood, switching to that now.");
    }
    if (!con_revised && t + 1 >= middle * 2 / 3) {
      con_revised = true;
      std::string id = b.User(rev_con.current.sentence);
      std::string cur = fid("constraint-");
      b.Plant(FactKind::kConstraint, rev_con.current, id, cur);
      for (Fact& f : b.facts())
        if (f.id == stale_con_id) f.superseded_by = cur;
      b.Assistant("Noted.");
    }
    // Tool noise up to this topic's share of the budget.
    const int64_t goal_tokens =
        middle_budget * static_cast<int64_t>(t + 1) / static_cast<int64_t>(middle);
    for (int guard = 0; b.tokens() < goal_tokens && guard < 200; ++guard) noise(1);
  }
  // Remaining decisions that found no topic.
  while (dec_i < decs.size()) {
    const PhraseSpec& d = s.decisions[decs[dec_i++]];
    b.Plant(FactKind::kDecision, d, b.Assistant(Reword(r, d.sentence)), fid("decision-"));
  }

  // --- Tail: the next step, the last file and a final check.
  std::string ns_id;
  if (r.Chance(50)) {
    ns_id = b.User("Good progress. Finish " + modify.back() + ", then stop for today. " +
                   next.sentence);
  } else {
    b.User("Finish " + modify.back() + " and then wrap up with where we are.");
    ns_id = "";
  }
  const std::string& last = modify.back();
  b.Read("Reading " + last + ".", last, FileContent(r, s.lang, last, r.Range(6, 14)));
  b.Plant(FactKind::kFileModified, {"", last, {}, {}},
          b.Edit("Updating " + last + ".", last, FileContent(r, s.lang, last, 1),
                 FileContent(r, s.lang, last, 2)),
          fid("modified-"));
  run_cmd("build", "Final build check.", "", 0);
  std::string wrap = "Done for today; the open items are noted above.";
  std::string final_id = b.Assistant(wrap + " " + next.sentence);
  b.Plant(FactKind::kNextStep, next, ns_id.empty() ? final_id : ns_id, fid("next-"));

  for (Fact& f : b.facts())
    if (f.superseded_by == "pending") f.superseded_by.clear();
  // Commands: one fact per significant command, with its final outcome.
  for (const auto& [key, cmd] : s.commands) {
    auto it = last_exit.find(cmd);
    if (it == last_exit.end()) continue;
    Fact f;
    f.id = fid("command-");
    f.kind = FactKind::kCommand;
    f.text = cmd;
    f.exit_code = it->second;
    f.qualifiers = it->second == 0 ? kSuccessWords : FailureWords(it->second);
    f.entry_id = command_entry[cmd];
    b.facts().push_back(std::move(f));
  }

  GeneratedSession out;
  char name[32];
  std::snprintf(name, sizeof(name), "eval-%04llu", static_cast<unsigned long long>(seed));
  out.name = name;
  out.jsonl = b.Jsonl();
  out.facts.session = out.name + ".jsonl";
  out.facts.source = "generated";
  out.facts.seed = seed;
  out.facts.facts = b.facts();
  return out;
}

Result<std::vector<std::string>> WriteEvalCorpus(const std::string& dir, int count, uint64_t seed,
                                                 int64_t target_tokens) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError(dir + ": " + ec.message());
  std::vector<std::string> paths;
  for (int i = 0; i < count; ++i) {
    GeneratedSession g = GenerateEvalSession({seed + static_cast<uint64_t>(i), target_tokens});
    const std::string base = dir + "/" + g.name;
    RewriteOptions no_backup{false, ".bak"};
    RETURN_IF_ERROR(WriteFileAtomic(base + ".jsonl", g.jsonl, no_backup));
    RETURN_IF_ERROR(WriteFileAtomic(base + ".facts.json", FactFileToJson(g.facts), no_backup));
    paths.push_back(base + ".jsonl");
  }
  return paths;
}

}  // namespace compactor
