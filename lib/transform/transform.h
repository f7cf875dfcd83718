// Transform: the plan carried out — the single-device graph rewritten into one graph
// per rank by the transformer's pipeline (pipelines.h).
//
// For rank r of N: a copy of the input graph (copies share the file bytes) named
// "rank-r" in messages, rewritten by the passes with a PassContext {plan, rank r, the
// graph's AnalysisCache, TfCollectives{group_size N, device plan.rank_devices[r]}}, then
// verified. The rank-independent prefix of the pipeline runs once, on a shared copy
// (which keeps the input's name in messages and dumps), and each rank starts from a copy of its result; the per-rank
// collective builders continue from the prefix's next instance key, so every rank gets
// the same keys for the same collectives. Verified: the shared graph once, then each
// rank's after every pass that changed it (PipelineOptions::verify; with it off, each
// rank's graph once at the end), so every rank graph returned has passed the verifier. Ranks are rewritten on up to `threads`
// threads at a time.
//
// Cost: one pipeline run + per rank, one graph copy, the per-rank passes and a verify.
// Memory: Transform keeps every rank's graph; TransformEach hands each graph to a
// callback as soon as it is done, so only `threads` rank graphs are alive at a time.
#ifndef PARALLAX_LIB_TRANSFORM_TRANSFORM_H_
#define PARALLAX_LIB_TRANSFORM_TRANSFORM_H_

#include <functional>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/passes/pipeline.h"
#include "lib/plan/plan.h"

namespace parallax {

struct TransformResult {
  std::vector<Graph> ranks;  // rank r's graph at index r (empty past a rank_limit)
};

struct TransformRunOptions {
  int threads = 0;     // 0: one thread per hardware thread, capped at the number of ranks
  int rank_limit = 0;  // > 0: only ranks 0 .. rank_limit-1 (`parallax estimate`: rank 0)
};

StatusOr<TransformResult> Transform(const Graph& input, const Plan& plan,
                                    const PipelineOptions& options,
                                    const TransformRunOptions& run = {});

// Calls `consume(r, graph)` for every rank r, from the worker threads (concurrently,
// in no particular order). The first error (a pass's, the verifier's or consume's) stops
// the work and is returned; with several, the lowest rank's.
Status TransformEach(const Graph& input, const Plan& plan, const PipelineOptions& options,
                     const TransformRunOptions& run,
                     const std::function<Status(int rank, Graph&& graph)>& consume);

}  // namespace parallax

#endif  // PARALLAX_LIB_TRANSFORM_TRANSFORM_H_
