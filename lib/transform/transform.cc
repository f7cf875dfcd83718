#include "lib/transform/transform.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "lib/graph/verifier.h"
#include "lib/passes/collective_builder.h"
#include "lib/passes/pass.h"
#include "lib/transform/pipelines.h"

namespace parallax {

Status TransformEach(const Graph& input, const Plan& plan, const PipelineOptions& options,
                     const TransformRunOptions& run,
                     const std::function<Status(int rank, Graph&& graph)>& consume) {
  const int world = plan.world_size();
  if (world < 1) return InvalidArgumentError("{}: the plan has no ranks", input.source());
  if (plan.rank_devices.size() != static_cast<size_t>(world)) {
    return InternalError("plan: {} ranks but {} rank devices", world, plan.rank_devices.size());
  }
  PX_ASSIGN_OR_RETURN(SplitPipeline pipelines, BuildSplitTransformPipeline(options));

  // The rank-independent prefix, once. Its collectives are placed on no device; the
  // per-rank `place` pass puts them on each rank's device.
  // It keeps the input's name: its errors and --dump-after files name the input graph.
  Graph shared = input;
  int next_key = 1;
  {
    AnalysisCache analyses(&shared);
    TfCollectives collectives(
        CollectiveOptions{world, 1, 1, "", plan.allreduce.algorithm == "hierarchical"});
    PassContext context{&plan, 0, &analyses, &collectives};
    PX_RETURN_IF_ERROR(pipelines.shared->Run(shared, context));
    next_key = collectives.next_instance_key();
  }
  // Every rank starts from `shared`: verify it once. The per-rank pipeline then verifies
  // after each pass that changed the graph, so a rank needs its own final verify only
  // when that is switched off.
  PX_RETURN_IF_ERROR(VerifyGraph(shared));
  // Every rank's copy starts as `shared`: analyse it once and seed each rank's cache.
  PX_ASSIGN_OR_RETURN(const TrainingAnalysis shared_analysis, AnalyzeTraining(shared));

  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const int count = run.rank_limit > 0 ? std::min(world, run.rank_limit) : world;
  const int threads = std::clamp(run.threads > 0 ? run.threads : static_cast<int>(hardware), 1,
                                 std::max(1, count));
  std::atomic<int> next_rank{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  int error_rank = world;
  Status error;

  auto work = [&]() {
    // Each thread runs its own per-rank pipeline: passes may keep state while they run.
    StatusOr<SplitPipeline> own = BuildSplitTransformPipeline(options);
    for (;;) {
      const int r = next_rank.fetch_add(1);
      if (r >= count || failed.load()) return;
      Status status = own.status();
      if (status.ok()) {
        Graph graph = shared;
        const std::string label = fmt::format("rank-{}", r);
        graph.set_source(label);
        AnalysisCache analyses(&graph);
        analyses.SeedTraining(shared_analysis);
        TfCollectives collectives(CollectiveOptions{world, 1, next_key,
                                                    plan.rank_devices[static_cast<size_t>(r)],
                                                    plan.allreduce.algorithm == "hierarchical"});
        PassContext context{&plan, r, &analyses, &collectives};
        StatusOr<bool> changed = own->per_rank->Run(graph, context);
        status = changed.status();
        if (status.ok() && !options.verify) status = VerifyGraph(graph);
        if (!status.ok() && !status.message().starts_with(label)) status = status.WithPrefix(label);
        if (status.ok()) status = consume(r, std::move(graph));
      }
      if (!status.ok()) {
        std::lock_guard<std::mutex> lock(mutex);
        if (r < error_rank) {
          error_rank = r;
          error = status;
        }
        failed.store(true);
        return;
      }
    }
  };
  if (threads == 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(work);
    for (std::thread& t : pool) t.join();
  }
  return error;
}

StatusOr<TransformResult> Transform(const Graph& input, const Plan& plan,
                                    const PipelineOptions& options,
                                    const TransformRunOptions& run) {
  TransformResult result;
  result.ranks.resize(static_cast<size_t>(std::max(0, plan.world_size())));
  PX_RETURN_IF_ERROR(TransformEach(input, plan, options, run, [&](int rank, Graph&& graph) {
    result.ranks[static_cast<size_t>(rank)] = std::move(graph);
    return Status::Ok();
  }));
  return result;
}

}  // namespace parallax
