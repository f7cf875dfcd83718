// Input files for running real TensorFlow training graphs in tests, written with
// Parallax's own writers (TFRecord, PNG, TF checkpoints) from data Debian ships
// (Fashion-MNIST) or from the graph itself.
//
//  - WriteSlimMnist: TF-slim's MNIST TFRecord format (tf.train.Example with
//    image/encoded: a PNG, image/format: "png", image/class/label: int64, image/height,
//    image/width), the first `n` Fashion-MNIST training images.
//  - WriteRandomCheckpoint: a TF checkpoint holding, for every variable of `graph` that
//    its checkpoint_initializer restores (RestoreV2 in an initializer) or, with `all`,
//    every variable, a tensor of the variable's shape: truncated-normal-like values of
//    scale 0.02 for floats, zeros for integers — the kind of "pretrained" checkpoint a
//    fine-tuning graph starts from.
#ifndef PARALLAX_LIB_TESTING_TF_DATA_H_
#define PARALLAX_LIB_TESTING_TF_DATA_H_

#include <string>

#include "lib/base/status.h"
#include "lib/graph/graph.h"

namespace parallax::testing {

// Reads Fashion-MNIST from kFashionMnistDir (testdata.h); an error when it is absent.
Status WriteSlimMnist(const std::string& path, int n);

// `n` tf.train.Examples for lib/runtime/testdata/tfdata_softmax.pbtxt: x, 4 floats
// uniform in [0, 1); y (int64), the index of the largest of x's first 3 values — a
// rule softmax regression learns.
Status WriteSoftmaxExamples(const std::string& path, int n, uint64_t seed = 7);

// For every file name ending in .jpg/.jpeg in a Const of `graph`: DIR/<its last
// component>, a JPEG of height x width x 3 — `distinct` different images (smooth colour
// gradients with noise), the other names symbolic links to them. Returns the number of
// names. For graphs whose input pipeline lists thousands of image files.
StatusOr<int> WriteGraphImages(const Graph& graph, const std::string& dir, int height,
                               int width, int distinct = 8);

// Writes PREFIX.index/.data-00000-of-00001; returns the number of tensors written.
StatusOr<int> WriteRandomCheckpoint(const Graph& graph, const std::string& prefix, bool all,
                                    uint64_t seed = 1);

}  // namespace parallax::testing

#endif  // PARALLAX_LIB_TESTING_TF_DATA_H_
