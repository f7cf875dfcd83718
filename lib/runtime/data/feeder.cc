#include "lib/runtime/data/feeder.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "lib/ops/dtypes.h"
#include "lib/ops/op_registry.h"
#include "lib/runtime/data/random.h"
#include "lib/runtime/executor.h"

namespace parallax {
namespace {

bool IsInteger(DataType t) {
  return t == tensorflow::DT_UINT8 || t == tensorflow::DT_INT8 || t == tensorflow::DT_INT16 ||
         t == tensorflow::DT_UINT16 || t == tensorflow::DT_INT32 || t == tensorflow::DT_INT64;
}
bool IsFloat(DataType t) { return t == tensorflow::DT_FLOAT || t == tensorflow::DT_DOUBLE; }

PartialShape FromProto(const tensorflow::TensorShapeProto& proto) {
  PartialShape shape;
  if (proto.unknown_rank()) return shape;
  shape.known_rank = true;
  for (const auto& dim : proto.dim()) shape.dims.push_back(dim.size() < 0 ? -1 : dim.size());
  return shape;
}

std::optional<tensorflow::TensorShapeProto> ListShape(const Node& node, std::string_view attr,
                                                      int index) {
  auto value = node.FindAttr(attr);
  if (!value || index < 0 || index >= value->list().shape_size()) return std::nullopt;
  return value->list().shape(index);
}

std::optional<DataType> ListType(const Node& node, std::string_view attr, int index) {
  auto value = node.FindAttr(attr);
  if (!value || index < 0 || index >= value->list().type_size()) return std::nullopt;
  return static_cast<DataType>(value->list().type(index));
}

// The integer value of a scalar Const, if `ref` is one.
std::optional<int64_t> ConstScalar(const Graph& graph, OutputRef ref) {
  if (!graph.IsLive(ref.node)) return std::nullopt;
  const Node& node = graph.node(ref.node);
  if (node.op() != "Const") return std::nullopt;
  auto value = node.FindAttr("value");
  if (!value) return std::nullopt;
  StatusOr<Tensor> t = Tensor::FromProto(value->tensor());
  if (!t.ok() || t->num_elements() != 1) return std::nullopt;
  if (t->dtype() == tensorflow::DT_INT32) return *t->data<int32_t>();
  if (t->dtype() == tensorflow::DT_INT64) return *t->data<int64_t>();
  return std::nullopt;
}

// The output type of `node`:`port` from its schema and attrs; DT_INVALID when unknown.
DataType OutputType(const Node& node, int port) {
  const OpSchema* schema = FindOpSchema(node.op());
  if (schema == nullptr) return tensorflow::DT_INVALID;
  int index = 0;
  for (const ArgSchema& arg : schema->outputs) {
    if (!arg.number_attr.empty() || !arg.type_list_attr.empty()) {
      if (!arg.type_list_attr.empty() && index <= port) {
        if (auto t = ListType(node, arg.type_list_attr, port - index)) return *t;
      }
      return tensorflow::DT_INVALID;  // variable-length outputs: stop counting
    }
    if (index == port) {
      if (arg.fixed_type != tensorflow::DT_INVALID) return BaseType(arg.fixed_type);
      if (auto value = node.FindAttr(arg.type_attr)) return BaseType(value->type());
      return tensorflow::DT_INVALID;
    }
    ++index;
  }
  return tensorflow::DT_INVALID;
}

// The last dimension of the tensor `ref` when the graph tells.
int64_t LastDim(const Graph& graph, OutputRef ref, int depth = 0) {
  if (depth > 8 || !graph.IsLive(ref.node)) return -1;
  const Node& node = graph.node(ref.node);
  if (auto shape = ListShape(node, "_output_shapes", ref.port)) {
    PartialShape s = FromProto(*shape);
    if (s.known_rank && !s.dims.empty() && s.dims.back() > 0) return s.dims.back();
  }
  const std::string_view op = node.op();
  if (op == "VariableV2" || op == "Variable" || op == "VarHandleOp" || op == "Placeholder") {
    if (auto shape = node.FindAttr("shape")) {
      PartialShape s = FromProto(shape->shape());
      if (s.known_rank && !s.dims.empty() && s.dims.back() > 0) return s.dims.back();
    }
    return -1;
  }
  if (op == "Const") {
    if (auto value = node.FindAttr("value")) {
      const auto& dims = value->tensor().tensor_shape().dim();
      if (!dims.empty() && dims[dims.size() - 1].size() > 0) return dims[dims.size() - 1].size();
    }
    return -1;
  }
  if (node.num_data_inputs() == 0) return -1;
  if (op == "MatMul") {
    auto transpose_b = node.FindAttr("transpose_b");
    if (transpose_b && transpose_b->b()) {
      // [K, in]: the first dimension; only a variable tells us that.
      const Node& b = graph.node(node.input(1).node);
      auto shape = b.FindAttr("shape");
      if (shape && shape->shape().dim_size() == 2 && shape->shape().dim(0).size() > 0) {
        return shape->shape().dim(0).size();
      }
      return -1;
    }
    return LastDim(graph, node.input(1), depth + 1);
  }
  if (op == "BiasAdd" || op == "Add" || op == "AddV2") {
    for (int i = node.num_data_inputs() - 1; i >= 0; --i) {
      const int64_t d = LastDim(graph, node.input(i), depth + 1);
      if (d > 0) return d;
    }
    return -1;
  }
  if (op == "Identity" || op == "ReadVariableOp" || op == "Relu" || op == "Softmax" ||
      op == "LogSoftmax" || op == "Snapshot" || op == "Cast") {
    return LastDim(graph, node.input(0), depth + 1);
  }
  return -1;
}

// Consumers of `ref` through ops that pass labels on unchanged.
template <typename Visit>
void VisitLabelConsumers(const Graph& graph, OutputRef ref, Visit visit) {
  std::vector<OutputRef> stack = {ref};
  std::set<std::pair<NodeId, int>> seen;
  while (!stack.empty()) {
    OutputRef current = stack.back();
    stack.pop_back();
    if (!seen.insert({current.node, current.port}).second || seen.size() > 64) continue;
    for (const InputRef& use : graph.node(current.node).fanout()) {
      const Node& consumer = graph.node(use.node);
      if (use.index >= consumer.num_data_inputs() || consumer.input(use.index) != current) continue;
      const std::string_view op = consumer.op();
      if (op == "Identity" || op == "Cast" || op == "Reshape" || op == "Squeeze" ||
          op == "StopGradient" || op == "ExpandDims" || op == "Snapshot") {
        if (use.index == 0) stack.push_back({use.node, 0});
        continue;
      }
      visit(consumer, use.index);
    }
  }
}

std::string DimText(int64_t d) { return d < 0 ? "?" : std::to_string(d); }

}  // namespace

std::string PartialShape::DebugString() const {
  if (!known_rank) return "<unknown>";
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? "," : "") + DimText(dims[i]);
  return out + "]";
}

