// Finite-difference gradient checks through the CPU executor.
#include "lib/models/gradient_checker.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include <fmt/format.h>

#include "lib/ops/dtypes.h"
#include "lib/runtime/device.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/kernel.h"

namespace parallax::models {
namespace {

double Get(const Tensor& t, int64_t i) {
  if (t.dtype() == tensorflow::DT_DOUBLE) return t.data<double>()[i];
  return t.data<float>()[i];
}

void Set(Tensor& t, int64_t i, double v) {
  if (t.dtype() == tensorflow::DT_DOUBLE) t.data<double>()[i] = v;
  else t.data<float>()[i] = static_cast<float>(v);
}

int64_t GetIndex(const Tensor& t, int64_t i) {
  if (t.dtype() == tensorflow::DT_INT64) return t.data<int64_t>()[i];
  return t.data<int32_t>()[i];
}

// <y, u>, with u = ones when uninitialised.
double Dot(const Tensor& y, const Tensor& u) {
  double sum = 0;
  for (int64_t i = 0; i < y.num_elements(); ++i) sum += Get(y, i) * (u.initialized() ? Get(u, i) : 1.0);
  return sum;
}

// The gradient as a dense tensor of `shape` (IndexedSlices rows summed).
std::vector<double> Densify(const Tensor& grad, const Tensor* indices, const TensorShape& shape,
                            std::string* error) {
  const int64_t n = shape.num_elements();
  std::vector<double> dense(static_cast<size_t>(n), 0.0);
  if (indices == nullptr) {
    if (grad.num_elements() != n) {
      *error = fmt::format("gradient has {} elements, the input {}", grad.num_elements(), n);
      return {};
    }
    for (int64_t i = 0; i < n; ++i) dense[static_cast<size_t>(i)] = Get(grad, i);
    return dense;
  }
  const int64_t rows = shape.rank() > 0 ? shape.dim(0) : 1;
  const int64_t row_size = rows > 0 ? n / rows : 0;
  if (indices->num_elements() * row_size != grad.num_elements()) {
    *error = fmt::format("IndexedSlices values {} do not match {} indices of rows of {}",
                         grad.shape().DebugString(), indices->num_elements(), row_size);
    return {};
  }
  for (int64_t k = 0; k < indices->num_elements(); ++k) {
    const int64_t row = GetIndex(*indices, k);
    if (row < 0 || row >= rows) {
      *error = fmt::format("IndexedSlices index {} out of range [0, {})", row, rows);
      return {};
    }
    for (int64_t j = 0; j < row_size; ++j) {
      dense[static_cast<size_t>(row * row_size + j)] += Get(grad, k * row_size + j);
    }
  }
  return dense;
}

// The feeds that the fetches depend on. The executor refuses to feed a tensor that the
// request does not need ("no slot for ..."), unlike TensorFlow, so the rest are dropped.
std::vector<std::pair<std::string, Tensor>> NeededFeeds(
    const Graph& graph, const std::vector<std::pair<std::string, Tensor>>& feeds,
    const std::vector<std::string>& fetches) {
  std::set<NodeId> fed;
  for (const auto& f : feeds) {
    if (auto ref = ResolveTensorName(graph, f.first); ref.ok()) fed.insert(ref->node);
  }
  std::vector<bool> needed(static_cast<size_t>(graph.id_limit()), false);
  std::vector<NodeId> stack;
  for (const std::string& name : fetches) {
    if (auto ref = ResolveTensorName(graph, name); ref.ok() && !needed[static_cast<size_t>(ref->node)]) {
      needed[static_cast<size_t>(ref->node)] = true;
      stack.push_back(ref->node);
    }
  }
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    if (fed.count(id)) continue;
    for (const OutputRef& in : graph.node(id).inputs()) {
      if (!needed[static_cast<size_t>(in.node)]) {
        needed[static_cast<size_t>(in.node)] = true;
        stack.push_back(in.node);
      }
    }
  }
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& f : feeds) {
    auto ref = ResolveTensorName(graph, f.first);
    if (ref.ok() && needed[static_cast<size_t>(ref->node)]) out.push_back(f);
  }
  return out;
}

}  // namespace

Tensor RandomFloats(DataType dtype, TensorShape shape, uint64_t seed, double lo, double hi) {
  Tensor t(dtype, std::move(shape));
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < t.num_elements(); ++i) Set(t, i, dist(gen));
  return t;
}

