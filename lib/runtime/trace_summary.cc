#include "lib/runtime/trace_summary.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/base/file.h"
#include "lib/base/json_writer.h"

namespace parallax {
namespace {

// An event as read, before B/E pairs are matched.
struct RawEvent {
  std::string name, category, phase, op, pid, tid, meta_name;
  std::optional<double> ts, dur;
  int64_t bytes = -1;
  double flops = -1, memory_bytes = -1;
};

// Collects the events of a trace file from nlohmann's SAX callbacks. Containers are
// tracked by role: the events array (the root array, or the root object's
// "traceEvents"), an event object in it, the event's "args" object; anything else is
// skipped.
class EventReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::vector<RawEvent>& events() { return events_; }
  bool saw_events_array() const { return saw_events_array_; }
  const std::string& error() const { return error_; }

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t value) override {
    Number(static_cast<double>(value), std::to_string(value));
    return true;
  }
  bool number_unsigned(number_unsigned_t value) override {
    Number(static_cast<double>(value), std::to_string(value));
    return true;
  }
  bool number_float(number_float_t value, const string_t& text) override {
    Number(value, text);
    return true;
  }
  bool string(string_t& value) override {
    if (In(Role::kEvent)) {
      if (key_ == "name") event_.name = value;
      else if (key_ == "cat") event_.category = value;
      else if (key_ == "ph") event_.phase = value;
      else if (key_ == "pid") event_.pid = value;
      else if (key_ == "tid") event_.tid = value;
    } else if (In(Role::kArgs)) {
      if (key_ == "op") event_.op = value;
      else if (key_ == "name") event_.meta_name = value;
    }
    return true;
  }
  bool binary(binary_t&) override { return true; }
  bool key(string_t& key) override {
    key_ = std::move(key);
    return true;
  }
  bool start_object(std::size_t) override {
    Role role = Role::kOther;
    if (stack_.empty()) {
      role = Role::kRoot;
    } else if (In(Role::kEvents)) {
      role = Role::kEvent;
      event_ = RawEvent{};
    } else if (In(Role::kEvent) && key_ == "args") {
      role = Role::kArgs;
    }
    stack_.push_back(role);
    return true;
  }
  bool start_array(std::size_t) override {
    Role role = Role::kOther;
    if (stack_.empty() || (In(Role::kRoot) && key_ == "traceEvents")) {
      role = Role::kEvents;
      saw_events_array_ = true;
    }
    stack_.push_back(role);
    return true;
  }
  bool end_object() override {
    if (In(Role::kEvent)) events_.push_back(std::move(event_));
    stack_.pop_back();
    return true;
  }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::json::exception& e) override {
    std::string_view what = e.what();
    if (const size_t colon = what.rfind(": "); colon != std::string_view::npos) {
      what.remove_prefix(colon + 2);
    }
    error_ = fmt::format("not JSON at byte {}: {}", position == 0 ? 0 : position - 1, what);
    return false;
  }

 private:
  enum class Role { kRoot, kEvents, kEvent, kArgs, kOther };
  bool In(Role role) const { return !stack_.empty() && stack_.back() == role; }
  void Number(double value, const std::string& text) {
    if (In(Role::kEvent)) {
      if (key_ == "ts") event_.ts = value;
      else if (key_ == "dur") event_.dur = value;
      else if (key_ == "pid") event_.pid = text;
      else if (key_ == "tid") event_.tid = text;
    } else if (In(Role::kArgs)) {
      if (key_ == "bytes") event_.bytes = static_cast<int64_t>(value);
      else if (key_ == "flops") event_.flops = value;
      else if (key_ == "memory_bytes") event_.memory_bytes = value;
    }
  }

  std::vector<Role> stack_;
  std::string key_;
  RawEvent event_;
  std::vector<RawEvent> events_;
  bool saw_events_array_ = false;
  std::string error_;
};

std::string Describe(size_t index, const RawEvent& e) {
  return e.name.empty() ? fmt::format("event {}", index)
                        : fmt::format("event {} ('{}')", index, e.name);
}

TraceSpan SpanOf(const RawEvent& e, double duration) {
  return TraceSpan{.name = e.name,
                   .category = e.category,
                   .op = e.op,
                   .pid = e.pid,
                   .tid = e.tid,
                   .start_us = *e.ts,
                   .duration_us = duration,
                   .bytes = e.bytes,
                   .flops = e.flops,
                   .memory_bytes = e.memory_bytes};
}

// Intervals [begin, end), sorted and merged.
using Intervals = std::vector<std::pair<double, double>>;