std::string FeedTarget::DebugString() const {
  return fmt::format("{} ({} {})", what,
                     dtype == tensorflow::DT_INVALID ? "any" : DataTypeShortName(dtype),
                     shape.DebugString());
}

StatusOr<FeedTarget> DescribeFeedTarget(const Graph& graph, std::string_view name) {
  PX_ASSIGN_OR_RETURN(OutputRef ref, ResolveTensorName(graph, name));
  const Node& node = graph.node(ref.node);
  FeedTarget target;
  target.tensor = std::string(name);
  target.ref = ref;
  const std::string_view op = node.op();
  const bool placeholder =
      op == "Placeholder" || op == "PlaceholderV2" || op == "PlaceholderWithDefault";
  target.what = fmt::format("{} '{}'", placeholder ? "placeholder" : "tensor", name);
  if (placeholder) {
    if (ref.port != 0) return NotFoundError("'{}': a placeholder has one output", name);
    if (auto dtype = node.FindAttr("dtype")) target.dtype = dtype->type();
    if (auto shape = node.FindAttr("shape")) target.shape = FromProto(shape->shape());
    if (!target.shape.known_rank) {
      if (auto shape = ListShape(node, "_output_shapes", 0)) target.shape = FromProto(*shape);
    }
    return target;
  }
  if (op == "QueueDequeueManyV2" || op == "QueueDequeueMany" || op == "QueueDequeueUpToV2" ||
      op == "QueueDequeueUpTo") {
    auto dtype = ListType(node, "component_types", ref.port);
    if (!dtype) {
      return NotFoundError("'{}': {} '{}' has no output {}", name, op, node.name(), ref.port);
    }
    target.dtype = *dtype;
    if (node.num_data_inputs() >= 2) {
      const Node& queue = graph.node(node.input(0).node);
      std::optional<int64_t> n = ConstScalar(graph, node.input(1));
      if (auto shape = ListShape(queue, "shapes", ref.port)) {
        target.shape = FromProto(*shape);
        if (target.shape.known_rank) {
          target.shape.dims.insert(target.shape.dims.begin(), n.value_or(-1));
        }
      }
    }
    return target;
  }
  if (op == "IteratorGetNext" || op == "IteratorGetNextSync") {
    if (auto dtype = ListType(node, "output_types", ref.port)) target.dtype = *dtype;
    if (auto shape = ListShape(node, "output_shapes", ref.port)) target.shape = FromProto(*shape);
    return target;
  }
  target.dtype = OutputType(node, ref.port);
  if (auto shape = ListShape(node, "_output_shapes", ref.port)) target.shape = FromProto(*shape);
  return target;
}

