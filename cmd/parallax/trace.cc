// `parallax trace summary FILE... [--top N] [--format text|json]`: where the steps of
// timelines written by `run --timeline` / `launch --timeline` (or any Chrome trace-event
// file) spent their time: per process compute, input, communication and the part of it
// no compute overlapped; then the top ops (lib/runtime/trace_summary.h).
#include <cstdio>

#include "cmd/parallax/command.h"
#include "lib/runtime/trace_summary.h"

namespace parallax::cli {

Command AddTraceCommand(CLI::App& app) {
  struct Flags {
    std::vector<std::string> files;
    int top = 10;
    std::string format = "text";
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* trace = app.add_subcommand("trace", "Read timelines (Chrome trace-event JSON).");
  trace->require_subcommand(1);
  CLI::App* sub = trace->add_subcommand(
      "summary", "Per process: steps, step time, compute, input, communication and the "
                 "communication no compute overlapped (exposed), per step; then the top ops "
                 "by self time inside steps.");
  sub->add_option("files", flags->files, "trace files (one per rank: launch --timeline DIR "
                                         "writes DIR/rank-R.trace.json)")
      ->required();
  sub->add_option("--top", flags->top, "how many ops to list (default 10)")->check(AtLeast(0));
  sub->add_option("--format", flags->format, "output format: text (default) or json");
  return Command{trace, [flags]() -> Status {
                   if (flags->format != "text" && flags->format != "json") {
                     return InvalidArgumentError(
                         "--format: unknown format '{}' (expected text or json)", flags->format);
                   }
                   std::vector<Trace> traces;
                   for (const std::string& file : flags->files) {
                     PX_ASSIGN_OR_RETURN(Trace trace, ReadTrace(file));
                     traces.push_back(std::move(trace));
                   }
                   const TraceSummary summary = SummarizeTraces(traces);
                   const std::string out = flags->format == "json"
                                               ? TraceSummaryJson(summary, flags->top)
                                               : FormatTraceSummary(summary, flags->top);
                   std::fwrite(out.data(), 1, out.size(), stdout);
                   return Status::Ok();
                 }};
}

}  // namespace parallax::cli
