// `parallax eval GRAPH_OR_JOB --checkpoint CKPT --feed NAME=SRC... [--json]`: evaluates
// the variables of a checkpoint on labelled data in this process: one pass over the fed
// examples in file order, reporting the mean loss, the accuracy of the argmax of the
// logits behind the loss against the labels, and per class (by label) the examples and
// how many were predicted right.
//
// Terms:
//  - GRAPH is a single-device training graph; JOB a directory written by `parallax
//    transform`, evaluated with its single-device graph (JOB/graph.pb; for jobs written
//    before it existed, the plan's source graph when its fingerprint still matches);
//  - CKPT is any checkpoint `--init-checkpoint` takes (named_tensors.h): a `parallax run`
//    checkpoint directory or file, a job's checkpoint directory (its ranks' files read as
//    one, parameter-server variables reassembled), a TensorFlow checkpoint. Every
//    variable of the graph must be in it (an error names the missing ones).
// The prediction and the loss are found as `parallax run --eval-feed` finds them
// (trainer.h); --loss names the loss when the analysis's choice is not the one wanted.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cmd/parallax/command.h"
#include "lib/base/file.h"
#include "lib/base/fnv1a.h"
#include "lib/base/json_writer.h"
#include "lib/graph/graph_io.h"
#include "lib/runtime/checkpoint/named_tensors.h"
#include "lib/runtime/trainer.h"
#include "lib/transform/job_writer.h"
#include "lib/transform/plan_io.h"
#include "lib/transform/strategy.h"

