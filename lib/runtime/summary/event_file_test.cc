// Tests of event files: the two TensorFlow wrote (BERT's MRPC fine-tuning, a TFX taxi
// Estimator), written scalars and summaries read back exactly, streaming reads of an
// open file, and the errors of writing and reading.
#include "lib/runtime/summary/event_file.h"

#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include <catch2/catch.hpp>

#include "lib/base/file.h"
#include "lib/runtime/data/tfrecord.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

struct Point {
  int64_t step;
  float value;
  friend bool operator==(const Point&, const Point&) = default;
};

// What a file holds: events by kind, scalar series and histogram counts by tag.
struct Contents {
  std::vector<tensorflow::Event> events;
  std::map<tensorflow::Event::WhatCase, int> kinds;
  std::map<std::string, std::vector<Point>> scalars;
  std::map<std::string, int> histograms;
};

Contents Read(const std::string& path) {
  StatusOr<std::vector<tensorflow::Event>> events = ReadEventFile(path);
  INFO(events.status().ToString());
  REQUIRE(events.ok());
  Contents contents;
  contents.events = std::move(*events);
  for (const tensorflow::Event& e : contents.events) {
    ++contents.kinds[e.what_case()];
    for (const tensorflow::Summary::Value& v : e.summary().value()) {
      if (v.has_simple_value()) contents.scalars[v.tag()].push_back({e.step(), v.simple_value()});
      if (v.has_histo()) ++contents.histograms[v.tag()];
    }
  }
  return contents;
}

std::string ErrorOf(const Status& status) {
  REQUIRE_FALSE(status.ok());
  return status.message();
}

TEST_CASE("Event files: BERT's MRPC fine-tuning run, with its loss scalars") {
  const std::optional<std::string> dir = testing::SharedDataPath("testdata/tf-files");
  if (!dir) return;
  const Contents c = Read(*dir + "/bert_mrpc/events.out.tfevents.1731714513.mrpc");
  REQUIRE(c.events.size() == 696);
  CHECK(c.events[0].file_version() == kEventFileVersion);
  CHECK(c.events[0].wall_time() == 1731714513.0);
  CHECK(c.kinds.at(tensorflow::Event::kSummary) == 688);
  CHECK(c.kinds.at(tensorflow::Event::kGraphDef) == 2);
  CHECK(c.kinds.at(tensorflow::Event::kMetaGraphDef) == 2);
  CHECK(c.kinds.at(tensorflow::Event::kSessionLog) == 3);
  // Estimator's loss summary ("loss_1"), every 100 steps and the last.
  CHECK(c.scalars.at("loss_1") == std::vector<Point>{{1, 0.689403117f},
                                                     {100, 0.667490065f},
                                                     {200, 0.447019339f},
                                                     {299, 0.213566601f}});
  CHECK(c.scalars.at("global_step/sec").size() == 342);
  CHECK(c.scalars.at("examples/sec").size() == 342);
  // Every event after the first has a wall time at or after the file's.
  for (const tensorflow::Event& e : c.events) CHECK(e.wall_time() >= c.events[0].wall_time());
}

TEST_CASE("Event files: a TFX taxi Estimator's run, with scalars and histograms") {
  const std::optional<std::string> dir = testing::SharedDataPath("testdata/tf-files");
  if (!dir) return;
  const Contents c = Read(*dir + "/tfx_taxi_estimator_ckpt/events.out.tfevents.1646034739.taxi");
  REQUIRE(c.events.size() == 28);
  CHECK(c.events[0].file_version() == kEventFileVersion);
  CHECK(c.kinds.at(tensorflow::Event::kSummary) == 19);
  const std::vector<Point>& loss = c.scalars.at("loss");
  REQUIRE(loss.size() == 10);
  CHECK(loss.front() == Point{1, 0.428026259f});
  CHECK(loss.back() == Point{901, 0.665361524f});
  for (size_t i = 1; i < loss.size(); ++i) CHECK(loss[i].step == loss[i - 1].step + 100);
  CHECK(c.scalars.size() == 10);
  CHECK(c.histograms.size() == 6);
  CHECK(c.histograms.at("dnn/hiddenlayer_0/activation") == 10);
}

