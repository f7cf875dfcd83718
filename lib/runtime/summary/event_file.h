// TensorBoard event files: what tf.summary's FileWriter writes and TensorBoard reads.
//
// An event file is a TFRecord file (lib/runtime/data/tfrecord.h, uncompressed) of
// serialized tensorflow.Event protos (protos/summary.proto), named
//   DIR/events.out.tfevents.<unix seconds, 10 digits>.<hostname><suffix>
// Its first event holds file_version "brain.Event:2" and the time the file was created
// (whole seconds, the name's); every later one a wall time, a step and (here) a Summary: scalars as
// simple_value, histograms, images, or whatever the summary ops produced.
//
// Writing streams: events are appended to the open file and reach it on Flush (or when
// the write buffer fills), so TensorBoard can read a run while it trains; nothing is
// renamed at the end. A file that already exists (another writer in the same directory,
// the same second and host, without a distinguishing suffix) is refused, never replaced.
//
// An EventWriter is thread-safe (summary kernels may run concurrently).
//
// Reading checks the TFRecord framing and both CRCs of every record, and that each
// record parses as an Event; errors are one line naming the file and the record.
#ifndef PARALLAX_LIB_RUNTIME_SUMMARY_EVENT_FILE_H_
#define PARALLAX_LIB_RUNTIME_SUMMARY_EVENT_FILE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/data/tfrecord.h"
#include "protos/summary.pb.h"

namespace parallax {

// The first event's file_version.
inline constexpr std::string_view kEventFileVersion = "brain.Event:2";

// Seconds since the Unix epoch, with microseconds: an Event's wall_time.
double EventWallTimeNow();

struct EventWriterOptions {
  // Appended to the file name: TF2's writers use ".v2"; the ranks of a job sharing one
  // directory need one each (".rank-3").
  std::string filename_suffix;
  // The creation time (seconds since the epoch) in the file name and the first event;
  // 0: now.
  double wall_time = 0;
  // The host part of the file name; "": gethostname().
  std::string hostname;
};

class EventWriter {
 public:
  // Creates DIR (and its parents) when missing and the event file in it, and writes the
  // file_version event. Errors name the directory or the file; an existing file is
  // AlreadyExists.
  static StatusOr<std::unique_ptr<EventWriter>> Create(const std::string& dir,
                                                       EventWriterOptions options = {});
  // Closes (flushing), ignoring errors: call Close to see them.
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  const std::string& path() const { return writer_->path(); }

  // Appends `event` as it is (set its wall_time and step).
  Status WriteEvent(const tensorflow::Event& event);
  // A Summary of one simple_value `tag` = `value` at `step`, wall time now.
  Status WriteScalar(int64_t step, std::string_view tag, float value);
  // A serialized Summary (a summary op's output) at `step`, wall time now. Errors: bytes
  // that do not parse as a Summary.
  Status WriteSummary(int64_t step, std::string_view serialized_summary);
  // Hands every event written so far to the OS (readable by TensorBoard).
  Status Flush();
  // Flushes and closes; later calls return the first call's result.
  Status Close();

  // Events written, the file_version event included.
  int64_t events_written();

 private:
  explicit EventWriter(std::unique_ptr<TFRecordWriter> writer) : writer_(std::move(writer)) {}

  std::mutex mu_;  // serialises writes to writer_
  std::unique_ptr<TFRecordWriter> writer_;
};

class EventReader {
 public:
  // Errors name the path: missing, a directory, unreadable.
  static StatusOr<std::unique_ptr<EventReader>> Open(const std::string& path);
  // Reads `contents` as the event file `source` (fuzzing, tests).
  static StatusOr<std::unique_ptr<EventReader>> OpenString(std::string contents,
                                                           std::string source);

  // The next event: true; false at the end of the file; an error for a framing or CRC
  // fault (TFRecordReader's messages) or a record that is not an Event:
  //   events.out.tfevents.1.h: record 3 at byte 120: not a serialized Event proto
  StatusOr<bool> Next(tensorflow::Event* event);

  const std::string& path() const { return reader_->path(); }
  int64_t events_read() const { return reader_->records_read(); }

 private:
  explicit EventReader(std::unique_ptr<TFRecordReader> reader) : reader_(std::move(reader)) {}

  std::unique_ptr<TFRecordReader> reader_;
  std::string record_;
};

// Every event of a file, in order.
StatusOr<std::vector<tensorflow::Event>> ReadEventFile(const std::string& path);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_SUMMARY_EVENT_FILE_H_
