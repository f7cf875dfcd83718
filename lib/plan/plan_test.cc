// Plan's lookups: which variables every rank holds identically (what job checkpoints
// write once) and which variable a slot belongs to.
#include "lib/plan/plan.h"

#include <catch2/catch.hpp>

namespace parallax {
namespace {

VariablePlan Variable(std::string name, SyncMethod method, std::vector<std::string> slots = {}) {
  VariablePlan v;
  v.name = std::move(name);
  v.method = method;
  v.slots = std::move(slots);
  return v;
}

TEST_CASE("synchronised variables and their slots are identical on every rank; the rest are not") {
  Plan plan;
  plan.variables = {
      Variable("w", SyncMethod::kAllReduce, {"w/Adam", "w/Adam_1"}),
      Variable("gathered", SyncMethod::kAllGather, {"gathered/Momentum"}),
      Variable("densified", SyncMethod::kDensify),
      Variable("table", SyncMethod::kParameterServer, {"table/Adagrad"}),
      Variable("w/Adam", SyncMethod::kLocal),
      Variable("w/Adam_1", SyncMethod::kLocal),
      Variable("gathered/Momentum", SyncMethod::kLocal),
      Variable("table/Adagrad", SyncMethod::kLocal),
      Variable("bn/moving_mean", SyncMethod::kLocal),
      Variable("drifting", SyncMethod::kNone),
  };
  for (const char* name :
       {"w", "w/Adam", "w/Adam_1", "gathered", "gathered/Momentum", "densified"}) {
    INFO(name);
    CHECK(plan.IdenticalOnEveryRank(name));
  }
  for (const char* name : {"table", "table/Adagrad", "table/parallax/local", "bn/moving_mean",
                           "drifting", "not_in_the_plan"}) {
    INFO(name);
    CHECK_FALSE(plan.IdenticalOnEveryRank(name));
  }
  REQUIRE(plan.FindSlotOwner("w/Adam_1") != nullptr);
  CHECK(plan.FindSlotOwner("w/Adam_1")->name == "w");
  CHECK(plan.FindSlotOwner("w") == nullptr);
}

}  // namespace
}  // namespace parallax