TEST_CASE("Event files: scalars and summaries written are read back exactly") {
  const std::string dir = testing::TempDir() + "/logs/run1";  // created by the writer
  EventWriterOptions options;
  options.wall_time = 1700000000.25;
  options.hostname = "testhost";
  options.filename_suffix = ".v2";
  StatusOr<std::unique_ptr<EventWriter>> writer = EventWriter::Create(dir, options);
  INFO(writer.status().ToString());
  REQUIRE(writer.ok());
  CHECK((*writer)->path() == dir + "/events.out.tfevents.1700000000.testhost.v2");

  const double before = EventWallTimeNow();
  std::vector<Point> written;
  for (int64_t step = 0; step < 100; ++step) {
    const float value = step == 7 ? -0.0f : std::ldexp(1.0f + step / 128.0f, int(step % 50 - 25));
    REQUIRE((*writer)->WriteScalar(step, "loss", value).ok());
    written.push_back({step, value});
  }
  tensorflow::Summary summary;
  tensorflow::Summary::Value* histo = summary.add_value();
  histo->set_tag("weights");
  histo->mutable_histo()->set_num(3);
  histo->mutable_histo()->add_bucket_limit(1.0);
  histo->mutable_histo()->add_bucket(3);
  summary.add_value()->set_tag("lr");
  summary.mutable_value(1)->set_simple_value(0.01f);
  REQUIRE((*writer)->WriteSummary(100, summary.SerializeAsString()).ok());
  tensorflow::Event stop;
  stop.set_wall_time(1700000001.5);
  stop.set_step(100);
  stop.mutable_session_log()->set_status(tensorflow::SessionLog::STOP);
  REQUIRE((*writer)->WriteEvent(stop).ok());
  CHECK((*writer)->events_written() == 103);

  // Flushed, the open file reads completely (TensorBoard reads runs as they train).
  REQUIRE((*writer)->Flush().ok());
  const Contents live = Read((*writer)->path());
  CHECK(live.events.size() == 103);
  REQUIRE((*writer)->Close().ok());
  const double after = EventWallTimeNow();

  const Contents c = Read((*writer)->path());
  REQUIRE(c.events.size() == 103);
  CHECK(c.events[0].file_version() == "brain.Event:2");
  CHECK(c.events[0].wall_time() == 1700000000.0);  // whole seconds, as TF writes it
  CHECK(c.events[0].step() == 0);
  std::vector<Point> loss = c.scalars.at("loss");
  REQUIRE(loss.size() == 100);
  for (size_t i = 0; i < loss.size(); ++i) {
    CHECK(loss[i].step == written[i].step);
    CHECK(std::memcmp(&loss[i].value, &written[i].value, sizeof(float)) == 0);  // bits
  }
  for (size_t i = 1; i <= 101; ++i) {
    CHECK(c.events[i].wall_time() >= before);
    CHECK(c.events[i].wall_time() <= after);
  }
  CHECK(c.events[101].summary().SerializeAsString() == summary.SerializeAsString());
  CHECK(c.events[101].step() == 100);
  CHECK(c.events[102].SerializeAsString() == stop.SerializeAsString());
}

