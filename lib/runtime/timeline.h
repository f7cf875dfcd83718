// Timeline: where a rank's time goes, recorded span by span and written as Chrome
// trace-event JSON (chrome://tracing, https://ui.perfetto.dev) — `parallax run
// --timeline FILE`, one file per rank in a job.
//
// Terms:
//  - a *span* is one interval of one thread's time: a trace "complete" event (ph "X")
//    with a start (ts) and a duration (dur), both in microseconds. Spans of one thread
//    nest (a step holds its ops; an op that runs a function holds the function's ops).
//  - *categories* (cat): "step" (one training step: its input, its train run, the
//    loss's all-reduce on the steps that report, its checkpoint), "input" (the step's
//    batch: the in-graph pipeline's run or the fed columns), "op" (a kernel),
//    "collective" (a kernel of an op the registry marks is_collective, or the trainer's
//    own all-reduces; args say its payload `bytes`, the bytes of its inputs but integer
//    scalars, and `sent`, what this rank handed the transport meanwhile), "checkpoint".
//    An "op" span's args also say its work (op_work.h): `flops` and `memory_bytes`.
//  - *time*: microseconds since the Unix epoch, read from a steady clock anchored to the
//    system clock once when the timeline is made, so one file's spans never go back in
//    time and the files of ranks on one host line up.
//  - threads are numbered 1, 2, ... in the order they first record (tid); pid is the
//    rank. A collective's span includes the time it waited for the other ranks.
//
// Recording is thread-safe (one mutex; a few hundred nanoseconds per span). Every span is
// kept in memory until Write: about 150 bytes each (a zoo MLP step records 67 spans).
#ifndef PARALLAX_LIB_RUNTIME_TIMELINE_H_
#define PARALLAX_LIB_RUNTIME_TIMELINE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lib/base/status.h"

namespace parallax {

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;

  struct Span {
    std::string name;      // a node's name, "step 12", ...
    std::string category;  // see the file comment
    std::string op;        // the op of an "op" or "collective" span, else empty
    Clock::time_point start;
    Clock::time_point end;
    int64_t step = -1;   // the step a "step" span is (1-based), else -1
    int64_t bytes = -1;  // a collective's payload, else -1
    int64_t sent = -1;   // bytes this rank handed the transport during a collective, else -1
    double flops = -1;         // an op's work (op_work.h), else -1
    double memory_bytes = -1;  // ...
  };

  // `rank` becomes the trace's pid; `process_name` names it ("rank 0 of 2").
  Timeline(int rank, std::string process_name);

  // The job's traffic counter (Communicator::bytes_sent), read around each collective
  // for its `sent`; without one, collectives have no `sent`.
  void set_bytes_sent_counter(std::function<int64_t()> counter) {
    bytes_sent_counter_ = std::move(counter);
  }
  // The counter's value, or -1 without one.
  int64_t BytesSent() const { return bytes_sent_counter_ ? bytes_sent_counter_() : -1; }

  // Records a span of the calling thread.
  void Add(Span span);

  size_t size() const;

  // The trace as Chrome trace-event JSON: {"traceEvents": [...], "displayTimeUnit": "ms",
  // "otherData": {...}}, metadata events naming the process and its threads first, then
  // the spans in the order they were recorded, one event per line.
  std::string ToJson() const;

  // Writes ToJson() to `path` atomically; errors name the path.
  Status Write(const std::string& path) const;

 private:
  struct Recorded {
    Span span;
    int tid;
  };
  double Micros(Clock::time_point t) const;

  const int rank_;
  const std::string process_name_;
  const Clock::time_point steady_origin_;
  const double unix_origin_us_;
  std::function<int64_t()> bytes_sent_counter_;
  mutable std::mutex mutex_;
  std::map<std::thread::id, int> thread_ids_;
  std::vector<Recorded> spans_;
};

// Times a span of the calling thread from construction to destruction; a null timeline
// records nothing and costs a branch.
class ScopedSpan {
 public:
  ScopedSpan(Timeline* timeline, std::string name, std::string category)
      : timeline_(timeline) {
    if (timeline_ != nullptr) {
      span_.name = std::move(name);
      span_.category = std::move(category);
      span_.start = Timeline::Clock::now();
    }
  }
  ~ScopedSpan() {
    if (timeline_ != nullptr) {
      if (!stopped_) span_.end = Timeline::Clock::now();
      timeline_->Add(std::move(span_));
    }
  }
  // Ends the span's interval now; what follows until destruction (filling in its args)
  // is not timed.
  void StopClock() {
    if (timeline_ != nullptr && !stopped_) span_.end = Timeline::Clock::now();
    stopped_ = true;
  }
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;
  Timeline::Span& span() { return span_; }
  // Records nothing after all.
  void Cancel() { timeline_ = nullptr; }

 private:
  Timeline* timeline_;
  Timeline::Span span_;
  bool stopped_ = false;
};

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_TIMELINE_H_
