// Benchmark: the neural-network CPU kernels on the shapes of the two reference models,
// MLP 784-512-512-10 (batch 256) and TF-slim LeNet (batch 64: conv 5x5x1x32 and
// 5x5x32x64, SAME, on 28x28 and 14x14 inputs).
//
// Baseline: a bare cblas_sgemm of 256x784x512 (the MLP's first layer), i.e. this
// machine's practical peak for that product with the same OpenBLAS and core selection the
// kernels use. Every GFLOP/s line is compared to it.
//   matmul_*          the MatMul kernel through the executor, in the three transpose
//                     patterns a training step uses (forward, dX, dW);
//   conv{1,2}_*       Conv2D / Conv2DBackpropInput / Conv2DBackpropFilter kernels through
//                     the executor (oneDNN for float), and the im2col + sgemm
//                     implementation called directly (`_im2col`) for comparison;
//   lenet_step        the same for LeNet (below), in ms;
//   mlp_step          forward + backward of the MLP (MatMul, BiasAdd, Relu,
//                     SparseSoftmaxCrossEntropyWithLogits, ReluGrad, BiasAddGrad): one
//                     executor run, optimizer excluded; in ms.
// Each value is the best of 5 rounds of ~0.2 s (the machine is shared; the best round is
// the least disturbed).
//
// Output lines follow scripts/bench.sh: `kernels.<metric>: <value> <unit> (<note>)`.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "lib/graph/graph.h"
#include "lib/runtime/device.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/kernels/cpu/blas_gemm.h"
#include "lib/runtime/kernels/cpu/conv_impl.h"
#include "lib/runtime/tensor.h"

