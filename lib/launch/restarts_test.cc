// What a relaunch changes in the run flags.
#include "lib/launch/restarts.h"

#include <catch2/catch.hpp>

namespace parallax {
namespace {

using Args = std::vector<std::string>;

TEST_CASE("the checkpoint directory among the run flags") {
  CHECK(CheckpointDirOfRunArgs({"--steps", "10", "--checkpoint-dir", "ck"}) == "ck");
  CHECK(CheckpointDirOfRunArgs({"--checkpoint-dir=a b", "--synthetic"}) == "a b");
  CHECK(CheckpointDirOfRunArgs({"--checkpoint-dir", "a", "--checkpoint-dir=b"}) == "b");
  CHECK(!CheckpointDirOfRunArgs({"--checkpoint-every", "5", "--checkpoint-dirx=c"}));
  CHECK(!CheckpointDirOfRunArgs({"--checkpoint-dir"}));  // no value: run reports it
}

TEST_CASE("a relaunch resumes if a checkpoint exists, whatever --resume the flags had") {
  CHECK(RelaunchRunArgs({"--steps", "10"}) == Args{"--steps", "10", "--resume=if-exists"});
  CHECK(RelaunchRunArgs({"--resume", "--steps", "10", "--resume=always"}) ==
        Args{"--steps", "10", "--resume=if-exists"});
  CHECK(RelaunchRunArgs(RelaunchRunArgs({"--resume=if-exists"})) == Args{"--resume=if-exists"});
}

}  // namespace
}  // namespace parallax
