// What a relaunch changes in the run flags.
#include "lib/launch/restarts.h"

#include <catch2/catch.hpp>

#include "lib/launch/testing/plan_on_hosts.h"

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

Hostfile Allocation(std::vector<std::pair<std::string, int>> hosts) {
  Hostfile allocation;
  allocation.source = "hosts.txt";
  for (const auto& [name, slots] : hosts) {
    HostfileEntry entry;
    entry.name = name;
    entry.slots = slots;
    allocation.hosts.push_back(entry);
  }
  return allocation;
}

TEST_CASE("lost hosts: spare hosts take their place, else the job shrinks to the hosts left") {
  const Plan plan = testing::PlanOnHosts({{"a", 2}, {"b", 2}, {"c", 2}});
  SECTION("nothing lost: the same hosts") {
    StatusOr<RelaunchHosts> relaunch =
        ChooseRelaunchHosts(plan, Allocation({{"n1", 2}, {"n2", 2}, {"n3", 2}}), {}, 6);
    REQUIRE(relaunch.ok());
    CHECK_FALSE(relaunch->replanned);
    CHECK(relaunch->ranks == 6);
    CHECK(relaunch->allocation.hosts.size() == 3);
  }
  SECTION("a spare host: the same plan, without the lost one") {
    StatusOr<RelaunchHosts> relaunch = ChooseRelaunchHosts(
        plan, Allocation({{"n1", 2}, {"n2", 2}, {"n3", 2}, {"n4", 2}}), {"n2"}, 6);
    REQUIRE(relaunch.ok());
    CHECK_FALSE(relaunch->replanned);
    CHECK(relaunch->kept_roles == 3);
    CHECK(relaunch->ranks == 6);
    REQUIRE(relaunch->allocation.hosts.size() == 3);
    CHECK(relaunch->allocation.hosts[1].name == "n3");
    CHECK(relaunch->allocation.source == "hosts.txt");
  }
  SECTION("no spare: the first roles, as many as hosts are left") {
    StatusOr<RelaunchHosts> relaunch =
        ChooseRelaunchHosts(plan, Allocation({{"n1", 2}, {"n2", 2}, {"n3", 2}}), {"n1"}, 2);
    REQUIRE(relaunch.ok());
    CHECK(relaunch->replanned);
    CHECK(relaunch->kept_roles == 2);
    CHECK(relaunch->ranks == 4);
    CHECK(relaunch->allocation.hosts[0].name == "n2");
  }
  SECTION("fewer ranks than --min-ranks") {
    StatusOr<RelaunchHosts> relaunch = ChooseRelaunchHosts(
        plan, Allocation({{"n1", 2}, {"n2", 2}, {"n3", 2}}), {"n1", "n3"}, 4);
    REQUIRE_FALSE(relaunch.ok());
    CHECK(relaunch.status().code() == StatusCode::kFailedPrecondition);
    CHECK(relaunch.status().message() ==
          "hosts lost: n1, n3; the 2 ranks the hosts left can run are fewer than --min-ranks 4");
  }
  SECTION("every host lost") {
    StatusOr<RelaunchHosts> relaunch =
        ChooseRelaunchHosts(plan, Allocation({{"n1", 2}, {"n2", 2}, {"n3", 2}}),
                            {"n1", "n2", "n3"}, 1);
    REQUIRE_FALSE(relaunch.ok());
    CHECK(relaunch.status().message() == "hosts lost: n1, n2, n3; no host of hosts.txt is left");
  }
}

TEST_CASE("a relaunch on fewer ranks keeps the global batch where it can") {
  std::string note;
  CHECK(KeepGlobalBatch({"--batch", "32", "--steps", "9", "--batch=16"}, 16, true, 4, 2, &note) ==
        Args{"--steps", "9", "--batch=32"});
  CHECK(note == "the global batch stays 64 (32 per rank on 2 ranks)");
  CHECK(KeepGlobalBatch({"--steps", "9"}, 32, true, 4, 3, &note) == Args{"--steps", "9"});
  CHECK(note == "the global batch changes from 128 to 96 (128 examples do not split evenly "
                "over 3 ranks)");
  CHECK(KeepGlobalBatch({"--steps", "9"}, 32, false, 4, 2, &note) == Args{"--steps", "9"});
  CHECK(note == "the global batch changes from 128 to 64 (the graph fixes the batch at 32 per "
                "rank)");
  CHECK(KeepGlobalBatch({}, 0, false, 4, 2, &note).empty());
  CHECK(note == "the input pipeline sets the batch per rank: the global batch changes with the "
                "rank count");
}

}  // namespace
}  // namespace parallax
