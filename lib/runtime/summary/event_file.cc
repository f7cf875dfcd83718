#include "lib/runtime/summary/event_file.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <system_error>

#include "lib/base/machine.h"

namespace parallax {

namespace {

std::string Hostname() {
  std::string name = MachineHostName();
  return name.empty() ? "localhost" : name;
}

}  // namespace

double EventWallTimeNow() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(now).count()) /
         1e6;
}

StatusOr<std::unique_ptr<EventWriter>> EventWriter::Create(const std::string& dir,
                                                           EventWriterOptions options) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return InvalidArgumentError("{}: cannot create the event file's directory: {}", dir,
                                error.message());
  }
  const double wall_time = options.wall_time > 0 ? options.wall_time : EventWallTimeNow();
  const std::string hostname = options.hostname.empty() ? Hostname() : options.hostname;
  const auto seconds = static_cast<int64_t>(std::floor(wall_time));
  const std::string path = fmt::format("{}/events.out.tfevents.{:010d}.{}{}", dir, seconds,
                                       hostname, options.filename_suffix);
  TFRecordWriterOptions file_options;
  file_options.fail_if_exists = true;
  PX_ASSIGN_OR_RETURN(std::unique_ptr<TFRecordWriter> file,
                      TFRecordWriter::Open(path, file_options));
  std::unique_ptr<EventWriter> writer(new EventWriter(std::move(file)));
  tensorflow::Event version;
  version.set_wall_time(static_cast<double>(seconds));  // whole seconds, as TF writes it
  version.set_file_version(std::string(kEventFileVersion));
  PX_RETURN_IF_ERROR(writer->WriteEvent(version));
  return writer;
}

EventWriter::~EventWriter() { (void)Close(); }

Status EventWriter::WriteEvent(const tensorflow::Event& event) {
  std::string bytes;
  if (!event.SerializeToString(&bytes)) {
    return InternalError("{}: cannot serialize an Event (step {})", path(), event.step());
  }
  std::lock_guard<std::mutex> lock(mu_);
  return writer_->Write(bytes);
}

Status EventWriter::WriteScalar(int64_t step, std::string_view tag, float value) {
  tensorflow::Event event;
  event.set_wall_time(EventWallTimeNow());
  event.set_step(step);
  tensorflow::Summary::Value* summary_value = event.mutable_summary()->add_value();
  summary_value->set_tag(std::string(tag));
  summary_value->set_simple_value(value);
  return WriteEvent(event);
}

Status EventWriter::WriteSummary(int64_t step, std::string_view serialized_summary) {
  tensorflow::Event event;
  event.set_wall_time(EventWallTimeNow());
  event.set_step(step);
  if (!event.mutable_summary()->ParseFromArray(serialized_summary.data(),
                                               static_cast<int>(serialized_summary.size()))) {
    return InvalidArgumentError("{}: step {}: the summary ({} bytes) is not a serialized "
                                "Summary proto",
                                path(), step, serialized_summary.size());
  }
  return WriteEvent(event);
}

Status EventWriter::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  return writer_->Flush();
}

Status EventWriter::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  return writer_->Close();
}

int64_t EventWriter::events_written() {
  std::lock_guard<std::mutex> lock(mu_);
  return writer_->records_written();
}

StatusOr<std::unique_ptr<EventReader>> EventReader::Open(const std::string& path) {
  PX_ASSIGN_OR_RETURN(std::unique_ptr<TFRecordReader> reader, TFRecordReader::Open(path));
  return std::unique_ptr<EventReader>(new EventReader(std::move(reader)));
}

StatusOr<std::unique_ptr<EventReader>> EventReader::OpenString(std::string contents,
                                                               std::string source) {
  PX_ASSIGN_OR_RETURN(std::unique_ptr<TFRecordReader> reader,
                      TFRecordReader::OpenString(std::move(contents), std::move(source)));
  return std::unique_ptr<EventReader>(new EventReader(std::move(reader)));
}

StatusOr<bool> EventReader::Next(tensorflow::Event* event) {
  PX_ASSIGN_OR_RETURN(const bool more, reader_->Next(&record_));
  if (!more) return false;
  if (!event->ParseFromString(record_)) {
    return InvalidArgumentError("{}: record {} at byte {}: not a serialized Event proto",
                                reader_->path(), reader_->records_read() - 1,
                                reader_->record_offset());
  }
  return true;
}

StatusOr<std::vector<tensorflow::Event>> ReadEventFile(const std::string& path) {
  PX_ASSIGN_OR_RETURN(std::unique_ptr<EventReader> reader, EventReader::Open(path));
  std::vector<tensorflow::Event> events;
  tensorflow::Event event;
  while (true) {
    PX_ASSIGN_OR_RETURN(const bool more, reader->Next(&event));
    if (!more) break;
    events.push_back(std::move(event));
    event.Clear();
  }
  return events;
}

}  // namespace parallax