TEST_CASE("Event files: writer errors name the file or directory") {
  const std::string dir = testing::TempDir();
  EventWriterOptions options;
  options.wall_time = 1600000000;
  options.hostname = "h";
  StatusOr<std::unique_ptr<EventWriter>> first = EventWriter::Create(dir, options);
  REQUIRE(first.ok());
  // Another writer in the same second and host, without its own suffix: refused.
  StatusOr<std::unique_ptr<EventWriter>> second = EventWriter::Create(dir, options);
  CHECK(ErrorOf(second.status()) == dir + "/events.out.tfevents.1600000000.h: already exists");
  CHECK(second.status().code() == StatusCode::kAlreadyExists);
  options.filename_suffix = ".rank-1";
  CHECK(EventWriter::Create(dir, options).ok());

  CHECK(ErrorOf((*first)->WriteSummary(3, "\xff\xff")) ==
        dir + "/events.out.tfevents.1600000000.h: step 3: the summary (2 bytes) is not a "
              "serialized Summary proto");

  // The directory cannot be made: a file is in the way.
  REQUIRE(WriteFileAtomically(dir + "/file", "x").ok());
  const std::string message = ErrorOf(EventWriter::Create(dir + "/file/logs").status());
  CHECK(message.rfind(dir + "/file/logs: cannot create the event file's directory: ", 0) == 0);
}

TEST_CASE("Event files: the reader checks framing, CRCs and that records are Events") {
  const std::string dir = testing::TempDir();
  EventWriterOptions options;
  options.wall_time = 1600000000;
  options.hostname = "h";
  std::string path;
  {
    StatusOr<std::unique_ptr<EventWriter>> writer = EventWriter::Create(dir, options);
    REQUIRE(writer.ok());
    path = (*writer)->path();
    for (int step = 1; step <= 3; ++step) REQUIRE((*writer)->WriteScalar(step, "x", 1.0f).ok());
  }  // closed by the destructor
  StatusOr<std::string> bytes = ReadFileToString(path);
  REQUIRE(bytes.ok());
  StatusOr<std::vector<std::string>> records = ReadTFRecordFile(path);
  REQUIRE(records.ok());
  REQUIRE(records->size() == 4);
  // Flip one byte of record 2's data.
  const size_t record2 = 2 * kTFRecordOverhead + (*records)[0].size() + (*records)[1].size();
  std::string corrupt = *bytes;
  corrupt[record2 + 12 + 3] ^= 0x20;
  REQUIRE(WriteFileAtomically(dir + "/corrupt", corrupt).ok());
  StatusOr<std::vector<tensorflow::Event>> events = ReadEventFile(dir + "/corrupt");
  CHECK(ErrorOf(events.status()) ==
        fmt::format("{}/corrupt: record 2 at byte {}: data crc32c mismatch (corrupt file)", dir,
                    record2));

  // Well framed, but not an Event: field 1 (wall_time, a double) with wire type 2.
  REQUIRE(WriteTFRecordFile(dir + "/not_events", {(*records)[0], std::string("\x0a\x05", 2)}).ok());
  events = ReadEventFile(dir + "/not_events");
  CHECK(ErrorOf(events.status()) ==
        fmt::format("{}/not_events: record 1 at byte {}: not a serialized Event proto", dir,
                    (*records)[0].size() + kTFRecordOverhead));

  CHECK(ErrorOf(EventReader::Open(dir + "/missing").status()) == dir + "/missing: no such file");

  // The same from memory: every event, then the same error for the corrupt bytes.
  StatusOr<std::unique_ptr<EventReader>> in_memory = EventReader::OpenString(*bytes, "mem");
  REQUIRE(in_memory.ok());
  tensorflow::Event event;
  int read = 0;
  for (StatusOr<bool> more = (*in_memory)->Next(&event); more.ok() && *more;
       more = (*in_memory)->Next(&event)) {
    ++read;
  }
  CHECK(read == 4);
  CHECK(event.summary().value(0).simple_value() == 1.0f);
  in_memory = EventReader::OpenString(corrupt, "mem");
  REQUIRE(in_memory.ok());
  StatusOr<bool> more = true;
  while (more.ok() && *more) more = (*in_memory)->Next(&event);
  CHECK(ErrorOf(more.status()) ==
        fmt::format("mem: record 2 at byte {}: data crc32c mismatch (corrupt file)", record2));
}

}  // namespace
}  // namespace parallax
