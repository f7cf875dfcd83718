// Pipeline: an ordered list of passes that is itself a pass.
//
// Written as data (see lib/transform/pipelines.cc for the transformer's list), so the
// debugging flags fall out of it: --print-passes (Describe), --disable-pass=NAME,
// --dump-after=NAME (write the graph as text after that pass), --stop-after=N (run only
// the first N passes, to bisect a bad rewrite). After every pass that changed the graph's
// structure (Graph::structure_version: nodes, edges, attrs — not device strings) the
// verifier runs with VerifyScope::kEdits, and its error names the pass: "after
// insert-allreduce: ...". The input must have passed the full verifier.
//
// FixedPoint runs one pass until it reports no change, with a cap: passes never loop on
// their own.
#ifndef PARALLAX_LIB_PASSES_PIPELINE_H_
#define PARALLAX_LIB_PASSES_PIPELINE_H_

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "lib/passes/pass.h"

namespace parallax {

struct PipelineOptions {
  std::set<std::string> disabled_passes;  // by name; skipped
  std::string dump_after;                 // a pass name: write the graph after it ...
  std::string dump_dir = ".";             // ... to <dump_dir>/<graph source>.after-<pass>.pbtxt
  int stop_after = -1;                    // >= 0: run only the first N passes of the list
  bool verify = true;                     // run the verifier after every changing pass
  bool check_changed = false;             // fail a pass whose "changed" is untrue (tests)
};

class Pipeline : public Pass {
 public:
  Pipeline(std::string name, std::string description, std::vector<std::unique_ptr<Pass>> passes,
           PipelineOptions options = {});

  std::string_view name() const override { return name_; }
  std::string_view description() const override { return description_; }
  const std::vector<std::unique_ptr<Pass>>& passes() const { return passes_; }
  const PipelineOptions& options() const { return options_; }

  // Flags that name passes must name passes of this pipeline.
  Status ValidateOptions() const;

  // One line per pass: "  1. insert-allreduce  dense gradients -> all-reduce (mean)",
  // marking disabled passes and where --stop-after cuts the list.
  std::string Describe() const;

 protected:
  StatusOr<bool> RunImpl(Graph& graph, PassContext& context) override;

 private:
  std::string name_;
  std::string description_;
  std::vector<std::unique_ptr<Pass>> passes_;
  PipelineOptions options_;
};

class FixedPoint : public Pass {
 public:
  FixedPoint(std::unique_ptr<Pass> pass, int max_iterations)
      : pass_(std::move(pass)), max_iterations_(max_iterations) {}

  std::string_view name() const override { return pass_->name(); }
  std::string_view description() const override { return pass_->description(); }
  AnalysisKind Preserves() const override { return pass_->Preserves(); }

 protected:
  StatusOr<bool> RunImpl(Graph& graph, PassContext& context) override;

 private:
  std::unique_ptr<Pass> pass_;
  int max_iterations_;
};

// A 64-bit fingerprint of the graph's serialized form: equal graphs, equal prints.
uint64_t GraphFingerprint(const Graph& graph);

}  // namespace parallax

#endif  // PARALLAX_LIB_PASSES_PIPELINE_H_