int64_t InferNumClasses(const Graph& graph, OutputRef labels) {
  int64_t classes = -1;
  VisitLabelConsumers(graph, labels, [&](const Node& consumer, int index) {
    if (classes > 0) return;
    const std::string_view op = consumer.op();
    if ((op == "SparseSoftmaxCrossEntropyWithLogits" && index == 1) ||
        ((op == "InTopK" || op == "InTopKV2") && index == 1)) {
      classes = LastDim(graph, consumer.input(0));
    } else if (op == "OneHot" && index == 0 && consumer.num_data_inputs() >= 2) {
      classes = ConstScalar(graph, consumer.input(1)).value_or(-1);
    }
  });
  return classes;
}

namespace {
// True when `ref` reaches the labels input of a (dense) softmax cross-entropy.
bool FeedsDenseLabels(const Graph& graph, OutputRef ref) {
  bool found = false;
  VisitLabelConsumers(graph, ref, [&](const Node& consumer, int index) {
    const std::string_view op = consumer.op();
    if ((op == "SoftmaxCrossEntropyWithLogits" || op == "SoftmaxCrossEntropyWithLogitsV2") &&
        index == 1) {
      found = true;
    }
  });
  return found;
}
}  // namespace

namespace {

constexpr std::string_view kSyntheticAttr = "_parallax_synthetic";

std::vector<std::string> SplitColons(std::string_view text) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t colon = text.find(':', start);
    parts.emplace_back(text.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (colon == std::string_view::npos) return parts;
    start = colon + 1;
  }
}

std::optional<double> ParseNumber(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

}  // namespace

