// Op profiles: from a trace (the nodes' self time and work per step, the rest but
// collectives as overhead), and the JSON file round trip with its errors; version 1
// files (no work) still read.
#include "lib/estimate/op_profile.h"

#include <catch2/catch.hpp>

namespace parallax {
namespace {

TraceSpan Span(std::string name, std::string category, double start, double duration) {
  TraceSpan s;
  s.name = std::move(name);
  s.category = std::move(category);
  s.pid = "0";
  s.tid = "1";
  s.start_us = start;
  s.duration_us = duration;
  return s;
}

TEST_CASE("a profile from a trace: node times per step, the rest is overhead") {
  Trace trace;
  trace.path = "t.json";
  trace.spans = {Span("step 1", "step", 0, 500), Span("a", "op", 0, 400),
                 Span("step 2", "step", 1000, 100), Span("a", "op", 1000, 30),
                 Span("b", "op", 1040, 20), Span("input", "input", 1070, 20),
                 Span("w/allreduce", "collective", 1090, 10)};
  StatusOr<OpProfile> profile = ProfileFromTrace(trace, 1);
  REQUIRE(profile.ok());
  CHECK(profile->steps == 1);
  CHECK(profile->step_us == Approx(100));
  CHECK(profile->node_us == std::map<std::string, double>{{"a", 30}, {"b", 20}});
  CHECK(profile->overhead_us == Approx(40));  // the collective is not overhead
  CHECK(profile->node_work.empty());  // no span said its work
}

TEST_CASE("a profile from a trace: work per step, by node, over the timed steps") {
  Trace trace;
  trace.path = "t.json";
  auto with_work = [](TraceSpan s, double flops, double bytes) {
    s.flops = flops;
    s.memory_bytes = bytes;
    return s;
  };
  trace.spans = {Span("step 1", "step", 0, 500),     with_work(Span("a", "op", 0, 400), 1, 1),
                 Span("step 2", "step", 1000, 100),  with_work(Span("a", "op", 1000, 30), 2e6, 8e3),
                 with_work(Span("a", "op", 1040, 20), 2e6, 8e3),  // a second run in the step
                 Span("step 3", "step", 2000, 100),  with_work(Span("a", "op", 2000, 30), 2e6, 8e3),
                 with_work(Span("a", "op", 2040, 20), 2e6, 8e3)};
  StatusOr<OpProfile> profile = ProfileFromTrace(trace, 1);
  REQUIRE(profile.ok());
  REQUIRE(profile->node_work.count("a") == 1);
  const OpWorkPerStep& a = profile->node_work.at("a");
  CHECK(a.flops == Approx(4e6));
  CHECK(a.memory_bytes == Approx(16e3));
  CHECK(a.runs == Approx(2));
}

TEST_CASE("profile JSON round trip and errors") {
  OpProfile p;
  p.device = "test cpu (2 cores)";
  p.graph_fingerprint = "0123456789abcdef";
  p.batch = 64;
  p.threads = 2;
  p.processes = 2;
  p.steps = 20;
  p.step_us = 1234.5;
  p.overhead_us = 34.5;
  p.copy_bytes_per_s = 5e9;
  p.node_us = {{"dense/MatMul", 700}, {"loss", 500}};
  p.node_work = {{"dense/MatMul", {.flops = 2e9, .memory_bytes = 3e6, .runs = 1}},
                 {"loss", {.flops = 64, .memory_bytes = 512, .runs = 1}}};
  const std::string json = OpProfileToJson(p);
  StatusOr<OpProfile> back = ParseOpProfile(json, "p.json");
  REQUIRE(back.ok());
  CHECK(back->device == p.device);
  CHECK(back->batch == 64);
  CHECK(back->threads == 2);
  CHECK(back->processes == 2);
  CHECK(back->node_us == p.node_us);
  REQUIRE(back->node_work.size() == 2);
  CHECK(back->node_work.at("dense/MatMul").flops == Approx(2e9));
  CHECK(back->node_work.at("dense/MatMul").memory_bytes == Approx(3e6));
  CHECK(back->node_work.at("loss").runs == Approx(1));
  CHECK(back->copy_bytes_per_s == Approx(5e9));
  CHECK(OpProfileToJson(*back) == json);
  struct Case {
    std::string from, to, error;
  };
  const Case cases[] = {
      {"\"version\": 2", "\"version\": 3",
       "p.json: version: profile version 3 is not supported (this parallax reads versions 1 and "
       "2)"},
      {"\"batch\": 64", "\"batch\": 0", "p.json: batch: 0 is below 1"},
      {"\"threads\": 2", "\"threads\": \"2\"", "p.json: threads: missing or not a number"},
      {"\"dense/MatMul\": 700", "\"dense/MatMul\": -1",
       "p.json: node_us[\"dense/MatMul\"]: not a time (a number >= 0)"},
      {"{", "[", "p.json: not a profile: at byte 13: expected ',' or ']'"},
      {"\"node_us\": {", "\"node_us\": 3, \"x\": {", "p.json: node_us: missing or not an object"},
      {"\"node_work\": {", "\"node_work\": [], \"x\": {", "p.json: node_work: missing or not an object"},
      {"\"memory_bytes\": 512", "\"memory_bytes\": -512",
       "p.json: node_work[\"loss\"].memory_bytes: -512 is below 0"},
      {"\"flops\": 64", "\"flopz\": 64", "p.json: node_work[\"loss\"].flops: missing or not a number"},
  };
  for (const Case& c : cases) {
    std::string edited = json;
    const size_t at = edited.find(c.from);
    REQUIRE(at != std::string::npos);
    edited.replace(at, c.from.size(), c.to);
    StatusOr<OpProfile> bad = ParseOpProfile(edited, "p.json");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message() == c.error);
  }

  // Version 1 (before work was recorded) reads, without work.
  std::string v1 = json;
  v1.replace(v1.find("\"version\": 2"), 12, "\"version\": 1");
  v1.erase(v1.find(",\n  \"node_work\""));
  v1 += "\n}\n";
  StatusOr<OpProfile> old = ParseOpProfile(v1, "v1.json");
  REQUIRE(old.ok());
  CHECK(old->node_us == p.node_us);
  CHECK(old->node_work.empty());
}

}  // namespace
}  // namespace parallax
