// `parallax inspect GRAPH [--format table|json|dot]`: what Parallax sees in a graph.
#include <cstdio>
#include <map>

#include "cmd/parallax/command.h"
#include "cmd/parallax/inspect_report.h"

namespace parallax::cli {

Command AddInspectCommand(CLI::App& app) {
  struct Flags {
    std::string graph;
    std::string format = "table";
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "inspect", "Summarise a graph: nodes and ops, variables (shape, dtype, bytes, role), "
                 "their updates and gradients (dense/sparse), feeds, loss, train and init ops, "
                 "devices, problems found.");
  sub->add_option("graph", flags->graph, "GraphDef, MetaGraphDef or SavedModel (binary or text)")
      ->required();
  sub->add_option("--format", flags->format, "output format: table (default), json or dot");
  return Command{sub, [flags]() -> Status {
                   static const std::map<std::string, InspectFormat> kFormats = {
                       {"table", InspectFormat::kTable},
                       {"json", InspectFormat::kJson},
                       {"dot", InspectFormat::kDot}};
                   const auto format = kFormats.find(flags->format);
                   if (format == kFormats.end()) {
                     return InvalidArgumentError(
                         "--format: unknown format '{}' (expected table, json or dot)",
                         flags->format);
                   }
                   PX_ASSIGN_OR_RETURN(std::string out, Inspect(flags->graph, format->second));
                   std::fwrite(out.data(), 1, out.size(), stdout);
                   return Status::Ok();
                 }};
}

}  // namespace parallax::cli