Intervals Merge(Intervals intervals) {
  std::sort(intervals.begin(), intervals.end());
  Intervals merged;
  for (const auto& [begin, end] : intervals) {
    if (end <= begin) continue;
    if (!merged.empty() && begin <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, end);
    } else {
      merged.emplace_back(begin, end);
    }
  }
  return merged;
}

double Length(const Intervals& merged) {
  double total = 0;
  for (const auto& [begin, end] : merged) total += end - begin;
  return total;
}

// |a ∩ b| for merged interval lists.
double IntersectionLength(const Intervals& a, const Intervals& b) {
  double total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const double begin = std::max(a[i].first, b[j].first);
    const double end = std::min(a[i].second, b[j].second);
    if (end > begin) total += end - begin;
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return total;
}

// Merged `a` minus merged `b`.
Intervals Subtract(const Intervals& a, const Intervals& b) {
  Intervals out;
  size_t j = 0;
  for (auto [begin, end] : a) {
    while (j < b.size() && b[j].second <= begin) ++j;
    size_t k = j;
    while (k < b.size() && b[k].first < end) {
      if (b[k].first > begin) out.emplace_back(begin, b[k].first);
      begin = std::max(begin, b[k].second);
      ++k;
    }
    if (end > begin) out.emplace_back(begin, end);
  }
  return out;
}

// The self intervals of every span of one thread (spans: indices into `spans`), by span.
void SelfIntervals(const std::vector<TraceSpan>& spans, std::vector<size_t> thread,
                   std::vector<Intervals>* self) {
  // Outer spans first: by start, then the longer one.
  std::sort(thread.begin(), thread.end(), [&](size_t a, size_t b) {
    if (spans[a].start_us != spans[b].start_us) return spans[a].start_us < spans[b].start_us;
    return spans[a].duration_us > spans[b].duration_us;
  });
  std::vector<Intervals> children(spans.size());
  std::vector<size_t> open;
  for (size_t index : thread) {
    const TraceSpan& span = spans[index];
    while (!open.empty() &&
           spans[open.back()].start_us + spans[open.back()].duration_us <= span.start_us) {
      open.pop_back();
    }
    if (!open.empty()) {
      children[open.back()].emplace_back(span.start_us, span.start_us + span.duration_us);
    }
    open.push_back(index);
  }
  for (size_t index : thread) {
    const TraceSpan& span = spans[index];
    (*self)[index] = Subtract({{span.start_us, span.start_us + span.duration_us}},
                              Merge(std::move(children[index])));
  }
}

}  // namespace

StatusOr<Trace> ReadTrace(const std::string& path) {
  PX_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  EventReader reader;
  nlohmann::json::sax_parse(text, &reader);
  if (!reader.error().empty()) return InvalidArgumentError("{}: {}", path, reader.error());
  if (!reader.saw_events_array()) {
    return InvalidArgumentError("{}: not a trace: expected an array of events or an object "
                                "with \"traceEvents\"",
                                path);
  }
  Trace trace;
  trace.path = path;
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> open;  // B events
  const std::vector<RawEvent>& events = reader.events();
  for (size_t i = 0; i < events.size(); ++i) {
    const RawEvent& e = events[i];
    if (e.phase == "M" && e.name == "process_name") {
      trace.process_names.emplace_back(e.pid, e.meta_name);
      continue;
    }
    if (e.phase != "X" && e.phase != "B" && e.phase != "E") continue;
    if (!e.ts || (e.phase == "X" && !e.dur)) {
      return InvalidArgumentError("{}: {}: a \"{}\" event needs a number ts{}", path,
                                  Describe(i, e), e.phase, e.phase == "X" ? " and dur" : "");
    }
    if (e.phase == "X") {
      trace.spans.push_back(SpanOf(e, std::max(0.0, *e.dur)));
    } else if (e.phase == "B") {
      open[{e.pid, e.tid}].push_back(i);
    } else {
      std::vector<size_t>& stack = open[{e.pid, e.tid}];
      if (stack.empty()) {
        return InvalidArgumentError("{}: {}: an \"E\" event without a \"B\" before it on its "
                                    "thread",
                                    path, Describe(i, e));
      }
      const RawEvent& begin = events[stack.back()];
      stack.pop_back();
      trace.spans.push_back(SpanOf(begin, std::max(0.0, *e.ts - *begin.ts)));
    }
  }
  for (const auto& [thread, stack] : open) {
    if (!stack.empty()) {
      return InvalidArgumentError("{}: {}: a \"B\" event without its \"E\"", path,
                                  Describe(stack.back(), events[stack.back()]));
    }
  }
  if (trace.spans.empty()) return InvalidArgumentError("{}: no spans (\"X\", \"B\"/\"E\" events)", path);
  return trace;
}

