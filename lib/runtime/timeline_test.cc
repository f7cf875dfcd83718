#include "lib/runtime/timeline.h"

#include <set>
#include <thread>

#include <catch2/catch.hpp>

#include "lib/graph/graph_io.h"
#include "lib/runtime/checkpoint/json_value.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/session.h"

namespace parallax {
namespace {

// The trace-event format's rules for the events a timeline writes ("JSON Object
// Format" of the Trace Event Format document): an object with a traceEvents array;
// every event has a string name and ph and an integer pid; "X" events a string cat,
// number ts and dur >= 0, an integer tid and an args object; "M" events args.name.
// Returns the first violation, or "".
std::string SchemaViolation(const JsonValue& root) {
  if (!root.is_object()) return "the root is not an object";
  const JsonValue* events = root.Find("traceEvents");
  if (events == nullptr || !events->is_array()) return "no traceEvents array";
  auto is_int = [](const JsonValue* v) {
    return v != nullptr && v->kind == JsonValue::Kind::kNumber && v->is_uint;
  };
  auto is_number = [](const JsonValue* v) {
    return v != nullptr && v->kind == JsonValue::Kind::kNumber;
  };
  for (size_t i = 0; i < events->array.size(); ++i) {
    const JsonValue& e = events->array[i];
    const std::string where = fmt::format("event {}", i);
    if (!e.is_object()) return where + ": not an object";
    const JsonValue* name = e.Find("name");
    const JsonValue* ph = e.Find("ph");
    if (name == nullptr || !name->is_string()) return where + ": no string name";
    if (ph == nullptr || !ph->is_string()) return where + ": no string ph";
    if (!is_int(e.Find("pid"))) return where + ": no integer pid";
    const JsonValue* args = e.Find("args");
    if (ph->string == "X") {
      const JsonValue* cat = e.Find("cat");
      if (cat == nullptr || !cat->is_string()) return where + ": no string cat";
      if (!is_number(e.Find("ts"))) return where + ": no number ts";
      if (!is_number(e.Find("dur")) || e.Find("dur")->number < 0) return where + ": bad dur";
      if (!is_int(e.Find("tid"))) return where + ": no integer tid";
      if (args == nullptr || !args->is_object()) return where + ": no args object";
    } else if (ph->string == "M") {
      if (args == nullptr || !args->is_object()) return where + ": no args object";
      if (args->Find("name") == nullptr && args->Find("sort_index") == nullptr) {
        return where + ": metadata without args.name or args.sort_index";
      }
    } else {
      return where + ": unexpected ph '" + ph->string + "'";
    }
  }
  return "";
}

JsonValue ParseTrace(const Timeline& timeline) {
  StatusOr<JsonValue> parsed = ParseJson(timeline.ToJson());
  if (!parsed.ok()) FAIL(parsed.status().message());
  return std::move(parsed).value();
}

TEST_CASE("spans become Chrome trace events: one tid per thread, args as recorded") {
  Timeline timeline(3, "rank 3 of 4");
  timeline.set_bytes_sent_counter([] { return int64_t{0}; });
  const auto t0 = Timeline::Clock::now();
  timeline.Add({.name = "step 1", .category = "step", .start = t0,
                .end = t0 + std::chrono::microseconds(100), .step = 1});
  std::thread other([&] {
    timeline.Add({.name = "w/allreduce", .category = "collective", .op = "CollectiveReduceV2",
                  .start = t0 + std::chrono::microseconds(10),
                  .end = t0 + std::chrono::microseconds(40), .bytes = 4096, .sent = 2048});
  });
  other.join();
  CHECK(timeline.size() == 2);
  const JsonValue root = ParseTrace(timeline);
  CHECK(SchemaViolation(root) == "");
  const std::vector<JsonValue>& events = root.Find("traceEvents")->array;
  std::set<std::string> seen;
  for (const JsonValue& e : events) {
    if (e.Find("ph")->string == "M") {
      seen.insert(e.Find("name")->string);
      if (e.Find("name")->string == "process_name") {
        CHECK(e.Find("args")->Find("name")->string == "rank 3 of 4");
      }
      continue;
    }
    CHECK(e.Find("pid")->uint == 3);
    const JsonValue& args = *e.Find("args");
    if (e.Find("name")->string == "step 1") {
      CHECK(e.Find("tid")->uint == 1);
      CHECK(e.Find("cat")->string == "step");
      CHECK(args.Find("step")->uint == 1);
      CHECK(e.Find("dur")->number == Approx(100));
    } else {
      CHECK(e.Find("tid")->uint == 2);
      CHECK(e.Find("cat")->string == "collective");
      CHECK(args.Find("op")->string == "CollectiveReduceV2");
      CHECK(args.Find("bytes")->uint == 4096);
      CHECK(args.Find("sent")->uint == 2048);
      CHECK(e.Find("dur")->number == Approx(30));
    }
  }
  CHECK(seen == std::set<std::string>{"process_name", "process_sort_index", "thread_name"});
  // Both spans' ts are microseconds since the Unix epoch (after 2020-01-01).
  CHECK(events.back().Find("ts")->number > 1.5778368e15);
}

TEST_CASE("a session's timeline gets one op span per kernel the executor runs, with its work") {
  StatusOr<Graph> graph = ParseGraph(R"pb(
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "y" op: "Neg" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "z" op: "Square" input: "y" attr { key: "T" value { type: DT_FLOAT } } }
  )pb", "test.pbtxt");
  REQUIRE(graph.ok());
  CpuDevice device(1);
  Executor executor(*graph, device);
  Timeline timeline(0, "test");
  executor.session().set_timeline(&timeline);
  REQUIRE(executor.Run({.feeds = {{"x", Tensor::Scalar<float>(3)}}, .fetches = {"z"}}).ok());
  executor.session().set_timeline(nullptr);
  REQUIRE(executor.Run({.feeds = {{"x", Tensor::Scalar<float>(3)}}, .fetches = {"z"}}).ok());
  const JsonValue root = ParseTrace(timeline);
  CHECK(SchemaViolation(root) == "");
  std::vector<std::string> spans;
  for (const JsonValue& e : root.Find("traceEvents")->array) {
    if (e.Find("ph")->string != "X") continue;
    const JsonValue& args = *e.Find("args");
    spans.push_back(e.Find("name")->string + " " + e.Find("cat")->string + " " +
                    args.Find("op")->string);
    // Each op's work (op_work.h): one float read and one written, one flop.
    CHECK(args.Find("flops")->number == 1);
    CHECK(args.Find("memory_bytes")->number == 8);
  }
  // The fed placeholder runs no kernel; the second run recorded nothing.
  CHECK(spans == std::vector<std::string>{"y op Neg", "z op Square"});
}

TEST_CASE("writing a timeline where it cannot be written names the path") {
  Timeline timeline(0, "test");
  CHECK(timeline.Write("/nonexistent-dir/t.json").message() ==
        "--timeline: /nonexistent-dir/t.json: cannot create: No such file or directory");
}

}  // namespace
}  // namespace parallax
