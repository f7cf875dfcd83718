// plan.yaml: the Plan written as YAML by `parallax transform` and read back by the
// runtime (`parallax run job/`) and `parallax launch`; also the Plan as JSON for
// `parallax transform --json`. A small library of its own so that readers of plan.yaml
// need not link the transformer.
//
// The YAML schema is docs/transform.md#planyaml. Version 1 (Plan::kVersion); a reader
// refuses other versions. Keys are written in a fixed order; the reader checks every
// key and type and reports the first problem as one line naming the file, the 1-based
// line and the key path: `job/plan.yaml:12: variables[3].partitions[0].owner: rank 9 is
// not a rank of the job (8 ranks)`.
#ifndef PARALLAX_LIB_TRANSFORM_PLAN_IO_H_
#define PARALLAX_LIB_TRANSFORM_PLAN_IO_H_

#include <optional>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/plan/plan.h"

namespace parallax {

// The YAML text of plan.yaml.
std::string PlanToYaml(const Plan& plan);

// Parses plan.yaml text; `source` names it in messages.
StatusOr<Plan> ParsePlanYaml(std::string_view text, std::string_view source);

// Reads and parses a plan.yaml file (or DIR/plan.yaml when `path` is a directory).
StatusOr<Plan> LoadPlan(const std::string& path);

// Totals over a plan's variables, for reports.
struct PlanTotals {
  int variables = 0;
  int synchronised = 0;          // allreduce, ps, allgather or densify (slots not counted)
  int unsynchronised = 0;        // method none
  int64_t parameter_bytes = 0;   // trainable (synchronised or none) variables of known size
  int64_t bytes_sent_per_rank_per_step = 0;
  int by_method[6] = {};         // indexed by SyncMethod; a PS variable's slots count as ps
};
PlanTotals ComputeTotals(const Plan& plan);

// The plan as one JSON object (schema in docs/transform.md#json); `output_dir` is the
// job directory written, "" when none.
std::string PlanToJson(const Plan& plan, std::string_view output_dir);

// The method named by SyncMethodName ("allreduce", "ps", ...); nullopt for other words.
std::optional<SyncMethod> ParseSyncMethod(std::string_view word);

}  // namespace parallax

#endif  // PARALLAX_LIB_TRANSFORM_PLAN_IO_H_
