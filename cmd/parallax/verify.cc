// `parallax verify GRAPH --ranks N [--steps K] [feed flags as run] [--strategy S]
// [--sparse M] [--partitions P] [--cluster C.yaml] [--device D] [--accumulate] [--tolerance T]
// [--noise-factor F]
// [--init-checkpoint C] [--input-dir D] [--input-map OLD=NEW] [--keep DIR] [--json]`: trains the single-device graph with the global batch N·b (with
// --accumulate: N accumulated batches of b) in this process and its N-rank transform with
// b per rank under mpirun on localhost, then compares every variable
// (lib/verify/verify.h does the work; docs/verify.md). Prints a row per variable and the
// verdict. Exit status: 0 PASS, 1 FAIL, 2 bad input, 3 the job failed.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cmd/parallax/command.h"
#include "lib/verify/verify.h"

namespace parallax::cli {

Command AddVerifyCommand(CLI::App& app, bool* failed) {
  struct Flags {
    VerifyOptions options;
    std::vector<std::string> feeds, input_map;
    bool no_shuffle = false;
    std::string strategy, sparse;
    std::string device = "cpu";
    int partitions = 0;
    CLI::Option* partitions_option = nullptr;
    bool json = false;
  };
  auto flags = std::make_shared<Flags>();
  VerifyOptions& o = flags->options;
  CLI::App* sub = app.add_subcommand(
      "verify", "Train the single-device graph (global batch N*b) and its N-rank transform (b "
                "per rank, mpirun on localhost) side by side and compare every variable: exit "
                "0 PASS, 1 FAIL.");
  sub->add_option("graph", o.graph, "the single-device training graph")->required();
  sub->add_option("--ranks", o.ranks, "N: ranks of the job (CPU ranks on localhost)")
      ->required()
      ->check(AtLeast(1));
  sub->add_option("--steps", o.steps, "train steps on both sides (default 20)")
      ->check(AtLeast(1));
  sub->add_option("--batch", o.batch, "examples per step and rank, b (default: the graph's input "
                                      "pipeline count, else 32); one device takes N*b")
      ->check(AtLeast(1));
  sub->add_option("--feed", flags->feeds, "NAME=SRC as `parallax run` (a .npy or IDX file, or "
                                          "'synthetic'); repeatable");
  sub->add_flag("--synthetic", o.synthetic, "synthetic data for every input without a --feed");
  sub->add_option("--seed", o.seed, "seed of the shuffling and of synthetic data (default 0)");
  sub->add_flag("--no-shuffle", flags->no_shuffle, "read examples in file order");
  sub->add_option("--threads", o.threads, "the one device's kernel threads (default: one per "
                                          "core; ranks: the cores divided by N)")
      ->check(AtLeast(1));
  sub->add_option("--strategy", flags->strategy, "auto, allreduce, ps or hybrid (as transform)");
  sub->add_option("--sparse", flags->sparse, "ps, allgather or dense: how sparse gradients are "
                                             "synchronised (the spec's strategy.sparse)");
  flags->partitions_option = sub->add_option("--partitions", flags->partitions, "row partitions of parameter-server "
                                                     "variables (strategy.partitions)");
  sub->add_option("--cluster", o.cluster, "a cluster spec whose strategy section (overrides per "
                                          "variable, average) to use; its hosts are ignored");
  sub->add_option("--tolerance", o.tolerance, "largest max relative difference that always "
                                              "passes (default 1e-5)");
  sub->add_option("--noise-factor", o.noise_factor,
                  "N*b: a variable passes within max(tolerance, this x the noise), the noise "
                  "measured by two more one-device runs with each batch reordered (default 10; "
                  "0: no noise run, the tolerance alone)");
  sub->add_option("--device", flags->device,
                  "cpu, gpu or gpu:N: where both sides train: one device on that GPU, the N "
                  "ranks sharing it (their collectives through the host; needs a build with "
                  "CUDA)")
      ->default_str("cpu");
  sub->add_flag("--accumulate", o.accumulate,
                "one device accumulates the gradients of the ranks' N batches of b per step "
                "(for graphs that fix their batch size) instead of one batch of N*b");
  sub->add_option("--init-checkpoint", o.init_checkpoint,
                  "start both sides from this checkpoint: a `parallax run` safetensors "
                  "checkpoint instead of the init op, or a TF checkpoint passed to both as "
                  "`parallax run --init-checkpoint` (fine-tuning graphs)");
  sub->add_option("--input-dir", o.input_dir,
                  "as `parallax run`: where an in-graph pipeline's missing files are looked up");
  sub->add_option("--input-map", flags->input_map,
                  "as `parallax run`: OLD=NEW replaces a file name prefix the graph holds; "
                  "repeatable");
  sub->add_option("--keep", o.keep_dir, "keep the work directory (job, checkpoints, ranks' "
                                        "output) here; it must not exist");
  sub->add_flag("--json", flags->json, "print the report as JSON");

  return Command{sub, [flags, failed]() -> Status {
    VerifyOptions options = flags->options;
    options.shuffle = !flags->no_shuffle;
    for (const std::string& text : flags->feeds) {
      PX_ASSIGN_OR_RETURN(FeedSpec spec, ParseFeedSpec(text, "--feed"));
      options.feeds.push_back(std::move(spec));
    }
    PX_ASSIGN_OR_RETURN(const StrategyFlags strategy,
                        ParseStrategyFlags(flags->strategy, flags->sparse));
    options.strategy = strategy.preset;
    options.sparse = strategy.sparse;
    PX_ASSIGN_OR_RETURN(options.input_map, ParseInputMap(flags->input_map));
    if (flags->partitions_option->count() > 0) options.partitions = flags->partitions;
    PX_ASSIGN_OR_RETURN(options.gpu, ParseDeviceFlag(flags->device));
    if (options.gpu >= 0 && !options.accumulate) {
      const Status usable = UsableGpu(options.gpu);
      if (!usable.ok()) return usable.WithPrefix(fmt::format("--device {}", flags->device));
    }
    PX_ASSIGN_OR_RETURN(VerifyReport report, Verify(options));
    const std::string out =
        flags->json ? VerifyReportToJson(report) : RenderVerifyReport(report);
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    *failed = !report.pass;
    return Status::Ok();
  }};
}

}  // namespace parallax::cli
