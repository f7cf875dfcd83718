// Trace summary: what `parallax trace summary FILE...` prints — where the steps of one or
// more Chrome trace-event files (timeline.h; one per rank) spent their time.
//
// Terms:
//  - a *span* is a complete event ("X"), or a "B"/"E" pair of one thread (matched last
//    in, first out); other phases are ignored, except the "process_name" metadata that
//    names a pid. ts and dur are microseconds.
//  - a span's *self time* is its interval minus the spans nested in it on its thread
//    (a step holds its ops; an op running a function holds the function's ops).
//  - *compute* is the self time of "op" spans, *communication* that of "collective"
//    spans, *input* that of "input" spans (categories of timeline.h).
//  - the *window* is the union of the process's "step" spans: only time inside a step is
//    counted (initialisation, evaluation and the final checkpoint are not). A trace
//    without step spans is counted whole, as one step.
//  - *exposed communication* is communication time during which no compute of the same
//    process ran on any thread: the part of the step the collectives add. The *overlap*
//    is 1 - exposed / communication (0 when there is no communication).
// Every figure is per process (pid: a rank) and per step (the mean over its steps); the
// top ops add up every process's self time inside the window by op (the "op" argument,
// else the span's name).
#ifndef PARALLAX_LIB_RUNTIME_TRACE_SUMMARY_H_
#define PARALLAX_LIB_RUNTIME_TRACE_SUMMARY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace parallax {

struct TraceSpan {
  std::string name;
  std::string category;
  std::string op;         // args.op, when given
  std::string pid, tid;   // as written (numbers printed in decimal)
  double start_us = 0;
  double duration_us = 0;
  int64_t bytes = -1;     // args.bytes, when given
  double flops = -1;         // args.flops (an op's work, op_work.h), when given
  double memory_bytes = -1;  // args.memory_bytes, when given
};

struct Trace {
  std::string path;
  std::vector<TraceSpan> spans;
  std::vector<std::pair<std::string, std::string>> process_names;  // pid -> name
};

// Reads a trace-event file: a JSON object with a "traceEvents" array, or a bare array
// of events. Errors name the file: not JSON (with the byte offset), no events array, an
// X event without a number ts or dur (naming the event by index and name), a "B" without
// its "E" or an "E" without a "B", no span at all.
StatusOr<Trace> ReadTrace(const std::string& path);

struct ProcessSummary {
  std::string pid;
  std::string name;           // process_name, or "pid N"
  std::string path;           // the file it came from
  int64_t steps = 0;
  // Per step, in microseconds:
  double step_us = 0;
  double compute_us = 0;
  double communication_us = 0;
  double exposed_communication_us = 0;
  double input_us = 0;
  double collective_bytes = 0;  // per step: the payload of the collectives in the window
  double overlap() const {
    return communication_us > 0 ? 1 - exposed_communication_us / communication_us : 0;
  }
};

struct OpTotal {
  std::string op;
  std::string category;  // of its first span
  int64_t count = 0;
  double self_us = 0;    // over every process, inside the window
};

struct TraceSummary {
  std::vector<ProcessSummary> processes;  // by file, then pid
  std::vector<OpTotal> ops;               // by self time, largest first
  double window_us = 0;                   // the windows' lengths, every process added
};

TraceSummary SummarizeTraces(const std::vector<Trace>& traces);

// One process's steps, for a profile of its ops (lib/estimate/op_profile.h): inside its
// "step" spans after the first `skip_steps` (by start), the mean step and each "op"
// span's self time per step, by the span's name (a node's name; a node that runs several
// times a step, in a loop, adds up), the work the op spans say they did (args flops and
// memory_bytes, op_work.h) per step by name, and the collectives' self time per step.
// The trace must hold one process. Errors name the file: several processes, no step
// after `skip_steps`.
struct OpWorkPerStep {
  double flops = 0;
  double memory_bytes = 0;
  double runs = 0;  // kernel runs (spans) per step
};
struct StepProfile {
  int64_t steps = 0;  // the steps measured
  double step_us = 0;
  std::map<std::string, double> op_self_us;
  std::map<std::string, OpWorkPerStep> op_work;  // the op spans that carry work
  double collective_self_us = 0;  // every "collective" span's self time, per step
};
StatusOr<StepProfile> ProfileSteps(const Trace& trace, int skip_steps);

// The summary as a table (per process), then the `top` largest ops.
std::string FormatTraceSummary(const TraceSummary& summary, int top);
// ... as one JSON object: {"processes": [...], "ops": [...]} (the `top` largest ops).
std::string TraceSummaryJson(const TraceSummary& summary, int top);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_TRACE_SUMMARY_H_
