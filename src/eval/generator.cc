// Deterministic generator of evaluation sessions (docs/quality.md,
// "Generated corpus"): multi-hour coding sessions in pi v3 format with probe
// facts planted at known entries. Everything derives from the seed: no clock,
// no random device, no locale; integer arithmetic only, so the bytes are the
// same on every platform.
#include <algorithm>
#include <cctype>
#include <cstdio>
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
    return lo + static_cast<int>(Below(static_cast<size_t>(hi - lo) + 1));
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

struct AgentWording {
  std::string what;
  std::string why;  // decisions: the reason, which an agent sometimes leaves out
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
  // How the simulated agent words a fact in its notes file, keyed by the
  // fact's canonical text (errors: the cause it writes down). Agents write
  // terse notes in their own words, not the sentences of the conversation.
  std::map<std::string, AgentWording> wording;
};

const std::vector<std::vector<std::string>> kSuccessWords = {
    {"exit 0", "exit code 0", "exited with code 0", "succeeded", "passed", "passes", "passing",
     "success", "successful", "successfully", "ok", "green", "done", "clean", "no errors"}};

std::vector<std::vector<std::string>> FailureWords(int code) {
  std::string c = std::to_string(code);
  return {{"exit " + c, "exit code " + c, "exited with code " + c, "failed", "fails", "failing",
           "failure", "error", "errors", "broken"}};
}

