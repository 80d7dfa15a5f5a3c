// The CLI's human-readable output, checked byte for byte against golden files
// (in the manner of zstd's tests/cli-tests). Each case in tests/cli/golden/ is
// a script NAME.case of commands, one per line:
//
//   # a comment
//   $ compactor stats {copy:examples/session.jsonl}
//   $ compactor tree {tmp}/session.jsonl
//
// run in order in one fresh temporary directory. Placeholders: {src:PATH} is a
// repository file (read only), {copy:PATH} copies it into the temporary
// directory first (for commands that write), {tmp} is that directory. The
// expected transcript NAME.expected holds, per command, the command line as
// written, its stdout, its stderr with every line prefixed "! ", and
// "[exit N]". In expected lines, {*} matches any text within the line (for
// timings, random ids); the temporary directory's path is printed as {tmp},
// the repository's as {src} and the binary's path as "compactor".
//
// COMPACTOR_UPDATE_GOLDEN=1 rewrites the expected files from the current
// output (keeping expected lines with {*} that still match): review the diff.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_util.h"

namespace compactor {
namespace {

namespace fs = std::filesystem;
using testing::ReadFileOrDie;
using testing::RunCli;
using testing::TempDir;

const std::string kGoldenDir = std::string(COMPACTOR_SOURCE_DIR) + "/tests/cli/golden";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

void ReplaceAll(std::string* s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t pos = 0; (pos = s->find(from, pos)) != std::string::npos; pos += to.size()) {
    s->replace(pos, from.size(), to);
  }
}

// Splits a command line at spaces; double quotes group words (no escapes:
// case files are ours and never need them).
std::vector<std::string> SplitWords(const std::string& line) {
  std::vector<std::string> words;
  std::string cur;
  bool quoted = false, have = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
      have = true;
    } else if (c == ' ' && !quoted) {
      if (have) words.push_back(cur);
      cur.clear();
      have = false;
    } else {
      cur += c;
      have = true;
    }
  }
  if (have) words.push_back(cur);
  return words;
}

// Resolves the placeholders of one argument.
std::string Expand(std::string arg, const std::string& tmp) {
  for (const char* kind : {"{src:", "{copy:"}) {
    size_t at = arg.find(kind);
    if (at == std::string::npos) continue;
    size_t end = arg.find('}', at);
    std::string rel =
        arg.substr(at + std::string(kind).size(), end - at - std::string(kind).size());
    std::string src = std::string(COMPACTOR_SOURCE_DIR) + "/" + rel;
    std::string path = src;
    if (std::string(kind) == "{copy:") {
      path = tmp + "/" + fs::path(rel).filename().string();
      fs::copy_file(src, path, fs::copy_options::overwrite_existing);
    }
    arg.replace(at, end - at + 1, path);
  }
  ReplaceAll(&arg, "{tmp}", tmp);
  return arg;
}

// Runs every command of a case and returns the transcript.
std::string RunCase(const std::string& case_text) {
  TempDir dir;
  const std::string tmp = fs::canonical(dir.path()).string();
  std::string transcript;
  for (const std::string& line : Lines(case_text)) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_EQ(line.rfind("$ compactor", 0), 0u) << "a command starts with '$ compactor': " << line;
    std::vector<std::string> words = SplitWords(line.substr(2));
    std::vector<std::string> args;
    for (size_t i = 1; i < words.size(); ++i) args.push_back(Expand(words[i], tmp));
    testing::RunResult r = RunCli(args);
    std::string out = r.out, err = r.err;
    for (std::string* s : {&out, &err}) {
      ReplaceAll(s, tmp, "{tmp}");
      ReplaceAll(s, COMPACTOR_CLI_PATH, "compactor");
      ReplaceAll(s, COMPACTOR_SOURCE_DIR, "{src}");
    }
    transcript += line + "\n" + out;
    if (!out.empty() && out.back() != '\n') transcript += "[no newline at end]\n";
    for (const std::string& e : Lines(err)) transcript += "! " + e + "\n";
    transcript += "[exit " + std::to_string(r.exit_code) + "]\n";
  }
  return transcript;
}