namespace parallax::cli {
namespace {

struct EvalFlags {
  std::string graph;
  std::string checkpoint;
  std::vector<std::string> feeds, input_map;
  std::string input_dir;
  std::string loss;
  int64_t batch = 0;
  int threads = 0;
  bool json = false;
};

// The single-device graph of the job in `dir` (see the file comment).
StatusOr<std::string> JobSourceGraph(const std::string& dir) {
  const std::filesystem::path own = std::filesystem::path(dir) / kSourceGraphFile;
  if (std::filesystem::exists(own)) return own.string();
  PX_ASSIGN_OR_RETURN(Plan plan, LoadPlan(dir));
  const std::string& source = plan.source_graph;
  auto refuse = [&](std::string_view why) {
    return FailedPreconditionError("{}: no {} in the job, and its source graph {} {}; pass the "
                                   "single-device graph instead: parallax eval GRAPH "
                                   "--checkpoint ...",
                                   dir, kSourceGraphFile, source, why);
  };
  if (source.empty() || !std::filesystem::is_regular_file(source)) return refuse("is missing");
  PX_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(source, kMaxGraphFileBytes));
  if (!plan.source_fingerprint.empty() && Fnv1a64Hex(bytes) != plan.source_fingerprint) {
    return refuse("has changed since the job was written");
  }
  return source;
}

void PrintText(const EvalResult& eval, const std::string& graph, const std::string& checkpoint) {
  std::string out = fmt::format("evaluated {} with {} on {} examples\n", checkpoint, graph,
                                eval.examples);
  if (eval.accuracy) {
    out += fmt::format("accuracy {:.4f} ({})", *eval.accuracy, eval.prediction);
  } else {
    out += "accuracy - (no softmax cross-entropy behind the loss)";
  }
  out += eval.loss ? fmt::format(", loss {:.4f}\n", *eval.loss) : std::string(", loss -\n");
  if (!eval.class_examples.empty()) {
    out += fmt::format("{:>5}  {:>8}  {:>7}  {}\n", "CLASS", "EXAMPLES", "CORRECT", "ACCURACY");
    for (size_t c = 0; c < eval.class_examples.size(); ++c) {
      const int64_t n = eval.class_examples[c];
      out += fmt::format("{:>5}  {:>8}  {:>7}  {}\n", c, n, eval.class_correct[c],
                         n > 0 ? fmt::format("{:.4f}", static_cast<double>(eval.class_correct[c]) /
                                                           static_cast<double>(n))
                               : std::string("-"));
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

Status Evaluate(const EvalFlags& flags) {
  if (flags.feeds.empty()) {
    return InvalidArgumentError("eval: --feed NAME=SRC is required (the labelled examples to "
                                "evaluate on)");
  }
  std::string graph_path = flags.graph;
  if (IsJobDir(flags.graph)) {
    PX_ASSIGN_OR_RETURN(graph_path, JobSourceGraph(flags.graph));
  }
  // The checkpoint is resolved before the graph is planned: a wrong path is its own error.
  PX_ASSIGN_OR_RETURN(const CheckpointLocation where, ResolveCheckpoint(flags.checkpoint));

  TrainerOptions options;
  for (const std::string& text : flags.feeds) {
    PX_ASSIGN_OR_RETURN(FeedSpec spec, ParseFeedSpec(text, "--feed"));
    options.eval_feeds.push_back(spec);
    options.feeds.push_back(std::move(spec));  // the train step's inputs, never run
  }
  options.steps = 0;
  options.shuffle = false;
  options.batch = flags.batch;
  options.loss = flags.loss;
  options.threads = flags.threads;
  options.init_checkpoint = flags.checkpoint;
  options.init_checkpoint_flag = "--checkpoint";
  options.input.input_dir = flags.input_dir;
  PX_ASSIGN_OR_RETURN(options.input.input_map, ParseInputMap(flags.input_map));

  PX_ASSIGN_OR_RETURN(Graph graph, LoadGraph(graph_path));
  PX_RETURN_IF_ERROR(StripHorovodAndReport(graph));
  PX_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, Trainer::Create(graph, options));
  PX_RETURN_IF_ERROR(trainer->Initialize());
  PX_ASSIGN_OR_RETURN(const EvalResult eval, trainer->Evaluate());

  const std::string checkpoint =
      where.found.empty() ? where.path : fmt::format("{} ({})", where.path, where.found);
  if (!flags.json) {
    PrintText(eval, graph_path, checkpoint);
    return Status::Ok();
  }
  JsonWriter json;
  json.BeginObject().Field("graph", graph_path).Field("checkpoint", where.path);
  json.Field("checkpoint_format", CheckpointFormatName(where.format));
  WriteEvalFields(eval, json);
  json.EndObject();
  std::printf("%s\n", json.str().c_str());
  return Status::Ok();
}

}  // namespace

Command AddEvalCommand(CLI::App& app) {
  auto flags = std::make_shared<EvalFlags>();
  CLI::App* sub = app.add_subcommand(
      "eval", "Evaluate a checkpoint on labelled data: loss, accuracy and per-class counts.");
  sub->add_option("graph", flags->graph,
                  "the single-device graph (GraphDef, MetaGraphDef or SavedModel), or a job "
                  "directory written by `parallax transform`")
      ->required();
  sub->add_option("--checkpoint", flags->checkpoint,
                  "the variables: a `parallax run` checkpoint (a job's --checkpoint-dir too) or "
                  "a TensorFlow checkpoint")
      ->required();
  sub->add_option("--feed", flags->feeds,
                  "NAME=SRC: the examples and labels, as `parallax run --feed`; repeatable");
  sub->add_option("--input-dir", flags->input_dir,
                  "where files named by the graph's input pipeline are found (as `run`)");
  sub->add_option("--input-map", flags->input_map, "OLD=NEW: as `run`; repeatable");
  sub->add_option("--batch", flags->batch,
                  "examples per run where the graph leaves the batch open (default: the "
                  "graph's, else 32)")
      ->check(AtLeast(1));
  sub->add_option("--loss", flags->loss, "the loss tensor (default: found)");
  sub->add_option("--threads", flags->threads, "kernel threads (default: one per core)")
      ->check(AtLeast(1));
  sub->add_flag("--json", flags->json, "print the result as one JSON object");
  return Command{sub, [flags]() { return Evaluate(*flags); }};
}

}  // namespace parallax::cli
