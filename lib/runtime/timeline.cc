#include "lib/runtime/timeline.h"

#include <algorithm>

#include <fmt/format.h>

#include "lib/base/file.h"
#include "lib/base/json_writer.h"

namespace parallax {

Timeline::Timeline(int rank, std::string process_name)
    : rank_(rank),
      process_name_(std::move(process_name)),
      steady_origin_(Clock::now()),
      unix_origin_us_(std::chrono::duration<double, std::micro>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count()) {}

void Timeline::Add(Span span) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, added] = thread_ids_.emplace(std::this_thread::get_id(),
                                         static_cast<int>(thread_ids_.size()) + 1);
  spans_.push_back(Recorded{std::move(span), it->second});
}

size_t Timeline::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return spans_.size();
}

double Timeline::Micros(Clock::time_point t) const {
  return unix_origin_us_ + std::chrono::duration<double, std::micro>(t - steady_origin_).count();
}

std::string Timeline::ToJson() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  out.reserve(128 + spans_.size() * 160);
  out += "{\"traceEvents\": [\n";
  bool first = true;
  auto begin_event = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  begin_event();
  out += fmt::format(R"({{"name": "process_name", "ph": "M", "pid": {}, "args": {{"name": {}}}}})",
                     rank_, JsonQuote(process_name_));
  begin_event();
  out += fmt::format(R"({{"name": "process_sort_index", "ph": "M", "pid": {}, "args": {{"sort_index": {}}}}})",
                     rank_, rank_);
  std::vector<int> tids;
  for (const auto& [id, tid] : thread_ids_) tids.push_back(tid);
  std::sort(tids.begin(), tids.end());
  for (int tid : tids) {
    begin_event();
    out += fmt::format(
        R"({{"name": "thread_name", "ph": "M", "pid": {}, "tid": {}, "args": {{"name": {}}}}})",
        rank_, tid, JsonQuote(tid == 1 ? "main" : fmt::format("thread {}", tid)));
  }
  for (const Recorded& r : spans_) {
    const Span& s = r.span;
    begin_event();
    out += fmt::format(R"({{"name": {}, "cat": {}, "ph": "X", "ts": {:.3f}, "dur": {:.3f}, )"
                       R"("pid": {}, "tid": {}, "args": {{)",
                       JsonQuote(s.name), JsonQuote(s.category), Micros(s.start),
                       std::chrono::duration<double, std::micro>(s.end - s.start).count(), rank_,
                       r.tid);
    const char* separator = "";
    if (!s.op.empty()) {
      out += fmt::format(R"("op": {})", JsonQuote(s.op));
      separator = ", ";
    }
    if (s.step >= 0) {
      out += fmt::format(R"({}"step": {})", separator, s.step);
      separator = ", ";
    }
    if (s.bytes >= 0) {
      out += fmt::format(R"({}"bytes": {})", separator, s.bytes);
      separator = ", ";
    }
    if (s.sent >= 0) {
      out += fmt::format(R"({}"sent": {})", separator, s.sent);
      separator = ", ";
    }
    if (s.flops >= 0) {
      out += fmt::format(R"({}"flops": {:.0f}, "memory_bytes": {:.0f})", separator, s.flops,
                         s.memory_bytes);
    }
    out += "}}";
  }
  out += fmt::format("\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {{\"writer\": \"parallax\", "
                     "\"rank\": {}}}}}\n",
                     rank_);
  return out;
}

Status Timeline::Write(const std::string& path) const {
  return WriteFileAtomically(path, ToJson()).WithPrefix("--timeline");
}

}  // namespace parallax
