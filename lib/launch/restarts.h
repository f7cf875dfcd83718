// `parallax launch --restarts K`: what changes when a failed job is launched again.
//
// A job that failed (a rank died or erred: exit status 3) is relaunched, up to K times,
// from the newest complete job checkpoint: the run flags must name a --checkpoint-dir,
// and every relaunch resumes with --resume=if-exists (which starts from the init op when
// no checkpoint was written yet) in place of any --resume the flags had. The test hooks
// that inject a failure (kFirstAttemptOnlyEnv) act on the first attempt only, so that a
// test can fail a job once and watch it recover.
#ifndef PARALLAX_LIB_LAUNCH_RESTARTS_H_
#define PARALLAX_LIB_LAUNCH_RESTARTS_H_

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace parallax {

// Environment variables removed before a relaunch.
inline constexpr std::array<std::string_view, 1> kFirstAttemptOnlyEnv = {
    "PARALLAX_TEST_FAIL_AT_STEP"};

// The value of --checkpoint-dir among `run_args` ("--checkpoint-dir D" or
// "--checkpoint-dir=D"; the last one given); nullopt when it is not there.
std::optional<std::string> CheckpointDirOfRunArgs(const std::vector<std::string>& run_args);

// `run_args` for a relaunch: --resume and --resume=MODE removed, --resume=if-exists added.
std::vector<std::string> RelaunchRunArgs(const std::vector<std::string>& run_args);

}  // namespace parallax

#endif  // PARALLAX_LIB_LAUNCH_RESTARTS_H_
