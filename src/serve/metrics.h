// The service's metrics in Prometheus' text exposition format (version
// 0.0.4), served at GET /metrics. Written by hand: Debian 12 packages no
// Prometheus client library for C++, and the format is a few lines of text.
//
// Thread safety: every method may be called from any thread; counters and
// histograms are lock-free, label sets take a mutex on first use only.
#ifndef COMPACTOR_SRC_SERVE_METRICS_H_
#define COMPACTOR_SRC_SERVE_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace compactor::serve {

class Counter {
 public:
  void Add(int64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

class Gauge {
 public:
  void Add(int64_t n) { value_.fetch_add(n, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// Durations in seconds, cumulative buckets as Prometheus expects.
class Histogram {
 public:
  static constexpr std::array<double, 14> kBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                     0.25,  0.5,    1,     2.5,  10,    30,   120};
  void ObserveMicros(int64_t micros);
  // Appends the _bucket, _sum and _count lines of `name` (with `labels`, may be empty).
  void Render(std::string_view name, std::string_view labels, std::string& out) const;

 private:
  std::array<std::atomic<int64_t>, kBounds.size() + 1> buckets_{};  // last: +Inf
  std::atomic<int64_t> sum_micros_{0};
  std::atomic<int64_t> count_{0};
};

class Metrics {
 public:
  Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // compactor_requests_total{route,status}: every request the service answered.
  void CountRequest(std::string_view route, int status);
  // compactor_upstream_latency_seconds{route}: from sending a request upstream
  // to its response head.
  void ObserveUpstreamLatency(std::string_view route, int64_t micros);
  // compactor_upstream_errors_total{kind}: "connect", "timeout", "reset", "other".
  void CountUpstreamError(std::string_view kind);

  // Counters the compaction and store code increments.
  Counter& compactions() { return compactions_; }    // compactor_compactions_total
  Counter& tokens_saved() { return tokens_saved_; }  // compactor_tokens_saved_total
  Counter& summary_cache_hits() {
    return summary_cache_hits_;
  }                                                          // compactor_summary_cache_hits_total
  Counter& overflow_retries() { return overflow_retries_; }  // compactor_overflow_retries_total
  Counter& client_disconnects() {
    return client_disconnects_;
  }                                          // compactor_client_disconnects_total
  Gauge& in_flight() { return in_flight_; }  // compactor_requests_in_flight

  // Registers another counter (name without the _total suffix is accepted
  // as given); returns the existing one when the name is taken. The pointer
  // lives as long as the Metrics.
  Counter* AddCounter(const std::string& name, const std::string& help);

  // The whole exposition text.
  std::string Render() const;

 private:
  struct Extra {
    std::string name;
    std::string help;
    std::unique_ptr<Counter> counter;
  };

  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, std::unique_ptr<Counter>> requests_;
  std::map<std::string, std::unique_ptr<Histogram>> upstream_latency_;
  std::map<std::string, std::unique_ptr<Counter>> upstream_errors_;
  std::vector<Extra> extra_;
  Counter compactions_;
  Counter tokens_saved_;
  Counter summary_cache_hits_;
  Counter overflow_retries_;
  Counter client_disconnects_;
  Gauge in_flight_;
};

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_METRICS_H_
