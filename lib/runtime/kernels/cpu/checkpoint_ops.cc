// CPU kernels of the ops a graph's own tf.train.Saver runs: SaveV2, RestoreV2 and
// MergeV2Checkpoints over TensorFlow's V2 checkpoint format
// (lib/runtime/checkpoint/tf_checkpoint.h), and the string ops that name a sharded
// save's files: ShardedFilename, ShardedFilespec, StringJoin.
//
// Semantics (TF's kernels, save_restore_v2_ops.cc and string_join_op.cc):
//  - SaveV2(prefix, tensor_names, shape_and_slices, tensors...) writes one checkpoint
//    at `prefix` (P.index + P.data-00000-of-00001). An empty shape_and_slice saves the
//    tensor whole; "dims slice" saves it as that slice of a tensor of `dims` (partitioned
//    variables). Written atomically: nothing appears at P when it fails.
//  - RestoreV2(prefix, tensor_names, shape_and_slices) outputs one tensor per name, of
//    the dtype the `dtypes` attr gives; a shape_and_slice reads that slice (its dims must
//    be the stored shape). TF's fallback to V1 checkpoints is not supported. When
//    `prefix` has no checkpoint and the run has an --init-checkpoint (the session's
//    input options), the tensors are read from that instead: a fine-tuning graph's
//    checkpoint_initializer restores name the path of the machine it was built on.
//  - MergeV2Checkpoints(checkpoint_prefixes, destination_prefix) joins the shards of a
//    sharded save (MergeTfCheckpoints); with delete_old_dirs their temporary directories
//    are removed when empty.
//  - ShardedFilename(basename, shard, num_shards) = "%s-%05d-of-%05d";
//    ShardedFilespec(basename, num_shards) = "%s-?????-of-%05d".
//  - StringJoin(inputs..., separator): element-wise join; scalar inputs are broadcast,
//    the others must share one shape.
// Errors name the input or tensor at fault; the executor adds the node.
#include <string>
#include <vector>

#include <filesystem>
#include <optional>

#include "lib/ops/dtypes.h"
#include "lib/runtime/checkpoint/named_tensors.h"
#include "lib/runtime/checkpoint/tf_checkpoint.h"
#include "lib/runtime/kernel.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;
constexpr int kSaveFixedInputs = 3;  // prefix, tensor_names, shape_and_slices

// The one string of a scalar (or one-element) string input.
StatusOr<std::string> ScalarString(const Tensor& t, const char* what) {
  if (t.dtype() != tensorflow::DT_STRING || t.num_elements() != 1) {
    return InvalidArgumentError("input {} must be a single string, got {} {}", what,
                                tensorflow::DataType_Name(t.dtype()), t.shape().DebugString());
  }
  return t.flat<std::string>()[0];
}

// A scalar int32 input (TF's legacy scalars: shape [] or [1]).
StatusOr<int32_t> ScalarInt32(const Tensor& t, const char* what) {
  if (t.dtype() != tensorflow::DT_INT32 || t.num_elements() != 1 || t.rank() > 1) {
    return InvalidArgumentError("input {} must be an int32 scalar, got {} {}", what,
                                tensorflow::DataType_Name(t.dtype()), t.shape().DebugString());
  }
  return t.flat<int32_t>()[0];
}

// tensor_names and shape_and_slices: string vectors of one length.
Status CheckNamesAndSlices(const Tensor& names, const Tensor& slices) {
  if (names.dtype() != tensorflow::DT_STRING || slices.dtype() != tensorflow::DT_STRING ||
      names.rank() != 1 || slices.rank() != 1) {
    return InvalidArgumentError("inputs tensor_names and shape_and_slices must be string vectors, "
                                "got shapes {} and {}",
                                names.shape().DebugString(), slices.shape().DebugString());
  }
  if (names.num_elements() != slices.num_elements()) {
    return InvalidArgumentError("tensor_names has {} elements, shape_and_slices {}",
                                names.num_elements(), slices.num_elements());
  }
  return Status::Ok();
}