TraceSummary SummarizeTraces(const std::vector<Trace>& traces) {
  TraceSummary summary;
  std::map<std::string, OpTotal> ops;
  for (const Trace& trace : traces) {
    const std::vector<TraceSpan>& spans = trace.spans;
    std::map<std::string, std::map<std::string, std::vector<size_t>>> threads;  // pid, tid
    for (size_t i = 0; i < spans.size(); ++i) threads[spans[i].pid][spans[i].tid].push_back(i);
    std::vector<Intervals> self(spans.size());
    for (const auto& [pid, by_tid] : threads) {
      for (const auto& [tid, indices] : by_tid) SelfIntervals(spans, indices, &self);
    }
    for (const auto& [pid, by_tid] : threads) {
      ProcessSummary p;
      p.pid = pid;
      p.path = trace.path;
      p.name = fmt::format("pid {}", pid);
      for (const auto& [named_pid, name] : trace.process_names) {
        if (named_pid == pid) p.name = name;
      }
      Intervals steps, all, compute, communication, input;
      double bytes = 0;
      for (const auto& [tid, indices] : by_tid) {
        for (size_t i : indices) {
          const TraceSpan& s = spans[i];
          all.emplace_back(s.start_us, s.start_us + s.duration_us);
          if (s.category == "step") {
            steps.emplace_back(s.start_us, s.start_us + s.duration_us);
            ++p.steps;
          }
        }
      }
      const Intervals window = p.steps > 0 ? Merge(steps) : Merge(all);
      if (p.steps == 0) p.steps = 1;
      for (const auto& [tid, indices] : by_tid) {
        for (size_t i : indices) {
          const TraceSpan& s = spans[i];
          Intervals* into = s.category == "op"           ? &compute
                            : s.category == "collective" ? &communication
                            : s.category == "input"      ? &input
                                                         : nullptr;
          if (into != nullptr) into->insert(into->end(), self[i].begin(), self[i].end());
          const double inside = IntersectionLength(self[i], window);
          if (s.category == "step" || inside <= 0) continue;
          if (s.category == "collective" && s.bytes > 0) bytes += static_cast<double>(s.bytes);
          const std::string& key = s.op.empty() ? s.name : s.op;
          OpTotal& total = ops[key];
          if (total.count == 0) {
            total.op = key;
            total.category = s.category;
          }
          ++total.count;
          total.self_us += inside;
        }
      }
      const Intervals compute_in = Subtract(window, Subtract(window, Merge(compute)));
      const Intervals communication_in = Subtract(window, Subtract(window, Merge(communication)));
      const double n = static_cast<double>(p.steps);
      const double window_length = Length(window);
      summary.window_us += window_length;
      p.step_us = window_length / n;
      p.compute_us = Length(compute_in) / n;
      p.communication_us = Length(communication_in) / n;
      p.exposed_communication_us = Length(Subtract(communication_in, compute_in)) / n;
      p.input_us = IntersectionLength(Merge(input), window) / n;
      p.collective_bytes = bytes / n;
      summary.processes.push_back(std::move(p));
    }
  }
  for (auto& [key, total] : ops) summary.ops.push_back(std::move(total));
  std::stable_sort(summary.ops.begin(), summary.ops.end(),
                   [](const OpTotal& a, const OpTotal& b) { return a.self_us > b.self_us; });
  return summary;
}

