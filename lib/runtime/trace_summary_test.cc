#include "lib/runtime/trace_summary.h"

#include <unistd.h>

#include <filesystem>
#include <map>

#include <catch2/catch.hpp>

#include "lib/base/file.h"

namespace parallax {
namespace {

// Writes `text` to a fresh file and reads it as a trace.
StatusOr<Trace> Read(const std::string& text, const std::string& name = "t.json") {
  const std::string dir = fmt::format("{}/trace_summary_test.{}", std::filesystem::temp_directory_path().string(), ::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + name;
  REQUIRE(WriteFileAtomically(path, text).ok());
  StatusOr<Trace> trace = ReadTrace(path);
  if (!trace.ok()) {
    // Messages name the file: make them independent of the directory.
    std::string message = trace.status().message();
    if (message.starts_with(dir + "/")) message.erase(0, dir.size() + 1);
    return InvalidArgumentError("{}", message);
  }
  return trace;
}

Trace MustRead(const std::string& text) {
  StatusOr<Trace> trace = Read(text);
  if (!trace.ok()) FAIL(trace.status().message());
  return std::move(trace).value();
}

std::string X(const std::string& name, const std::string& cat, int tid, double ts, double dur,
              const std::string& args = "{}") {
  return fmt::format(R"({{"name": "{}", "cat": "{}", "ph": "X", "pid": 0, "tid": {}, "ts": {}, )"
                     R"("dur": {}, "args": {}}})",
                     name, cat, tid, ts, dur, args);
}

TEST_CASE("communication no compute overlaps is exposed; overlap is the rest") {
  // One step of 100 us: compute on thread 1 [0, 60), an all-reduce on thread 2 [40, 80):
  // 20 us of it overlap compute, 20 us are exposed.
  const Trace trace = MustRead(
      "{\"traceEvents\": [" + X("step 1", "step", 1, 1000, 100) + ", " +
      X("matmul", "op", 1, 1000, 60, R"({"op": "MatMul"})") + ", " +
      X("w/allreduce", "collective", 2, 1040, 40, R"({"op": "CollectiveReduceV2", "bytes": 400})") +
      ", " + R"({"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "rank 0 of 2"}})" +
      "]}");
  const TraceSummary summary = SummarizeTraces({trace});
  REQUIRE(summary.processes.size() == 1);
  const ProcessSummary& p = summary.processes[0];
  CHECK(p.name == "rank 0 of 2");
  CHECK(p.steps == 1);
  CHECK(p.step_us == Approx(100));
  CHECK(p.compute_us == Approx(60));
  CHECK(p.communication_us == Approx(40));
  CHECK(p.exposed_communication_us == Approx(20));
  CHECK(p.overlap() == Approx(0.5));
  CHECK(p.collective_bytes == Approx(400));
  REQUIRE(summary.ops.size() == 2);
  CHECK(summary.ops[0].op == "MatMul");
  CHECK(summary.ops[0].self_us == Approx(60));
  CHECK(summary.ops[1].op == "CollectiveReduceV2");
}

TEST_CASE("self time leaves out nested spans; only time inside steps counts") {
  // Before the step: an initialiser (not counted). In the step: an op [10, 50) holding a
  // function's op [20, 30) and a collective [40, 45); sequential, so nothing overlaps.
  const Trace trace = MustRead(
      "[" + X("init", "op", 1, 0, 5, R"({"op": "Assign"})") + ", " +
      X("step 1", "step", 1, 10, 50) + ", " + X("map", "op", 1, 10, 40, R"({"op": "MapDataset"})") +
      ", " + X("inner", "op", 1, 20, 10, R"({"op": "Mul"})") + ", " +
      X("nested/allreduce", "collective", 1, 40, 5, R"({"op": "CollectiveReduceV2"})") + "]");
  const TraceSummary summary = SummarizeTraces({trace});
  const ProcessSummary& p = summary.processes.at(0);
  CHECK(p.step_us == Approx(50));
  CHECK(p.compute_us == Approx(35));  // map's 25 us of self time + inner's 10
  CHECK(p.communication_us == Approx(5));
  CHECK(p.exposed_communication_us == Approx(5));
  CHECK(p.overlap() == Approx(0));
  std::map<std::string, double> self;
  for (const OpTotal& op : summary.ops) self[op.op] = op.self_us;
  CHECK(self == std::map<std::string, double>{{"MapDataset", 25}, {"Mul", 10},
                                              {"CollectiveReduceV2", 5}});
}

