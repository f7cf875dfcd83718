// `parallax models list [--json]` and `parallax models export NAME -o FILE [options]`:
// the built-in model zoo (lib/models/zoo.h) as TF1 training graphs.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cmd/parallax/command.h"
#include "lib/base/json_writer.h"
#include "lib/graph/graph_io.h"
#include "lib/models/zoo.h"

namespace parallax::cli {
namespace {

using models::BuildModel;
using models::Model;
using models::ModelOptions;
using models::ModelSpec;

struct ExportFlags {
  std::string name;
  std::string output;
  bool text = false;
  bool force = false;
  int64_t batch = 0;
  std::string optimizer;
  double lr = 0;
  double clip_norm = 0;
  int64_t seed = 1;
  std::string widths;
  int64_t vocab = 0, dim = 0, seq = 0, hidden = 0;
  bool global_step = false;
  bool unroll = false;
  int64_t layers = 0, heads = 0;  // transformer
  double dropout = 0;
  int64_t samples = 0;  // lm1b
  int64_t image_size = 0, filters = 0;
  std::string data_format, blocks;
  // Which options were given (unset ones take the model's defaults).
  CLI::Option *batch_opt = nullptr, *optimizer_opt = nullptr, *lr_opt = nullptr, *clip_opt = nullptr,
              *widths_opt = nullptr, *vocab_opt = nullptr, *dim_opt = nullptr, *seq_opt = nullptr,
              *hidden_opt = nullptr, *image_size_opt = nullptr, *data_format_opt = nullptr,
              *filters_opt = nullptr, *blocks_opt = nullptr;
  CLI::Option *layers_opt = nullptr, *heads_opt = nullptr, *dropout_opt = nullptr;
  CLI::Option* samples_opt = nullptr;
};

// "512,512" -> {512, 512}; `flag` names the option in errors.
StatusOr<std::vector<int64_t>> ParseIntList(std::string_view flag, const std::string& text) {
  std::vector<int64_t> widths;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string part = text.substr(start, end - start);
    size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(part, &used);
    } catch (...) {
      used = 0;
    }
    if (part.empty() || used != part.size()) {
      return InvalidArgumentError("{}: '{}' is not an integer (want e.g. 512,512)", flag, part);
    }
    widths.push_back(value);
    start = end + 1;
  }
  return widths;
}

StatusOr<ModelOptions> OptionsFrom(const ExportFlags& f) {
  ModelOptions o;
  if (f.batch_opt->count() > 0) o.batch = f.batch;
  if (f.optimizer_opt->count() > 0) {
    PX_ASSIGN_OR_RETURN(models::OptimizerKind kind, models::ParseOptimizer(f.optimizer));
    o.optimizer = kind;
  }
  if (f.lr_opt->count() > 0) o.learning_rate = f.lr;
  if (f.clip_opt->count() > 0) o.clip_norm = f.clip_norm;
  o.seed = f.seed;
  if (f.widths_opt->count() > 0) {
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> widths, ParseIntList("--widths", f.widths));
    o.widths = widths;
  }
  if (f.vocab_opt->count() > 0) o.vocab = f.vocab;
  if (f.dim_opt->count() > 0) o.dim = f.dim;
  if (f.seq_opt->count() > 0) o.seq = f.seq;
  if (f.hidden_opt->count() > 0) o.hidden = f.hidden;
  if (f.layers_opt->count() > 0) o.layers = f.layers;
  if (f.heads_opt->count() > 0) o.heads = f.heads;
  if (f.dropout_opt->count() > 0) o.dropout = f.dropout;
  if (f.samples_opt->count() > 0) o.samples = f.samples;
  if (f.image_size_opt->count() > 0) o.image_size = f.image_size;
  if (f.data_format_opt->count() > 0) o.data_format = f.data_format;
  if (f.filters_opt->count() > 0) o.filters = f.filters;
  if (f.blocks_opt->count() > 0) {
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> blocks, ParseIntList("--blocks", f.blocks));
    o.blocks = blocks;
  }
  o.unroll = f.unroll;
  o.global_step = f.global_step;
  return o;
}

Status Export(const ExportFlags& flags) {
  PX_ASSIGN_OR_RETURN(ModelOptions options, OptionsFrom(flags));
  PX_ASSIGN_OR_RETURN(Model model, BuildModel(flags.name, options));
  struct stat st;
  if (!flags.force && ::stat(flags.output.c_str(), &st) == 0) {
    return AlreadyExistsError("{}: exists; pass --force to overwrite it", flags.output);
  }
  PX_RETURN_IF_ERROR(SaveGraph(model.graph, flags.output,
                               flags.text ? GraphFileFormat::kText : GraphFileFormat::kBinary));
  const ModelSpec* spec = models::FindModelSpec(model.name);
  std::printf("%s\n", fmt::format("wrote {} ({}; {} nodes, {} parameters) to {}", model.name,
                                  models::DescribeOptions(*spec, model.options),
                                  model.graph.num_nodes(), model.num_params, flags.output)
                          .c_str());
  return Status::Ok();
}

