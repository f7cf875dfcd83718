// Every op of every zoo model has a CPU kernel: each model with each optimizer, with
// gradient clipping and a global step, and the LSTM unrolled too. Tests that train the
// zoo then never meet a missing kernel (a kernel dropped from the registry fails here,
// naming the model and the op, instead of turning other tests into skips).
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "lib/models/optimizers.h"
#include "lib/models/zoo.h"
#include "lib/runtime/kernel.h"

namespace parallax {
namespace {

TEST_CASE("every op of every zoo model has a CPU kernel") {
  int graphs = 0;
  std::set<std::string> ops;
  for (const models::ModelSpec& spec : models::ModelSpecs()) {
    for (models::OptimizerKind optimizer : models::kAllOptimizers) {
      for (const bool extras : {false, true}) {
        models::ModelOptions options;
        options.optimizer = optimizer;
        if (extras) {
          options.clip_norm = 1.0;
          options.global_step = true;
          options.unroll = spec.name == "lstm";
        }
        StatusOr<models::Model> model = models::BuildModel(spec.name, options);
        INFO(spec.name << " with " << models::OptimizerFlagName(optimizer) << (extras ? " (+extras)" : ""));
        REQUIRE(model.ok());
        std::set<std::string> missing;
        for (NodeId id : model->graph.NodeIds()) {
          const Node& node = model->graph.node(id);
          ops.insert(std::string(node.op()));
          if (!HasKernel(node, DeviceType::kCpu)) missing.insert(std::string(node.op()));
        }
        std::string list;
        for (const std::string& op : missing) list += (list.empty() ? "" : ", ") + op;
        INFO("ops without a CPU kernel: " << list);
        CHECK(missing.empty());
        ++graphs;
      }
    }
  }
  WARN(graphs << " zoo graphs, " << ops.size() << " distinct ops, all with CPU kernels");
}

}  // namespace
}  // namespace parallax