StatusOr<std::optional<SyntheticRule>> FindSyntheticRule(const Graph& graph,
                                                         const FeedTarget& target) {
  const Node& node = graph.node(target.ref.node);
  const auto attr = node.FindAttr(kSyntheticAttr);
  if (!attr || target.ref.port != 0) return std::optional<SyntheticRule>();
  const std::string& text = attr->s();
  const std::vector<std::string> parts = SplitColons(text);
  auto bad = [&](std::string_view expected) {
    return InvalidArgumentError("{}: {} '{}': expected {}", target.what, kSyntheticAttr, text,
                                expected);
  };
  SyntheticRule rule;
  const std::string& kind = parts[0];
  if (kind == "uniform" || kind == "uniform_int" || kind == "zipf_int") {
    rule.kind = kind == "uniform"       ? SyntheticRule::Kind::kUniform
                : kind == "uniform_int" ? SyntheticRule::Kind::kUniformInt
                                        : SyntheticRule::Kind::kZipfInt;
    const std::string form = kind + ":LO:HI with LO < HI";
    if (parts.size() != 3) return bad(form);
    std::optional<double> lo = ParseNumber(parts[1]), hi = ParseNumber(parts[2]);
    if (!lo || !hi || !(*lo < *hi)) return bad(form);
    if (rule.kind != SyntheticRule::Kind::kUniform &&
        (*lo != std::floor(*lo) || *hi != std::floor(*hi))) {
      return bad(form + ", both integers");
    }
    rule.lo = *lo;
    rule.hi = *hi;
    return std::optional<SyntheticRule>(rule);
  }
  if (kind == "argmax_prefix" || kind == "token_vote") {
    rule.kind = kind == "argmax_prefix" ? SyntheticRule::Kind::kArgmaxPrefix
                                        : SyntheticRule::Kind::kTokenVote;
    const std::string form = kind + ":FEED:CLASSES with CLASSES >= 1";
    if (parts.size() != 3 || parts[1].empty()) return bad(form);
    std::optional<double> classes = ParseNumber(parts[2]);
    if (!classes || *classes < 1 || *classes != std::floor(*classes)) return bad(form);
    rule.feed = parts[1];
    rule.classes = static_cast<int64_t>(*classes);
    return std::optional<SyntheticRule>(rule);
  }
  if (kind == "shift") {
    rule.kind = SyntheticRule::Kind::kShift;
    if (parts.size() != 2 || parts[1].empty()) return bad("shift:FEED");
    rule.feed = parts[1];
    return std::optional<SyntheticRule>(rule);
  }
  return bad("one of uniform:LO:HI, uniform_int:LO:HI, zipf_int:LO:HI, argmax_prefix:FEED:CLASSES, "
             "token_vote:FEED:CLASSES, shift:FEED");
}

