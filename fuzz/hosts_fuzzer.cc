// Host lists, every input through each parser: an OpenMPI hostfile, mpirun's -H list, a
// PBS node file, and a SLURM allocation whose variables are the input's first four lines
// (SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE, SLURM_JOB_CPUS_PER_NODE,
// SLURM_GPUS_PER_NODE; an empty or missing line is an unset variable), which expands
// the hostlist and the count lists.
#include <map>
#include <optional>

#include "fuzz/fuzz_input.h"
#include "lib/cluster/hostfile.h"
#include "lib/cluster/scheduler_hosts.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  const std::string_view text = fuzz::AsText(data, size);
  fuzz::CheckStatus(ParseHostfile(text, "fuzz.hosts"));
  fuzz::CheckStatus(ParseHostList(text));
  fuzz::CheckStatus(ParsePbsNodefile(text, "fuzz.nodefile"));

  std::map<std::string, std::string, std::less<>> env;
  size_t begin = 0;
  for (const char* name : {"SLURM_JOB_NODELIST", "SLURM_TASKS_PER_NODE",
                           "SLURM_JOB_CPUS_PER_NODE", "SLURM_GPUS_PER_NODE"}) {
    if (begin >= text.size()) break;
    const size_t end = std::min(text.find('\n', begin), text.size());
    if (end > begin) env[name] = std::string(text.substr(begin, end - begin));
    begin = end + 1;
  }
  const EnvLookup lookup = [&](std::string_view name) -> std::optional<std::string> {
    const auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  fuzz::CheckStatus(SlurmAllocation(lookup));
  return 0;
}