Status List(bool json) {
  struct Row {
    const ModelSpec* spec;
    int64_t params;
    std::string defaults;
  };
  std::vector<Row> rows;
  for (const ModelSpec& spec : models::ModelSpecs()) {
    PX_ASSIGN_OR_RETURN(Model model, BuildModel(spec.name));
    rows.push_back({&spec, model.num_params, models::DescribeOptions(spec, model.options)});
  }
  std::string out;
  if (json) {
    JsonWriter w;
    w.BeginObject().Key("models").BeginArray();
    for (const Row& r : rows) {
      w.BeginObject()
          .Field("name", r.spec->name)
          .Field("params", r.params)
          .Field("defaults", r.defaults)
          .Field("description", r.spec->description)
          .EndObject();
    }
    w.EndArray().EndObject();
    out = w.str() + "\n";
  } else {
    size_t width = 8, name_width = 10;
    for (const Row& r : rows) {
      width = std::max(width, r.defaults.size());
      name_width = std::max(name_width, r.spec->name.size());
    }
    out = fmt::format("{:<{}} {:>11}  {:<{}}  {}\n", "NAME", name_width, "PARAMS", "DEFAULTS", width,
                      "DESCRIPTION");
    for (const Row& r : rows) {
      out += fmt::format("{:<{}} {:>11}  {:<{}}  {}\n", r.spec->name, name_width, r.params,
                         r.defaults, width, r.spec->description);
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return Status::Ok();
}

}  // namespace

Command AddModelsCommand(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "models", "The built-in model zoo: single-device TF1 training graphs (softmax, mlp, "
                "lenet, embedding) with TF-style gradients and optimizers.");
  sub->require_subcommand(1);
  auto json = std::make_shared<bool>(false);
  CLI::App* list = sub->add_subcommand("list", "List the models: name, parameters, default "
                                               "options, description.");
  list->add_flag("--json", *json, "print JSON instead of a table");

  auto f = std::make_shared<ExportFlags>();
  CLI::App* exp = sub->add_subcommand("export", "Write a model's training graph as a GraphDef.");
  exp->add_option("name", f->name, "model name (see `parallax models list`)")->required();
  exp->add_option("-o,--output", f->output, "output file (binary GraphDef unless --text)")
      ->required();
  exp->add_flag("--text", f->text, "write protobuf text format");
  exp->add_flag("--force", f->force, "overwrite the output file if it exists");
  f->batch_opt = exp->add_option("--batch", f->batch,
                                 "batch size; 0 leaves the batch dimension open (-1)");
  f->optimizer_opt = exp->add_option("--optimizer", f->optimizer,
                                     "sgd, momentum, adam, rmsprop, adagrad, adamw (BERT's AdamWeightDecay) or "
                                     "ftrl; wide_deep: the deep part's (its wide part is Ftrl)");
  f->lr_opt = exp->add_option("--lr", f->lr, "learning rate (default: per optimizer)");
  f->clip_opt = exp->add_option("--clip-norm", f->clip_norm,
                                "clip the gradients with tf.clip_by_global_norm(grads, X) first")
                    ->check(CLI::PositiveNumber);
  exp->add_option("--seed", f->seed, "seed attr of the random initialisers (default 1)");
  f->widths_opt = exp->add_option("--widths", f->widths,
                                  "mlp: hidden widths (512,512); lenet: conv1,conv2,fc (32,64,1024); "
                                  "wide_deep: dnn hidden widths (64,32)");
  f->vocab_opt = exp->add_option("--vocab", f->vocab, "embedding: vocabulary size (100000); wide_deep: "
                                 "ids per feature (1000; 4x as many hash buckets); transformer: "
                                 "vocabulary (30522); lm1b: words (793470)");
  f->dim_opt = exp->add_option("--dim", f->dim, "embedding: embedding width (128); wide_deep: (8); "
                               "lstm: input width (32); lm1b: embedding and projection width (512)");
  f->seq_opt = exp->add_option("--seq", f->seq, "embedding: ids per example (16); wide_deep: categorical "
                               "features (4); lstm: time steps (20); transformer: tokens per "
                               "example (128, at most 512); lm1b: time steps (20)");
  f->hidden_opt = exp->add_option("--hidden", f->hidden, "lstm: units of the LSTM cell (128); "
                                  "transformer: hidden size (768; the intermediate is 4x); lm1b: LSTM "
                                  "units before the projection (2048)");
  f->samples_opt = exp->add_option("--samples", f->samples,
                                   "lm1b: sampled softmax candidates per step, at most --vocab (8192)");
  f->layers_opt = exp->add_option("--layers", f->layers, "transformer: encoder layers (12)");
  f->heads_opt = exp->add_option("--heads", f->heads,
                                 "transformer: attention heads; must divide --hidden (12)");
  f->dropout_opt = exp->add_option("--dropout", f->dropout,
                                   "transformer: dropout rate (0.1); 0 writes no dropout ops, as "
                                   "`parallax verify` needs");
  exp->add_flag("--unroll", f->unroll, "lstm: unroll the cell over time (static_rnn) instead of "
                                       "dynamic_rnn's while loop");
  f->image_size_opt = exp->add_option("--image-size", f->image_size,
                                      "resnet50: input height and width (224)");
  f->data_format_opt = exp->add_option("--data-format", f->data_format,
                                       "resnet50: NHWC (channels last) or NCHW (channels first, "
                                       "the input transposed in the graph) (NHWC)");
  f->filters_opt = exp->add_option("--filters", f->filters,
                                   "resnet50: the first convolution's filters; stage i has 2^i times "
                                   "as many (64)");
  f->blocks_opt = exp->add_option("--blocks", f->blocks,
                                  "resnet50: bottleneck blocks per stage (3,4,6,3)");
  exp->add_flag("--global-step", f->global_step, "add global_step, incremented by the train op");

  return Command{sub, [list, exp, json, f]() -> Status {
                   if (list->parsed()) return List(*json);
                   if (exp->parsed()) return Export(*f);
                   return InternalError("models: no subcommand");
                 }};
}

}  // namespace parallax::cli
