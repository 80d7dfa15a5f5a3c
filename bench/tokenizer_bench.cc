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
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "compactor/tokenizer.h"
#include "support/pcre2_splitter.h"
#include "support/sample_corpus.h"
#include "tokens/pretokenize.h"

namespace {

using compactor::Encoding;
using compactor::Tokenizer;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// CPU time of the whole process (all threads). On a shared, loaded machine
// wall time mostly measures the scheduler; CPU time is what the work costs.
double CpuNow() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct Timing {
  double wall = 1e9;
  double cpu = 1e9;
};

// Runs fn `runs` times; keeps the best wall and the best CPU time.
template <typename F>
Timing Best(int runs, F&& fn) {
  Timing t;
  for (int r = 0; r < runs; ++r) {
    auto a = Clock::now();
    double c = CpuNow();
    fn();
    double c2 = CpuNow();
    auto b = Clock::now();
    t.wall = std::min(t.wall, Seconds(a, b));
    t.cpu = std::min(t.cpu, c2 - c);
  }
  return t;
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
          size_t tokens, Timing t, int threads = 1) {
  std::printf(
      "{\"impl\":\"%s\",\"encoding\":\"%s\",\"corpus\":\"%s\",\"mode\":\"%s\",\"threads\":%d,"
      "\"bytes\":%zu,\"tokens\":%zu,\"seconds\":%.6f,\"cpu_seconds\":%.6f,\"mb_per_s\":%.2f,"
      "\"cpu_mb_per_s\":%.2f}\n",
      impl, enc, corpus, mode, threads, bytes, tokens, t.wall, t.cpu, bytes / t.wall / 1e6,
      bytes / t.cpu / 1e6);
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
    compactor::Result<std::unique_ptr<Tokenizer>> loaded = compactor::Status::Internal("unset");
    Timing load = Best(1, [&] { loaded = Tokenizer::Load(enc); });
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", loaded.status().ToString().c_str());
      return 1;
    }
    const Tokenizer& tok = **loaded;
    Emit("compactor", enc_name.c_str(), "-", "load", 0, 0, load);
    auto ref = compactor::tokens::Pcre2Splitter::Create(enc);
    for (const char* corpus : corpora) {
      std::string text = ReadFile(dir + "/" + corpus + ".txt");
      if (text.empty()) {
        std::fprintf(stderr, "missing %s/%s.txt\n", dir.c_str(), corpus);
        return 1;
      }
      size_t n = 0;
      // Count on the whole text: cold (first call, empty caches), then warm.
      Timing t = Best(1, [&] { n = tok.Count(text); });
      Emit("compactor", enc_name.c_str(), corpus, "count-cold", text.size(), n, t);
      t = Best(repeat, [&] { n = tok.Count(text); });
      Emit("compactor", enc_name.c_str(), corpus, "count-warm", text.size(), n, t);
      t = Best(repeat, [&] { n = tok.Encode(text).size(); });
      Emit("compactor", enc_name.c_str(), corpus, "encode-warm", text.size(), n, t);
      // The hand-written pre-tokenizer alone.
      t = Best(repeat, [&] {
        n = 0;
        compactor::tokens::SplitPieces(enc, text, [&](const uint8_t*, size_t) { ++n; });
      });
      Emit("fast-split-only", enc_name.c_str(), corpus, "split", text.size(), n, t);
      // The PCRE2 reference pre-tokenizer alone, for scale.
      if (ref.ok()) {
        t = Best(1, [&] { n = (*ref)->Split(text).size(); });
        Emit("pcre2-split-only", enc_name.c_str(), corpus, "split", text.size(), n, t);
      }
      // Scaling over ~16 KB chunks: 1 and 2 threads.
      auto chunks = Chunks(text, 16384);
      for (int threads : {1, 2}) {
        t = Best(repeat, [&] { n = CountChunks(tok, chunks, threads); });
        Emit("compactor", enc_name.c_str(), corpus, "count-chunked-warm", text.size(), n, t,
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
