#include "serve/metrics.h"

#include <fmt/format.h>

namespace compactor::serve {
namespace {

// Label values are bounded (routes, status codes, error kinds) but escaped
// anyway as the format requires.
std::string Escape(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void Header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

void Histogram::ObserveMicros(int64_t micros) {
  double seconds = static_cast<double>(micros) / 1e6;
  size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_micros_.fetch_add(micros, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

void Histogram::Render(std::string_view name, std::string_view labels, std::string& out) const {
  std::string sep = labels.empty() ? "" : ",";
  int64_t cumulative = 0;
  for (size_t i = 0; i <= kBounds.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    std::string le = i < kBounds.size() ? fmt::format("{}", kBounds[i]) : "+Inf";
    fmt::format_to(std::back_inserter(out), "{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep,
                   le, cumulative);
  }
  std::string braces = labels.empty() ? std::string() : fmt::format("{{{}}}", labels);
  fmt::format_to(std::back_inserter(out), "{}_sum{} {}\n{}_count{} {}\n", name, braces,
                 static_cast<double>(sum_micros_.load(std::memory_order_relaxed)) / 1e6, name,
                 braces, count_.load(std::memory_order_relaxed));
}

Metrics::Metrics() = default;

void Metrics::CountRequest(std::string_view route, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& c = requests_[{std::string(route), status}];
  if (!c) c = std::make_unique<Counter>();
  c->Add();
}

void Metrics::ObserveUpstreamLatency(std::string_view route, int64_t micros) {
  Histogram* h;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = upstream_latency_[std::string(route)];
    if (!slot) slot = std::make_unique<Histogram>();
    h = slot.get();
  }
  h->ObserveMicros(micros);
}

void Metrics::CountUpstreamError(std::string_view kind) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& c = upstream_errors_[std::string(kind)];
  if (!c) c = std::make_unique<Counter>();
  c->Add();
}

Counter* Metrics::AddCounter(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Extra& e : extra_) {
    if (e.name == name) return e.counter.get();
  }
  extra_.push_back({name, help, std::make_unique<Counter>()});
  return extra_.back().counter.get();
}

std::string Metrics::Render() const {
  std::string out;
  std::lock_guard<std::mutex> lock(mu_);
  Header(out, "compactor_requests_total", "counter", "Requests answered, by route and status.");
  for (const auto& [key, c] : requests_) {
    fmt::format_to(std::back_inserter(out),
                   "compactor_requests_total{{route=\"{}\",status=\"{}\"}} {}\n", Escape(key.first),
                   key.second, c->value());
  }
  Header(out, "compactor_requests_in_flight", "gauge", "Requests being answered.");
  fmt::format_to(std::back_inserter(out), "compactor_requests_in_flight {}\n", in_flight_.value());
  Header(out, "compactor_upstream_latency_seconds", "histogram",
         "Time from forwarding a request to the upstream's response head.");
  for (const auto& [route, h] : upstream_latency_) {
    h->Render("compactor_upstream_latency_seconds", "route=\"" + Escape(route) + "\"", out);
  }
  Header(out, "compactor_upstream_errors_total", "counter",
         "Requests the upstream did not answer, by kind (connect, timeout, reset, other).");
  for (const auto& [kind, c] : upstream_errors_) {
    fmt::format_to(std::back_inserter(out), "compactor_upstream_errors_total{{kind=\"{}\"}} {}\n",
                   Escape(kind), c->value());
  }
  struct Plain {
    const char* name;
    const char* help;
    const Counter& c;
  };
  const Plain plain[] = {
      {"compactor_compactions_total", "Requests compacted before forwarding.", compactions_},
      {"compactor_tokens_saved_total", "Estimated input tokens removed by compaction.",
       tokens_saved_},
      {"compactor_summary_cache_hits_total", "Summaries served from the summary cache.",
       summary_cache_hits_},
      {"compactor_overflow_retries_total", "Upstream attempts retried after a context overflow.",
       overflow_retries_},
      {"compactor_client_disconnects_total",
       "Requests whose client went away before the answer was complete.", client_disconnects_},
  };
  for (const Plain& p : plain) {
    Header(out, p.name, "counter", p.help);
    fmt::format_to(std::back_inserter(out), "{} {}\n", p.name, p.c.value());
  }
  for (const Extra& e : extra_) {
    Header(out, e.name, "counter", e.help);
    fmt::format_to(std::back_inserter(out), "{} {}\n", e.name, e.counter->value());
  }
  return out;
}

}  // namespace compactor::serve
