// Cluster specs (YAML): ParseClusterSpec; a spec that parses is formatted and must parse
// again (FormatClusterSpec promises ParseClusterSpec reads its output back).
#include "fuzz/fuzz_input.h"
#include "lib/cluster/cluster_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  StatusOr<ClusterSpec> spec = ParseClusterSpec(fuzz::AsText(data, size), "fuzz.yaml");
  fuzz::CheckStatus(spec);
  if (!spec.ok()) return 0;
  const std::string formatted = FormatClusterSpec(*spec);
  StatusOr<ClusterSpec> again = ParseClusterSpec(formatted, "formatted.yaml");
  if (!again.ok()) {
    std::fprintf(stderr, "FormatClusterSpec's output does not parse: %s\n---\n%s---\n",
                 again.status().ToString().c_str(), formatted.c_str());
    std::abort();
  }
  return 0;
}
