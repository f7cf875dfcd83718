// `parallax launch --restarts K`: what changes when a failed job is launched again.
//
// A job that failed (a rank died or erred: exit status 3) is relaunched, up to K times,
// from the newest complete job checkpoint: the run flags must name a --checkpoint-dir,
// and every relaunch resumes with --resume=if-exists (which starts from the init op when
// no checkpoint was written yet) in place of any --resume the flags had. The test hooks
// that inject a failure (kFirstAttemptOnlyEnv) act on the first attempt only, so that a
// test can fail a job once and watch it recover.
//
// Lost hosts (host_probe.h: hosts that no longer answer) are left out of the relaunch:
// the plan's hosts (roles, host_binding.h) are bound again to the allocation's other
// hosts, spare ones included, when they still fit (the same plan, ranks on other hosts);
// else, when --min-ranks allows it, the job is re-planned on its first K roles, K the
// hosts left (lib/transform/replan.h), and the relaunch runs fewer ranks. The global
// batch is kept where it can be (KeepGlobalBatch), so that the job trains on as the
// uninterrupted one would.
#ifndef PARALLAX_LIB_LAUNCH_RESTARTS_H_
#define PARALLAX_LIB_LAUNCH_RESTARTS_H_

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/cluster/hostfile.h"
#include "lib/plan/plan.h"

namespace parallax {

// Environment variables removed before a relaunch.
inline constexpr std::array<std::string_view, 1> kFirstAttemptOnlyEnv = {
    "PARALLAX_TEST_FAIL_AT_STEP"};

// The value of --checkpoint-dir among `run_args` ("--checkpoint-dir D" or
// "--checkpoint-dir=D"; the last one given); nullopt when it is not there.
std::optional<std::string> CheckpointDirOfRunArgs(const std::vector<std::string>& run_args);

// `run_args` for a relaunch: --resume and --resume=MODE removed, --resume=if-exists added.
std::vector<std::string> RelaunchRunArgs(const std::vector<std::string>& run_args);

// What a relaunch runs on after hosts were lost.
struct RelaunchHosts {
  Hostfile allocation;  // the allocation without the lost hosts (same source)
  // The plan's hosts (roles) the relaunch keeps: all of them (bound again to the hosts
  // left), or fewer (the first `kept_roles`: the job is re-planned).
  int kept_roles = 0;
  int ranks = 0;           // the relaunch's world size
  bool replanned = false;  // kept_roles < the plan's hosts: the job is re-planned
};

// The relaunch of `plan` on `allocation` without the hosts named in `lost` (see the file
// comment). Errors (FailedPrecondition, one line naming the lost hosts): no host left,
// or fewer ranks left than `min_ranks`: `hosts lost: node2; the 2 ranks the hosts left
// can run are fewer than --min-ranks 4`.
StatusOr<RelaunchHosts> ChooseRelaunchHosts(const Plan& plan, const Hostfile& allocation,
                                            const std::vector<std::string>& lost, int min_ranks);

// `run_args` for a relaunch on `new_ranks` ranks of a job that ran `old_ranks` ranks with
// `batch` examples each. The global batch (batch x old_ranks) is kept when the batch is
// open (`batch_open`: the graph leaves it to --batch) and divides evenly: every --batch is
// replaced by --batch=G/new_ranks. Otherwise the flags are kept and the global batch
// changes. `note` says which: "the global batch stays 128 (64 per rank on 2 ranks)" or
// "the global batch changes from 128 to 64 (the graph fixes the batch at 32 per rank)".
std::vector<std::string> KeepGlobalBatch(const std::vector<std::string>& run_args, int64_t batch,
                                         bool batch_open, int old_ranks, int new_ranks,
                                         std::string* note);

}  // namespace parallax

#endif  // PARALLAX_LIB_LAUNCH_RESTARTS_H_