TEST_CASE("a step profile: self time per node per step after the skipped steps") {
  // Step 1 (skipped) [0, 100); steps 2 and 3 [100, 130) and [200, 250). Node "a" runs
  // twice in step 3 (a loop) and holds "inner" once; "b" runs in step 2.
  const Trace trace = MustRead(
      "[" + X("step 1", "step", 1, 0, 100) + ", " + X("a", "op", 1, 10, 50) + ", " +
      X("step 2", "step", 1, 100, 30) + ", " + X("b", "op", 1, 105, 20) + ", " +
      X("step 3", "step", 1, 200, 50) + ", " + X("a", "op", 1, 200, 10) + ", " +
      X("a", "op", 1, 215, 30) + ", " + X("inner", "op", 1, 220, 10) + ", " +
      X("w/allreduce", "collective", 1, 246, 4) + "]");
  StatusOr<StepProfile> profile = ProfileSteps(trace, 1);
  REQUIRE(profile.ok());
  CHECK(profile->steps == 2);
  CHECK(profile->step_us == Approx(40));
  CHECK(profile->op_self_us == std::map<std::string, double>{{"a", 15}, {"b", 10}, {"inner", 5}});
  CHECK(profile->collective_self_us == Approx(2));
  StatusOr<StepProfile> none = ProfileSteps(trace, 3);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().ends_with("t.json: 3 steps, none after the first 3 (run more steps)"));
  // A job's traces read as one: refused.
  Trace two = trace;
  two.spans.back().pid = "1";
  StatusOr<StepProfile> mixed = ProfileSteps(two, 1);
  REQUIRE_FALSE(mixed.ok());
  CHECK(mixed.status().message().ends_with("t.json: spans of processes 0 and 1: a profile is of one process"));
}

TEST_CASE("B/E pairs are spans; a trace without steps counts whole") {
  const Trace trace = MustRead(R"({"traceEvents": [
    {"name": "a", "cat": "op", "ph": "B", "pid": 7, "tid": 1, "ts": 0},
    {"name": "b", "cat": "collective", "ph": "B", "pid": 7, "tid": 1, "ts": 2},
    {"ph": "E", "pid": 7, "tid": 1, "ts": 6},
    {"ph": "E", "pid": 7, "tid": 1, "ts": 10},
    {"name": "counter", "ph": "C", "pid": 7, "ts": 3, "args": {"x": 1}}]})");
  REQUIRE(trace.spans.size() == 2);
  const TraceSummary summary = SummarizeTraces({trace});
  const ProcessSummary& p = summary.processes.at(0);
  CHECK(p.name == "pid 7");
  CHECK(p.steps == 1);
  CHECK(p.step_us == Approx(10));
  CHECK(p.compute_us == Approx(6));
  CHECK(p.communication_us == Approx(4));
  CHECK(p.exposed_communication_us == Approx(4));
}

TEST_CASE("bad trace files get one line naming the file and the event") {
  CHECK(Read("{\"traceEvents\": [").status().message() ==
        "t.json: not JSON at byte 17: syntax error while parsing value - unexpected end of "
        "input; expected '[', '{', or a literal");
  CHECK(Read("{\"events\": []}").status().message() ==
        "t.json: not a trace: expected an array of events or an object with \"traceEvents\"");
  CHECK(Read("[]").status().message() == "t.json: no spans (\"X\", \"B\"/\"E\" events)");
  CHECK(Read(R"([{"name": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 5}])").status().message() ==
        "t.json: event 0 ('op'): a \"X\" event needs a number ts and dur");
  CHECK(Read(R"([{"ph": "E", "pid": 0, "tid": 1, "ts": 5}])").status().message() ==
        "t.json: event 0: an \"E\" event without a \"B\" before it on its thread");
  CHECK(Read(R"([{"name": "a", "ph": "B", "pid": 0, "tid": 1, "ts": 5}])").status().message() ==
        "t.json: event 0 ('a'): a \"B\" event without its \"E\"");
  CHECK(ReadTrace("/nonexistent/t.json").status().message().starts_with("/nonexistent/t.json: "));
}

TEST_CASE("the text and JSON summaries say the same figures") {
  const Trace trace = MustRead(
      "[" + X("step 1", "step", 1, 0, 2000) + ", " + X("m", "op", 1, 0, 1500, R"({"op": "MatMul"})") +
      ", " + X("r", "collective", 1, 1500, 500, R"({"op": "CollectiveReduceV2", "bytes": 2000000})") +
      "]");
  const TraceSummary summary = SummarizeTraces({trace});
  const std::string text = FormatTraceSummary(summary, 1);
  CHECK(text.find("pid 0                         1      2.000      1.500      0.000      0.500"
                  "        0.500     0.0%        2.000") != std::string::npos);
  CHECK(text.find("top 1 ops") != std::string::npos);
  CHECK(text.find("CollectiveReduceV2") == std::string::npos);  // only the top 1
  const std::string json = TraceSummaryJson(summary, 5);
  CHECK(json.find("\"exposed_communication_ms\": 0.5") != std::string::npos);
  CHECK(json.find("\"collective_bytes_per_step\": 2000000") != std::string::npos);
}

}  // namespace
}  // namespace parallax