class SaveV2Op : public OpKernel {
 public:
  SaveV2Op(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(const std::string prefix, ScalarString(context.input(0), "prefix"));
    const Tensor& names = context.input(1);
    const Tensor& specs = context.input(2);
    PX_RETURN_IF_ERROR(CheckNamesAndSlices(names, specs));
    const int64_t n = names.num_elements();
    if (context.num_inputs() != n + kSaveFixedInputs) {
      return InvalidArgumentError("{} tensor names but {} tensors", n,
                                  context.num_inputs() - kSaveFixedInputs);
    }
    TfCheckpointWriter writer(prefix);
    for (int64_t i = 0; i < n; ++i) {
      const std::string& name = names.flat<std::string>()[static_cast<size_t>(i)];
      const std::string& spec = specs.flat<std::string>()[static_cast<size_t>(i)];
      const Tensor& tensor = context.input(static_cast<int>(i) + kSaveFixedInputs);
      if (spec.empty()) {
        PX_RETURN_IF_ERROR(writer.Add(name, tensor));
        continue;
      }
      StatusOr<ShapeAndSlice> parsed = ParseShapeAndSlice(spec);
      if (!parsed.ok()) return parsed.status().WithPrefix(fmt::format("tensor '{}'", name));
      if (!(parsed->slice_shape == tensor.shape())) {
        return InvalidArgumentError("tensor '{}': shape_and_slice '{}' is of shape {}, the tensor "
                                    "to save is {}",
                                    name, spec, parsed->slice_shape.DebugString(),
                                    tensor.shape().DebugString());
      }
      PX_RETURN_IF_ERROR(writer.AddSlice(name, parsed->shape, parsed->slice, tensor));
    }
    return writer.Finish();
  }
};
PX_REGISTER_KERNEL(SaveV2Op, "SaveV2", kCpu);

class RestoreV2Op : public OpKernel {
 public:
  RestoreV2Op(const KernelInit& init, Status* status) {
    *status = init.GetAttr("dtypes", &dtypes_);
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(const std::string prefix, ScalarString(context.input(0), "prefix"));
    const Tensor& names = context.input(1);
    const Tensor& specs = context.input(2);
    PX_RETURN_IF_ERROR(CheckNamesAndSlices(names, specs));
    if (names.num_elements() != static_cast<int64_t>(dtypes_.size())) {
      return InvalidArgumentError("{} tensor names but {} dtypes", names.num_elements(),
                                  dtypes_.size());
    }
    const std::string& fallback = context.session().input().init_checkpoint;
    std::error_code error;
    const bool missing = !std::filesystem::exists(TfCheckpointIndexPath(prefix), error);
    if (!fallback.empty() && missing) return RestoreFrom(fallback, names, specs, context);
    if (missing) {
      return NotFoundError("{}: no such file (to restore from another checkpoint, pass "
                           "--init-checkpoint)",
                           TfCheckpointIndexPath(prefix));
    }
    PX_ASSIGN_OR_RETURN(const TfCheckpointReader reader, TfCheckpointReader::Open(prefix));
    for (size_t i = 0; i < dtypes_.size(); ++i) {
      PX_ASSIGN_OR_RETURN(Tensor value, reader.Restore(names.flat<std::string>()[i],
                                                       specs.flat<std::string>()[i], dtypes_[i]));
      context.set_output(static_cast<int>(i), std::move(value));
    }
    return Status::Ok();
  }

 private:
  // The tensors from the run's --init-checkpoint (TF or safetensors), whole or sliced.
  Status RestoreFrom(const std::string& path, const Tensor& names, const Tensor& specs,
                     KernelContext& context) const {
    PX_ASSIGN_OR_RETURN(std::unique_ptr<NamedTensorReader> reader, OpenNamedTensors(path));
    std::optional<TfCheckpointReader> tf;
    for (size_t i = 0; i < dtypes_.size(); ++i) {
      const std::string& name = names.flat<std::string>()[i];
      const std::string& spec = specs.flat<std::string>()[i];
      if (reader->Find(name) == nullptr) {
        return NotFoundError("--init-checkpoint {}: no tensor '{}' (the graph restores it)", path,
                             name);
      }
      Tensor value;
      if (!spec.empty()) {
        if (reader->location().format != CheckpointFormat::kTensorFlow) {
          return UnimplementedError("--init-checkpoint {}: tensor '{}' is restored as the slice "
                                    "'{}', which needs a TF checkpoint",
                                    path, name, spec);
        }
        if (!tf) {
          PX_ASSIGN_OR_RETURN(TfCheckpointReader opened,
                              TfCheckpointReader::Open(reader->location().path));
          tf.emplace(std::move(opened));
        }
        PX_ASSIGN_OR_RETURN(value, tf->Restore(name, spec, dtypes_[i]));
      } else {
        PX_ASSIGN_OR_RETURN(value, reader->Read(name));
      }
      if (value.dtype() != dtypes_[i]) {
        return InvalidArgumentError("--init-checkpoint {}: tensor '{}' is {}, the graph restores "
                                    "{}",
                                    path, name, DataTypeShortName(value.dtype()),
                                    DataTypeShortName(dtypes_[i]));
      }
      context.set_output(static_cast<int>(i), std::move(value));
    }
    return Status::Ok();
  }

