// `parallax inspect`: renders what Parallax sees in a graph.
//
// Three formats over one summary: a table for people, JSON for scripts (schema in
// docs/inspect-json.md; keys and order are stable, additions bump nothing, removals bump
// "schema"), and Graphviz dot for pictures (variables as boxes coloured by role, control
// edges dashed).
#ifndef PARALLAX_CMD_PARALLAX_INSPECT_REPORT_H_
#define PARALLAX_CMD_PARALLAX_INSPECT_REPORT_H_

#include <string>

#include "lib/analysis/training_analysis.h"
#include "lib/base/status.h"
#include "lib/graph/graph.h"

namespace parallax::cli {

enum class InspectFormat { kTable, kJson, kDot };

inline constexpr int kInspectJsonSchema = 1;

std::string RenderInspectTable(const Graph& graph, const TrainingAnalysis& analysis);
std::string RenderInspectJson(const Graph& graph, const TrainingAnalysis& analysis);
std::string RenderInspectDot(const Graph& graph, const TrainingAnalysis& analysis);

// Loads, verifies, analyses and renders `path`.
StatusOr<std::string> Inspect(const std::string& path, InspectFormat format);

}  // namespace parallax::cli

#endif  // PARALLAX_CMD_PARALLAX_INSPECT_REPORT_H_
