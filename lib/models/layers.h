// Layers shared by the zoo's models, written as TF 1.x's tf.layers writes them.
//
//  - FeedPlaceholder: a Placeholder that carries the zoo's synthetic-data rule (the
//    `_parallax_synthetic` attr, zoo.h) and is recorded in the model's feeds.
//  - DenseLayer: tf.layers.dense — `<scope>/kernel` [in, units] (Glorot uniform unless
//    another initializer is given), `<scope>/bias` [units] (zeros), `<scope>/MatMul`,
//    `<scope>/BiasAdd`, and with relu `<scope>/Relu`. The input must be 2-D.
//  - MeanCrossEntropy: the zoo's classification loss, the mean over the batch of
//    `SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits`, named
//    `name` (its axes Const `Const`).
#ifndef PARALLAX_LIB_MODELS_LAYERS_H_
#define PARALLAX_LIB_MODELS_LAYERS_H_

#include <cstdint>
#include <string_view>

#include "lib/models/graph_builder.h"
#include "lib/models/zoo.h"

namespace parallax::models {

Output FeedPlaceholder(const GraphBuilder& b, std::string_view name, DataType dtype,
                       StaticShape shape, std::string_view synthetic, Model* model);

Output DenseLayer(const GraphBuilder& b, std::string_view scope, const Output& x, int64_t units,
                  bool relu = false, const Initializer& kernel_init = Initializer::GlorotUniform());

Output MeanCrossEntropy(const GraphBuilder& b, const Output& logits, const Output& labels,
                        std::string_view name);

}  // namespace parallax::models

#endif  // PARALLAX_LIB_MODELS_LAYERS_H_