StatusOr<StepProfile> ProfileSteps(const Trace& trace, int skip_steps) {
  const std::vector<TraceSpan>& spans = trace.spans;
  std::map<std::string, std::vector<size_t>> by_tid;
  for (size_t i = 0; i < spans.size(); ++i) {
    if (spans[i].pid != spans[0].pid) {
      return InvalidArgumentError("{}: spans of processes {} and {}: a profile is of one process",
                                  trace.path, spans[0].pid, spans[i].pid);
    }
    by_tid[spans[i].tid].push_back(i);
  }
  std::vector<size_t> steps;
  for (size_t i = 0; i < spans.size(); ++i) {
    if (spans[i].category == "step") steps.push_back(i);
  }
  std::sort(steps.begin(), steps.end(),
            [&](size_t a, size_t b) { return spans[a].start_us < spans[b].start_us; });
  if (static_cast<int64_t>(steps.size()) <= skip_steps) {
    return InvalidArgumentError("{}: {} steps, none after the first {} (run more steps)",
                                trace.path, steps.size(), skip_steps);
  }
  StepProfile profile;
  Intervals window;
  for (size_t k = static_cast<size_t>(skip_steps); k < steps.size(); ++k) {
    const TraceSpan& step = spans[steps[k]];
    window.emplace_back(step.start_us, step.start_us + step.duration_us);
  }
  window = Merge(std::move(window));
  profile.steps = static_cast<int64_t>(steps.size()) - skip_steps;
  const double n = static_cast<double>(profile.steps);
  profile.step_us = Length(window) / n;
  std::vector<Intervals> self(spans.size());
  for (const auto& [tid, indices] : by_tid) SelfIntervals(spans, indices, &self);
  for (size_t i = 0; i < spans.size(); ++i) {
    const bool op = spans[i].category == "op";
    if (!op && spans[i].category != "collective") continue;
    const double inside = IntersectionLength(self[i], window);
    if (inside <= 0) continue;
    if (!op) {
      profile.collective_self_us += inside / n;
      continue;
    }
    profile.op_self_us[spans[i].name] += inside / n;
    if (spans[i].flops >= 0) {
      OpWorkPerStep& work = profile.op_work[spans[i].name];
      work.flops += spans[i].flops / n;
      work.memory_bytes += std::max(0.0, spans[i].memory_bytes) / n;
      work.runs += 1 / n;
    }
  }
  return profile;
}

std::string FormatTraceSummary(const TraceSummary& summary, int top) {
  std::string out = fmt::format("{:<24} {:>6} {:>10} {:>10} {:>10} {:>10} {:>12} {:>8} {:>12}\n",
                                "process", "steps", "step ms", "compute ms", "input ms",
                                "comm ms", "exposed ms", "overlap", "comm MB/step");
  for (const ProcessSummary& p : summary.processes) {
    out += fmt::format("{:<24} {:>6} {:>10.3f} {:>10.3f} {:>10.3f} {:>10.3f} {:>12.3f} {:>7.1f}% "
                       "{:>12.3f}\n",
                       p.name, p.steps, p.step_us / 1e3, p.compute_us / 1e3, p.input_us / 1e3,
                       p.communication_us / 1e3, p.exposed_communication_us / 1e3,
                       100 * p.overlap(), p.collective_bytes / 1e6);
  }
  out += fmt::format("\ntop {} ops by self time inside steps (every process):\n",
                     std::min<size_t>(static_cast<size_t>(std::max(top, 0)), summary.ops.size()));
  out += fmt::format("{:<40} {:<11} {:>8} {:>10} {:>10} {:>7}\n", "op", "category", "count",
                     "total ms", "mean us", "share");
  for (size_t i = 0; i < summary.ops.size() && i < static_cast<size_t>(std::max(top, 0)); ++i) {
    const OpTotal& op = summary.ops[i];
    out += fmt::format("{:<40} {:<11} {:>8} {:>10.3f} {:>10.1f} {:>6.1f}%\n", op.op, op.category,
                       op.count, op.self_us / 1e3, op.self_us / static_cast<double>(op.count),
                       summary.window_us > 0 ? 100 * op.self_us / summary.window_us : 0);
  }
  return out;
}

std::string TraceSummaryJson(const TraceSummary& summary, int top) {
  JsonWriter json;
  json.BeginObject().Key("processes").BeginArray();
  for (const ProcessSummary& p : summary.processes) {
    json.BeginObject()
        .Field("name", p.name)
        .Field("pid", p.pid)
        .Field("file", p.path)
        .Field("steps", p.steps);
    json.Key("step_ms").Double(p.step_us / 1e3);
    json.Key("compute_ms").Double(p.compute_us / 1e3);
    json.Key("input_ms").Double(p.input_us / 1e3);
    json.Key("communication_ms").Double(p.communication_us / 1e3);
    json.Key("exposed_communication_ms").Double(p.exposed_communication_us / 1e3);
    json.Key("overlap").Double(p.overlap());
    json.Key("collective_bytes_per_step").Double(p.collective_bytes);
    json.EndObject();
  }
  json.EndArray().Key("ops").BeginArray();
  for (size_t i = 0; i < summary.ops.size() && i < static_cast<size_t>(std::max(top, 0)); ++i) {
    const OpTotal& op = summary.ops[i];
    json.BeginObject().Field("op", op.op).Field("category", op.category).Field("count", op.count);
    json.Key("self_ms").Double(op.self_us / 1e3);
    json.Key("share").Double(summary.window_us > 0 ? op.self_us / summary.window_us : 0);
    json.EndObject();
  }
  json.EndArray().EndObject();
  return json.str() + "\n";
}

}  // namespace parallax
