// plan.yaml: ParsePlanYaml; a plan that parses is written again and must parse again
// (PlanToYaml's output is what the runtime reads).
#include "fuzz/fuzz_input.h"
#include "lib/transform/plan_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  StatusOr<Plan> plan = ParsePlanYaml(fuzz::AsText(data, size), "plan.yaml");
  fuzz::CheckStatus(plan);
  if (!plan.ok()) return 0;
  const std::string yaml = PlanToYaml(*plan);
  StatusOr<Plan> again = ParsePlanYaml(yaml, "written.yaml");
  if (!again.ok()) {
    std::fprintf(stderr, "PlanToYaml's output does not parse: %s\n---\n%s---\n",
                 again.status().ToString().c_str(), yaml.c_str());
    std::abort();
  }
  PlanToJson(*plan, "job");
  return 0;
}