// Whether `actual` matches the expected line, where {*} matches any text.
bool LineMatches(const std::string& expected, const std::string& actual) {
  size_t star = expected.find("{*}");
  if (star == std::string::npos) return expected == actual;
  std::string head = expected.substr(0, star), rest = expected.substr(star + 3);
  if (actual.compare(0, head.size(), head) != 0) return false;
  for (size_t from = head.size(); from <= actual.size(); ++from) {
    if (LineMatches(rest, actual.substr(from))) return true;
  }
  return false;
}

// The first line that differs, as a readable message; empty when equal.
std::string FirstDifference(const std::string& expected, const std::string& actual) {
  std::vector<std::string> e = Lines(expected), a = Lines(actual);
  for (size_t i = 0; i < std::max(e.size(), a.size()); ++i) {
    const std::string el = i < e.size() ? e[i] : "<end of file>";
    const std::string al = i < a.size() ? a[i] : "<end of output>";
    if (i >= e.size() || i >= a.size() || !LineMatches(el, al)) {
      return "line " + std::to_string(i + 1) + "\n  expected: " + el + "\n  actual:   " + al;
    }
  }
  return "";
}

// The new expected text: actual output, but old lines with {*} kept where they
// still match the line at the same position.
std::string Updated(const std::string& expected, const std::string& actual) {
  // Each actual line is matched with the next expected line that matches it
  // (a few lines ahead at most), so that a wildcard line keeps its {*} when
  // lines above it were added or removed.
  std::vector<std::string> e = Lines(expected), a = Lines(actual);
  std::string out;
  size_t next = 0;
  for (const std::string& line : a) {
    const std::string* kept = nullptr;
    for (size_t k = next; k < e.size() && k < next + 24; ++k) {
      if (!LineMatches(e[k], line)) continue;
      if (e[k].find("{*}") != std::string::npos) kept = &e[k];
      next = k + 1;
      break;
    }
    out += (kept ? *kept : line) + "\n";
  }
  return out;
}

std::vector<std::string> CaseNames() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(kGoldenDir)) {
    if (e.path().extension() == ".case") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class CliGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(CliGolden, OutputMatches) {
  const std::string base = kGoldenDir + "/" + GetParam();
  const std::string actual = RunCase(ReadFileOrDie(base + ".case"));
  const std::string expected_path = base + ".expected";
  std::string expected;
  if (fs::exists(expected_path)) expected = ReadFileOrDie(expected_path);
  const std::string diff = FirstDifference(expected, actual);
  if (!diff.empty() && std::getenv("COMPACTOR_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(expected_path, std::ios::binary) << Updated(expected, actual);
    GTEST_SKIP() << "rewrote " << expected_path;
  }
  EXPECT_TRUE(diff.empty()) << GetParam() << ".expected differs at " << diff
                            << "\n(COMPACTOR_UPDATE_GOLDEN=1 rewrites it)";
}

INSTANTIATE_TEST_SUITE_P(Cases, CliGolden, ::testing::ValuesIn(CaseNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// The matcher itself must be able to fail.
TEST(CliGoldenMatcher, WildcardsMatchWithinALineOnly) {
  EXPECT_TRUE(LineMatches("took {*} ms", "took 12.5 ms"));
  EXPECT_TRUE(LineMatches("{*}", ""));
  EXPECT_FALSE(LineMatches("took {*} ms", "took 12.5 s"));
  EXPECT_FALSE(LineMatches("exact", "exact "));
  EXPECT_EQ(FirstDifference("a\nb\n", "a\nb\n"), "");
  EXPECT_NE(FirstDifference("a\nb\n", "a\n"), "");
  EXPECT_NE(FirstDifference("a\n", "a\nb\n"), "");
  EXPECT_EQ(Updated("t {*}\nold\n", "t 5\nnew\n"), "t {*}\nnew\n");
}

}  // namespace
}  // namespace compactor