namespace parallax {
namespace {

using Attrs = std::map<std::string, tensorflow::AttrValue>;

// Seconds per call of fn: best of 5 rounds.
double TimeIt(const std::function<void()>& fn) {
  for (int i = 0; i < 3; ++i) fn();
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    int iterations = 0;
    const auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    do {
      fn();
      ++iterations;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (elapsed < 0.2);
    best = std::min(best, elapsed / iterations);
  }
  return best;
}

Tensor Filled(TensorShape shape, float scale) {
  Tensor t(tensorflow::DT_FLOAT, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = scale * static_cast<float>((i * 7919) % 17 - 8) / 8;
  return t;
}

Tensor Int32s(std::vector<int32_t> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Tensor::FromVector<int32_t>(values, {n});
}

tensorflow::AttrValue Type(DataType t) {
  tensorflow::AttrValue v;
  v.set_type(t);
  return v;
}
tensorflow::AttrValue Bool(bool b) {
  tensorflow::AttrValue v;
  v.set_b(b);
  return v;
}
tensorflow::AttrValue Str(const std::string& s) {
  tensorflow::AttrValue v;
  v.set_s(s);
  return v;
}
tensorflow::AttrValue Ints(std::vector<int64_t> values) {
  tensorflow::AttrValue v;
  for (int64_t x : values) v.mutable_list()->add_i(x);
  return v;
}

// A graph under construction: fed placeholders and ops on them.
class Builder {
 public:
  OutputRef Feed(const std::string& name, Tensor value) {
    NodeSpec spec;
    spec.name = name;
    spec.op = "Placeholder";
    spec.attrs["dtype"] = Type(value.dtype());
    feeds_.push_back({name, std::move(value)});
    return {Add(spec), 0};
  }
  OutputRef Op(const std::string& name, const std::string& op, std::vector<OutputRef> inputs,
               Attrs attrs, int port = 0) {
    NodeSpec spec;
    spec.name = name;
    spec.op = op;
    spec.inputs = std::move(inputs);
    spec.attrs = std::move(attrs);
    return {Add(spec), port};
  }
  Graph& graph() { return graph_; }
  const std::vector<std::pair<std::string, Tensor>>& feeds() const { return feeds_; }

 private:
  NodeId Add(const NodeSpec& spec) {
    StatusOr<NodeId> id = graph_.AddNode(spec);
    if (!id.ok()) {
      std::fprintf(stderr, "kernels_bench: %s\n", id.status().ToString().c_str());
      std::exit(1);
    }
    return *id;
  }
  Graph graph_;
  std::vector<std::pair<std::string, Tensor>> feeds_;
};

// Seconds per executor run fetching `fetches`.
double TimeGraph(Builder& b, const std::vector<std::string>& fetches) {
  CpuDevice device;
  Executor executor(b.graph(), device);
  RunRequest request;
  request.feeds = b.feeds();
  request.fetches = fetches;
  auto run = [&] {
    StatusOr<std::vector<Tensor>> out = executor.Run(request);
    if (!out.ok()) {
      std::fprintf(stderr, "kernels_bench: %s\n", out.status().ToString().c_str());
      std::exit(1);
    }
  };
  return TimeIt(run);
}

double baseline_gflops = 0;

void Report(const std::string& name, double flops, double seconds) {
  const double gflops = flops / seconds / 1e9;
  std::printf("kernels.%s: %.1f GFLOP/s (%.2fx vs baseline)\n", name.c_str(), gflops,
              gflops / baseline_gflops);
}

double MatMulKernel(int64_t m, int64_t k, int64_t n, bool ta, bool tb) {
  Builder b;
  OutputRef x = b.Feed("a", Filled(ta ? TensorShape{k, m} : TensorShape{m, k}, 1));
  OutputRef y = b.Feed("b", Filled(tb ? TensorShape{n, k} : TensorShape{k, n}, 1));
  b.Op("mm", "MatMul", {x, y},
       {{"T", Type(tensorflow::DT_FLOAT)}, {"transpose_a", Bool(ta)}, {"transpose_b", Bool(tb)}});
  return TimeGraph(b, {"mm:0"});
}

Attrs ConvAttrs() {
  return {{"T", Type(tensorflow::DT_FLOAT)},
          {"padding", Str("SAME")},
          {"strides", Ints({1, 1, 1, 1})}};
}

void BenchConv(const std::string& name, std::vector<int64_t> input, std::vector<int64_t> filter,
               bool backprop_input) {
  StatusOr<conv::Geometry> g =
      conv::ComputeGeometry(input, filter, {1, 1, 1, 1}, conv::Padding::kSame, {});
  const TensorShape in_shape(input), filter_shape(filter);
  const TensorShape out_shape{g->batch, g->out_h, g->out_w, g->out_c};
  const Tensor x = Filled(in_shape, 1), w = Filled(filter_shape, 0.1f), dy = Filled(out_shape, 1);
  {
    Builder b;
    b.Op("conv", "Conv2D", {b.Feed("x", x), b.Feed("w", w)}, ConvAttrs());
    Report(name + "_forward", g->flops(), TimeGraph(b, {"conv:0"}));
  }
  if (backprop_input) {
    Builder b;
    b.Op("dx", "Conv2DBackpropInput",
         {b.Feed("sizes", Int32s({static_cast<int32_t>(input[0]), static_cast<int32_t>(input[1]),
                                  static_cast<int32_t>(input[2]), static_cast<int32_t>(input[3])})),
          b.Feed("w", w), b.Feed("dy", dy)},
         ConvAttrs());
    Report(name + "_backprop_input", g->flops(), TimeGraph(b, {"dx:0"}));
  }
  {
    Builder b;
    b.Op("dw", "Conv2DBackpropFilter",
         {b.Feed("x", x),
          b.Feed("sizes", Int32s({static_cast<int32_t>(filter[0]), static_cast<int32_t>(filter[1]),
                                  static_cast<int32_t>(filter[2]), static_cast<int32_t>(filter[3])})),
          b.Feed("dy", dy)},
         ConvAttrs());
    Report(name + "_backprop_filter", g->flops(), TimeGraph(b, {"dw:0"}));
  }
  // The im2col implementation, directly.
  ThreadPool pool(static_cast<int>(std::thread::hardware_concurrency()));
  Tensor out(tensorflow::DT_FLOAT, out_shape), dx(tensorflow::DT_FLOAT, in_shape),
      dw(tensorflow::DT_FLOAT, filter_shape);
  Report(name + "_forward_im2col", g->flops(), TimeIt([&] {
           conv::Im2colForward<float>(pool, *g, x.data<float>(), w.data<float>(), out.data<float>());
         }));
  if (backprop_input) {
    Report(name + "_backprop_input_im2col", g->flops(), TimeIt([&] {
             conv::Im2colBackwardInput<float>(pool, *g, w.data<float>(), dy.data<float>(),
                                              dx.data<float>());
           }));
  }
  Report(name + "_backprop_filter_im2col", g->flops(), TimeIt([&] {
           conv::Im2colBackwardFilter<float>(pool, *g, x.data<float>(), dy.data<float>(),
                                             dw.data<float>());
         }));
}

// Forward and backward of MLP 784-512-512-10, batch 256, without the optimizer.
void BenchMlpStep() {
  const DataType f32 = tensorflow::DT_FLOAT;
  const Attrs t = {{"T", Type(f32)}};
  auto mm = [&](bool ta, bool tb) {
    Attrs a = t;
    a["transpose_a"] = Bool(ta);
    a["transpose_b"] = Bool(tb);
    return a;
  };
  Builder b;
  OutputRef x = b.Feed("x", Filled({256, 784}, 1));
  Tensor labels(tensorflow::DT_INT32, {256});
  for (int i = 0; i < 256; ++i) labels.data<int32_t>()[i] = i % 10;
  OutputRef y = b.Feed("labels", labels);
  const int64_t sizes[] = {784, 512, 512, 10};
  OutputRef h = x;
  std::vector<OutputRef> w(3), inputs(3), pre(3);
  for (int l = 0; l < 3; ++l) {
    const std::string n = std::to_string(l);
    w[l] = b.Feed("w" + n, Filled({sizes[l], sizes[l + 1]}, 0.05f));
    OutputRef bias = b.Feed("b" + n, Filled({sizes[l + 1]}, 0.1f));
    inputs[l] = h;
    pre[l] = b.Op("bias" + n, "BiasAdd", {b.Op("mm" + n, "MatMul", {h, w[l]}, mm(false, false)), bias}, t);
    h = l < 2 ? b.Op("relu" + n, "Relu", {pre[l]}, t) : pre[l];
  }
  Attrs xent = t;
  xent["Tlabels"] = Type(tensorflow::DT_INT32);
  OutputRef grad = b.Op("xent", "SparseSoftmaxCrossEntropyWithLogits", {h, y}, xent, 1);
  std::vector<std::string> fetches = {"xent:0"};
  for (int l = 2; l >= 0; --l) {
    const std::string n = std::to_string(l);
    if (l < 2) grad = b.Op("relu_grad" + n, "ReluGrad", {grad, pre[l]}, t);
    b.Op("dw" + n, "MatMul", {inputs[l], grad}, mm(true, false));
    b.Op("db" + n, "BiasAddGrad", {grad}, t);
    fetches.push_back("dw" + n + ":0");
    fetches.push_back("db" + n + ":0");
    if (l > 0) grad = b.Op("dx" + n, "MatMul", {grad, w[l]}, mm(false, true));
  }
  const double seconds = TimeGraph(b, fetches);
  double flops = 0;
  for (int l = 0; l < 3; ++l) flops += 2.0 * 256 * sizes[l] * sizes[l + 1] * (l == 0 ? 2 : 3);
  std::printf("kernels.mlp_step: %.3f ms (%.1f GFLOP/s, %.2fx baseline; forward + backward, "
              "no optimizer)\n",
              seconds * 1e3, flops / seconds / 1e9, flops / seconds / 1e9 / baseline_gflops);
}

// Forward and backward of TF-slim LeNet, batch 64, without the optimizer and without
// the Reshape between the last pool and fc3 (fc3 reads a fed [64, 3136] input of the
// same size), so that every op is one of these kernels; in ms.
void BenchLenetStep() {
  const DataType f32 = tensorflow::DT_FLOAT;
  const Attrs t = {{"T", Type(f32)}};
  Attrs conv = ConvAttrs();
  Attrs pool = t;
  pool["ksize"] = Ints({1, 2, 2, 1});
  pool["strides"] = Ints({1, 2, 2, 1});
  pool["padding"] = Str("VALID");
  auto mm = [&](bool ta, bool tb) {
    Attrs a = t;
    a["transpose_a"] = Bool(ta);
    a["transpose_b"] = Bool(tb);
    return a;
  };
  Builder b;
  OutputRef x = b.Feed("x", Filled({64, 28, 28, 1}, 1));
  OutputRef w1 = b.Feed("w1", Filled({5, 5, 1, 32}, 0.1f));
  OutputRef b1 = b.Feed("b1", Filled({32}, 0.1f));
  OutputRef w2 = b.Feed("w2", Filled({5, 5, 32, 64}, 0.02f));
  OutputRef b2 = b.Feed("b2", Filled({64}, 0.1f));
  OutputRef flat = b.Feed("flat", Filled({64, 3136}, 1));
  OutputRef w3 = b.Feed("w3", Filled({3136, 1024}, 0.01f));
  OutputRef b3 = b.Feed("b3", Filled({1024}, 0.1f));
  OutputRef w4 = b.Feed("w4", Filled({1024, 10}, 0.05f));
  OutputRef b4 = b.Feed("b4", Filled({10}, 0.1f));
  Tensor labels(tensorflow::DT_INT32, {64});
  for (int i = 0; i < 64; ++i) labels.data<int32_t>()[i] = i % 10;
  OutputRef y = b.Feed("labels", labels);
  // Forward.
  OutputRef c1 = b.Op("c1", "BiasAdd", {b.Op("conv1", "Conv2D", {x, w1}, conv), b1}, t);
  OutputRef r1 = b.Op("r1", "Relu", {c1}, t);
  OutputRef p1 = b.Op("p1", "MaxPool", {r1}, pool);
  OutputRef c2 = b.Op("c2", "BiasAdd", {b.Op("conv2", "Conv2D", {p1, w2}, conv), b2}, t);
  OutputRef r2 = b.Op("r2", "Relu", {c2}, t);
  OutputRef p2 = b.Op("p2", "MaxPool", {r2}, pool);
  OutputRef f3 = b.Op("f3", "BiasAdd", {b.Op("fc3", "MatMul", {flat, w3}, mm(false, false)), b3}, t);
  OutputRef r3 = b.Op("r3", "Relu", {f3}, t);
  OutputRef f4 = b.Op("f4", "BiasAdd", {b.Op("fc4", "MatMul", {r3, w4}, mm(false, false)), b4}, t);
  Attrs xent = t;
  xent["Tlabels"] = Type(tensorflow::DT_INT32);
  OutputRef g4 = b.Op("xent", "SparseSoftmaxCrossEntropyWithLogits", {f4, y}, xent, 1);
  // Backward.
  b.Op("dw4", "MatMul", {r3, g4}, mm(true, false));
  b.Op("db4", "BiasAddGrad", {g4}, t);
  OutputRef g3 = b.Op("g3", "ReluGrad", {b.Op("dr3", "MatMul", {g4, w4}, mm(false, true)), f3}, t);
  b.Op("dw3", "MatMul", {flat, g3}, mm(true, false));
  b.Op("db3", "BiasAddGrad", {g3}, t);
  // The gradient reaching p2 would come from fc3 through Reshape; p2's output stands in.
  OutputRef dr2 = b.Op("dr2", "MaxPoolGrad", {r2, p2, p2}, pool);
  OutputRef g2 = b.Op("g2", "ReluGrad", {dr2, c2}, t);
  b.Op("db2", "BiasAddGrad", {g2}, t);
  b.Op("dw2", "Conv2DBackpropFilter", {p1, b.Feed("w2_sizes", Int32s({5, 5, 32, 64})), g2}, conv);
  OutputRef dp1 = b.Op("dp1", "Conv2DBackpropInput",
                       {b.Feed("p1_sizes", Int32s({64, 14, 14, 32})), w2, g2}, conv);
  OutputRef g1 = b.Op("g1", "ReluGrad", {b.Op("dr1", "MaxPoolGrad", {r1, p1, dp1}, pool), c1}, t);
  b.Op("db1", "BiasAddGrad", {g1}, t);
  b.Op("dw1", "Conv2DBackpropFilter", {x, b.Feed("w1_sizes", Int32s({5, 5, 1, 32})), g1}, conv);
  const double seconds = TimeGraph(
      b, {"xent:0", "dw1:0", "db1:0", "dw2:0", "db2:0", "dw3:0", "db3:0", "dw4:0", "db4:0"});
  std::printf("kernels.lenet_step: %.3f ms (forward + backward, no optimizer)\n", seconds * 1e3);
}

int Main() {
  const int threads = static_cast<int>(std::thread::hardware_concurrency());
  SetBlasThreads(threads);
  {
    const int64_t m = 256, k = 784, n = 512;
    std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
    const double seconds = TimeIt([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1, a.data(), k, b.data(),
                  n, 0, c.data(), n);
    });
    baseline_gflops = 2.0 * m * n * k / seconds / 1e9;
    std::printf("kernels.sgemm_peak_256x784x512: %.1f GFLOP/s (baseline; OpenBLAS %s, %d threads)\n",
                baseline_gflops, BlasCoreName(), threads);
  }
  Report("matmul_256x784x512", 2.0 * 256 * 784 * 512, MatMulKernel(256, 784, 512, false, false));
  Report("matmul_256x512x784_tb", 2.0 * 256 * 784 * 512, MatMulKernel(256, 512, 784, false, true));
  Report("matmul_784x256x512_ta", 2.0 * 256 * 784 * 512, MatMulKernel(784, 256, 512, true, false));
  BenchConv("conv1_64x28x28x1_5x5x32", {64, 28, 28, 1}, {5, 5, 1, 32}, false);
  BenchConv("conv2_64x14x14x32_5x5x64", {64, 14, 14, 32}, {5, 5, 32, 64}, true);
  BenchMlpStep();
  BenchLenetStep();
  return 0;
}

}  // namespace
}  // namespace parallax

int main() { return parallax::Main(); }
