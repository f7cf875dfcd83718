#include "lib/passes/pipeline.h"

#include <filesystem>

#include <spdlog/spdlog.h>

#include "lib/base/fnv1a.h"
#include "lib/graph/graph_io.h"
#include "lib/graph/verifier.h"

namespace parallax {

uint64_t GraphFingerprint(const Graph& graph) {
  // Over the binary GraphDef: stable across runs and platforms.
  return Fnv1a64(SerializeGraphDef(graph));
}

Pipeline::Pipeline(std::string name, std::string description,
                   std::vector<std::unique_ptr<Pass>> passes, PipelineOptions options)
    : name_(std::move(name)),
      description_(std::move(description)),
      passes_(std::move(passes)),
      options_(std::move(options)) {}

Status Pipeline::ValidateOptions() const {
  std::string known;
  std::set<std::string_view> names;
  for (const auto& pass : passes_) {
    names.insert(pass->name());
    known += (known.empty() ? "" : ", ") + std::string(pass->name());
  }
  for (const std::string& disabled : options_.disabled_passes) {
    if (!names.count(disabled)) {
      return InvalidArgumentError("--disable-pass: unknown pass '{}'; the passes are: {}",
                                  disabled, known);
    }
  }
  if (!options_.dump_after.empty() && !names.count(options_.dump_after)) {
    return InvalidArgumentError("--dump-after: unknown pass '{}'; the passes are: {}",
                                options_.dump_after, known);
  }
  if (options_.stop_after > static_cast<int>(passes_.size())) {
    return InvalidArgumentError("--stop-after: {} is more than the {} passes of {}",
                                options_.stop_after, passes_.size(), name_);
  }
  return Status::Ok();
}

std::string Pipeline::Describe() const {
  size_t width = 0;
  for (const auto& pass : passes_) width = std::max(width, pass->name().size());
  std::string out;
  for (size_t i = 0; i < passes_.size(); ++i) {
    const Pass& pass = *passes_[i];
    std::string mark;
    if (options_.disabled_passes.count(std::string(pass.name()))) mark = "  [disabled]";
    if (options_.stop_after >= 0 && static_cast<int>(i) >= options_.stop_after) {
      mark = "  [after --stop-after]";
    }
    out += fmt::format("  {:2}. {:<{}}  {}{}\n", i + 1, pass.name(), width, pass.description(),
                       mark);
  }
  return out;
}

StatusOr<bool> Pipeline::RunImpl(Graph& graph, PassContext& context) {
  bool changed_any = false;
  for (size_t i = 0; i < passes_.size(); ++i) {
    if (options_.stop_after >= 0 && static_cast<int>(i) >= options_.stop_after) break;
    Pass& pass = *passes_[i];
    const std::string pass_name(pass.name());
    if (options_.disabled_passes.count(pass_name)) continue;

    const uint64_t before = options_.check_changed ? GraphFingerprint(graph) : 0;
    const uint64_t structure_before = graph.structure_version();
    PX_ASSIGN_OR_RETURN(bool changed, pass.Run(graph, context));
    if (options_.check_changed && !changed && GraphFingerprint(graph) != before) {
      return InternalError("pass {} reported no change but changed the graph", pass_name);
    }
    if (changed) {
      changed_any = true;
      if (context.analyses != nullptr) context.analyses->Invalidate(pass.Preserves());
      // Only edits that can break what the verifier checks (not device strings).
      if (options_.verify && graph.structure_version() != structure_before) {
        Status verified = VerifyGraph(graph, VerifyScope::kEdits);
        if (!verified.ok()) {
          return Status(StatusCode::kInternal,
                        fmt::format("after {}: {}", pass_name, verified.message()));
        }
      }
    }
    if (options_.dump_after == pass_name) {
      const std::string label = std::filesystem::path(graph.source()).filename().string();
      const std::string path =
          fmt::format("{}/{}.after-{}.pbtxt", options_.dump_dir, label, pass_name);
      std::error_code ec;
      std::filesystem::create_directories(options_.dump_dir, ec);
      if (ec) {
        return InvalidArgumentError("--dump-dir {}: cannot create it: {}", options_.dump_dir,
                                    ec.message());
      }
      PX_RETURN_IF_ERROR(SaveGraph(graph, path, GraphFileFormat::kText));
      spdlog::info("wrote {}", path);
    }
  }
  return changed_any;
}

StatusOr<bool> FixedPoint::RunImpl(Graph& graph, PassContext& context) {
  bool changed_any = false;
  for (int i = 0; i < max_iterations_; ++i) {
    PX_ASSIGN_OR_RETURN(bool changed, pass_->Run(graph, context));
    if (!changed) return changed_any;
    changed_any = true;
    if (context.analyses != nullptr) context.analyses->Invalidate(pass_->Preserves());
  }
  return InternalError("{} still changed the graph after {} iterations", pass_->name(),
                       max_iterations_);
}

}  // namespace parallax
