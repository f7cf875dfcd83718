// tf.nn.embedding_lookup_sparse as TF 1.x builds it, run end to end: a text GraphDef
// with the forward ops (StridedSlice + Cast of the segment ids, Unique of the ids, the
// GatherV2 + Identity of embedding_lookup, then either SparseSegment{Sum,Mean,SqrtN}
// without weights, or GatherV2, the weights' broadcast Reshape, Mul and SegmentSum with
// RealDiv by SegmentSum(weights) ("mean") or Sqrt(SegmentSum(Pow(weights, 2))) ("sqrtn")
// with them) and the gradient ops tf.gradients adds for the params (TF 1.x's gradient
// functions: SparseSegmentSum's UnsortedSegmentSum(Gather), SparseSegment{Mean,SqrtN}Grad,
// SegmentSum's Gather, RealDiv's and Mul's broadcast reductions, GatherV2's IndexedSlices
// densified by UnsortedSegmentSum). Both outputs are checked against a naive reference
// for every combiner, with and without weights.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "lib/graph/graph_io.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/testing/op_test_util.h"

namespace parallax {
namespace {

using testing::CompareTensors;

// Protobuf text for a GraphDef, node by node.
class GraphText {
 public:
  // `attrs`: attr text, e.g. Type("T", "DT_FLOAT") + Int("begin_mask", 1).
  void Node(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
            const std::string& attrs = "") {
    text_ += "node { name: \"" + name + "\" op: \"" + op + "\"";
    for (const std::string& input : inputs) text_ += " input: \"" + input + "\"";
    text_ += attrs + " }\n";
  }
  void ConstInt32(const std::string& name, const std::vector<int>& values, bool scalar = false) {
    std::string tensor = "dtype: DT_INT32 tensor_shape {";
    if (!scalar) tensor += " dim { size: " + std::to_string(values.size()) + " }";
    tensor += " }";
    for (int v : values) tensor += " int_val: " + std::to_string(v);
    Node(
        name, "Const", {},
        Type("dtype", "DT_INT32") + " attr { key: \"value\" value { tensor { " + tensor + " } } }");
  }
  void ConstFloat(const std::string& name, float value) {
    Node(
        name, "Const", {},
        Type("dtype", "DT_FLOAT") +
            " attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: " +
            std::to_string(value) + " } } }");
  }
  static std::string Type(const std::string& key, const std::string& type) {
    return " attr { key: \"" + key + "\" value { type: " + type + " } }";
  }
  static std::string Int(const std::string& key, int64_t value) {
    return " attr { key: \"" + key + "\" value { i: " + std::to_string(value) + " } }";
  }
  static std::string Bool(const std::string& key, bool value) {
    return " attr { key: \"" + key + "\" value { b: " + (value ? "true" : "false") + " } }";
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

const std::string kF = "DT_FLOAT", kI32 = "DT_INT32", kI64 = "DT_INT64";
using G = GraphText;

// x[begin:end:1] of a vector or x[:, c] of a matrix, as Python slicing builds it.
void StridedSlice(GraphText& g, const std::string& name, const std::string& input,
                  const std::string& type, std::vector<int> begin, std::vector<int> end,
                  int begin_mask, int end_mask, int shrink) {
  g.ConstInt32(name + "/stack", begin);
  g.ConstInt32(name + "/stack_1", end);
  g.ConstInt32(name + "/stack_2", std::vector<int>(begin.size(), 1));
  g.Node(name, "StridedSlice", {input, name + "/stack", name + "/stack_1", name + "/stack_2"},
         G::Type("T", type) + G::Type("Index", kI32) + G::Int("begin_mask", begin_mask) +
             G::Int("end_mask", end_mask) + G::Int("ellipsis_mask", 0) +
             G::Int("new_axis_mask", 0) + G::Int("shrink_axis_mask", shrink));
}

// Python's x / y (RealDiv) or x * y (Mul) gradient for x: reduce grad op y over x's
// broadcast axes, reshape to x's shape.
void BroadcastBinaryGradX(GraphText& g, const std::string& scope, const std::string& op,
                          const std::string& grad, const std::string& x, const std::string& y) {
  g.Node(scope + "/Shape", "Shape", {x}, G::Type("T", kF) + G::Type("out_type", kI32));
  g.Node(scope + "/Shape_1", "Shape", {y}, G::Type("T", kF) + G::Type("out_type", kI32));
  g.Node(scope + "/BroadcastGradientArgs", "BroadcastGradientArgs",
         {scope + "/Shape", scope + "/Shape_1"}, G::Type("T", kI32));
  g.Node(scope + "/" + op, op, {grad, y}, G::Type("T", kF));
  g.Node(scope + "/Sum", "Sum", {scope + "/" + op, scope + "/BroadcastGradientArgs"},
         G::Type("T", kF) + G::Type("Tidx", kI32) + G::Bool("keep_dims", false));
  g.Node(scope + "/Reshape", "Reshape", {scope + "/Sum", scope + "/Shape"},
         G::Type("T", kF) + G::Type("Tshape", kI32));
}

// The gradient of GatherV2(params, indices, axis 0) as the IndexedSlices TF makes, densified
// the way TF converts IndexedSlices to a tensor: UnsortedSegmentSum(values, indices,
// dense_shape[0]).
void GatherGradDense(GraphText& g, const std::string& scope, const std::string& grad,
                     const std::string& params, const std::string& indices,
                     const std::string& index_type) {
  g.Node(scope + "/Shape", "Shape", {params}, G::Type("T", kF) + G::Type("out_type", kI64));
  g.Node(scope + "/ToInt32", "Cast", {scope + "/Shape"},
         G::Type("SrcT", kI64) + G::Type("DstT", kI32) + G::Bool("Truncate", false));
  g.Node(scope + "/Size", "Size", {indices}, G::Type("T", index_type) + G::Type("out_type", kI32));
  g.ConstInt32(scope + "/ExpandDims/dim", {0}, true);
  g.Node(scope + "/ExpandDims", "ExpandDims", {scope + "/Size", scope + "/ExpandDims/dim"},
         G::Type("T", kI32) + G::Type("Tdim", kI32));
  StridedSlice(g, scope + "/strided_slice", scope + "/ToInt32", kI32, {1}, {0}, 0, 1, 0);
  g.ConstInt32(scope + "/concat/axis", {0}, true);
  g.Node(scope + "/concat", "ConcatV2",
         {scope + "/ExpandDims", scope + "/strided_slice", scope + "/concat/axis"},
         G::Type("T", kI32) + G::Type("Tidx", kI32) + G::Int("N", 2));
  g.Node(scope + "/Reshape", "Reshape", {grad, scope + "/concat"},
         G::Type("T", kF) + G::Type("Tshape", kI32));
  g.Node(scope + "/Reshape_1", "Reshape", {indices, scope + "/ExpandDims"},
         G::Type("T", index_type) + G::Type("Tshape", kI32));
  StridedSlice(g, scope + "/dense_rows", scope + "/ToInt32", kI32, {0}, {1}, 0, 0, 1);
  g.Node(scope + "/dense", "UnsortedSegmentSum",
         {scope + "/Reshape", scope + "/Reshape_1", scope + "/dense_rows"},
         G::Type("T", kF) + G::Type("Tindices", index_type) + G::Type("Tnumsegments", kI32));
}

// The graph of embedding_lookup_sparse(params, sp_ids, sp_weights or None, combiner) with
// the output "embedding_lookup_sparse" and the params' gradient "d_params" for the upstream
// gradient fed as "grad".
std::string EmbeddingGraph(const std::string& combiner, bool weighted) {
  GraphText g;
  const std::string s = "embedding_lookup_sparse";
  g.Node("params", "Placeholder", {}, G::Type("dtype", kF));
  g.Node("sp_ids/indices", "Placeholder", {}, G::Type("dtype", kI64));
  g.Node("sp_ids/values", "Placeholder", {}, G::Type("dtype", kI64));
  g.Node("sp_weights/values", "Placeholder", {}, G::Type("dtype", kF));
  g.Node("grad", "Placeholder", {}, G::Type("dtype", kF));
  // segment_ids = sp_ids.indices[:, 0], as int32.
  StridedSlice(g, s + "/strided_slice", "sp_ids/indices", kI64, {0, 0}, {0, 1}, 1, 1, 2);
  g.Node(s + "/Cast", "Cast", {s + "/strided_slice"},
         G::Type("SrcT", kI64) + G::Type("DstT", kI32) + G::Bool("Truncate", false));
  g.Node(s + "/Unique", "Unique", {"sp_ids/values"}, G::Type("T", kI64) + G::Type("out_idx", kI32));
  // embedding_lookup(params, ids): one shard, gather then identity.
  g.ConstInt32(s + "/embedding_lookup/axis", {0}, true);
  g.Node(s + "/embedding_lookup", "GatherV2",
         {"params", s + "/Unique", s + "/embedding_lookup/axis"},
         G::Type("Tparams", kF) + G::Type("Tindices", kI64) + G::Type("Taxis", kI32) +
             G::Int("batch_dims", 0));
  const std::string embeddings = s + "/embedding_lookup/Identity";
  g.Node(embeddings, "Identity", {s + "/embedding_lookup"}, G::Type("T", kF));
  std::string d_embeddings;  // the gradient reaching `embeddings`, dense [unique ids, dim]
  const std::string gs = "gradients/" + s + "_grad";
  if (!weighted) {
    const std::string op = combiner == "sum"    ? "SparseSegmentSum"
                           : combiner == "mean" ? "SparseSegmentMean"
                                                : "SparseSegmentSqrtN";
    g.Node(s, op, {embeddings, s + "/Unique:1", s + "/Cast"},
           G::Type("T", kF) + G::Type("Tidx", kI32) + G::Type("Tsegmentids", kI32));
    g.Node(gs + "/Shape", "Shape", {embeddings}, G::Type("T", kF) + G::Type("out_type", kI32));
    StridedSlice(g, gs + "/strided_slice", gs + "/Shape", kI32, {0}, {1}, 0, 0, 1);
    if (combiner == "sum") {
      g.ConstInt32(gs + "/GatherV2/axis", {0}, true);
      g.Node(gs + "/GatherV2", "GatherV2", {"grad", s + "/Cast", gs + "/GatherV2/axis"},
             G::Type("Tparams", kF) + G::Type("Tindices", kI32) + G::Type("Taxis", kI32) +
                 G::Int("batch_dims", 0));
      g.Node(gs + "/UnsortedSegmentSum", "UnsortedSegmentSum",
             {gs + "/GatherV2", s + "/Unique:1", gs + "/strided_slice"},
             G::Type("T", kF) + G::Type("Tindices", kI32) + G::Type("Tnumsegments", kI32));
      d_embeddings = gs + "/UnsortedSegmentSum";
    } else {
      g.Node(gs + "/" + op + "Grad", op + "Grad",
             {"grad", s + "/Unique:1", s + "/Cast", gs + "/strided_slice"},
             G::Type("T", kF) + G::Type("Tidx", kI32) + G::Type("Tsegmentids", kI32));
      d_embeddings = gs + "/" + op + "Grad";
    }
  } else {
    // embeddings = gather(embeddings, idx); weights reshaped to [n, 1, ...]; multiplied.
    g.ConstInt32(s + "/GatherV2/axis", {0}, true);
    g.Node(s + "/GatherV2", "GatherV2", {embeddings, s + "/Unique:1", s + "/GatherV2/axis"},
           G::Type("Tparams", kF) + G::Type("Tindices", kI32) + G::Type("Taxis", kI32) +
               G::Int("batch_dims", 0));
    g.Node(s + "/Rank", "Rank", {s + "/GatherV2"}, G::Type("T", kF));
    g.ConstInt32(s + "/sub/y", {1}, true);
    g.Node(s + "/sub", "Sub", {s + "/Rank", s + "/sub/y"}, G::Type("T", kI32));
    g.ConstInt32(s + "/ExpandDims/dim", {0}, true);
    g.Node(s + "/ExpandDims", "ExpandDims", {s + "/sub", s + "/ExpandDims/dim"},
           G::Type("T", kI32) + G::Type("Tdim", kI32));
    g.ConstInt32(s + "/Fill/value", {1}, true);
    g.Node(s + "/Fill", "Fill", {s + "/ExpandDims", s + "/Fill/value"},
           G::Type("T", kI32) + G::Type("index_type", kI32));
    g.Node(s + "/Shape", "Shape", {"sp_weights/values"},
           G::Type("T", kF) + G::Type("out_type", kI32));
    g.ConstInt32(s + "/concat/axis", {0}, true);
    g.Node(s + "/concat", "ConcatV2", {s + "/Shape", s + "/Fill", s + "/concat/axis"},
           G::Type("T", kI32) + G::Type("Tidx", kI32) + G::Int("N", 2));
    g.Node(s + "/Reshape", "Reshape", {"sp_weights/values", s + "/concat"},
           G::Type("T", kF) + G::Type("Tshape", kI32));
    g.Node(s + "/mul", "Mul", {s + "/GatherV2", s + "/Reshape"}, G::Type("T", kF));
    const std::string segment_attrs = G::Type("T", kF) + G::Type("Tindices", kI32);
    std::string d_segment_sum = "grad";
    if (combiner == "sum") {
      g.Node(s, "SegmentSum", {s + "/mul", s + "/Cast"}, segment_attrs);
    } else {
      g.Node(s + "/SegmentSum", "SegmentSum", {s + "/mul", s + "/Cast"}, segment_attrs);
      std::string divisor;
      if (combiner == "mean") {
        g.Node(s + "/SegmentSum_1", "SegmentSum", {s + "/Reshape", s + "/Cast"}, segment_attrs);
        divisor = s + "/SegmentSum_1";
      } else {
        g.ConstFloat(s + "/Pow/y", 2.0f);
        g.Node(s + "/Pow", "Pow", {s + "/Reshape", s + "/Pow/y"}, G::Type("T", kF));
        g.Node(s + "/SegmentSum_1", "SegmentSum", {s + "/Pow", s + "/Cast"}, segment_attrs);
        g.Node(s + "/Sqrt", "Sqrt", {s + "/SegmentSum_1"}, G::Type("T", kF));
        divisor = s + "/Sqrt";
      }
      g.Node(s, "RealDiv", {s + "/SegmentSum", divisor}, G::Type("T", kF));
      BroadcastBinaryGradX(g, gs, "RealDiv", "grad", s + "/SegmentSum", divisor);
      d_segment_sum = gs + "/Reshape";
    }
    // SegmentSum's gradient: gather by segment id.
    const std::string ss = "gradients/" + s + "/SegmentSum_grad";
    g.ConstInt32(ss + "/GatherV2/axis", {0}, true);
    g.Node(ss + "/GatherV2", "GatherV2", {d_segment_sum, s + "/Cast", ss + "/GatherV2/axis"},
           G::Type("Tparams", kF) + G::Type("Tindices", kI32) + G::Type("Taxis", kI32) +
               G::Int("batch_dims", 0));
    BroadcastBinaryGradX(g, "gradients/" + s + "/mul_grad", "Mul", ss + "/GatherV2",
                         s + "/GatherV2", s + "/Reshape");
    GatherGradDense(g, "gradients/" + s + "/GatherV2_grad", "gradients/" + s + "/mul_grad/Reshape",
                    embeddings, s + "/Unique:1", kI32);
    d_embeddings = "gradients/" + s + "/GatherV2_grad/dense";
  }
  // Identity passes the gradient on; embedding_lookup's GatherV2 makes IndexedSlices of
  // the params, densified here.
  GatherGradDense(g, "gradients/" + s + "/embedding_lookup_grad", d_embeddings, "params",
                  s + "/Unique", kI64);
  g.Node("d_params", "Identity", {"gradients/" + s + "/embedding_lookup_grad/dense"},
         G::Type("T", kF));
  return g.text();
}

TEST_CASE(
    "embedding_lookup_sparse's TF 1.x graph and its params gradient match a naive reference") {
  const int64_t vocab = 9, dim = 4, batch = 5;
  std::mt19937 rng(81);
  // Rows 0..4, each with 1-4 ids (repeats across and within rows), canonical order.
  std::vector<int64_t> index_values, ids;
  for (int64_t r = 0; r < batch; ++r) {
    const int64_t n = std::uniform_int_distribution<int64_t>(1, 4)(rng);
    for (int64_t c = 0; c < n; ++c) {
      index_values.push_back(r);
      index_values.push_back(c);
      ids.push_back(std::uniform_int_distribution<int64_t>(0, vocab - 1)(rng));
    }
  }
  const int64_t n = static_cast<int64_t>(ids.size());
  const Tensor sp_indices = Tensor::FromVector<int64_t>(index_values, TensorShape({n, 2}));
  const Tensor sp_values = Tensor::FromVector<int64_t>(ids, TensorShape({n}));
  const Tensor params = testing::RandomTensor(tensorflow::DT_FLOAT, TensorShape({vocab, dim}), 82);
  const Tensor weights =
      testing::RandomTensor(tensorflow::DT_FLOAT, TensorShape({n}), 83, 0.5, 2.0);
  const Tensor grad = testing::RandomTensor(tensorflow::DT_FLOAT, TensorShape({batch, dim}), 84);
  for (const std::string combiner : {"sum", "mean", "sqrtn"}) {
    for (bool weighted : {false, true}) {
      INFO(combiner << (weighted ? " with weights" : " without weights"));
      StatusOr<Graph> graph =
          ParseGraph(EmbeddingGraph(combiner, weighted), "embedding_lookup_sparse.pbtxt");
      REQUIRE(graph.status().message() == "");
      CpuDevice device(2);
      Executor executor(*graph, device);
      RunRequest request;
      request.feeds = {{"params", params},
                       {"sp_ids/indices", sp_indices},
                       {"sp_ids/values", sp_values},
                       {"grad", grad}};
      if (weighted) request.feeds.push_back({"sp_weights/values", weights});
      request.fetches = {"embedding_lookup_sparse:0", "d_params:0"};
      StatusOr<std::vector<Tensor>> out = executor.Run(request);
      REQUIRE(out.status().message() == "");
      // Naive: output[r] = sum_i w_i params[id_i] / norm_r; d_params[id_i] += grad[r] w_i / norm_r.
      std::vector<double> norm(static_cast<size_t>(batch), 0.0);
      for (int64_t i = 0; i < n; ++i) {
        const double w = weighted ? weights.data<float>()[i] : 1.0;
        norm[static_cast<size_t>(index_values[static_cast<size_t>(2 * i)])] +=
            combiner == "sqrtn" ? w * w : w;
      }
      for (double& v : norm) v = combiner == "sum" ? 1.0 : combiner == "mean" ? v : std::sqrt(v);
      Tensor expected(tensorflow::DT_FLOAT, TensorShape({batch, dim}));
      Tensor expected_grad(tensorflow::DT_FLOAT, TensorShape({vocab, dim}));
      std::vector<double> acc(static_cast<size_t>(batch * dim), 0.0),
          acc_grad(static_cast<size_t>(vocab * dim), 0.0);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t r = index_values[static_cast<size_t>(2 * i)],
                      id = ids[static_cast<size_t>(i)];
        const double scale =
            (weighted ? weights.data<float>()[i] : 1.0) / norm[static_cast<size_t>(r)];
        for (int64_t c = 0; c < dim; ++c) {
          acc[static_cast<size_t>(r * dim + c)] += scale * params.data<float>()[id * dim + c];
          acc_grad[static_cast<size_t>(id * dim + c)] += scale * grad.data<float>()[r * dim + c];
        }
      }
      for (size_t k = 0; k < acc.size(); ++k)
        expected.data<float>()[k] = static_cast<float>(acc[k]);
      for (size_t k = 0; k < acc_grad.size(); ++k)
        expected_grad.data<float>()[k] = static_cast<float>(acc_grad[k]);
      CHECK(CompareTensors((*out)[0], expected, 1e-5, 1e-6) == "");
      CHECK(CompareTensors((*out)[1], expected_grad, 1e-5, 1e-6) == "");
    }
  }
}

}  // namespace
}  // namespace parallax
