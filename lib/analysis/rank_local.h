// Rank-local state: state variables whose value differs between the ranks of a job.
//
// A *rank-local* variable is a state variable (not trainable, not a slot) that some write
// of it fills with a value computed from rank-specific inputs — the examples (placeholders,
// readers, queues, iterators) or random numbers (each rank draws from its own streams) —
// not through a tensor the job synchronises (a gradient the transform all-reduces or
// sends to the parameter servers). Batch norm's moving mean and variance are the usual
// case; a running count of examples seen is another. Each rank of a job keeps its own
// copy (the plan keeps such variables `local`); `verify --accumulate` keeps one per rank.
//
// Cost: one walk back from each state variable's writes, stopping at synchronised
// tensors; linear in the graph per variable.
#ifndef PARALLAX_LIB_ANALYSIS_RANK_LOCAL_H_
#define PARALLAX_LIB_ANALYSIS_RANK_LOCAL_H_

#include <string>
#include <string_view>
#include <vector>

#include "lib/analysis/training_analysis.h"
#include "lib/graph/graph.h"

namespace parallax {

struct RankLocalVariable {
  std::string name;
  std::vector<std::string> writes;  // the write ops (AssignSub, AssignMovingAvg, ...)
};
std::vector<RankLocalVariable> RankLocalState(const Graph& graph,
                                              const TrainingAnalysis& analysis);

// Ops whose outputs differ between ranks: the examples and random numbers.
bool IsRankSpecificSource(std::string_view op);

}  // namespace parallax

#endif  // PARALLAX_LIB_ANALYSIS_RANK_LOCAL_H_
