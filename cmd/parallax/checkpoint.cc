// `parallax checkpoint ls FILE_OR_DIR [--json]`: the tensors of a checkpoint — name, dtype,
// shape and stored bytes — whatever its format (lib/runtime/checkpoint/named_tensors.h):
// a TensorFlow prefix or its .index/.data file, a directory with a `checkpoint` file, a
// SavedModel directory, a safetensors file or a `parallax run` checkpoint directory.
// Nothing but the index (or header) is read, except for safetensors files, which are read
// whole.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cmd/parallax/command.h"
#include "lib/base/file.h"
#include "lib/base/json_writer.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/checkpoint/named_tensors.h"

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
  return Command{sub, [ls, path, json]() -> Status {
                   if (ls->parsed()) return List(*path, *json);
                   return InternalError("checkpoint: no subcommand");
                 }};
}

}  // namespace parallax::cli
