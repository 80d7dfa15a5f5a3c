// Helpers for the conformance suite: running commands and a JSON deep diff
// that reports exact paths.
#ifndef COMPACTOR_TESTS_CONFORMANCE_CONFORMANCE_UTIL_H_
#define COMPACTOR_TESTS_CONFORMANCE_CONFORMANCE_UTIL_H_

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace compactor::conformance {

using Json = nlohmann::json;

inline std::string ShellQuote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

inline std::optional<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool WriteFile(const std::filesystem::path& path, std::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  return static_cast<bool>(out);
}

struct CommandResult {
  int exit_code = -1;  // -1: could not run or killed by a signal
  std::string out;
  std::string err;
};

// Runs `command` through /bin/sh, capturing stdout and stderr (stderr via a
// temp file so a chatty stderr cannot block the pipe).
inline CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  char err_path[] = "/tmp/compactor-conformance-stderr-XXXXXX";
  int err_fd = mkstemp(err_path);
  if (err_fd < 0) return result;
  close(err_fd);
  std::string full = command + " 2>" + ShellQuote(err_path);
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe != nullptr) {
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) result.out.append(buf, n);
    int status = pclose(pipe);
    if (status != -1 && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  }
  result.err = ReadFile(err_path).value_or("");
  std::remove(err_path);
  return result;
}

inline std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

inline std::string Abbreviate(const Json& v, size_t max_chars = 160) {
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > max_chars)
    s = s.substr(0, max_chars) + "...(" + std::to_string(s.size()) + " chars)";
  return s;
}

inline std::string JoinPath(const std::string& base, const std::string& key) {
  bool simple = !key.empty() && (std::isalpha(static_cast<unsigned char>(key[0])) || key[0] == '_');
  for (char c : key) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') simple = false;
  }
  if (simple) return base.empty() ? key : base + "." + key;
  return base + "[" + Json(key).dump(-1, ' ', false, Json::error_handler_t::replace) + "]";
}

// Deep comparison with JSON-value semantics: numbers compare by value as
// doubles (1 == 1.0 == 1e0), object key order is irrelevant. Appends one line
// per difference ("path: expected X, got Y") up to `max_diffs`.
inline void JsonDiff(const Json& expected, const Json& actual, const std::string& path,
                     std::vector<std::string>* diffs, size_t max_diffs = 20) {
  if (diffs->size() >= max_diffs) return;
  const std::string where = path.empty() ? "<root>" : path;
  if (expected.is_number() && actual.is_number()) {
    double e = expected.get<double>();
    double a = actual.get<double>();
    if (!(e == a))
      diffs->push_back(where + ": expected " + Abbreviate(expected) + ", got " +
                       Abbreviate(actual));
    return;
  }
  if (expected.type() != actual.type()) {
    diffs->push_back(where + ": expected " + Abbreviate(expected) + " (" + expected.type_name() +
                     "), got " + Abbreviate(actual) + " (" + actual.type_name() + ")");
    return;
  }
  if (expected.is_object()) {
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      std::string sub = JoinPath(path, it.key());
      auto found = actual.find(it.key());
      if (found == actual.end()) {
        if (diffs->size() < max_diffs)
          diffs->push_back(sub + ": missing, expected " + Abbreviate(*it));
        continue;
      }
      JsonDiff(*it, *found, sub, diffs, max_diffs);
    }
    for (auto it = actual.begin(); it != actual.end(); ++it) {
      if (!expected.contains(it.key()) && diffs->size() < max_diffs) {
        diffs->push_back(JoinPath(path, it.key()) + ": unexpected key, got " + Abbreviate(*it));
      }
    }
    return;
  }
  if (expected.is_array()) {
    if (expected.size() != actual.size()) {
      diffs->push_back(where + ": expected " + std::to_string(expected.size()) + " elements, got " +
                       std::to_string(actual.size()));
    }
    size_t n = std::min(expected.size(), actual.size());
    for (size_t i = 0; i < n && diffs->size() < max_diffs; ++i) {
      JsonDiff(expected[i], actual[i], path + "[" + std::to_string(i) + "]", diffs, max_diffs);
    }
    return;
  }
  if (expected != actual) {
    diffs->push_back(where + ": expected " + Abbreviate(expected) + ", got " + Abbreviate(actual));
  }
}

inline std::string JoinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += "  " + l + "\n";
  return out;
}

// Parses JSON without throwing; on failure returns nullopt and sets `error`.
inline std::optional<Json> ParseJson(std::string_view text, std::string* error) {
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    if (error != nullptr) *error = e.what();
    return std::nullopt;
  }
}

// A scratch directory removed on destruction unless COMPACTOR_KEEP_CONFORMANCE_TMP is set.
class TempDir {
 public:
  TempDir() {
    std::error_code ec;
    std::string base =
        (std::filesystem::temp_directory_path(ec) / "compactor-conformance-XXXXXX").string();
    std::vector<char> buf(base.begin(), base.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) != nullptr) path_ = buf.data();
  }
  ~TempDir() {
    if (!path_.empty() && Env("COMPACTOR_KEEP_CONFORMANCE_TMP").empty()) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace compactor::conformance

#endif  // COMPACTOR_TESTS_CONFORMANCE_CONFORMANCE_UTIL_H_