StatusOr<std::shared_ptr<const Column>> MakeSyntheticColumn(const Graph& graph,
                                                            const FeedTarget& target,
                                                            uint64_t seed,
                                                            const ColumnLookup& lookup) {
  DataType dtype = target.dtype;
  if (dtype == tensorflow::DT_INVALID) {
    return InvalidArgumentError("{}: cannot make synthetic data: its dtype is unknown",
                                target.DebugString());
  }
  if (dtype != tensorflow::DT_STRING &&
      (DataTypeSize(dtype) == 0 ||
       (!IsInteger(dtype) && !IsFloat(dtype) && dtype != tensorflow::DT_BOOL))) {
    return InvalidArgumentError("{}: cannot make synthetic {} data", target.DebugString(),
                                DataTypeShortName(dtype));
  }
  TensorShape example;
  if (target.shape.known_rank) {
    if (target.shape.dims.empty()) {
      return InvalidArgumentError("{}: a scalar takes no batch of examples; feed it a file of "
                                  "examples or give it a default",
                                  target.DebugString());
    }
    for (size_t i = 1; i < target.shape.dims.size(); ++i) {
      if (target.shape.dims[i] < 0) {
        return InvalidArgumentError("{}: cannot make synthetic data: dimension {} is unknown",
                                    target.DebugString(), i);
      }
      example.AddDim(target.shape.dims[i]);
    }
  } else if (!IsInteger(dtype)) {
    return InvalidArgumentError("{}: cannot make synthetic data: its shape is unknown",
                                target.DebugString());
  }
  const uint64_t column_seed = Mix64(seed ^ std::hash<std::string>{}(target.tensor));
  PX_ASSIGN_OR_RETURN(std::optional<SyntheticRule> rule, FindSyntheticRule(graph, target));
  if (rule) {
    const std::string rule_text = graph.node(target.ref.node).FindAttr(kSyntheticAttr)->s();
    auto misfit = [&](std::string_view why) {
      return InvalidArgumentError("{}: {} '{}' {}", target.DebugString(), kSyntheticAttr,
                                  rule_text, why);
    };
    // The column a rule that reads input FEED reads: the one bound to FEED (lookup), else
    // FEED's own synthetic column from the same seed (the same data).
    auto RuleSource = [&](const SyntheticRule& r, const auto& fail)
        -> StatusOr<std::shared_ptr<const Column>> {
      StatusOr<OutputRef> feed = ResolveTensorName(graph, r.feed);
      if (!feed.ok()) return fail(fmt::format("reads '{}', which names no node", r.feed));
      std::shared_ptr<const Column> source = lookup ? lookup(*feed) : nullptr;
      if (source != nullptr) return source;
      PX_ASSIGN_OR_RETURN(FeedTarget feed_target, DescribeFeedTarget(graph, r.feed));
      PX_ASSIGN_OR_RETURN(std::optional<SyntheticRule> feed_rule, FindSyntheticRule(graph, feed_target));
      if (feed_rule && feed_rule->reads_input()) {
        return fail(fmt::format("reads '{}', whose own rule reads another input", r.feed));
      }
      return MakeSyntheticColumn(graph, feed_target, seed);
    };
    switch (rule->kind) {
      case SyntheticRule::Kind::kUniform:
        if (!IsFloat(dtype)) return misfit("needs a float or double input");
        return std::shared_ptr<const Column>(
            SyntheticColumn::WithRange(dtype, example, column_seed, rule->lo, rule->hi));
      case SyntheticRule::Kind::kUniformInt:
        if (!IsInteger(dtype)) return misfit("needs an integer input");
        return std::shared_ptr<const Column>(
            SyntheticColumn::WithRange(dtype, example, column_seed, rule->lo, rule->hi));
      case SyntheticRule::Kind::kZipfInt:
        if (!IsInteger(dtype)) return misfit("needs an integer input");
        return std::shared_ptr<const Column>(
            SyntheticColumn::Zipf(dtype, example, column_seed, static_cast<int64_t>(rule->lo),
                                  static_cast<int64_t>(rule->hi)));
      case SyntheticRule::Kind::kShift: {
        if (!IsInteger(dtype)) return misfit("needs integer targets");
        PX_ASSIGN_OR_RETURN(std::shared_ptr<const Column> source, RuleSource(*rule, misfit));
        if (source->example_shape() != example) {
          return misfit(fmt::format("needs targets of the shape of '{}' ({} per example), got {}",
                                    rule->feed, source->example_shape().DebugString(),
                                    example.DebugString()));
        }
        return std::shared_ptr<const Column>(std::make_shared<ShiftColumn>(dtype, std::move(source)));
      }
      case SyntheticRule::Kind::kArgmaxPrefix:
      case SyntheticRule::Kind::kTokenVote: {
        // Class ids, one per example: integer labels [B], or one-hot float labels [B, K]
        // (the feeder one-hot encodes the ids).
        const bool ids = IsInteger(dtype) && example.rank() == 0;
        const bool one_hot = IsFloat(dtype) && example.rank() == 1 && example.dim(0) >= rule->classes;
        if (!ids && !one_hot) {
          return misfit("needs integer labels [batch] or one-hot float labels [batch, classes]");
        }
        PX_ASSIGN_OR_RETURN(std::shared_ptr<const Column> source, RuleSource(*rule, misfit));
        const auto kind = rule->kind == SyntheticRule::Kind::kArgmaxPrefix
                              ? LabelRuleColumn::Rule::kArgmaxPrefix
                              : LabelRuleColumn::Rule::kTokenVote;
        return std::shared_ptr<const Column>(std::make_shared<LabelRuleColumn>(
            kind, rule->classes, ids ? dtype : tensorflow::DT_INT64, std::move(source)));
      }
    }
  }
  if (IsInteger(dtype)) {
    int64_t classes = InferNumClasses(graph, target.ref);
    if (classes <= 0) classes = kDefaultSyntheticClasses;
    return std::shared_ptr<const Column>(
        std::make_shared<SyntheticColumn>(dtype, example, column_seed, classes));
  }
  if (IsFloat(dtype) && example.rank() == 1 && example.dim(0) > 1 &&
      FeedsDenseLabels(graph, target.ref)) {
    // One-hot labels: random class ids, one-hot encoded by the feeder.
    return std::shared_ptr<const Column>(std::make_shared<SyntheticColumn>(
        tensorflow::DT_INT64, TensorShape(), column_seed, example.dim(0)));
  }
  return std::shared_ptr<const Column>(std::make_shared<SyntheticColumn>(dtype, example, column_seed));
}

