// strip-horovod: turns a graph made data-parallel by hand with Horovod back into the
// single-device graph underneath, so that Parallax's own plan synchronises it.
//
// A Horovod training graph (hvd.DistributedOptimizer, hvd.broadcast_global_variables)
// holds HorovodAllreduce on every gradient, HorovodAllgather on sparse ones and
// HorovodBroadcast on every variable's initial value. Run on one device, or transformed
// by Parallax on top, they would be wrong twice: Parallax inserts its own collectives,
// and the averaging divides by the rank count baked into the graph when it was
// exported. This pass removes them:
//  - HorovodAllreduce(g): its readers read g instead. When its only reader divides it by
//    a constant (`RealDiv`/`Div`/`TrueDiv` by a Const, or a Cast of one: Horovod's
//    average, sum / size), that division goes too and its readers read g. A newer
//    Horovod's `reduce_op` 0 (Average) or 1 (Sum) needs no division; other reductions
//    (Adasum, min, max, product) and pre/post scale factors other than 1 are refused.
//  - HorovodAllgather(x), HorovodBroadcast(x): readers read x.
// Nodes left without readers among the removed division's inputs (its Cast and Const)
// are removed. Everything else is untouched.
//
// Terms: a gradient is *summed* by Horovod when its allreduce is neither averaged by
// a division nor by reduce_op Average; Parallax's plan averages unless the cluster's
// strategy says `average: false` (the report names the summed ones).
//
// Changed: any Horovod op found. Idempotent. Cost: O(nodes + edges).
#ifndef PARALLAX_LIB_PASSES_STRIP_HOROVOD_H_
#define PARALLAX_LIB_PASSES_STRIP_HOROVOD_H_

#include <memory>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/passes/pass.h"

namespace parallax {

struct HorovodStrip {
  int allreduce_averaged = 0;
  int allreduce_summed = 0;
  int allgather = 0;
  int broadcast = 0;
  std::vector<std::string> summed;  // the gradients (allreduce inputs) Horovod summed
  int total() const { return allreduce_averaged + allreduce_summed + allgather + broadcast; }
  // "8 HorovodAllreduce (averaged), 25 HorovodBroadcast"; "" when none.
  std::string Summary() const;
};

// True when the graph holds any Horovod op.
bool HasHorovodOps(const Graph& graph);

// Removes the Horovod ops as described above. Errors name the node (a reduction or
// scale Parallax cannot express) and leave the graph untouched.
StatusOr<HorovodStrip> StripHorovod(Graph& graph);

std::unique_ptr<Pass> CreateStripHorovodPass();

}  // namespace parallax

#endif  // PARALLAX_LIB_PASSES_STRIP_HOROVOD_H_