// The scenarios as data: odd seeds write the TypeScript one, even seeds the
// Python one (GenerateEvalSession).
const Scenario kScenarios[] = {
    {
        .name = "payments-api",
        .cwd = "/home/dev/work/payments-api",
        .lang = "ts",
        .goal = {"I want to add per-client rate limiting to the public payments API: every API key "
                 "gets "
                 "its own budget of requests per minute, and clients over budget get a 429 with a "
                 "Retry-After header.",
                 "add per-client rate limiting to the public payments API",
                 {"per-client rate limiting", "rate limiting to the public payments api",
                  "rate limiting for the payments api"},
                 {}},
        .constraints =
            {
                {"Use pnpm, not npm, for every command in this repo.",
                 "use pnpm, not npm",
                 {"pnpm, not npm", "pnpm instead of npm", "pnpm not npm"},
                 {}},
                {"Never modify anything under src/generated/ - that code is produced by the "
                 "OpenAPI "
                 "generator.",
                 "never modify anything under src/generated/",
                 {"do not modify src/generated/", "don't modify src/generated/",
                  "never touch src/generated/", "src/generated/ must not be modified",
                  "never edit src/generated/"},
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
            },
        .decisions =
            {
                {"Decision: I'll use a sliding-window counter rather than fixed windows, because "
                 "fixed "
                 "windows let a client burst to twice the limit at the window boundary.",
                 "sliding-window counter",
                 {"sliding window counter", "sliding-window", "sliding window"},
                 {{"burst", "bursts", "boundary"}}},
                {"Decision: the limiter runs as Fastify onRequest middleware, since that hook "
                 "fires before "
                 "body parsing and rejected requests cost almost nothing.",
                 "onRequest middleware",
                 {"onrequest hook"},
                 {{"before body parsing", "body parsing", "cost almost nothing", "cheap"}}},
                {"Decision: limits are keyed by the API key's id, not the client IP, because "
                 "several "
                 "merchants share egress IPs behind the same proxy.",
                 "keyed by the API key's id",
                 {"keyed by api key id", "keyed by the api key id", "key by api key id"},
                 {{"egress", "share", "proxy", "shared ip"}}},
                {"Decision: Retry-After is computed from the oldest request in the window, so "
                 "clients get "
                 "the exact wait instead of a fixed 60 seconds.",
                 "Retry-After is computed from the oldest request in the window",
                 {"retry-after from the oldest request",
                  "retry-after computed from the oldest request"},
                 {{"exact wait", "fixed 60"}}},
            },
        .revisions =
            {
                {{"Decision: store the counters in Redis so that all API replicas share one budget "
                  "per key.",
                  "store the counters in Redis",
                  {"counters in redis"},
                  {}},
                 {"Change of plan: the edge workers cannot reach Redis, so use an in-memory LRU "
                  "store per "
                  "worker and divide each budget by the worker count.",
                  "in-memory LRU store",
                  {"in-memory lru", "in memory lru store"},
                  {{"edge workers", "edge", "cannot reach redis", "can't reach redis"}}},
                 FactKind::kDecision},
                {{"It must run on Node 18, the payments hosts are still on it.",
                  "must run on Node 18",
                  {"target node 18", "runs on node 18"},
                  {}},
                 {"Update: the payments hosts moved to Node 20 last week, so target Node 20 from "
                  "now on; "
                  "Node "
                  "18 support is dropped.",
                  "target Node 20",
                  {"targets node 20", "must run on node 20", "node 20 from now on"},
                  {}},
                 FactKind::kConstraint},
            },
        .errors =
            {
                {"test",
                 "AssertionError: expected 429 to be 200 // Object.is equality\n"
                 " ❯ test/ratelimit.test.ts:48:32\n     46|     const res = await "
                 "app.inject(req);\n"
                 "     47|     // second key must not share the first key's budget\n"
                 "     48|     expect(res.statusCode).toBe(200);\n",
                 "expected 429 to be 200",
                 {"expected 429 to be 200"},
                 "src/ratelimit/store.ts",
                 "The second key is limited because the store keys by route only; the key id is "
                 "missing "
                 "from the bucket key."},
                {"test",
                 "TypeError: Cannot read properties of undefined (reading 'windowMs')\n"
                 "    at resolveLimit (src/ratelimit/config.ts:31:24)\n"
                 "    at onRequest (src/ratelimit/middleware.ts:18:17)\n"
                 "    at hookRunner (node_modules/fastify/lib/hooks.js:249:5)\n",
                 "Cannot read properties of undefined (reading 'windowMs')",
                 {"reading windowms", "(reading 'windowMs')"},
                 "src/ratelimit/config.ts",
                 "Routes without an explicit plan fall through to an undefined plan; the config "
                 "needs a "
                 "default plan."},
                {"typecheck",
                 "src/ratelimit/middleware.ts(42,31): error TS2345: Argument of type 'string' is "
                 "not "
                 "assignable to parameter of type 'Duration'.\n",
                 "TS2345: Argument of type 'string' is not assignable to parameter of type "
                 "'Duration'",
                 {"ts2345"},
                 "src/ratelimit/middleware.ts",
                 "The header value is parsed as a string; it has to go through toDuration() "
                 "first."},
                {"test",
                 "Error: Timed out in waitFor after 5000ms: Retry-After header missing\n"
                 "    at test/retry-after.test.ts:77:11\n",
                 "Retry-After header missing",
                 {"retry-after header missing", "timed out in waitfor after 5000ms"},
                 "src/ratelimit/headers.ts",
                 "The 429 path returns before the header hook runs, so the header never gets set."},
            },
        .modify_files = {"src/ratelimit/store.ts", "src/ratelimit/config.ts",
                         "src/ratelimit/middleware.ts", "src/ratelimit/headers.ts", "src/server.ts",
                         "test/ratelimit.test.ts", "test/retry-after.test.ts",
                         "docs/rate-limits.md"},
        .read_files = {"src/routes/charges.ts", "src/routes/refunds.ts", "src/auth/api-key.ts",
                       "src/plugins/metrics.ts", "package.json", "src/config/env.ts",
                       "src/routes/webhooks.ts"},
        .commands = {{"test", "pnpm vitest run test/ratelimit.test.ts"},
                     {"test2", "pnpm vitest run test/retry-after.test.ts"},
                     {"typecheck", "pnpm typecheck"},
                     {"lint", "pnpm lint"},
                     {"build", "pnpm build"}},
        .next_steps =
            {
                {"Next step: add an integration test that drives the checkout route past its "
                 "budget.",
                 "add an integration test that drives the checkout route past its budget",
                 {"integration test for the checkout route",
                  "integration test that drives the checkout route"},
                 {}},
                {"Next step: expose the limiter counters on the /metrics endpoint for the "
                 "dashboard.",
                 "expose the limiter counters on the /metrics endpoint",
                 {"limiter counters on /metrics", "expose the limiter counters"},
                 {}},
            },
        .wording =
            {
                {"add per-client rate limiting to the public payments API",
                 {"Per-client rate limiting for the public payments API: each API key gets its own "
                  "requests/minute budget, 429 + Retry-After when over",
                  ""}},
                {"use pnpm, not npm", {"pnpm, not npm, for every command", ""}},
                {"never modify anything under src/generated/",
                 {"Never touch src/generated/ (OpenAPI generator output)", ""}},
                {"prefer zod schemas over hand-written validation",
                 {"Request parsing: zod schemas over hand-written validation", ""}},
                {"don't add new runtime dependencies without asking",
                 {"No new runtime dependencies without asking the user", ""}},
                {"never log the raw API key",
                 {"Never log the raw API key, only its last 4 chars", ""}},
                {"sliding-window counter",
                 {"Sliding-window counter, not fixed windows",
                  "fixed windows let a client burst to 2x at the window boundary"}},
                {"onRequest middleware",
                 {"Limiter runs as Fastify onRequest middleware",
                  "fires before body parsing, so rejected requests are cheap"}},
                {"keyed by the API key's id",
                 {"Limits keyed by API key id, not client IP",
                  "merchants share egress IPs behind a proxy"}},
                {"Retry-After is computed from the oldest request in the window",
                 {"Retry-After from the oldest request in the window",
                  "clients get the exact wait, not a fixed 60s"}},
                {"store the counters in Redis",
                 {"Counters in Redis", "all replicas share one budget per key"}},
                {"in-memory LRU store",
                 {"Counters in an in-memory LRU store per worker, budget divided by the worker "
                  "count",
                  "edge workers can't reach Redis"}},
                {"must run on Node 18", {"Must run on Node 18 (payments hosts)", ""}},
                {"target Node 20", {"Target Node 20; Node 18 support dropped (hosts moved)", ""}},
                {"add an integration test that drives the checkout route past its budget",
                 {"Integration test that drives the checkout route past its budget", ""}},
                {"expose the limiter counters on the /metrics endpoint",
                 {"Expose the limiter counters on /metrics for the dashboard", ""}},
                {"expected 429 to be 200",
                 {"the store buckets by route only, the key id is missing from the bucket key",
                  ""}},
                {"Cannot read properties of undefined (reading 'windowMs')",
                 {"routes without a plan get an undefined plan in resolveLimit; config needs a "
                  "default",
                  ""}},
                {"TS2345: Argument of type 'string' is not assignable to parameter of type "
                 "'Duration'",
                 {"the header value is a string and has to go through toDuration() first", ""}},
                {"Retry-After header missing",
                 {"the 429 path returns before the header hook runs, so the header is never set",
                  ""}},
            },

    },
    {
        .name = "inventory-service",
        .cwd = "/srv/src/inventory-service",
        .lang = "py",
        .goal =
            {"Goal for today: add a bulk CSV import endpoint to the inventory service so warehouse "
             "staff can upload stock counts for a whole site at once.",
             "add a bulk CSV import endpoint to the inventory service",
             {"bulk csv import endpoint", "bulk import endpoint for csv"},
             {}},
        .constraints =
            {
                {"Use uv, not pip, to install or run anything.",
                 "use uv, not pip",
                 {"uv, not pip", "uv instead of pip", "uv not pip"},
                 {}},
                {"Never edit an Alembic migration that is already merged; add a new revision "
                 "instead.",
                 "never edit an Alembic migration that is already merged",
                 {"do not edit merged alembic migrations", "never edit merged migrations",
                  "don't edit merged migrations", "never edit an alembic migration"},
                 {}},
                {"Prefer pydantic v2 models over dataclasses for anything that crosses the API "
                 "boundary.",
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
            },
        .decisions =
            {
                {"Decision: rows are validated all-or-nothing per file, because a half-applied "
                 "stock count "
                 "leaves a site in an inconsistent state.",
                 "all-or-nothing per file",
                 {"all or nothing per file", "all-or-nothing"},
                 {{"half-applied", "inconsistent"}}},
                {"Decision: the import runs as a background job with a status URL, because large "
                 "sites "
                 "upload 200k rows and the request would time out.",
                 "background job with a status URL",
                 {"background job with a status url", "background job"},
                 {{"time out", "timeout", "200k rows"}}},
                {"Decision: SKUs are matched case-insensitively after trimming, since the "
                 "warehouse "
                 "scanners emit trailing spaces.",
                 "SKUs are matched case-insensitively",
                 {"case-insensitive sku matching", "skus matched case-insensitively"},
                 {{"trailing spaces", "scanners"}}},
            },
        .revisions =
            {
                {{"Decision: parse the uploads with pandas read_csv, it handles the quoting edge "
                  "cases.",
                  "parse the uploads with pandas",
                  {"pandas read_csv", "parse with pandas"},
                  {}},
                 {"Change of plan: pandas adds 60 MB to the container image, so use the stdlib csv "
                  "module "
                  "instead of pandas.",
                  "use the stdlib csv module",
                  {"stdlib csv module", "standard library csv module"},
                  {{"60 mb", "image"}}},
                 FactKind::kDecision},
                {{"Insert rows in batches of 500.",
                  "batches of 500",
                  {"batch size 500", "batch size of 500"},
                  {}},
                 {"Correction: the DBA says batches of 500 lock the stock table too long; use "
                  "batches of 100 "
                  "instead.",
                  "batches of 100",
                  {"batch size 100", "batch size of 100"},
                  {}},
                 FactKind::kConstraint},
            },
        .errors =
            {
                {"test",
                 "FAILED tests/api/test_import.py::test_rejects_unknown_sku - assert 200 == 422\n"
                 "E       assert 200 == 422\n"
                 "E        +  where 200 = <Response [200]>.status_code\n",
                 "assert 200 == 422",
                 {"test_rejects_unknown_sku"},
                 "app/importer/validate.py",
                 "Unknown SKUs are skipped silently instead of failing validation."},
                {"test",
                 "sqlalchemy.exc.IntegrityError: (psycopg.errors.UniqueViolation) duplicate key "
                 "value "
                 "violates unique constraint \"stock_site_sku_key\"\n"
                 "DETAIL:  Key (site_id, sku)=(12, AB-1001) already exists.\n",
                 "duplicate key value violates unique constraint \"stock_site_sku_key\"",
                 {"stock_site_sku_key", "uniqueviolation"},
                 "app/importer/writer.py",
                 "The writer inserts instead of upserting; existing (site, sku) rows need ON "
                 "CONFLICT DO "
                 "UPDATE."},
                {"typecheck",
                 "app/importer/jobs.py:58: error: Argument 1 to \"enqueue\" has incompatible type "
                 "\"ImportJob | None\"; expected \"ImportJob\"  [arg-type]\n"
                 "Found 1 error in 1 file (checked 64 source files)\n",
                 "Argument 1 to \"enqueue\" has incompatible type",
                 {"incompatible type \"importjob | none\"", "[arg-type]"},
                 "app/importer/jobs.py",
                 "create_job can return None when the site is archived; the route must handle "
                 "that."},
                {"test",
                 "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid "
                 "start "
                 "byte\n  File \"app/importer/parse.py\", line 22, in read_rows\n",
                 "'utf-8' codec can't decode byte 0xff",
                 {"unicodedecodeerror", "can't decode byte 0xff"},
                 "app/importer/parse.py",
                 "Excel exports start with a UTF-16 BOM; the parser must sniff the encoding."},
            },
        .modify_files = {"app/importer/parse.py", "app/importer/validate.py",
                         "app/importer/writer.py", "app/importer/jobs.py", "app/api/imports.py",
                         "tests/api/test_import.py", "tests/importer/test_parse.py",
                         "docs/bulk-import.md"},
        .read_files = {"app/models/stock.py", "app/api/stock.py", "app/db/session.py",
                       "pyproject.toml", "app/settings.py", "alembic/versions/0042_stock_site.py",
                       "app/api/deps.py"},
        .commands = {{"test", "uv run pytest tests/api/test_import.py -q"},
                     {"test2", "uv run pytest tests/importer -q"},
                     {"typecheck", "uv run mypy app"},
                     {"lint", "uv run ruff check app tests"},
                     {"build", "uv run alembic upgrade head"}},
        .next_steps =
            {
                {"Next step: add a progress counter to the import status endpoint.",
                 "add a progress counter to the import status endpoint",
                 {"progress counter to the import status endpoint",
                  "progress counter on the status endpoint"},
                 {}},
                {"Next step: load-test the importer with the 200k-row file from the Leeds site.",
                 "load-test the importer with the 200k-row file",
                 {"load-test the importer", "load test the importer with the 200k-row file"},
                 {}},
            },
        .wording =
            {
                {"add a bulk CSV import endpoint to the inventory service",
                 {"Bulk CSV import endpoint for the inventory service: warehouse staff upload a "
                  "whole "
                  "site's stock counts at once",
                  ""}},
                {"use uv, not pip", {"uv, not pip, to install or run anything", ""}},
                {"never edit an Alembic migration that is already merged",
                 {"Never edit an Alembic migration once merged; add a new revision", ""}},
                {"prefer pydantic v2 models over dataclasses",
                 {"Pydantic v2 models over dataclasses for anything crossing the API boundary",
                  ""}},
                {"every new endpoint must come with tests",
                 {"Every new endpoint needs tests in tests/api/", ""}},
                {"never return stack traces to API clients",
                 {"No stack traces to API clients", ""}},
                {"all-or-nothing per file",
                 {"Row validation is all-or-nothing per file",
                  "a half-applied count leaves the site inconsistent"}},
                {"background job with a status URL",
                 {"Import runs as a background job with a status URL",
                  "200k-row uploads would time out the request"}},
                {"SKUs are matched case-insensitively",
                 {"SKUs matched case-insensitively after trimming",
                  "scanners emit trailing spaces"}},
                {"parse the uploads with pandas",
                 {"Parse uploads with pandas read_csv", "handles the quoting edge cases"}},
                {"use the stdlib csv module",
                 {"Parse with the stdlib csv module", "pandas adds 60 MB to the container image"}},
                {"batches of 500", {"Insert rows in batches of 500", ""}},
                {"batches of 100",
                 {"Insert rows in batches of 100 (DBA: bigger batches lock the stock table too "
                  "long)",
                  ""}},
                {"add a progress counter to the import status endpoint",
                 {"Progress counter on the status endpoint of import jobs", ""}},
                {"load-test the importer with the 200k-row file",
                 {"Load-test the importer with the 200k-row Leeds file", ""}},
                {"assert 200 == 422",
                 {"unknown SKUs are skipped silently instead of failing validation", ""}},
                {"duplicate key value violates unique constraint \"stock_site_sku_key\"",
                 {"the writer inserts instead of upserting; needs ON CONFLICT DO UPDATE on "
                  "(site_id, sku)",
                  ""}},
                {"Argument 1 to \"enqueue\" has incompatible type",
                 {"create_job returns None for archived sites; the route has to handle it", ""}},
                {"'utf-8' codec can't decode byte 0xff",
                 {"Excel exports start with a UTF-16 BOM; the parser must sniff the encoding", ""}},
            },
    },
};

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
  // Size of the conversation without the notes calls: the budget that
  // decides how much noise to add is the same with and without them.
  int64_t tokens() const { return context_tokens_ - notes_tokens_; }
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
        call_id_ += "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789"[R().Below(58)];
      content += "{\"type\":\"toolCall\",\"id\":\"" + call_id_ + "\",\"name\":\"" + tool +
                 "\",\"arguments\":" + args_json + "}";
    }
    content += "]";
    // Usage as a caching provider reports it: the whole context so far is
    // read from or written to the cache, output is this message.
    const int64_t out_tokens = std::max<int64_t>(20, (Utf16Length(content) + 3) / 4);
    const int64_t prompt = kSystemPromptTokens + context_tokens_;
    const int64_t input = R().Range(1, 12);
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

  // The agent's notes tool (Nominal Code's WriteNotes, named as pi names
  // tools): the arguments carry the whole file, which the call overwrites.
  std::string WriteNotes(Rng& side, const std::string& prose, const std::string& content) {
    std::string args = "{\"content\":";
    AppendJsString(args, content);
    args += "}";
    side_ = &side;
    const int64_t before = context_tokens_;
    std::string call = Assistant(prose, "write_notes", args);
    ToolResult("write_notes", "Notes saved (" + std::to_string(content.size()) + " bytes).", false);
    notes_tokens_ += context_tokens_ - before;
    side_ = nullptr;
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

  // The notes calls draw from the notes' own stream, so adding them leaves
  // every other entry's random choices as they were.
  Rng& R() { return side_ ? *side_ : rng_; }
  void Advance(int lo, int hi) { now_ms_ += R().Range(lo, hi); }

  std::string NewId() {
    while (true) {
      std::string id;
      for (int i = 0; i < 8; ++i) id += "0123456789abcdef"[R().Below(16)];
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
  int64_t notes_tokens_ = 0;
  Rng* side_ = nullptr;
  int64_t cached_ = 0;
  std::string last_id_;
  std::string call_id_;
  std::set<std::string> ids_;
  std::vector<std::string> lines_;
  std::vector<Fact> facts_;
};

// The simulated agent's notes file (docs/quality.md, "Agent notes"). The
// agent was told to keep notes of the goal, constraints, decisions, files
// changed, checks, errors and the next step; it records what it does and
// hears as it goes, in its own words (Scenario::wording), and saves the file
// through write_notes only now and then (Save). Its imperfections come from
// their own stream of random numbers, so a policy change does not reshuffle
// the conversation around it: some files it only read and some commands are
// never noted, later constraints are sometimes missed, decision reasons are
// sometimes left out, an error is sometimes written down by its cause alone.
class AgentNotes {
 public:
  // Seeded through one splitmix output: Rng(seed + 1)'s stream is Rng(seed)'s
  // shifted by one, which would make the notes of neighbouring seeds alike.
  // `enabled` false: an agent without a notes tool; nothing is ever saved.
  AgentNotes(uint64_t seed, const Scenario& s, bool enabled)
      : rng_(Rng(seed ^ 0x6E6F7465735F6E6FULL).Next()), s_(s), enabled_(enabled) {}

  Rng& rng() { return rng_; }
  bool dirty() const { return dirty_; }
  bool empty() const { return saved_.empty(); }
  const std::string& saved() const { return saved_; }

  void Goal(const PhraseSpec& goal) { Set(goal_, Words(goal.text).what); }
  // `later`: told mid-session, when the agent is busy and misses one now and then.
  void Constraint(const PhraseSpec& c, bool later) {
    if (later && rng_.Chance(kMissLaterConstraint)) return;
    Add(constraints_, Words(c.text).what);
  }
  void Decision(const PhraseSpec& d) {
    const AgentWording& w = Words(d.text);
    Add(decisions_,
        rng_.Chance(kDropReason) || w.why.empty() ? w.what : w.what + " (" + w.why + ")");
  }
  // A revision replaces the stale line; some agents keep it struck through
  // with an arrow to the new one, most just rewrite it.
  void Revise(const Revision& rev) {
    std::vector<std::string>& list = rev.kind == FactKind::kDecision ? decisions_ : constraints_;
    const AgentWording& old_words = Words(rev.stale.text);
    const AgentWording& new_words = Words(rev.current.text);
    std::string line =
        new_words.why.empty() ? new_words.what : new_words.what + " (" + new_words.why + ")";
    if (rng_.Chance(kKeepHistory)) {
      std::string lower = line;
      lower[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(lower[0])));
      line = "~~" + old_words.what + "~~ -> " + lower;
    }
    for (std::string& l : list) {
      if (l.rfind(old_words.what, 0) == 0) {
        l = line;
        dirty_ = true;
        return;
      }
    }
    Add(list, line);
  }
  void Read(const std::string& path) {
    if (!rng_.Chance(kMissRead)) Add(looked_at_, path);
  }
  void Modified(const std::string& path) { Add(changed_, path); }
  // The latest outcome of a command the agent considers worth tracking.
  void Command(const std::string& cmd, int exit_code) {
    auto it = track_command_.emplace(cmd, !rng_.Chance(kMissCommand)).first;
    if (!it->second) return;
    std::string line = "`" + cmd + "`: " +
                       (exit_code == 0 ? "ok" : "failing (exit " + std::to_string(exit_code) + ")");
    for (auto& [c, l] : checks_) {
      if (c == cmd) {
        if (l != line) dirty_ = true;
        l = line;
        return;
      }
    }
    checks_.emplace_back(cmd, line);
    dirty_ = true;
  }
  // An error as the agent saw it: the first line of the failing output
  // (shortened as people do), or only its diagnosis.
  void Error(const std::string& output, const ErrorSpec& e, bool open) {
    std::string first = output.substr(0, output.find('\n'));
    if (first.size() > kQuoteChars) first = first.substr(0, kQuoteChars) + "...";
    const std::string cause = Words(e.text).what;
    std::string line;
    if (open) {
      line = "OPEN: `" + first + "` - " + cause + "; not fixed yet, needs more information";
    } else {
      const std::string fixed = "Fixed in " + e.fix_file + ": ";
      line = rng_.Chance(kQuoteFixedError) ? fixed + "`" + first + "` - " + cause : fixed + cause;
    }
    Add(errors_, line);
  }
  void Next(const std::string& step) { Set(next_, step); }

  std::string Render() const {
    std::string out = "# Notes: " + s_.name + "\n\n## Goal\n" + goal_ + "\n";
    auto section = [&out](const char* title, const std::vector<std::string>& lines) {
      if (lines.empty()) return;
      out += std::string("\n## ") + title + "\n";
      for (const std::string& l : lines) out += "- " + l + "\n";
    };
    section("Constraints", constraints_);
    section("Decisions", decisions_);
    section("Files changed", changed_);
    section("Files looked at", looked_at_);
    std::vector<std::string> checks;
    for (const auto& c : checks_) checks.push_back(c.second);
    section("Checks", checks);
    section("Errors", errors_);
    if (!next_.empty()) out += "\n## Next\n" + next_ + "\n";
    return out;
  }

  // Writes the file through the tool; returns the call's entry id.
  std::string Save(Builder& b) {
    static const std::vector<std::string> kLeads = {"Updating my notes.",
                                                    "Saving progress to the notes file.", "",
                                                    "Notes first, before I go on."};
    if (!enabled_) return "";
    saved_ = Render();
    dirty_ = false;
    return b.WriteNotes(rng_, rng_.Pick(kLeads), saved_);
  }

 private:
  // Percentages of the imperfections (documented in docs/quality.md).
  static constexpr int kMissLaterConstraint = 20;
  static constexpr int kDropReason = 15;
  static constexpr int kKeepHistory = 40;
  static constexpr int kMissRead = 35;
  static constexpr int kMissCommand = 20;
  static constexpr int kQuoteFixedError = 70;
  static constexpr size_t kQuoteChars = 110;

  const AgentWording& Words(const std::string& text) const {
    static const AgentWording kNone;
    auto it = s_.wording.find(text);
    return it == s_.wording.end() ? kNone : it->second;
  }
  void Set(std::string& field, const std::string& value) {
    if (field != value) dirty_ = true;
    field = value;
  }
  void Add(std::vector<std::string>& list, const std::string& line) {
    if (line.empty() || std::find(list.begin(), list.end(), line) != list.end()) return;
    list.push_back(line);
    dirty_ = true;
  }

  Rng rng_;
  const Scenario& s_;
  const bool enabled_;
  bool dirty_ = false;
  std::string saved_;
  std::string goal_, next_;
  std::vector<std::string> constraints_, decisions_, changed_, looked_at_, errors_;
  std::vector<std::pair<std::string, std::string>> checks_;
  std::map<std::string, bool> track_command_;
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

// When the simulated agent saves its notes (percentages; docs/quality.md).
constexpr int kSaveRightAway = 60;   // after the user changes the plan
constexpr int kSaveAfterTopic = 50;  // after a topic (at the latest after two)
constexpr int kFinalSave = 70;       // when wrapping up

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

// Writes one session of a scenario: what it plants is chosen by seed, then
// the conversation is written in order (opening, exploration, one topic per
// modified file, tail) and the facts are completed. Every random draw happens
// in the same order for a seed, so a seed always gives the same session.
class SessionScript {
 public:
  SessionScript(const GeneratorOptions& options, const Scenario& s)
      : seed_(options.seed),
        s_(s),
        b_(seed_, s),
        r_(b_.rng()),
        notes_(seed_, s, options.agent_notes),
        nr_(notes_.rng()),
        target_(options.target_tokens * (75 + static_cast<int64_t>(r_.Below(51))) / 100) {
  }  // +-25%

  GeneratedSession Write() {
    ChoosePlantedFacts();
    Opening();
    Exploration();
    StaleDecision();
    const size_t tail_files = 1;  // the last file is edited in the kept tail
    middle_ = modify_.size() - tail_files;
    middle_budget_ = target_ * 82 / 100;
    con_revised_ = !revise_constraint_;
    for (size_t t = 0; t < middle_; ++t) Topic(t);
    // Remaining decisions that found no topic.
    while (dec_i_ < decs_.size()) PlantDecision(s_.decisions[decs_[dec_i_++]]);
    Tail();
    for (Fact& f : b_.facts())
      if (f.superseded_by == "pending") f.superseded_by.clear();
    CommandFacts();
    return Output();
  }

 private:
  // What this session plants, chosen by seed.
  void ChoosePlantedFacts() {
    Rng& r = r_;
    cons_.resize(s_.constraints.size());
    for (size_t i = 0; i < cons_.size(); ++i) cons_[i] = i;
    r.Shuffle(cons_);
    cons_.resize(static_cast<size_t>(r.Range(3, 4)));
    decs_.resize(s_.decisions.size());
    for (size_t i = 0; i < decs_.size(); ++i) decs_[i] = i;
    r.Shuffle(decs_);
    decs_.resize(std::min<size_t>(decs_.size(), static_cast<size_t>(r.Range(2, 3))));
    errs_.resize(s_.errors.size());
    for (size_t i = 0; i < errs_.size(); ++i) errs_[i] = i;
    r.Shuffle(errs_);
    errs_.resize(static_cast<size_t>(r.Range(2, 3)));
    // The last error stays open: a later passing run of the same command would
    // contradict it.
    unfixed_ = errs_.size() - 1;
    modify_ = s_.modify_files;
    r.Shuffle(modify_);
    modify_.resize(static_cast<size_t>(r.Range(5, 7)));
    reads_ = s_.read_files;
    r.Shuffle(reads_);
    reads_.resize(static_cast<size_t>(r.Range(3, 5)));
    // Fix files of the chosen errors are modified too.
    for (size_t e : errs_)
      if (std::find(modify_.begin(), modify_.end(), s_.errors[e].fix_file) == modify_.end())
        modify_.push_back(s_.errors[e].fix_file);
    next_ = &r.Pick(s_.next_steps);
    revise_constraint_ = r.Chance(70);
  }

  std::string FactId(const char* prefix) {
    return std::string(prefix) + std::to_string(++fact_no_);
  }

  std::string RunCommand(const std::string& key, const std::string& prose,
                         const std::string& failure, int code) {
    std::string cmd = CommandOf(s_, key);
    std::string id =
        b_.Bash(prose, cmd, CommandOutput(r_, s_, key, failure), failure.empty() ? 0 : code);
    last_exit_[cmd] = failure.empty() ? 0 : code;
    command_entry_[cmd] = id;
    notes_.Command(cmd, last_exit_[cmd]);
    return id;
  }

  // The agent saves its notes after a user changes the plan (right away, or
  // at the end of the current topic), and otherwise after a topic now and
  // then but never more than two topics apart.
  void MaybeSaveNow() {
    if (nr_.Chance(kSaveRightAway)) {
      notes_.Save(b_);
      topics_since_save_ = 0;
    }
  }

  // Tool calls that carry no fact.
  void Noise(int rounds) {
    Rng& r = r_;
    for (int i = 0; i < rounds; ++i) {
      switch (r.Below(4)) {
        case 0:
          b_.Bash("Let me search for related call sites.",
                  "grep -rn \"" + r.Pick(kFields) + "\" " + (s_.lang == "ts" ? "src" : "app"),
                  GrepOutput(r, s_, r.Range(20, 140)), 0);
          break;
        case 1:
          b_.Bash("Checking recent history for context.", "git log --oneline -n 40", GitLog(r, 40),
                  0);
          break;
        case 2: {
          std::string p = r.Pick(reads_);
          b_.Read("Re-reading " + p + " to double-check the call shape.", p,
                  FileContent(r, s_.lang, p, r.Range(8, 30)));
          break;
        }
        default:
          b_.Bash("Quick look at the working tree.", "git status --short && git diff --stat",
                  " M " + r.Pick(modify_) + "\n M " + r.Pick(modify_) + "\n 2 files changed, " +
                      std::to_string(r.Range(10, 200)) + " insertions(+), " +
                      std::to_string(r.Range(1, 60)) + " deletions(-)\n",
                  0);
      }
    }
  }

  void PlantDecision(const PhraseSpec& d) {
    b_.Plant(FactKind::kDecision, d, b_.Assistant(Reword(r_, d.sentence)), FactId("decision-"));
    notes_.Decision(d);
  }

  // The goal and the first constraints (one of them later revised).
  void Opening() {
    const Revision& rev_con = s_.revisions[1];
    // Constraints as a bullet list or as plain prose, by seed.
    const bool bullets = r_.Chance(50);
    const std::string sep = bullets ? "\n- " : " ";
    std::string opening = s_.goal.sentence + (bullets ? "\n\nConstraints:\n- " : "\n\n") +
                          s_.constraints[cons_[0]].sentence + sep +
                          s_.constraints[cons_[1]].sentence;
    if (revise_constraint_) opening += sep + rev_con.stale.sentence;
    const std::string open_id = b_.User(opening);
    b_.Plant(FactKind::kGoal, s_.goal, open_id, FactId("goal-"));
    b_.Plant(FactKind::kConstraint, s_.constraints[cons_[0]], open_id, FactId("constraint-"));
    b_.Plant(FactKind::kConstraint, s_.constraints[cons_[1]], open_id, FactId("constraint-"));
    notes_.Goal(s_.goal);
    notes_.Constraint(s_.constraints[cons_[0]], false);
    notes_.Constraint(s_.constraints[cons_[1]], false);
    if (revise_constraint_) {
      stale_con_id_ = FactId("constraint-");
      b_.Plant(FactKind::kConstraint, rev_con.stale, open_id, stale_con_id_, "pending");
      notes_.Constraint(rev_con.stale, false);
    }
  }

  // Reads (files only read are facts) and noise.
  void Exploration() {
    b_.Bash("I'll start with the project layout.",
            "ls -R " + std::string(s_.lang == "ts" ? "src" : "app") + " | head -80",
            GrepOutput(r_, s_, 30), 0);
    for (const std::string& p : reads_) {
      std::string id =
          b_.Read("Reading " + p + ".", p, FileContent(r_, s_.lang, p, r_.Range(10, 40)));
      b_.Plant(FactKind::kFileRead, {"", p, {}, {}}, id, FactId("read-"));
      notes_.Read(p);
    }
    Noise(r_.Range(2, 4));
  }

  // The first decision, which will be revised. It keeps its "Decision:"
  // lead-in (the others vary) so that what is tested is how a summary treats
  // a revised decision, not whether it noticed the decision at all.
  void StaleDecision() {
    const Revision& rev_dec = s_.revisions[0];
    const std::string entry = b_.Assistant(rev_dec.stale.sentence + " I'll wire that in first.");
    stale_dec_id_ = FactId("decision-");
    b_.Plant(FactKind::kDecision, rev_dec.stale, entry, stale_dec_id_, "pending");
    notes_.Decision(rev_dec.stale);
    notes_.Next("Start with " + modify_.front());
    notes_.Save(b_);
  }

  // One topic per modified file; decisions, errors and constraints spread over them.
  void Topic(size_t t) {
    const std::string& path = modify_[t];
    if (dec_i_ < decs_.size() && (t % 2 == 0 || t + 2 >= middle_))
      PlantDecision(s_.decisions[decs_[dec_i_++]]);
    b_.Read("Let me look at " + path + " before changing it.", path,
            FileContent(r_, s_.lang, path, r_.Range(10, 35)));
    std::string before = FileContent(r_, s_.lang, path, 1);
    std::string after = FileContent(r_, s_.lang, path, 2);
    std::string edit_id = t % 3 == 2
                              ? b_.Write("Writing the new version of " + path + ".", path, after)
                              : b_.Edit("Updating " + path + ".", path, before, after);
    b_.Plant(FactKind::kFileModified, {"", path, {}, {}}, edit_id, FactId("modified-"));
    notes_.Modified(path);
    // An error shows up in this topic?
    if (err_i_ < errs_.size() && (t % 2 == 1 || t + 2 >= middle_)) {
      ErrorRun(s_.errors[errs_[err_i_]], err_i_ != unfixed_);
      ++err_i_;
    } else {
      // Never re-run the command whose failure was left open: its last outcome stays the failure.
      std::vector<std::string> keys;
      for (const char* k : {"test", "test2", "lint", "typecheck"})
        if (k != open_key_) keys.push_back(k);
      RunCommand(r_.Pick(keys), "Checking.", "", 0);
    }
    Interjections(t);
    // End of the topic: what is next, and a save when one is due.
    notes_.Next(t + 1 < middle_ ? "Continue with " + modify_[t + 1]
                                : "Finish " + modify_.back() + ", then a final build");
    ++topics_since_save_;
    if (notes_.dirty() && (topics_since_save_ >= 2 || nr_.Chance(kSaveAfterTopic))) {
      notes_.Save(b_);
      topics_since_save_ = 0;
    }
    // Tool noise up to this topic's share of the budget.
    const int64_t goal_tokens =
        middle_budget_ * static_cast<int64_t>(t + 1) / static_cast<int64_t>(middle_);
    for (int guard = 0; b_.tokens() < goal_tokens && guard < 200; ++guard) Noise(1);
  }

  // A failing check, then its fix or (the last error) the decision to leave it open.
  void ErrorRun(const ErrorSpec& e, bool fixed) {
    std::string id = RunCommand(e.command_key, "Running the checks.", e.output, 1);
    Fact f;
    f.id = FactId("error-");
    f.kind = FactKind::kError;
    f.text = e.text;
    f.variants = e.variants;
    f.fixed = fixed;
    f.entry_id = id;
    b_.facts().push_back(f);
    notes_.Error(e.output, e, !fixed);
    b_.Assistant(e.explanation);
    Noise(r_.Range(1, 3));
    if (fixed) {
      b_.Edit("Fixing it in " + e.fix_file + ".", e.fix_file,
              FileContent(r_, s_.lang, e.fix_file, 1), FileContent(r_, s_.lang, e.fix_file, 1));
      notes_.Modified(e.fix_file);
      RunCommand(e.command_key, "Re-running.", "", 0);
      b_.Assistant("That fixed it.");
    } else {
      open_key_ = e.command_key;
      b_.Assistant("I can't fix this one without more information; leaving it open and moving on.");
    }
  }

  // User interjections at fixed fractions of the middle: more constraints,
  // then the revised decision, then the revised constraint.
  void Interjections(size_t t) {
    if (!extra_constraint_ && t + 1 >= middle_ / 3) {
      extra_constraint_ = true;
      const PhraseSpec& c = s_.constraints[cons_[2]];
      std::string id = b_.User("One more thing: " + c.sentence);
      b_.Plant(FactKind::kConstraint, c, id, FactId("constraint-"));
      notes_.Constraint(c, true);
      if (cons_.size() > 3) {
        const PhraseSpec& c4 = s_.constraints[cons_[3]];
        std::string id4 = b_.User("And: " + c4.sentence);
        b_.Plant(FactKind::kConstraint, c4, id4, FactId("constraint-"));
        notes_.Constraint(c4, true);
      }
      if (notes_.dirty()) MaybeSaveNow();
    }
    if (!revised_ && t + 1 >= middle_ / 2) {
      revised_ = true;
      Revise(s_.revisions[0], FactKind::kDecision, stale_dec_id_, "decision-",
             "Understood, switching to that now.");
    }
    if (!con_revised_ && t + 1 >= middle_ * 2 / 3) {
      con_revised_ = true;
      Revise(s_.revisions[1], FactKind::kConstraint, stale_con_id_, "constraint-", "Noted.");
    }
  }

  // The user's change of a stated decision or constraint.
  void Revise(const Revision& rev, FactKind kind, const std::string& stale_id, const char* prefix,
              const char* answer) {
    std::string id = b_.User(rev.current.sentence);
    std::string cur = FactId(prefix);
    b_.Plant(kind, rev.current, id, cur);
    for (Fact& f : b_.facts())
      if (f.id == stale_id) f.superseded_by = cur;
    b_.Assistant(answer);
    notes_.Revise(rev);
    MaybeSaveNow();
  }

  // The next step, the last file and a final check.
  void Tail() {
    const PhraseSpec& next = *next_;
    std::string ns_id;
    if (r_.Chance(50)) {
      ns_id = b_.User("Good progress. Finish " + modify_.back() + ", then stop for today. " +
                      next.sentence);
    } else {
      b_.User("Finish " + modify_.back() + " and then wrap up with where we are.");
    }
    const std::string& last = modify_.back();
    b_.Read("Reading " + last + ".", last, FileContent(r_, s_.lang, last, r_.Range(6, 14)));
    b_.Plant(FactKind::kFileModified, {"", last, {}, {}},
             b_.Edit("Updating " + last + ".", last, FileContent(r_, s_.lang, last, 1),
                     FileContent(r_, s_.lang, last, 2)),
             FactId("modified-"));
    notes_.Modified(last);
    RunCommand("build", "Final build check.", "", 0);
    // Wrapping up, the agent usually brings its notes up to date one last time.
    if (nr_.Chance(kFinalSave)) {
      notes_.Next(s_.wording.at(next.text).what);
      notes_.Save(b_);
    }
    std::string wrap = "Done for today; the open items are noted above.";
    std::string final_id = b_.Assistant(wrap + " " + next.sentence);
    b_.Plant(FactKind::kNextStep, next, ns_id.empty() ? final_id : ns_id, FactId("next-"));
  }

  // One fact per significant command, with its final outcome.
  void CommandFacts() {
    for (const auto& [key, cmd] : s_.commands) {
      auto it = last_exit_.find(cmd);
      if (it == last_exit_.end()) continue;
      Fact f;
      f.id = FactId("command-");
      f.kind = FactKind::kCommand;
      f.text = cmd;
      f.exit_code = it->second;
      f.qualifiers = it->second == 0 ? kSuccessWords : FailureWords(it->second);
      f.entry_id = command_entry_[cmd];
      b_.facts().push_back(std::move(f));
    }
  }

  GeneratedSession Output() {
    GeneratedSession out;
    char name[32];
    std::snprintf(name, sizeof(name), "eval-%04llu", static_cast<unsigned long long>(seed_));
    out.name = name;
    out.jsonl = b_.Jsonl();
    out.facts.session = out.name + ".jsonl";
    out.facts.source = "generated";
    out.facts.seed = seed_;
    out.facts.split = HeldOutSeed(seed_) ? "held-out" : "tuning";
    out.facts.facts = b_.facts();
    out.notes = notes_.saved();
    return out;
  }

  const uint64_t seed_;
  const Scenario& s_;
  Builder b_;
  Rng& r_;
  AgentNotes notes_;
  Rng& nr_;
  const int64_t target_;
  // Chosen by seed (ChoosePlantedFacts).
  std::vector<size_t> cons_, decs_, errs_;
  size_t unfixed_ = 0;
  std::vector<std::string> modify_, reads_;
  const PhraseSpec* next_ = nullptr;
  bool revise_constraint_ = false;
  // Progress of the writing.
  std::string open_key_;                  // command key of the error left open
  std::map<std::string, int> last_exit_;  // significant command -> final exit code
  std::map<std::string, std::string> command_entry_;
  int fact_no_ = 0;
  int topics_since_save_ = 0;
  std::string stale_con_id_, stale_dec_id_;
  size_t middle_ = 0;
  int64_t middle_budget_ = 0;
  size_t dec_i_ = 0, err_i_ = 0;
  bool revised_ = false, extra_constraint_ = false, con_revised_ = false;
};

}  // namespace

GeneratedSession GenerateEvalSession(const GeneratorOptions& options) {
  if (options.style == GeneratorStyle::kIndependent) return GenerateIndependentSession(options);
  return SessionScript(options, kScenarios[options.seed % 2 == 1 ? 0 : 1]).Write();
}

Result<std::vector<std::string>> WriteEvalCorpus(const std::string& dir, int count, uint64_t seed,
                                                 int64_t target_tokens, bool agent_notes, Env* env,
                                                 GeneratorStyle style) {
  env = EnvOrDefault(env);
  COMPACTOR_RETURN_IF_ERROR(env->CreateDirs(dir));
  std::vector<std::string> paths;
  for (int i = 0; i < count; ++i) {
    GeneratedSession g =
        GenerateEvalSession({seed + static_cast<uint64_t>(i), target_tokens, agent_notes, style});
    const std::string base = dir + "/" + g.name;
    RewriteOptions no_backup{false, ".bak", env};
    COMPACTOR_RETURN_IF_ERROR(WriteFileAtomic(base + ".jsonl", g.jsonl, no_backup));
    COMPACTOR_RETURN_IF_ERROR(
        WriteFileAtomic(base + ".facts.json", FactFileToJson(g.facts), no_backup));
    if (agent_notes && style == GeneratorStyle::kStandard) {
      COMPACTOR_RETURN_IF_ERROR(WriteFileAtomic(base + ".notes.md", g.notes, no_backup));
    } else {
      // A notes file left from an earlier corpus would belong to another session.
      Status removed = env->RemoveFile(base + ".notes.md");
      if (!removed.ok() && removed.code() != StatusCode::kNotFound) return removed;
    }
    paths.push_back(base + ".jsonl");
  }
  return paths;
}

}  // namespace compactor
