// report.txt: the transform's decisions for people, also printed by `parallax transform`.
//
// Rendered from the Plan alone (so it can be re-rendered from plan.yaml): a header (the
// source graph, the ranks, the strategy), one table row per variable — name, shape,
// bytes, gradient kind, sync method, partitions, owners, bytes each rank sends per step;
// a PS variable's slots show its method and partitions — then totals, the reason behind
// every method other than local (each names the cost, the runner-up and the deciding
// setting), and warnings.
#ifndef PARALLAX_LIB_TRANSFORM_REPORT_H_
#define PARALLAX_LIB_TRANSFORM_REPORT_H_

#include <string>
#include <string_view>

#include "lib/plan/plan.h"

namespace parallax {

// `output_dir` is the job directory ("" when nothing was written).
std::string RenderReport(const Plan& plan, std::string_view output_dir);

}  // namespace parallax

#endif  // PARALLAX_LIB_TRANSFORM_REPORT_H_