std::vector<std::string> MissingKernels(const Graph& graph, const std::vector<std::string>& fetches,
                                        const std::vector<std::string>& fed) {
  std::set<NodeId> fed_nodes;
  for (const std::string& name : fed) {
    if (auto ref = ResolveTensorName(graph, name); ref.ok()) fed_nodes.insert(ref->node);
  }
  std::vector<bool> seen(static_cast<size_t>(graph.id_limit()), false);
  std::vector<NodeId> stack;
  for (const std::string& name : fetches) {
    auto ref = ResolveTensorName(graph, name);
    if (ref.ok() && !seen[static_cast<size_t>(ref->node)]) {
      seen[static_cast<size_t>(ref->node)] = true;
      stack.push_back(ref->node);
    }
  }
  std::set<std::string> missing;
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    if (fed_nodes.count(id)) continue;
    const Node& node = graph.node(id);
    if (!HasKernel(node, DeviceType::kCpu)) {
      std::string what(node.op());
      if (auto t = node.FindAttr("T")) what += " T=" + DataTypeShortName(t->type());
      missing.insert(what);
    }
    for (const OutputRef& in : node.inputs()) {
      if (!seen[static_cast<size_t>(in.node)]) {
        seen[static_cast<size_t>(in.node)] = true;
        stack.push_back(in.node);
      }
    }
  }
  return {missing.begin(), missing.end()};
}

StatusOr<std::string> CheckGradients(const GradientCheck& check) {
  CpuDevice device(2);
  Executor executor(*check.graph, device);
  // The analytic gradients, once.
  RunRequest request;
  request.feeds = check.feeds;
  for (const CheckedInput& in : check.inputs) {
    request.fetches.push_back(in.grad);
    if (!in.indices.empty()) request.fetches.push_back(in.indices);
  }
  request.feeds = NeededFeeds(*check.graph, check.feeds, request.fetches);
  PX_ASSIGN_OR_RETURN(std::vector<Tensor> grads, executor.Run(request));
  const std::vector<std::pair<std::string, Tensor>> y_feeds =
      NeededFeeds(*check.graph, check.feeds, {check.y});

  std::string report;
  size_t next = 0;
  for (const CheckedInput& in : check.inputs) {
    const Tensor& grad = grads[next++];
    const Tensor* indices = in.indices.empty() ? nullptr : &grads[next++];
    auto fed = std::find_if(check.feeds.begin(), check.feeds.end(),
                            [&](const auto& f) { return f.first == in.tensor; });
    if (fed == check.feeds.end()) {
      return InvalidArgumentError("checked input '{}' is not among the feeds", in.tensor);
    }
    const Tensor original = fed->second;
    std::string error;
    const std::vector<double> analytic = Densify(grad, indices, original.shape(), &error);
    if (!error.empty()) {
      report += fmt::format("{}: {}\n", in.tensor, error);
      continue;
    }
    const int64_t n = original.num_elements();
    const int64_t count = check.max_coordinates <= 0 ? n : std::min<int64_t>(n, check.max_coordinates);
    int bad = 0;
    for (int64_t c = 0; c < count; ++c) {
      const int64_t k = (c * n) / count;
      auto run_at = [&](double offset) -> StatusOr<double> {
        RunRequest r;
        r.feeds = y_feeds;
        for (auto& [name, value] : r.feeds) {
          if (name != in.tensor) continue;
          value = original.DeepCopy();
          Set(value, k, Get(original, k) + offset);
        }
        r.fetches = {check.y};
        PX_ASSIGN_OR_RETURN(std::vector<Tensor> out, executor.Run(r));
        return Dot(out[0], check.upstream);
      };
      PX_ASSIGN_OR_RETURN(double plus, run_at(check.delta));
      PX_ASSIGN_OR_RETURN(double minus, run_at(-check.delta));
      const double numeric = (plus - minus) / (2 * check.delta);
      const double a = analytic[static_cast<size_t>(k)];
      if (std::abs(numeric - a) > check.atol + check.rtol * std::abs(a)) {
        if (++bad <= 5) {
          report += fmt::format("{} element {}: emitted gradient {:.8g}, finite difference {:.8g}\n",
                                in.tensor, k, a, numeric);
        }
      }
    }
    if (bad > 5) report += fmt::format("{}: {} more mismatches\n", in.tensor, bad - 5);
  }
  return report;
}

}  // namespace parallax::models
