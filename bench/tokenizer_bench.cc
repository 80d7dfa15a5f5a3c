// Tokenizer throughput (docs/benchmarks.md, "Tokenizers"). Run through
// scripts/bench_tokenizer.sh, which also runs the npm peers on the same files.
//
//   tokenizer_bench --write-corpus DIR [--mb 10]   write mixed.txt, cjk.txt, code.txt
//   tokenizer_bench --corpus DIR [--repeat 3]      measure; prints a JSON line per result
//
// MB = 10^6 bytes of UTF-8 input. "cold" is the first Count of a fresh
// process (empty piece cache), "warm" the best of --repeat further runs.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "compactor/tokenizer.h"
#include "tokens/pcre2_splitter.h"
#include "tokens/sample_corpus.h"

namespace {

using compactor::Encoding;
using compactor::Tokenizer;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Splits at newlines into chunks of about `target` bytes: a stand-in for
// session messages, which are counted independently.
std::vector<std::string_view> Chunks(std::string_view text, size_t target) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = std::min(text.size(), pos + target);
    size_t nl = text.find('\n', end);
    end = nl == std::string_view::npos ? text.size() : nl + 1;
    out.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

void Emit(const char* impl, const char* enc, const char* corpus, const char* mode, size_t bytes,
          size_t tokens, double secs, int threads = 1) {
  std::printf(
      "{\"impl\":\"%s\",\"encoding\":\"%s\",\"corpus\":\"%s\",\"mode\":\"%s\",\"threads\":%d,"
      "\"bytes\":%zu,\"tokens\":%zu,\"seconds\":%.6f,\"mb_per_s\":%.2f}\n",
      impl, enc, corpus, mode, threads, bytes, tokens, secs, bytes / secs / 1e6);
  std::fflush(stdout);
}

size_t CountChunks(const Tokenizer& tok, const std::vector<std::string_view>& chunks, int threads) {
  std::atomic<size_t> next{0}, total{0};
  auto work = [&] {
    size_t sum = 0;
    for (size_t i; (i = next.fetch_add(1)) < chunks.size();) sum += tok.Count(chunks[i]);
    total += sum;
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return total;
}

int Measure(const std::string& dir, int repeat) {
  const char* corpora[] = {"mixed", "cjk", "code"};
  for (Encoding enc : {Encoding::kO200kBase, Encoding::kCl100kBase}) {
    std::string enc_name(compactor::EncodingName(enc));
    auto t0 = Clock::now();
    auto loaded = Tokenizer::Load(enc);
    auto t1 = Clock::now();
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", loaded.status().ToString().c_str());
      return 1;
    }
    const Tokenizer& tok = **loaded;
    Emit("compactor", enc_name.c_str(), "-", "load", 0, 0, Seconds(t0, t1));
    auto ref = compactor::tokens::Pcre2Splitter::Create(enc);
    for (const char* corpus : corpora) {
      std::string text = ReadFile(dir + "/" + corpus + ".txt");
      if (text.empty()) {
        std::fprintf(stderr, "missing %s/%s.txt\n", dir.c_str(), corpus);
        return 1;
      }
      // Count, whole text: cold (fresh caches) then warm.
      auto a = Clock::now();
      size_t n = tok.Count(text);
      auto b = Clock::now();
      Emit("compactor", enc_name.c_str(), corpus, "count-cold", text.size(), n, Seconds(a, b));
      double best = 1e9;
      for (int r = 0; r < repeat; ++r) {
        a = Clock::now();
        n = tok.Count(text);
        b = Clock::now();
        best = std::min(best, Seconds(a, b));
      }
      Emit("compactor", enc_name.c_str(), corpus, "count-warm", text.size(), n, best);
      // Encode (ids), warm.
      best = 1e9;
      size_t ids = 0;
      for (int r = 0; r < repeat; ++r) {
        a = Clock::now();
        ids = tok.Encode(text).size();
        b = Clock::now();
        best = std::min(best, Seconds(a, b));
      }
      Emit("compactor", enc_name.c_str(), corpus, "encode-warm", text.size(), ids, best);
      // The PCRE2 reference pre-tokenizer alone, for scale.
      if (ref.ok()) {
        a = Clock::now();
        size_t pieces = (*ref)->Split(text).size();
        b = Clock::now();
        Emit("pcre2-split-only", enc_name.c_str(), corpus, "split", text.size(), pieces,
             Seconds(a, b));
      }
      // Scaling over ~16 KB chunks: 1 and 2 threads.
      auto chunks = Chunks(text, 16384);
      for (int threads : {1, 2}) {
        best = 1e9;
        for (int r = 0; r < repeat; ++r) {
          a = Clock::now();
          n = CountChunks(tok, chunks, threads);
          b = Clock::now();
          best = std::min(best, Seconds(a, b));
        }
        Emit("compactor", enc_name.c_str(), corpus, "count-chunked-warm", text.size(), n, best,
             threads);
      }
    }
  }
  return 0;
}

int WriteCorpus(const std::string& dir, double mb) {
  size_t bytes = static_cast<size_t>(mb * 1e6);
  struct {
    const char* name;
    std::string text;
  } files[] = {{"mixed", compactor::tokens::BenchMixed(bytes)},
               {"cjk", compactor::tokens::BenchCjk(bytes / 4)},
               {"code", compactor::tokens::BenchCode(bytes / 4)}};
  for (auto& f : files) {
    std::ofstream out(dir + "/" + f.name + ".txt", std::ios::binary);
    out << f.text;
    if (!out) {
      std::fprintf(stderr, "cannot write %s/%s.txt\n", dir.c_str(), f.name);
      return 1;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string write_dir, corpus_dir;
  double mb = 10;
  int repeat = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--write-corpus") {
      write_dir = next();
    } else if (a == "--corpus") {
      corpus_dir = next();
    } else if (a == "--mb") {
      mb = std::atof(next().c_str());
    } else if (a == "--repeat") {
      repeat = std::max(1, std::atoi(next().c_str()));
    } else {
      std::fprintf(stderr,
                   "usage: tokenizer_bench --write-corpus DIR [--mb 10] | --corpus DIR "
                   "[--repeat 3]\n");
      return 2;
    }
  }
  if (!write_dir.empty()) return WriteCorpus(write_dir, mb);
  if (!corpus_dir.empty()) return Measure(corpus_dir, repeat);
  std::fprintf(stderr, "nothing to do (see --help)\n");
  return 2;
}
