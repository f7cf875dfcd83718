// `parallax checkpoint ls FILE_OR_DIR [--json]`: the tensors of a checkpoint — name, dtype,
// shape and stored bytes — whatever its format (lib/runtime/checkpoint/named_tensors.h):
// a TensorFlow prefix or its .index/.data file, a directory with a `checkpoint` file, a
// SavedModel directory, a safetensors file or a `parallax run` checkpoint directory.
// Nothing but the index (or header) is read, except for safetensors files, which are read
// whole.
//
// `parallax checkpoint export DIR --format tf|safetensors -o OUT [--step S]`: the variables
// of a `parallax run` checkpoint directory — one process's (DIR/checkpoint-S.safetensors)
// or a job's (DIR/rank-R/..., parameter-server variables reassembled from the ranks' rows,
// job_checkpoint.h) — under the single-device graph's names, as one TensorFlow checkpoint
// (OUT.index + OUT.data-00000-of-00001, for tf.train.Saver().restore(sess, OUT); and a
// `checkpoint` file naming it beside it when there is none) or one safetensors file. The
// newest complete step unless --step. Written atomically.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cmd/parallax/command.h"
#include "lib/base/file.h"
#include "lib/base/json_writer.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/job_checkpoint.h"
#include "lib/runtime/checkpoint/named_tensors.h"
#include "lib/runtime/checkpoint/safetensors.h"
#include "lib/runtime/checkpoint/tf_checkpoint.h"

