// The zoo's models, written the way the TF1 tutorials and tf.layers write them.
#include "lib/models/zoo.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "lib/models/layers.h"
#include "lib/models/lm1b.h"
#include "lib/models/lstm_model.h"
#include "lib/models/resnet.h"
#include "lib/models/transformer.h"
#include "lib/models/wide_deep.h"

namespace parallax::models {
namespace {

using tensorflow::DT_INT32;
using tensorflow::DT_INT64;

constexpr int64_t kMnistPixels = 784;

// The GraphDef `versions` field TF 1.15 writes (producer 134 is TF 1.15's).
std::string VersionsField() {
  tensorflow::GraphDef def;
  def.mutable_versions()->set_producer(134);
  return def.SerializeAsString();
}

// tf.layers.conv2d with 5x5 kernels, stride 1, SAME padding and relu.
Output Conv(const GraphBuilder& b, std::string_view scope, const Output& x, int64_t filters) {
  const GraphBuilder s = b.WithScope(scope);
  const int64_t in = x.shape.dims[3];
  const DataType t = BaseType(x.dtype);
  const VariableInfo kernel =
      s.Variable("kernel", StaticShape{5, 5, in, filters}, t, Initializer::GlorotUniform());
  const VariableInfo bias = s.Variable("bias", StaticShape{filters}, t, Initializer::Zeros());
  const Output y = s.Conv2D(x, kernel.read, {1, 1, 1, 1}, "SAME", "Conv2D");
  return s.Relu(s.BiasAdd(y, bias.read, "BiasAdd"), "Relu");
}

Output Pool(const GraphBuilder& b, std::string_view scope, const Output& x) {
  return b.WithScope(scope).MaxPool(x, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID", "MaxPool");
}

// Builds the forward graph into `b` and returns the logits; records the feeds.
using Forward = std::function<Output(const GraphBuilder& b, const ModelOptions& o, Model* m,
                                     Output* labels)>;

Output Labels(const GraphBuilder& b, int64_t batch, std::string_view rule, Model* m) {
  return FeedPlaceholder(b, "y", DT_INT64, StaticShape{batch}, rule, m);
}

Output SoftmaxForward(const GraphBuilder& b, const ModelOptions& o, Model* m, Output* labels) {
  const int64_t batch = *o.batch == 0 ? -1 : *o.batch;
  const Output x = FeedPlaceholder(b, "x", o.dtype, StaticShape{batch, kMnistPixels}, "uniform:0:1", m);
  *labels = Labels(b, batch, "argmax_prefix:x:10", m);
  return DenseLayer(b, "dense", x, kNumClasses, false);
}

Output MlpForward(const GraphBuilder& b, const ModelOptions& o, Model* m, Output* labels) {
  const int64_t batch = *o.batch == 0 ? -1 : *o.batch;
  Output h = FeedPlaceholder(b, "x", o.dtype, StaticShape{batch, kMnistPixels}, "uniform:0:1", m);
  *labels = Labels(b, batch, "argmax_prefix:x:10", m);
  int layer = 0;
  auto scope = [&layer]() { return layer == 0 ? std::string("dense") : fmt::format("dense_{}", layer); };
  for (int64_t width : *o.widths) {
    h = DenseLayer(b, scope(), h, width, true);
    ++layer;
  }
  return DenseLayer(b, scope(), h, kNumClasses, false);
}

Output LenetForward(const GraphBuilder& b, const ModelOptions& o, Model* m, Output* labels) {
  const int64_t batch = *o.batch == 0 ? -1 : *o.batch;
  const Output x = FeedPlaceholder(b, "x", o.dtype, StaticShape{batch, 28, 28, 1}, "uniform:0:1", m);
  *labels = Labels(b, batch, "argmax_prefix:x:10", m);
  const std::vector<int64_t>& w = *o.widths;
  Output h = Pool(b, "max_pooling2d", Conv(b, "conv2d", x, w[0]));
  h = Pool(b, "max_pooling2d_1", Conv(b, "conv2d_1", h, w[1]));
  h = b.Reshape(h, std::vector<int64_t>{-1, 7 * 7 * w[1]}, "Reshape");
  h = DenseLayer(b, "dense", h, w[2], true);
  return DenseLayer(b, "dense_1", h, kNumClasses, false);
}

Output EmbeddingForward(const GraphBuilder& b, const ModelOptions& o, Model* m, Output* labels) {
  const int64_t batch = *o.batch == 0 ? -1 : *o.batch;
  const Output ids = FeedPlaceholder(b, "ids", DT_INT32, StaticShape{batch, *o.seq},
                                 fmt::format("uniform_int:0:{}", *o.vocab), m);
  *labels = Labels(b, batch, "token_vote:ids:10", m);
  const VariableInfo table = b.Variable("embeddings", StaticShape{*o.vocab, *o.dim}, o.dtype,
                                        Initializer::RandomUniform(-0.05, 0.05));
  const Output looked_up = b.ColocatedWith("embeddings").GatherV2(table.read, ids, 0, "embedding_lookup");
  const Output mean = b.Mean(looked_up, {1}, false, "Mean");
  return DenseLayer(b, "dense", mean, kNumClasses, false);
}

// Writes the training ops for the loss; unset: Minimize with the model's optimizer.
using Train = std::function<StatusOr<TrainOps>(const GraphBuilder& b, const Output& loss,
                                               const ModelOptions& o)>;

// The model's own loss `loss` from the forward's output and the labels (lm1b's sampled
// softmax, resnet50's weight decay); unset: MeanCrossEntropy of the forward's logits.
using Loss = std::function<Output(const GraphBuilder& b, const ModelOptions& o,
                                  const Output& forward, const Output& labels)>;

struct ModelEntry {
  ModelSpec spec;
  Forward forward;
  Train train = nullptr;
  Loss loss = nullptr;
};

ModelOptions Defaults(int64_t batch, OptimizerKind opt) {
  ModelOptions o;
  o.batch = batch;
  o.optimizer = opt;
  o.learning_rate = DefaultLearningRate(opt);
  return o;
}

const std::vector<ModelEntry>& Entries() {
  static const auto* entries = [] {
    auto* e = new std::vector<ModelEntry>();
    {
      ModelOptions d = Defaults(100, OptimizerKind::kSgd);
      e->push_back({{"softmax", "softmax regression on MNIST-shaped input: 784 -> 10", {}, d},
                    SoftmaxForward});
    }
    {
      ModelOptions d = Defaults(256, OptimizerKind::kSgd);
      d.widths = std::vector<int64_t>{512, 512};
      e->push_back({{"mlp", "multi-layer perceptron: 784 -> hidden relu layers (--widths) -> 10",
                     {"widths"}, d},
                    MlpForward});
    }
    {
      ModelOptions d = Defaults(64, OptimizerKind::kAdam);
      d.widths = std::vector<int64_t>{32, 64, 1024};
      e->push_back({{"lenet",
                     "LeNet on 28x28x1 NHWC: conv5x5 32, maxpool, conv5x5 64, maxpool, fc 1024, fc 10 "
                     "(--widths conv1,conv2,fc)",
                     {"widths"}, d},
                    LenetForward});
    }
    {
      ModelOptions d = Defaults(128, OptimizerKind::kAdagrad);
      d.vocab = 100000;
      d.dim = 128;
      d.seq = 16;
      e->push_back({{"embedding",
                     "sparse model: ids [batch, seq] -> embedding lookup (vocab x dim) -> mean over "
                     "seq -> dense 10; the embedding gradient is IndexedSlices",
                     {"vocab", "dim", "seq"}, d},
                    EmbeddingForward});
    }
    {
      // TF's canned defaults: Adagrad at 0.05 for the deep part (Ftrl for the wide part
      // is fixed, see wide_deep.h).
      ModelOptions d = Defaults(kWideDeepBatch, OptimizerKind::kAdagrad);
      d.learning_rate = 0.05;
      d.vocab = 1000;
      d.dim = 8;
      d.seq = 4;
      d.widths = std::vector<int64_t>{64, 32};
      e->push_back({{"wide_deep",
                     "wide & deep (DNNLinearCombinedClassifier): ids [batch, seq] int64 hashed "
                     "into 4*vocab buckets per feature + a crossed column -> linear model (Ftrl); "
                     "embedding columns (dim) + x -> dnn (widths) (--optimizer, default adagrad)",
                     {"widths", "vocab", "dim", "seq"}, d},
                    WideDeepForward, WideDeepTrainOps});
    }
    {
      ModelOptions d = Defaults(32, OptimizerKind::kAdam);
      d.seq = 20;
      d.dim = 32;
      d.hidden = 128;
      e->push_back({{"lstm",
                     "LSTM sequence classifier built as tf.nn.dynamic_rnn: x [batch, seq, dim] -> "
                     "while loop over TensorArrays (LSTM cell, hidden units) -> last output -> "
                     "dense 10; gradient loop with stacks (--unroll: static_rnn)",
                     {"seq", "dim", "hidden", "unroll"}, d},
                    LstmForward});
    }
    {
      ModelOptions d = Defaults(32, OptimizerKind::kMomentum);
      d.learning_rate = 0.1 * 32 / 256;  // official's 0.1 x batch / 256
      d.image_size = 224;
      d.data_format = "NHWC";
      d.filters = 64;
      d.blocks = std::vector<int64_t>{3, 4, 6, 3};
      e->push_back({{"resnet50",
                     "ResNet-50 v1.5 as TF's official model: x [batch, image-size, image-size, 3] -> "
                     "conv 7x7/2, max pool, bottleneck blocks (--blocks, --filters) with fused batch "
                     "norm in training mode and moving averages -> mean -> dense 1001; Momentum with "
                     "L2 weight decay 1e-4 (--data-format NHWC or NCHW)",
                     {"image_size", "data_format", "filters", "blocks"}, d},
                    ResnetForward, nullptr, ResnetLoss});
    }
    {
      // BERT-Base; BERT's pre-training rate (fine-tuning uses 2e-5 to 5e-5).
      ModelOptions d = Defaults(8, OptimizerKind::kAdamWeightDecay);
      d.learning_rate = 1e-4;
      d.layers = 12;
      d.hidden = 768;
      d.heads = 12;
      d.seq = 128;
      d.vocab = 30522;
      d.dropout = 0.1;
      e->push_back({{"transformer",
                     "BERT encoder classifier as modeling.py writes it: ids [batch, seq] -> word, "
                     "token type and position embeddings -> layers x (self-attention with heads, "
                     "GELU intermediate 4*hidden, residuals, LayerNorm) -> pooler -> dense 10; "
                     "dropout (--dropout, 0: none) as tf.nn.dropout",
                     {"vocab", "seq", "hidden", "layers", "heads", "dropout"}, d},
                    TransformerForward});
    }
    {
      // The original's AdagradOptimizer(0.2, initial_accumulator_value=1.0) (lm1b.h).
      ModelOptions d = Defaults(128, OptimizerKind::kAdagrad);
      d.learning_rate = 0.2;
      d.vocab = 793470;
      d.dim = 512;
      d.hidden = 2048;
      d.seq = 20;
      d.samples = 8192;
      e->push_back({{"lm1b",
                     "LM-1B language model (the Parallax paper's): ids [batch, seq] -> embedding "
                     "(vocab x dim) -> LSTM (hidden units, projected to dim) unrolled over seq -> "
                     "sampled softmax (samples candidates) against the next words; three sparse "
                     "(IndexedSlices) gradients",
                     {"vocab", "dim", "hidden", "seq", "samples"}, d},
                    Lm1bForward, Lm1bTrainOps, Lm1bLoss});
    }
    return e;
  }();
  return *entries;
}

Status CheckPositive(std::string_view flag, int64_t value, int64_t min = 1) {
  if (value < min) {
    return InvalidArgumentError("--{} must be at least {}, got {}", flag, min, value);
  }
  return Status::Ok();
}

// A model-specific option: its key in ModelSpec::options, its flag, and how to tell
// whether it was given, take its default and describe it ("vocab=1000").
struct OptionField {
  std::string_view key;
  std::string_view flag;
  std::function<bool(const ModelOptions&)> given;
  std::function<void(ModelOptions&, const ModelOptions&)> take_default;
  std::function<std::string(const ModelOptions&)> describe;
};

std::string DescribeValue(int64_t v) { return std::to_string(v); }
std::string DescribeValue(double v) { return fmt::format("{}", v); }
std::string DescribeValue(const std::string& v) { return v; }
std::string DescribeValue(const std::vector<int64_t>& v) { return fmt::format("{}", fmt::join(v, ",")); }

template <typename T>
OptionField Field(std::string_view key, std::string_view flag, std::optional<T> ModelOptions::*member) {
  return OptionField{
      .key = key,
      .flag = flag,
      .given = [member](const ModelOptions& o) { return (o.*member).has_value(); },
      .take_default =
          [member](ModelOptions& o, const ModelOptions& d) {
            if (!(o.*member)) o.*member = d.*member;
          },
      .describe =
          [key, member](const ModelOptions& o) {
            return o.*member ? fmt::format(" {}={}", key, DescribeValue(*(o.*member))) : "";
          }};
}

// Every model-specific option, in the order an option a model does not take is reported.
const std::vector<OptionField>& OptionFields() {
  static const auto* fields = new std::vector<OptionField>{
      Field("widths", "widths", &ModelOptions::widths),
      Field("vocab", "vocab", &ModelOptions::vocab),
      Field("dim", "dim", &ModelOptions::dim),
      Field("seq", "seq", &ModelOptions::seq),
      Field("hidden", "hidden", &ModelOptions::hidden),
      OptionField{.key = "unroll",
                  .flag = "unroll",
                  .given = [](const ModelOptions& o) { return o.unroll; },
                  .take_default = [](ModelOptions&, const ModelOptions&) {},
                  .describe = [](const ModelOptions& o) { return o.unroll ? " unroll" : ""; }},
      Field("layers", "layers", &ModelOptions::layers),
      Field("heads", "heads", &ModelOptions::heads),
      Field("dropout", "dropout", &ModelOptions::dropout),
      Field("image_size", "image-size", &ModelOptions::image_size),
      Field("data_format", "data-format", &ModelOptions::data_format),
      Field("filters", "filters", &ModelOptions::filters),
      Field("blocks", "blocks", &ModelOptions::blocks),
      Field("samples", "samples", &ModelOptions::samples),
  };
  return *fields;
}

// Fills unset fields from the defaults and rejects options the model does not take.
StatusOr<ModelOptions> Resolve(const ModelSpec& spec, const ModelOptions& given) {
  auto takes = [&](std::string_view opt) {
    return std::find(spec.options.begin(), spec.options.end(), opt) != spec.options.end();
  };
  for (const OptionField& field : OptionFields()) {
    if (field.given(given) && !takes(field.key)) {
      return InvalidArgumentError("option --{} does not apply to model '{}'", field.flag,
                                  spec.name);
    }
  }
  ModelOptions o = given;
  const ModelOptions& d = spec.defaults;
  if (!o.batch) o.batch = d.batch;
  if (!o.optimizer) o.optimizer = d.optimizer;
  if (!o.learning_rate) {
    // The model's own rate goes with its own optimizer.
    o.learning_rate = *o.optimizer == *d.optimizer && d.learning_rate ? *d.learning_rate
                                                                      : DefaultLearningRate(*o.optimizer);
  }
  for (const OptionField& field : OptionFields()) {
    if (takes(field.key)) field.take_default(o, d);
  }
  PX_RETURN_IF_ERROR(CheckPositive("batch", *o.batch, 0));
  if (!(*o.learning_rate > 0)) {
    return InvalidArgumentError("--lr must be positive, got {}", *o.learning_rate);
  }
  if (o.widths) {
    if (spec.name == "lenet" && o.widths->size() != 3) {
      return InvalidArgumentError("--widths for lenet takes 3 values (conv1,conv2,fc), got {}",
                                  o.widths->size());
    }
    if (o.widths->empty()) return InvalidArgumentError("--widths needs at least one value");
    for (int64_t w : *o.widths) PX_RETURN_IF_ERROR(CheckPositive("widths", w));
  }
  if (o.vocab) PX_RETURN_IF_ERROR(CheckPositive("vocab", *o.vocab, 2));
  if (o.vocab && *o.vocab > (int64_t{1} << 31) - 1) {
    return InvalidArgumentError("--vocab must fit int32 ids, got {}", *o.vocab);
  }
  if (o.dim) PX_RETURN_IF_ERROR(CheckPositive("dim", *o.dim));
  if (o.hidden) PX_RETURN_IF_ERROR(CheckPositive("hidden", *o.hidden));
  if (o.seq) PX_RETURN_IF_ERROR(CheckPositive("seq", *o.seq, spec.name == "wide_deep" ? 2 : 1));
  if (o.layers) PX_RETURN_IF_ERROR(CheckPositive("layers", *o.layers));
  if (o.heads) PX_RETURN_IF_ERROR(CheckPositive("heads", *o.heads));
  if (o.heads && o.hidden && *o.hidden % *o.heads != 0) {
    return InvalidArgumentError("--heads {} must divide --hidden {} (each head gets hidden/heads)",
                                *o.heads, *o.hidden);
  }
  if (o.dropout && !(*o.dropout >= 0 && *o.dropout < 1)) {
    return InvalidArgumentError("--dropout must be in [0, 1), got {}", *o.dropout);
  }
  if (spec.name == "transformer" && *o.seq > kBertMaxPositions) {
    return InvalidArgumentError("--seq for transformer must be at most {} (BERT's "
                                "max_position_embeddings), got {}",
                                kBertMaxPositions, *o.seq);
  }
  if (o.image_size) PX_RETURN_IF_ERROR(CheckPositive("image-size", *o.image_size));
  if (o.filters) PX_RETURN_IF_ERROR(CheckPositive("filters", *o.filters));
  if (o.data_format && *o.data_format != "NHWC" && *o.data_format != "NCHW") {
    return InvalidArgumentError("--data-format must be NHWC or NCHW, got '{}'", *o.data_format);
  }
  if (o.blocks) {
    if (o.blocks->empty()) return InvalidArgumentError("--blocks needs at least one value");
    if (o.blocks->size() > 8) {
      return InvalidArgumentError("--blocks takes at most 8 stages, got {}", o.blocks->size());
    }
    for (int64_t n : *o.blocks) PX_RETURN_IF_ERROR(CheckPositive("blocks", n));
  }
  if (o.samples) {
    PX_RETURN_IF_ERROR(CheckPositive("samples", *o.samples));
    // Unique candidates (LogUniformCandidateSampler's unique=True) from [0, vocab).
    if (*o.samples > *o.vocab) {
      return InvalidArgumentError("--samples must be at most --vocab ({}): the candidates are "
                                  "distinct words, got {}",
                                  *o.vocab, *o.samples);
    }
  }
  if (o.dtype != tensorflow::DT_FLOAT && o.dtype != tensorflow::DT_DOUBLE) {
    return InvalidArgumentError("models are float32 or float64");
  }
  return o;
}

}  // namespace

const std::vector<ModelSpec>& ModelSpecs() {
  static const auto* specs = [] {
    auto* s = new std::vector<ModelSpec>();
    for (const ModelEntry& e : Entries()) s->push_back(e.spec);
    return s;
  }();
  return *specs;
}

const ModelSpec* FindModelSpec(std::string_view name) {
  for (const ModelSpec& s : ModelSpecs()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string DescribeOptions(const ModelSpec& spec, const ModelOptions& o) {
  std::string out = fmt::format("batch={} optimizer={} lr={}", o.batch.value_or(0),
                                OptimizerFlagName(o.optimizer.value_or(OptimizerKind::kSgd)),
                                o.learning_rate.value_or(0));
  if (o.clip_norm) out += fmt::format(" clip_norm={}", *o.clip_norm);
  for (const std::string& opt : spec.options) {
    for (const OptionField& field : OptionFields()) {
      if (field.key == opt) out += field.describe(o);
    }
  }
  return out;
}

StatusOr<Model> BuildModel(std::string_view name, const ModelOptions& options) {
  const ModelEntry* entry = nullptr;
  for (const ModelEntry& e : Entries()) {
    if (e.spec.name == name) entry = &e;
  }
  if (entry == nullptr) {
    std::vector<std::string> names;
    for (const ModelEntry& e : Entries()) names.push_back(e.spec.name);
    return InvalidArgumentError("unknown model '{}' (known: {})", name, fmt::join(names, ", "));
  }
  PX_ASSIGN_OR_RETURN(ModelOptions o, Resolve(entry->spec, options));
  Model model;
  model.name = entry->spec.name;
  model.graph.set_source(fmt::format("model '{}'", model.name));
  model.graph.set_other_fields(VersionsField());
  GraphBuilder b(&model.graph, o.seed);
  Output labels;
  const Output logits = entry->forward(b, o, &model, &labels);
  const Output loss = entry->loss ? entry->loss(b, o, logits, labels)
                                  : MeanCrossEntropy(b, logits, labels, "loss");
  PX_RETURN_IF_ERROR(b.status());

  TrainOps train;
  if (entry->train) {
    PX_ASSIGN_OR_RETURN(train, entry->train(b, loss, o));
  } else {
    OptimizerOptions opt;
    opt.kind = *o.optimizer;
    opt.learning_rate = *o.learning_rate;
    opt.global_step = o.global_step;
    opt.clip_norm = o.clip_norm.value_or(0);
    PX_ASSIGN_OR_RETURN(train, Minimize(b, loss, opt));
  }
  if (!model.update_ops.empty()) {
    // official's tf.group(minimize_op, update_ops).
    std::vector<NodeId> deps = {train.train_op};
    for (const std::string& name : model.update_ops) deps.push_back(model.graph.FindNode(name));
    train.train_op = b.AddNoOp("group_deps", deps);
  }
  PX_ASSIGN_OR_RETURN(NodeId init, AddInitOp(b));
  PX_RETURN_IF_ERROR(b.status());

  model.options = o;
  model.loss = std::string(model.graph.node(loss.node()).name());
  model.train_op = std::string(model.graph.node(train.train_op).name());
  model.init_op = std::string(model.graph.node(init).name());
  for (const VariableInfo& v : train.variables) {
    model.trainable_variables.push_back(v.name);
    model.num_params += v.ref.shape.num_elements();
  }
  return model;
}

int64_t TokenClass(int64_t token, int64_t classes) {
  const uint64_t h = (static_cast<uint64_t>(token) * 2654435761ull) & 0xffffffffull;
  return static_cast<int64_t>(h % static_cast<uint64_t>(classes));
}

int64_t TokenVoteLabel(std::span<const int32_t> ids, int64_t classes) {
  std::vector<int64_t> votes(static_cast<size_t>(classes), 0);
  for (int32_t id : ids) ++votes[static_cast<size_t>(TokenClass(id, classes))];
  return std::max_element(votes.begin(), votes.end()) - votes.begin();
}

std::vector<int64_t> NextTokens(std::span<const int32_t> row) {
  std::vector<int64_t> next(row.size());
  for (size_t t = 0; t < row.size(); ++t) next[t] = row[(t + 1) % row.size()];
  return next;
}

int64_t ArgmaxPrefixLabel(std::span<const float> example, int64_t classes) {
  const size_t n = std::min(example.size(), static_cast<size_t>(classes));
  return std::max_element(example.begin(), example.begin() + static_cast<std::ptrdiff_t>(n)) -
         example.begin();
}

}  // namespace parallax::models