// ---- Feeder ----

namespace {

std::string ConversionName(int kind) {
  static constexpr const char* kNames[] = {"copy", "scale", "cast", "one-hot"};
  return kNames[kind];
}

}  // namespace

StatusOr<Feeder::Plan> Feeder::PlanBinding(Binding binding) {
  const FeedTarget& target = binding.target;
  const Column& column = *binding.column;
  const DataType in = column.dtype();
  const TensorShape& in_example = column.example_shape();
  const int64_t in_elements = in_example.num_elements();
  auto fail = [&](std::string_view why) {
    const std::string examples = column.num_examples() == kUnboundedExamples
                                     ? std::string("examples")
                                     : fmt::format("{} examples", column.num_examples());
    return InvalidArgumentError("{}: cannot feed {} ({}, {} of {}): {}", target.DebugString(),
                                column.source(), DataTypeShortName(in), examples,
                                in_example.DebugString(), why);
  };

  Plan plan;
  plan.out_dtype = target.dtype == tensorflow::DT_INVALID ? in : target.dtype;
  const DataType out = plan.out_dtype;
  if (target.shape.known_rank && target.shape.dims.empty()) {
    return fail("the target is a scalar, it takes no batch of examples");
  }

  // The target's example shape, possibly with unknown dims.
  std::vector<int64_t> want;
  const bool known = target.shape.known_rank;
  if (known) want.assign(target.shape.dims.begin() + 1, target.shape.dims.end());

  // Dtype conversion.
  int64_t elements = in_elements;
  if (in == out) {
    plan.conversion = Conversion::kCopy;
  } else if (IsInteger(in) && IsFloat(out) && in_elements == 1 && known && want.size() == 1 &&
             want[0] > 1) {
    plan.conversion = Conversion::kOneHot;
    plan.depth = want[0];
    elements = want[0];
  } else if (in == tensorflow::DT_UINT8 && IsFloat(out) && in_elements > 1) {
    plan.conversion = Conversion::kScale;
  } else if (IsInteger(in) && (out == tensorflow::DT_INT32 || out == tensorflow::DT_INT64)) {
    plan.conversion = Conversion::kCast;
  } else if (IsInteger(in) && IsFloat(out)) {
    plan.conversion = Conversion::kCast;
  } else if (IsFloat(in) && IsFloat(out)) {
    plan.conversion = Conversion::kCast;
  } else {
    return fail(fmt::format("{} data cannot be converted to {}", DataTypeShortName(in),
                            DataTypeShortName(out)));
  }

  // Example shape.
  if (!known) {
    plan.out_example = plan.conversion == Conversion::kOneHot ? TensorShape({plan.depth}) : in_example;
  } else {
    int unknown = 0;
    int64_t known_product = 1;
    for (int64_t d : want) {
      if (d < 0) ++unknown;
      else known_product *= d;
    }
    if (unknown == 0) {
      if (known_product != elements) {
        return fail(fmt::format("{} elements per example, the target takes {}", elements,
                                known_product));
      }
    } else if (unknown == 1) {
      if (known_product == 0 || elements % known_product != 0) {
        return fail(fmt::format("{} elements per example do not fill the target's example "
                                "shape",
                                elements));
      }
      for (int64_t& d : want) {
        if (d < 0) d = elements / known_product;
      }
    } else {
      // Several unknown dims: the source's dims, when they fit.
      const std::vector<int64_t>& have = in_example.dims();
      bool fits = have.size() == want.size();
      for (size_t i = 0; fits && i < want.size(); ++i) {
        if (want[i] >= 0 && want[i] != have[i]) fits = false;
      }
      if (!fits) {
        return fail("the target's example shape has several unknown dimensions that the "
                    "source's shape does not settle");
      }
      want = have;
    }
    plan.out_example = TensorShape(want);
  }
  plan.binding = std::move(binding);
  return plan;
}

