// Layers shared by the zoo's models (layers.h).
#include "lib/models/layers.h"

#include <string>
#include <utility>

namespace parallax::models {

Output FeedPlaceholder(const GraphBuilder& b, std::string_view name, DataType dtype,
                       StaticShape shape, std::string_view synthetic, Model* model) {
  const Output p = b.Placeholder(name, dtype, shape);
  if (p.valid()) b.graph().SetAttr(p.node(), kSyntheticAttr, StringAttr(synthetic));
  model->feeds.push_back({std::string(name), dtype, std::move(shape), std::string(synthetic)});
  return p;
}

Output DenseLayer(const GraphBuilder& b, std::string_view scope, const Output& x, int64_t units,
                  bool relu, const Initializer& kernel_init) {
  const GraphBuilder s = b.WithScope(scope);
  const int64_t in = x.shape.known_rank && x.shape.rank() == 2 ? x.shape.dims[1] : -1;
  const DataType t = BaseType(x.dtype);
  const VariableInfo kernel =
      s.Variable("kernel", StaticShape{in, units}, t, kernel_init);
  const VariableInfo bias = s.Variable("bias", StaticShape{units}, t, Initializer::Zeros());
  const Output y = s.BiasAdd(s.MatMul(x, kernel.read, false, false, "MatMul"), bias.read, "BiasAdd");
  return relu ? s.Relu(y, "Relu") : y;
}

Output MeanCrossEntropy(const GraphBuilder& b, const Output& logits, const Output& labels,
                        std::string_view name) {
  const auto [xent, backprop] = b.WithScope("SparseSoftmaxCrossEntropyWithLogits")
                                    .SparseSoftmaxCrossEntropyWithLogits(logits, labels);
  return b.ReduceMeanAll(xent, name);
}

}  // namespace parallax::models
