// `compactor serve` against Debian's nginx as a plain reverse proxy, side by
// side in one run on loopback (docs/benchmarks.md, "compactor serve"):
//
// * added latency of a pass-through request (an Anthropic Messages request of
//   a short conversation, far under the window: nothing is compacted),
//   streamed (SSE) and not, at 1 and 64 concurrent streams, for both peers:
//   p50 and p99 of (through the proxy) - p50 and p99 of (straight to the
//   upstream); and, paired, p50 and p99 of the differences between each
//   proxied request and the direct request its stream sent in the same round
//   (back to back with it): at 64 streams, where each request waits for the
//   2 CPUs in turn, the difference of two separate percentiles is mostly
//   queueing noise (it even comes out negative), the paired one much less;
// * memory per idle conversation: the serve process's RSS after N more
//   conversations, minus before, over N.
//
// The upstream is the tests' FakeUpstream (tests/support/fake_upstream.h) in
// this process: it answers the three targets identically and at once. Each
// stream is one client thread with one keep-alive connection to each target
// (direct, nginx, compactor) and sends its requests to the three in turn, the
// order rotating, so that machine noise falls on all three alike.
//
// Usage: serve_bench --compactor PATH [--nginx /usr/sbin/nginx] [--rounds 5]
//        [--requests-1 400] [--requests-64 20] [--conversations 2000] [--quick]
//        [--mode sse|json|both]
// --quick: a smoke run (a few seconds) for ctest: checks that every target
// answers and the figures come out, not their values. nginx missing is a
// failure (exit 1), not a skip: scripts/setup.sh installs it, so a CI
// without it is a broken setup, and the benchmark would otherwise pass
// unseen.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "serve/compact_requests.h"
#include "support/fake_upstream.h"
#include "support/http_client.h"

