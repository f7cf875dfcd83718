// Test hooks: the faults and planted bugs that tests switch on through PARALLAX_TEST_*
// environment variables, compiled into test builds only.
//
// Code that has a hook asks TestHook("PARALLAX_TEST_FAIL_AT_STEP"). In the release
// `parallax` the answer is always nullopt: nothing reads the variables, whatever the
// environment holds. A binary that links //lib/base:test_hooks_enabled (testonly: the
// tests' `parallax_test` binary and unit tests) has, from a static initialiser, a reader
// of the environment installed, and the hooks work. The hooks (kTestHooks):
//  - PARALLAX_TEST_FAIL_AT_STEP=R:S[:error|:stop]: rank R is killed (or fails, or stops)
//    before step S (trainer.cc);
//  - PARALLAX_TEST_SAVE_RESTORED=DIR: a resumed run writes what it restored to DIR;
//  - PARALLAX_TEST_RANKS_PER_HOST=L: a job's ranks are treated as hosts of L ranks;
//  - PARALLAX_TEST_SHARED_RANDOM_STREAM=1, PARALLAX_TEST_SYNC_AFTER_CLIPPING and
//    PARALLAX_TEST_UNAVERAGED_RANK=R (rank R keeps the sum of averaged all-reduces):
//    planted bugs that `parallax verify` must FAIL on.
#ifndef PARALLAX_LIB_BASE_TEST_HOOKS_H_
#define PARALLAX_LIB_BASE_TEST_HOOKS_H_

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace parallax {

inline constexpr std::array<std::string_view, 6> kTestHooks = {
    "PARALLAX_TEST_FAIL_AT_STEP",         "PARALLAX_TEST_SAVE_RESTORED",
    "PARALLAX_TEST_RANKS_PER_HOST",       "PARALLAX_TEST_SHARED_RANDOM_STREAM",
    "PARALLAX_TEST_SYNC_AFTER_CLIPPING",  "PARALLAX_TEST_UNAVERAGED_RANK"};

// The value of hook `name` (one of kTestHooks), or nullopt: unset, or a release build.
std::optional<std::string> TestHook(std::string_view name);

// Whether this binary reads its hooks (links test_hooks_enabled).
bool TestHooksEnabled();

// What test_hooks_enabled installs; nothing else calls it.
using TestHookReader = std::optional<std::string> (*)(std::string_view name);
void InstallTestHookReader(TestHookReader reader);

}  // namespace parallax

#endif  // PARALLAX_LIB_BASE_TEST_HOOKS_H_