StatusOr<Feeder> Feeder::Create(std::vector<Binding> bindings, int64_t requested_batch) {
  Feeder feeder;
  const FeedTarget* fixed_by = nullptr;
  int64_t fixed = -1;
  for (const Binding& binding : bindings) {
    const PartialShape& shape = binding.target.shape;
    if (!shape.known_rank || shape.dims.empty() || shape.dims[0] < 0) continue;
    if (fixed_by != nullptr && shape.dims[0] != fixed) {
      return InvalidArgumentError("{} has batch dimension {}, but {} has {}",
                                  binding.target.DebugString(), shape.dims[0],
                                  fixed_by->DebugString(), fixed);
    }
    if (fixed_by == nullptr) {
      fixed_by = &binding.target;
      fixed = shape.dims[0];
    }
  }
  if (fixed_by != nullptr) {
    if (requested_batch > 0 && requested_batch != fixed) {
      return InvalidArgumentError("--batch {} conflicts with {}, whose batch dimension is fixed "
                                  "at {}",
                                  requested_batch, fixed_by->DebugString(), fixed);
    }
    if (fixed == 0) return InvalidArgumentError("{} has batch dimension 0", fixed_by->DebugString());
    feeder.batch_size_ = fixed;
    feeder.batch_fixed_ = true;
  } else if (requested_batch > 0) {
    feeder.batch_size_ = requested_batch;
  }
  for (Binding& binding : bindings) {
    PX_ASSIGN_OR_RETURN(Plan plan, PlanBinding(std::move(binding)));
    feeder.plans_.push_back(std::move(plan));
  }
  return feeder;
}

int64_t Feeder::BatchBytes() const {
  int64_t bytes = 0;
  for (const Plan& plan : plans_) {
    bytes += batch_size_ * plan.out_example.num_elements() * DataTypeSize(plan.out_dtype);
  }
  return bytes;
}

namespace {

// Reads element i of `t` as int64 (integers) or double (floats).
int64_t IntAt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case tensorflow::DT_UINT8: return t.data<uint8_t>()[i];
    case tensorflow::DT_INT8: return t.data<int8_t>()[i];
    case tensorflow::DT_INT16: return t.data<int16_t>()[i];
    case tensorflow::DT_UINT16: return t.data<uint16_t>()[i];
    case tensorflow::DT_INT32: return t.data<int32_t>()[i];
    case tensorflow::DT_INT64: return t.data<int64_t>()[i];
    default: return 0;
  }
}
double FloatAt(const Tensor& t, int64_t i) {
  if (t.dtype() == tensorflow::DT_FLOAT) return t.data<float>()[i];
  if (t.dtype() == tensorflow::DT_DOUBLE) return t.data<double>()[i];
  return static_cast<double>(IntAt(t, i));
}
void SetFloat(Tensor* t, int64_t i, double v) {
  if (t->dtype() == tensorflow::DT_FLOAT) t->data<float>()[i] = static_cast<float>(v);
  else t->data<double>()[i] = v;
}

}  // namespace

