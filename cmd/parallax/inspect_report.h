// `parallax inspect`: renders what Parallax sees in a graph.
//
// Three formats over one summary: a table for people, JSON for scripts (schema in
// docs/inspect-json.md; keys and order are stable, additions bump nothing, removals bump
// "schema"), and Graphviz dot for pictures (variables as boxes coloured by role, control
// edges dashed).
#ifndef PARALLAX_CMD_PARALLAX_INSPECT_REPORT_H_
#define PARALLAX_CMD_PARALLAX_INSPECT_REPORT_H_

#include <map>
#include <string>

#include "lib/analysis/training_analysis.h"
#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/runtime/device.h"

namespace parallax::cli {

enum class InspectFormat { kTable, kJson, kDot };

inline constexpr int kInspectJsonSchema = 1;

std::string RenderInspectTable(const Graph& graph, const TrainingAnalysis& analysis);
std::string RenderInspectJson(const Graph& graph, const TrainingAnalysis& analysis);
std::string RenderInspectDot(const Graph& graph, const TrainingAnalysis& analysis);

// The ops of `graph` that no kernel of `device` runs, each with its number of nodes (a
// node's dtype can lack a kernel that other dtypes of its op have). For the CPU: what
// `parallax run` would stop at (inspect's `without_cpu_kernel`; `transform --strict`
// refuses such graphs). For the GPU, in a build with CUDA: what a GPU rank runs on its
// host instead, its values copied across (inspect's `without_gpu_kernel`).
std::map<std::string, int> OpsWithoutKernel(const Graph& graph, DeviceType device);

// "no CPU kernel (2 ops, 3 nodes): FIFOQueueV2 x1, QueueDequeueV2 x2" (ops in name order);
// "" when `ops` is empty.
std::string DescribeOpsWithoutKernel(const std::map<std::string, int>& ops, DeviceType device);

// Loads, verifies, analyses and renders `path`.
StatusOr<std::string> Inspect(const std::string& path, InspectFormat format);

}  // namespace parallax::cli

#endif  // PARALLAX_CMD_PARALLAX_INSPECT_REPORT_H_
