// The transformer's pipeline, written as data: the passes that turn the single-device
// graph into rank r's graph, in order (pipelines.cc holds the list, one commented line
// per pass). `--print-passes`, `--disable-pass`, `--dump-after` and `--stop-after` act
// on this list.
//
// Each entry says whether the pass's rewrite depends on the rank. The list puts the
// rank-independent passes first, so the transformer runs that prefix once on the input
// graph and only the rest (the *per-rank suffix*) once per rank: at 1,024 ranks the
// rewrite costs about one graph copy per rank instead of a whole pipeline per rank.
// Collective instance keys stay identical on every rank: the per-rank collective
// builders continue from the key where the shared prefix stopped.
#ifndef PARALLAX_LIB_TRANSFORM_PIPELINES_H_
#define PARALLAX_LIB_TRANSFORM_PIPELINES_H_

#include <memory>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/passes/pipeline.h"

namespace parallax {

struct PassEntry {
  std::unique_ptr<Pass> (*create)();
  bool per_rank;  // its output depends on the rank (devices, shards, partition shapes)
};

// The transformer's passes, in order.
const std::vector<PassEntry>& TransformPassList();

// The whole list as one pipeline (for --print-passes, and for running a rank's rewrite
// in one go). `options` apply to the list as a whole.
std::unique_ptr<Pipeline> BuildTransformPipeline(PipelineOptions options);

// The list split into the rank-independent prefix and the per-rank suffix, with
// `options` divided between them so that together they behave as the whole pipeline:
// --stop-after counts over the whole list; --disable-pass and --dump-after go to the
// half that holds the pass. Errors: options that name passes not in the list.
struct SplitPipeline {
  std::unique_ptr<Pipeline> shared;    // run once
  std::unique_ptr<Pipeline> per_rank;  // run per rank
};
StatusOr<SplitPipeline> BuildSplitTransformPipeline(const PipelineOptions& options);

}  // namespace parallax

#endif  // PARALLAX_LIB_TRANSFORM_PIPELINES_H_