namespace {

using compactor::testing::Clock;
using compactor::testing::FakeUpstream;
using compactor::testing::RawClient;
using compactor::testing::RequestBytes;

struct Flags {
  std::string compactor;
  std::string nginx = "/usr/sbin/nginx";
  int rounds = 5;
  // Requests per stream, per target and mode, at 1 and at 64 streams.
  int requests_1 = 400;
  int requests_64 = 20;
  int conversations = 2000;
  bool quick = false;
  std::string mode = "both";  // "sse", "json" or "both"
};

// A child process with its stdout on a pipe (when `out_fd` is set) and its
// stderr into `err_file`.
pid_t Spawn(const std::vector<std::string>& args, const std::string& err_file, int* out_fd) {
  int fds[2] = {-1, -1};
  if (out_fd != nullptr && ::pipe(fds) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    if (out_fd != nullptr) {
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      ::close(fds[1]);
    }
    int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (err >= 0) ::dup2(err, 2);
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (out_fd != nullptr) {
    ::close(fds[1]);
    *out_fd = fds[0];
  }
  return pid;
}

void Stop(pid_t pid, int sig) {
  if (pid <= 0) return;
  ::kill(pid, sig);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return 0;
  }
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

bool WaitListening(int port) {
  for (int i = 0; i < 200; ++i) {
    RawClient c;
    if (c.Connect(port)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

// nginx as a production reverse proxy would be set up for a model API:
// HTTP/1.1 with kept-alive upstream connections, responses not buffered
// (SSE goes out event by event), an access log.
std::string NginxConfig(const std::string& prefix, int port, int upstream_port) {
  // (Appended piece by piece: g++ 12 warns falsely, -Wrestrict, on
  // "literal" + std::string.)
  std::string c;
  auto add = [&c](std::initializer_list<std::string_view> parts) {
    for (std::string_view p : parts) c.append(p);
  };
  const std::string up = std::to_string(upstream_port);
  const std::string listen = std::to_string(port);
  add({"worker_processes auto;\ndaemon off;\n"});
  add({"pid ", prefix, "/nginx.pid;\nerror_log ", prefix, "/error.log warn;\n"});
  if (::geteuid() == 0) add({"user root;\n"});
  add({"events { worker_connections 4096; }\nhttp {\n"});
  add({"  access_log ", prefix, "/access.log;\n"});
  for (std::string_view t : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"}) {
    add({"  ", t, "_temp_path ", prefix, "/", t, ";\n"});
  }
  add({"  client_max_body_size 32m;\n  keepalive_requests 100000;\n"});
  add({"  upstream model {\n    server 127.0.0.1:", up, ";\n    keepalive 256;\n",
       "    keepalive_requests 100000;\n  }\n"});
  add({"  server {\n    listen 127.0.0.1:", listen, ";\n"});
  add({"    location / {\n      proxy_pass http://model;\n      proxy_http_version 1.1;\n",
       "      proxy_set_header Connection \"\";\n      proxy_buffering off;\n",
       "      proxy_read_timeout 600s;\n    }\n  }\n}\n"});
  return c;
}

struct Peer {
  pid_t pid = -1;
  int port = 0;
};

Peer StartNginx(const Flags& f, const std::string& dir, int upstream_port) {
  Peer p;
  std::string prefix = dir + "/nginx";
  std::filesystem::create_directories(prefix);
  p.port = FreePort();
  std::ofstream(prefix + "/nginx.conf") << NginxConfig(prefix, p.port, upstream_port);
  p.pid = Spawn({f.nginx, "-p", prefix, "-c", prefix + "/nginx.conf"}, prefix + "/stderr", nullptr);
  if (!WaitListening(p.port)) p.port = 0;
  return p;
}

// compactor serve with nothing to compact: a window far above the requests,
// the offline summarizer (no summary calls), its own store.
Peer StartCompactor(const Flags& f, const std::string& dir, int upstream_port) {
  Peer p;
  int out = -1;
  std::string store = dir + "/store";
  p.pid = Spawn({f.compactor, "serve", "--listen", "127.0.0.1:0", "--upstream",
                 "http://127.0.0.1:" + std::to_string(upstream_port), "--store", store,
                 "--context-window", "1000000", "--summarizer", "offline"},
                dir + "/serve.log", &out);
  std::string line;
  char ch;
  while (::read(out, &ch, 1) == 1 && ch != '\n') line += ch;
  ::close(out);
  auto colon = line.rfind(':');
  if (line.rfind("listening on http://", 0) == 0 && colon != std::string::npos) {
    p.port = std::atoi(line.c_str() + colon + 1);
  }
  return p;
}

enum Target { kDirect, kNginx, kCompactor, kTargets };
constexpr std::array<const char*, kTargets> kTargetNames = {"direct", "nginx", "compactor"};

std::string RequestFor(int stream, bool sse) {
  auto body = compactor::testing::AnthropicRequest(3, 40);
  body["stream"] = sse;
  return RequestBytes("POST", "/v1/messages",
                      {{"content-type", "application/json"},
                       {"x-api-key", "bench-key"},
                       {"anthropic-version", "2023-06-01"},
                       {"x-claude-code-session-id", "bench-stream-" + std::to_string(stream)}},
                      body.dump());
}

struct Samples {
  std::array<std::vector<double>, kTargets> us;  // one per request
  // Paired: each proxied request minus the direct request of the same round
  // of the same stream (sent back to back with it), for nginx and compactor.
  std::array<std::vector<double>, kTargets> paired;
  int failures = 0;
};

constexpr int kWarmup = 3;  // requests per stream and target before the measured ones

// One stream: `n` requests to each target in rotating order (plus warm-up).
void RunStream(const std::array<int, kTargets>& ports, int stream, bool sse, int n, Samples* out) {
  std::array<RawClient, kTargets> clients;
  for (int t = 0; t < kTargets; ++t) {
    if (!clients[t].Connect(ports[t])) {
      ++out->failures;
      return;
    }
  }
  const std::string req = RequestFor(stream, sse);
  for (int i = 0; i < n + kWarmup; ++i) {
    std::array<double, kTargets> round_us = {-1, -1, -1};
    for (int k = 0; k < kTargets; ++k) {
      const int t = (i + k + stream) % kTargets;
      auto start = Clock::now();
      bool ok = clients[t].Send(req);
      auto r = ok ? clients[t].Read() : std::nullopt;
      auto us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
      if (!r || r->status != 200 || r->body.empty()) {
        ++out->failures;
        clients[t].Connect(ports[t]);
        continue;
      }
      if (i >= kWarmup) out->us[t].push_back(us);
      round_us[t] = us;
    }
    if (i < kWarmup || round_us[kDirect] < 0) continue;
    for (int t : {kNginx, kCompactor}) {
      if (round_us[t] >= 0) out->paired[t].push_back(round_us[t] - round_us[kDirect]);
    }
  }
}

// CPU time (ns) spent so far by every thread of `pid` and of its child
// processes (nginx's workers), from /proc/PID/task/TID/schedstat: with the
// requests counted, the CPU per request of each proxy, which the load of a
// shared machine disturbs far less than the latencies.
int64_t CpuNs(pid_t pid) {
  int64_t total = 0;
  std::error_code ec;
  std::vector<pid_t> children;
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& t : std::filesystem::directory_iterator(task, ec)) {
    std::ifstream in(t.path() / "schedstat");
    int64_t ns = 0;
    if (in >> ns) total += ns;
    std::ifstream kids(t.path() / "children");
    for (pid_t c; kids >> c;) children.push_back(c);
  }
  for (pid_t c : children) total += CpuNs(c);
  return total;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::lround(p * static_cast<double>(v.size() - 1)));
  return v[std::min(i, v.size() - 1)];
}

struct Figures {
  std::array<double, kTargets> p50{};
  std::array<double, kTargets> p99{};
  // Percentiles of the paired differences (Samples::paired).
  std::array<double, kTargets> paired50{};
  std::array<double, kTargets> paired99{};
  int failures = 0;
  size_t count = 0;
  double nginx_cpu_us = 0;  // CPU per request of each proxy
  double compactor_cpu_us = 0;
};

Figures Measure(const std::array<int, kTargets>& ports, const std::array<pid_t, kTargets>& pids,
                int streams, bool sse, int n) {
  const int64_t nginx_before = CpuNs(pids[kNginx]);
  const int64_t compactor_before = CpuNs(pids[kCompactor]);
  std::vector<Samples> per(streams);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(streams));
  for (int s = 0; s < streams; ++s) {
    threads.emplace_back(RunStream, ports, s, sse, n, &per[s]);
  }
  for (auto& t : threads) t.join();
  Figures f;
  std::array<std::vector<double>, kTargets> all;
  std::array<std::vector<double>, kTargets> paired;
  for (const auto& s : per) {
    f.failures += s.failures;
    for (int t = 0; t < kTargets; ++t) {
      all[t].insert(all[t].end(), s.us[t].begin(), s.us[t].end());
      paired[t].insert(paired[t].end(), s.paired[t].begin(), s.paired[t].end());
    }
  }
  for (int t = 0; t < kTargets; ++t) {
    f.p50[t] = Percentile(all[t], 0.50);
    f.p99[t] = Percentile(all[t], 0.99);
    f.paired50[t] = Percentile(paired[t], 0.50);
    f.paired99[t] = Percentile(paired[t], 0.99);
  }
  f.count = all[kDirect].size();
  // Warm-up requests included: every request a proxy served.
  const double served = static_cast<double>(streams) * (n + kWarmup);
  f.nginx_cpu_us = static_cast<double>(CpuNs(pids[kNginx]) - nginx_before) / 1000.0 / served;
  f.compactor_cpu_us =
      static_cast<double>(CpuNs(pids[kCompactor]) - compactor_before) / 1000.0 / served;
  return f;
}

long RssKb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

// Memory per idle conversation: `n` distinct conversations (their own
// session ids and first messages), one non-streaming request each, through a
// fresh serve process; RSS after (recorder flushed) minus before, over n.
bool MeasureMemory(const Flags& f, const std::string& dir, int upstream_port, int n) {
  std::filesystem::create_directories(dir);
  Peer serve = StartCompactor(f, dir, upstream_port);
  if (serve.port == 0) return false;
  auto send = [&](int from, int to) {
    RawClient c;
    if (!c.Connect(serve.port)) return false;
    for (int i = from; i < to; ++i) {
      auto body = compactor::testing::AnthropicRequest(3, 40);
      body["messages"][0]["content"] = "conversation " + std::to_string(i);
      std::string req = RequestBytes("POST", "/v1/messages",
                                     {{"content-type", "application/json"},
                                      {"x-api-key", "bench-key"},
                                      {"x-claude-code-session-id", "idle-" + std::to_string(i)}},
                                     body.dump());
      if (!c.Send(req)) return false;
      auto r = c.Read();
      if (!r || r->status != 200) return false;
    }
    return true;
  };
  const int warm = 50;
  bool ok = send(0, warm);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  long before = RssKb(serve.pid);
  ok = ok && send(warm, warm + n);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the recorder's batch
  long after = RssKb(serve.pid);
  Stop(serve.pid, SIGTERM);
  std::printf("memory: %d idle conversations: RSS %ld kB -> %ld kB: %.0f bytes per conversation\n",
              n, before, after, static_cast<double>(after - before) * 1024.0 / n);
  return ok && before > 0 && after > 0;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

double Median(std::vector<double> v) { return Percentile(std::move(v), 0.5); }

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--compactor")
      f.compactor = next();
    else if (a == "--nginx")
      f.nginx = next();
    else if (a == "--rounds")
      f.rounds = std::atoi(next().c_str());
    else if (a == "--requests-1")
      f.requests_1 = std::atoi(next().c_str());
    else if (a == "--requests-64")
      f.requests_64 = std::atoi(next().c_str());
    else if (a == "--conversations")
      f.conversations = std::atoi(next().c_str());
    else if (a == "--quick")
      f.quick = true;
    else if (a == "--mode")
      f.mode = next();
    else {
      std::fprintf(stderr, "unknown flag %s\n", a.c_str());
      std::exit(2);
    }
  }
  if (f.quick) {
    f.rounds = 1;
    f.conversations = 100;
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f = ParseFlags(argc, argv);
  if (f.compactor.empty()) {
    std::fprintf(stderr,
                 "usage: serve_bench --compactor PATH [--nginx PATH] [--rounds N] "
                 "[--requests-1 N] [--requests-64 N] [--conversations N] [--quick] "
                 "[--mode sse|json|both]\n");
    return 2;
  }
  if (::access(f.nginx.c_str(), X_OK) != 0) {
    std::fprintf(stderr,
                 "serve_bench: %s is not installed: the peer of this benchmark is Debian's nginx "
                 "(scripts/setup.sh installs it; apt-get install nginx), or pass --nginx PATH\n",
                 f.nginx.c_str());
    return 1;
  }
  ::signal(SIGPIPE, SIG_IGN);
  char tmpl[] = "/tmp/serve_bench.XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  FakeUpstream upstream;
  if (!upstream.Start()) return 1;
  Peer nginx = StartNginx(f, dir, upstream.port());
  Peer serve = StartCompactor(f, dir, upstream.port());
  int rc = 0;
  if (nginx.port == 0 || serve.port == 0) {
    std::fprintf(stderr, "could not start %s\n", nginx.port == 0 ? "nginx" : "compactor serve");
    rc = 1;
  }
  const std::array<int, kTargets> ports = {upstream.port(), nginx.port, serve.port};
  const std::array<pid_t, kTargets> pids = {::getpid(), nginx.pid, serve.pid};
  std::printf("load average at start: %s\n", LoadAverage().c_str());
  std::printf("%-6s %-7s %5s %8s | %9s %9s | %9s %9s %9s %9s | %6s %6s | %7s %7s %5s\n", "round",
              "mode", "conc", "requests", "direct50", "direct99", "nginx+50", "nginx+99",
              "compac+50", "compac+99", "r50", "r99", "ngx-cpu", "cmp-cpu", "rcpu");
  // key: mode/concurrency; value: per-round added latencies, ratios, CPU.
  constexpr int kColumns = 15;
  std::map<std::string, std::array<std::vector<double>, kColumns>> summary;
  for (int round = 1; rc == 0 && round <= f.rounds; ++round) {
    for (int streams : {1, 64}) {
      for (bool sse : {true, false}) {
        if (f.mode != "both" && f.mode != (sse ? "sse" : "json")) continue;
        int n = streams == 1 ? f.requests_1 : f.requests_64;
        if (f.quick) n = streams == 1 ? 20 : 3;
        Figures m = Measure(ports, pids, streams, sse, n);
        double n50 = m.p50[kNginx] - m.p50[kDirect], n99 = m.p99[kNginx] - m.p99[kDirect];
        double c50 = m.p50[kCompactor] - m.p50[kDirect], c99 = m.p99[kCompactor] - m.p99[kDirect];
        double rcpu = m.compactor_cpu_us / m.nginx_cpu_us;
        const char* mode = sse ? "sse" : "json";
        std::printf(
            "%-6d %-7s %5d %8zu | %9.0f %9.0f | %9.0f %9.0f %9.0f %9.0f | %6.2f %6.2f | %7.0f "
            "%7.0f %5.2f\n",
            round, mode, streams, m.count, m.p50[kDirect], m.p99[kDirect], n50, n99, c50, c99,
            c50 / n50, c99 / n99, m.nginx_cpu_us, m.compactor_cpu_us, rcpu);
        std::fflush(stdout);
        if (m.failures > 0 || m.count == 0) {
          std::fprintf(stderr, "%d failed requests (%s, %d streams)\n", m.failures, mode, streams);
          rc = 1;
        }
        auto& s = summary[std::string(mode) + " " + std::to_string(streams)];
        const double pn50 = m.paired50[kNginx], pn99 = m.paired99[kNginx];
        const double pc50 = m.paired50[kCompactor], pc99 = m.paired99[kCompactor];
        const std::array<double, kColumns> row = {
            n50,  n99,  c50,  c99,  c50 / n50, c99 / n99,   m.nginx_cpu_us, m.compactor_cpu_us,
            rcpu, pn50, pn99, pc50, pc99,      pc50 / pn50, pc99 / pn99};
        for (int i = 0; i < kColumns; ++i) s[i].push_back(row[i]);
      }
    }
  }
  std::printf("load average at end: %s\n", LoadAverage().c_str());
  std::printf("\nadded latency (us), median [min-max] of %d rounds:\n", f.rounds);
  std::printf("%-9s | %-20s %-20s | %-20s %-20s | %-18s %-18s\n", "mode", "nginx p50", "nginx p99",
              "compactor p50", "compactor p99", "ratio p50", "ratio p99");
  for (auto& [key, s] : summary) {
    std::printf("%-9s |", key.c_str());
    for (int i = 0; i < 6; ++i) {
      auto [lo, hi] = std::minmax_element(s[i].begin(), s[i].end());
      std::printf(i < 4 ? " %6.0f [%5.0f-%5.0f]" : " %5.2f [%4.2f-%4.2f]", Median(s[i]), *lo, *hi);
      if (i == 3) std::printf(" |");
    }
    std::printf("\n");
  }
  std::printf(
      "\nadded latency, paired (us; each proxied request minus the direct request sent right "
      "before or after it by the same stream), median [min-max] of %d rounds:\n",
      f.rounds);
  std::printf("%-9s | %-20s %-20s | %-20s %-20s | %-18s %-18s\n", "mode", "nginx p50", "nginx p99",
              "compactor p50", "compactor p99", "ratio p50", "ratio p99");
  for (auto& [key, s] : summary) {
    std::printf("%-9s |", key.c_str());
    for (int i = 9; i < kColumns; ++i) {
      auto [lo, hi] = std::minmax_element(s[i].begin(), s[i].end());
      std::printf(i < 13 ? " %6.0f [%5.0f-%5.0f]" : " %5.2f [%4.2f-%4.2f]", Median(s[i]), *lo, *hi);
      if (i == 12) std::printf(" |");
    }
    std::printf("\n");
  }
  std::printf("\nCPU per request (us, every thread of the proxy), median [min-max] of %d rounds:\n",
              f.rounds);
  std::printf("%-9s | %-20s %-20s %-18s\n", "mode", "nginx", "compactor", "ratio");
  for (auto& [key, s] : summary) {
    std::printf("%-9s |", key.c_str());
    for (int i = 6; i < 9; ++i) {
      auto [lo, hi] = std::minmax_element(s[i].begin(), s[i].end());
      std::printf(i < 8 ? " %6.1f [%5.1f-%5.1f]" : " %5.2f [%4.2f-%4.2f]", Median(s[i]), *lo, *hi);
    }
    std::printf("\n");
  }
  Stop(nginx.pid, SIGQUIT);
  Stop(serve.pid, SIGTERM);
  if (rc == 0 && !MeasureMemory(f, dir + "/memory", upstream.port(), f.conversations)) {
    std::fprintf(stderr, "the memory measurement failed\n");
    rc = 1;
  }
  upstream.Stop();
  std::filesystem::remove_all(dir);
  return rc;
}