Status Feeder::Convert(const Plan& plan, const Tensor& in, std::span<const int64_t> ids,
                       Tensor* out) const {
  const auto batch = static_cast<int64_t>(ids.size());
  TensorShape shape = plan.out_example;
  shape.InsertDim(0, batch);
  const FeedTarget& target = plan.binding.target;
  const Column& column = *plan.binding.column;
  switch (plan.conversion) {
    case Conversion::kCopy: {
      StatusOr<Tensor> reshaped = in.Reshaped(shape);
      if (!reshaped.ok()) return reshaped.status().WithPrefix(target.what);
      *out = std::move(reshaped).value();
      return Status::Ok();
    }
    case Conversion::kScale: {
      *out = Tensor(plan.out_dtype, shape);
      const uint8_t* src = in.data<uint8_t>();
      const int64_t n = in.num_elements();
      // Typed loops (a batch of images is ~200K elements per step).
      if (plan.out_dtype == tensorflow::DT_FLOAT) {
        float* dst = out->data<float>();
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i] / 255.0);
      } else {
        for (int64_t i = 0; i < n; ++i) SetFloat(out, i, src[i] / 255.0);
      }
      return Status::Ok();
    }
    case Conversion::kOneHot: {
      *out = Tensor(plan.out_dtype, shape);
      std::memset(out->raw_data(), 0, out->bytes());
      for (int64_t i = 0; i < batch; ++i) {
        const int64_t label = IntAt(in, i);
        if (label < 0 || label >= plan.depth) {
          return InvalidArgumentError("{}: label {} of example {} in {} is outside [0, {})",
                                      target.what, label, ids[static_cast<size_t>(i)],
                                      column.source(), plan.depth);
        }
        SetFloat(out, i * plan.depth + label, 1.0);
      }
      return Status::Ok();
    }
    case Conversion::kCast: {
      *out = Tensor(plan.out_dtype, shape);
      const int64_t n = in.num_elements();
      const int64_t per_example = std::max<int64_t>(plan.out_example.num_elements(), 1);
      if (IsFloat(plan.out_dtype)) {
        for (int64_t i = 0; i < n; ++i) SetFloat(out, i, FloatAt(in, i));
      } else if (plan.out_dtype == tensorflow::DT_INT64) {
        int64_t* dst = out->data<int64_t>();
        for (int64_t i = 0; i < n; ++i) dst[i] = IntAt(in, i);
      } else {
        int32_t* dst = out->data<int32_t>();
        for (int64_t i = 0; i < n; ++i) {
          const int64_t v = IntAt(in, i);
          if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
            return InvalidArgumentError("{}: value {} of example {} in {} does not fit int32",
                                        target.what, v, ids[static_cast<size_t>(i / per_example)],
                                        column.source());
          }
          dst[i] = static_cast<int32_t>(v);
        }
      }
      return Status::Ok();
    }
  }
  return InternalError("unknown conversion");
}

StatusOr<std::vector<std::pair<std::string, Tensor>>> Feeder::Feeds(
    std::span<const int64_t> ids) const {
  std::vector<std::pair<std::string, Tensor>> feeds;
  feeds.reserve(plans_.size());
  for (const Plan& plan : plans_) {
    Tensor raw = plan.binding.column->Gather(ids);
    Tensor out;
    PX_RETURN_IF_ERROR(Convert(plan, raw, ids, &out));
    feeds.emplace_back(plan.binding.target.tensor, std::move(out));
  }
  return feeds;
}

std::vector<std::string> Feeder::Describe() const {
  std::vector<std::string> lines;
  for (const Plan& plan : plans_) {
    const Column& column = *plan.binding.column;
    lines.push_back(fmt::format("{} <- {}: {} {} {} to {} {}", plan.binding.target.tensor,
                                column.source(), ConversionName(static_cast<int>(plan.conversion)),
                                DataTypeShortName(column.dtype()),
                                column.example_shape().DebugString(),
                                DataTypeShortName(plan.out_dtype), plan.out_example.DebugString()));
  }
  return lines;
}

}  // namespace parallax
