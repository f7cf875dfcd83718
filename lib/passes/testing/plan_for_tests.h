// PlanForTests: a Plan for N ranks on localhost CPUs, built from a graph's training
// analysis, so that pass tests can run a pass without the transformer's planner.
//
// The plan is what a simple planner would decide:
//  - ranks 0..N-1 on host "localhost", one CPU slot each; rank r's device is
//    /job:worker/replica:0/task:r/device:CPU:0;
//  - dense trainable variables: kAllReduce; sparse (or mixed) trainable variables:
//    `sparse_method`; variables updated from a gradient in a way Parallax cannot
//    synchronise: kNone; the slots of a kParameterServer variable: kParameterServer
//    with its partitions; everything else (other slots, state, untouched): kLocal;
//  - kParameterServer variables get `partitions` partitions (0 = one per rank) that
//    split the rows evenly (the first rows % P partitions one row longer), owned
//    round-robin (partition i on rank i % N); P is capped at the number of rows so that
//    no partition is empty, and a variable of unknown row count gets none;
//  - feeds: the placeholders the train op reads (every placeholder when no train op
//    was found); fetches: the best loss candidate; average = true.
// Testonly: a graph that does not analyse aborts the test binary with the error.
#ifndef PARALLAX_LIB_PASSES_TESTING_PLAN_FOR_TESTS_H_
#define PARALLAX_LIB_PASSES_TESTING_PLAN_FOR_TESTS_H_

#include "lib/graph/graph.h"
#include "lib/plan/plan.h"

namespace parallax {

Plan PlanForTests(const Graph& graph, int world_size,
                  SyncMethod sparse_method = SyncMethod::kParameterServer, int partitions = 0);

namespace testing {
using ::parallax::PlanForTests;
}  // namespace testing

}  // namespace parallax

#endif  // PARALLAX_LIB_PASSES_TESTING_PLAN_FOR_TESTS_H_