  std::vector<DataType> dtypes_;
};
PX_REGISTER_KERNEL(RestoreV2Op, "RestoreV2", kCpu);

class MergeV2CheckpointsOp : public OpKernel {
 public:
  MergeV2CheckpointsOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("delete_old_dirs", &delete_old_dirs_, true);
    if (status->ok()) *status = init.GetAttrOr("allow_missing_files", &allow_missing_files_, false);
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& prefixes = context.input(0);
    if (prefixes.dtype() != tensorflow::DT_STRING || prefixes.rank() != 1) {
      return InvalidArgumentError("input checkpoint_prefixes must be a string vector, got {}",
                                  prefixes.shape().DebugString());
    }
    if (context.input(1).rank() != 0) {
      return InvalidArgumentError("input destination_prefix must be a scalar, got {}",
                                  context.input(1).shape().DebugString());
    }
    PX_ASSIGN_OR_RETURN(const std::string destination,
                        ScalarString(context.input(1), "destination_prefix"));
    const auto flat = prefixes.flat<std::string>();
    return MergeTfCheckpoints(std::vector<std::string>(flat.begin(), flat.end()), destination,
                              delete_old_dirs_, allow_missing_files_);
  }

 private:
  bool delete_old_dirs_ = true;
  bool allow_missing_files_ = false;
};
PX_REGISTER_KERNEL(MergeV2CheckpointsOp, "MergeV2Checkpoints", kCpu);

class ShardedFilenameOp : public OpKernel {
 public:
  ShardedFilenameOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(const std::string basename, ScalarString(context.input(0), "basename"));
    PX_ASSIGN_OR_RETURN(const int32_t shard, ScalarInt32(context.input(1), "shard"));
    PX_ASSIGN_OR_RETURN(const int32_t num_shards, ScalarInt32(context.input(2), "num_shards"));
    context.set_output(0, Tensor::FromVector<std::string>(
                              {fmt::format("{}-{:05d}-of-{:05d}", basename, shard, num_shards)},
                              TensorShape()));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(ShardedFilenameOp, "ShardedFilename", kCpu);

class ShardedFilespecOp : public OpKernel {
 public:
  ShardedFilespecOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(const std::string basename, ScalarString(context.input(0), "basename"));
    PX_ASSIGN_OR_RETURN(const int32_t num_shards, ScalarInt32(context.input(1), "num_shards"));
    context.set_output(0, Tensor::FromVector<std::string>(
                              {fmt::format("{}-?????-of-{:05d}", basename, num_shards)},
                              TensorShape()));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(ShardedFilespecOp, "ShardedFilespec", kCpu);

class StringJoinOp : public OpKernel {
 public:
  StringJoinOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr<std::string>("separator", &separator_, "");
  }

  Status Compute(KernelContext& context) const override {
    TensorShape shape;  // of the non-scalar inputs; a scalar when all are
    bool any_tensor = false;
    for (int i = 0; i < context.num_inputs(); ++i) {
      const Tensor& input = context.input(i);
      if (input.dtype() != tensorflow::DT_STRING) {
        return InvalidArgumentError("input {} is {}, not a string tensor", i,
                                    tensorflow::DataType_Name(input.dtype()));
      }
      if (input.rank() == 0) continue;
      if (!any_tensor) {
        shape = input.shape();
        any_tensor = true;
      } else if (!(input.shape() == shape)) {
        return InvalidArgumentError("input shapes do not match: {} vs. {} (input {})",
                                    shape.DebugString(), input.shape().DebugString(), i);
      }
    }
    Tensor* output = context.AllocateOutput(0, tensorflow::DT_STRING, shape);
    std::string* out = output->data<std::string>();
    for (int64_t k = 0; k < output->num_elements(); ++k) {
      std::string& joined = out[k];
      for (int i = 0; i < context.num_inputs(); ++i) {
        const Tensor& input = context.input(i);
        if (i > 0) joined += separator_;
        joined += input.flat<std::string>()[input.rank() == 0 ? 0 : static_cast<size_t>(k)];
      }
    }
    return Status::Ok();
  }

 private:
  std::string separator_;
};
PX_REGISTER_KERNEL(StringJoinOp, "StringJoin", kCpu);

}  // namespace
}  // namespace parallax