namespace parallax::cli {
namespace {

Status List(const std::string& path, bool json) {
  PX_ASSIGN_OR_RETURN(const std::unique_ptr<NamedTensorReader> reader, OpenNamedTensors(path));
  const CheckpointLocation& where = reader->location();
  uint64_t total = 0;
  for (const NamedTensorInfo& t : reader->tensors()) total += t.bytes;
  std::string out;
  if (json) {
    JsonWriter w;
    w.BeginObject()
        .Field("path", where.path)
        .Field("format", CheckpointFormatName(where.format))
        .Field("found", where.found);
    w.Key("tensors").BeginArray();
    for (const NamedTensorInfo& t : reader->tensors()) {
      w.BeginObject().Field("name", t.name).Field("dtype", DataTypeShortName(t.dtype));
      w.Key("shape").BeginArray();
      for (int64_t d : t.shape.dims()) w.Int(d);
      w.EndArray();
      w.Field("bytes", static_cast<int64_t>(t.bytes)).EndObject();
    }
    w.EndArray();
    w.Field("total_bytes", static_cast<int64_t>(total));
    w.Key("metadata").BeginObject();
    for (const auto& [key, value] : reader->metadata()) w.Field(key, value);
    w.EndObject().EndObject();
    out = w.str() + "\n";
  } else {
    size_t name_width = 4, dtype_width = 5, shape_width = 5;
    for (const NamedTensorInfo& t : reader->tensors()) {
      name_width = std::max(name_width, t.name.size());
      dtype_width = std::max(dtype_width, DataTypeShortName(t.dtype).size());
      shape_width = std::max(shape_width, t.shape.DebugString().size());
    }
    out = fmt::format("{} checkpoint {}{}\n", CheckpointFormatName(where.format), where.path,
                      where.found.empty() ? "" : " (" + where.found + ")");
    out += fmt::format("{:<{}}  {:<{}}  {:<{}}  {:>12}\n", "NAME", name_width, "DTYPE", dtype_width,
                       "SHAPE", shape_width, "BYTES");
    for (const NamedTensorInfo& t : reader->tensors()) {
      out += fmt::format("{:<{}}  {:<{}}  {:<{}}  {:>12}\n", t.name, name_width,
                         DataTypeShortName(t.dtype), dtype_width, t.shape.DebugString(),
                         shape_width, t.bytes);
    }
    out += fmt::format("{} tensor{}, {}\n", reader->tensors().size(),
                       reader->tensors().size() == 1 ? "" : "s",
                       total < 1024 ? fmt::format("{} bytes", total)
                                    : fmt::format("{} ({} bytes)", HumanBytes(total), total));
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return Status::Ok();
}

struct ExportFlags {
  std::string dir, format = "tf", output;
  int64_t step = -1;
};

Status Export(const ExportFlags& flags) {
  if (flags.format != "tf" && flags.format != "safetensors") {
    return InvalidArgumentError("--format '{}': expected tf or safetensors", flags.format);
  }
  if (flags.output.empty()) return InvalidArgumentError("checkpoint export: -o OUT is required");
  std::error_code error;
  if (!std::filesystem::is_directory(flags.dir, error)) {
    return InvalidArgumentError("{}: not a directory (expected a `parallax run` checkpoint "
                                "directory)",
                                flags.dir);
  }
  std::map<std::string, Tensor> tensors;
  std::string source;
  int64_t step = 0;
  if (std::filesystem::is_directory(std::filesystem::path(flags.dir) / "rank-0", error)) {
    // A job's: every rank file of one step, parameter-server variables reassembled.
    PX_ASSIGN_OR_RETURN(JobCheckpoint job, flags.step >= 0 ? ReadJobCheckpoint(flags.dir, flags.step)
                                                           : ReadJobCheckpoint(flags.dir));
    tensors = std::move(job.variables);
    step = job.step;
    source = fmt::format("{} (step {}, {} ranks, {} reassembled)", flags.dir, job.step,
                         job.job_size, job.partitioned.size());
  } else {
    std::string path;
    if (flags.step >= 0) {
      path = CheckpointPath(flags.dir, flags.step);
    } else {
      PX_ASSIGN_OR_RETURN(std::optional<std::string> latest, LatestCheckpoint(flags.dir));
      if (!latest) return NotFoundError("{}: no checkpoint-<step>.safetensors in it", flags.dir);
      path = *latest;
    }
    PX_ASSIGN_OR_RETURN(SafetensorsContents contents, ReadSafetensors(path));
    if (auto it = contents.metadata.find("step"); it != contents.metadata.end()) {
      step = std::stoll(it->second);
    }
    tensors = std::move(contents.tensors);
    source = path;
  }
  if (flags.format == "tf") {
    PX_RETURN_IF_ERROR(WriteTfCheckpoint(flags.output, tensors));
    // A `checkpoint` file beside it, for tf.train.latest_checkpoint, unless one is there.
    const std::filesystem::path out(flags.output);
    const std::string dir = out.has_parent_path() ? out.parent_path().string() : ".";
    if (!std::filesystem::exists(std::filesystem::path(dir) / "checkpoint", error)) {
      tensorflow::CheckpointState state;
      state.set_model_checkpoint_path(out.filename().string());
      state.add_all_model_checkpoint_paths(out.filename().string());
      PX_RETURN_IF_ERROR(WriteTfCheckpointState(dir, state));
    }
  } else {
    SafetensorsContents out;
    out.tensors = tensors;
    out.metadata = {{"format", std::string(kCheckpointFormat)}, {"step", std::to_string(step)}};
    PX_RETURN_IF_ERROR(WriteSafetensors(flags.output, out));
  }
  std::printf("exported %zu variables of %s to %s (%s)\n", tensors.size(), source.c_str(),
              flags.output.c_str(), flags.format == "tf" ? "TensorFlow checkpoint" : "safetensors");
  return Status::Ok();
}

}  // namespace

Command AddCheckpointCommand(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "checkpoint", "Checkpoints: TensorFlow V2 checkpoints (tf.train.Saver) and safetensors.");
  sub->require_subcommand(1);
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* ls = sub->add_subcommand(
      "ls", "List a checkpoint's tensors (name, dtype, shape, bytes): a TensorFlow prefix, a "
            "directory with a `checkpoint` file, a SavedModel, a safetensors file or a "
            "`parallax run` checkpoint directory.");
  ls->add_option("checkpoint", *path, "FILE_OR_DIR: the checkpoint")->required();
  ls->add_flag("--json", *json, "print JSON instead of a table");
  auto export_flags = std::make_shared<ExportFlags>();
  CLI::App* exp = sub->add_subcommand(
      "export", "Write the variables of a `parallax run` checkpoint directory (one process's, or "
                "a job's with parameter-server shards reassembled) under the single-device "
                "graph's names, as a TensorFlow checkpoint or a safetensors file.");
  exp->add_option("dir", export_flags->dir, "the checkpoint directory (--checkpoint-dir)")->required();
  exp->add_option("--format", export_flags->format, "tf (default) or safetensors");
  exp->add_option("-o,--output", export_flags->output,
                  "OUT: a TF checkpoint prefix (OUT.index, OUT.data-00000-of-00001) or a "
                  ".safetensors file");
  exp->add_option("--step", export_flags->step, "the step to export (default: the newest complete)");
  return Command{sub, [ls, exp, path, json, export_flags]() -> Status {
                   if (ls->parsed()) return List(*path, *json);
                   if (exp->parsed()) return Export(*export_flags);
                   return InternalError("checkpoint: no subcommand");
                 }};
}

}  // namespace parallax::cli
