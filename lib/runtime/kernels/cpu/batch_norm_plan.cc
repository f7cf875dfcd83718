#include "lib/runtime/kernels/cpu/batch_norm_plan.h"

#include <algorithm>

#include "lib/runtime/kernels/cpu/nn_kernel_util.h"

namespace parallax::batch_norm_plan {
namespace {

// Channels-last data is summed in at most this many chunks of rows.
constexpr int64_t kMaxChunks = 64;

Status ReadDataFormat(const KernelInit& init, bool* channels_first, std::string* format) {
  PX_RETURN_IF_ERROR(init.GetAttrOr("data_format", format, std::string("NHWC")));
  if (*format == "NHWC" || *format == "NDHWC") {
    *channels_first = false;
  } else if (*format == "NCHW" || *format == "NCDHW") {
    *channels_first = true;
  } else {
    return InvalidArgumentError("attr 'data_format': unknown format '{}'", *format);
  }
  return Status::Ok();
}

StatusOr<Layout> LayoutOf(const Tensor& x, bool channels_first, int input, const char* name) {
  if (x.rank() != 4 && x.rank() != 5) {
    return InvalidArgumentError("input {} ({}) must be 4-D or 5-D, got shape {}", input, name,
                                x.shape().DebugString());
  }
  Layout l;
  const int channel_dim = channels_first ? 1 : x.rank() - 1;
  for (int i = 0; i < x.rank(); ++i) {
    if (i < channel_dim) {
      l.outer *= x.dim(i);
    } else if (i == channel_dim) {
      l.channels = x.dim(i);
    } else {
      l.inner *= x.dim(i);
    }
  }
  return l;
}

Status CheckVector(const Tensor& t, int input, const char* name) {
  if (t.rank() == 1) return Status::Ok();
  return InvalidArgumentError("input {} ({}) must be 1-D, got shape {}", input, name,
                              t.shape().DebugString());
}

// A per-channel input must have one element per channel of x.
Status CheckPerChannel(const Tensor& t, int input, const char* name, const Tensor& x,
                       const Layout& l, const std::string& format, const char* when = "") {
  if (t.num_elements() == l.channels) return Status::Ok();
  return InvalidArgumentError("input {} ({}) has {} elements but x {} ({}) has {} channels{}",
                              input, name, t.num_elements(), x.shape().DebugString(), format,
                              l.channels, when);
}

}  // namespace

int64_t Layout::chunk_rows() const {
  const int64_t per_chunk = channels > 0 ? nn::kMinParallelElements / (8 * channels) : 1;
  return std::max({(outer + kMaxChunks - 1) / kMaxChunks, per_chunk, int64_t{1}});
}

Status Attrs::Read(const KernelInit& init, DataType t) {
  PX_RETURN_IF_ERROR(init.GetAttrOr("epsilon", &epsilon, 1e-4f));
  PX_RETURN_IF_ERROR(init.GetAttrOr("is_training", &is_training, true));
  PX_RETURN_IF_ERROR(ReadDataFormat(init, &channels_first, &format));
  PX_RETURN_IF_ERROR(init.GetAttrOr("exponential_avg_factor", &exponential_avg_factor, 1.0f));
  if (init.FindAttr("U") != nullptr) {
    DataType u;
    PX_RETURN_IF_ERROR(init.GetAttr("U", &u));
    if (u != t) {
      return UnimplementedError("attr 'U': statistics must have T's type {}, got {}",
                                DataTypeShortName(t), DataTypeShortName(u));
    }
  }
  return Status::Ok();
}

StatusOr<Layout> CheckForward(const KernelContext& context, const Attrs& attrs, DataType t) {
  static const char* kNames[] = {"x", "scale", "offset", "mean", "variance"};
  for (int i = 0; i < 5; ++i) PX_RETURN_IF_ERROR(nn::CheckDtype(context, i, kNames[i], t));
  const Tensor& x = context.input(0);
  PX_ASSIGN_OR_RETURN(const Layout l, LayoutOf(x, attrs.channels_first, 0, "x"));
  for (int i = 1; i < 5; ++i) PX_RETURN_IF_ERROR(CheckVector(context.input(i), i, kNames[i]));
  PX_RETURN_IF_ERROR(CheckPerChannel(context.input(1), 1, "scale", x, l, attrs.format));
  PX_RETURN_IF_ERROR(CheckPerChannel(context.input(2), 2, "offset", x, l, attrs.format));
  if (!attrs.is_training || attrs.running_average()) {
    const char* when = attrs.is_training ? " (exponential_avg_factor != 1 reads it)"
                                         : " (is_training=false reads it)";
    PX_RETURN_IF_ERROR(CheckPerChannel(context.input(3), 3, "mean", x, l, attrs.format, when));
    PX_RETURN_IF_ERROR(CheckPerChannel(context.input(4), 4, "variance", x, l, attrs.format, when));
  }
  return l;
}

StatusOr<Layout> CheckGrad(const KernelContext& context, const Attrs& attrs, DataType t) {
  static const char* kNames[] = {"y_backprop", "x", "scale", "reserve_space_1", "reserve_space_2"};
  for (int i = 0; i < 5; ++i) PX_RETURN_IF_ERROR(nn::CheckDtype(context, i, kNames[i], t));
  const Tensor& dy = context.input(0);
  const Tensor& x = context.input(1);
  PX_RETURN_IF_ERROR(LayoutOf(dy, attrs.channels_first, 0, "y_backprop").status());
  PX_ASSIGN_OR_RETURN(const Layout l, LayoutOf(x, attrs.channels_first, 1, "x"));
  for (int i = 2; i < 5; ++i) PX_RETURN_IF_ERROR(CheckVector(context.input(i), i, kNames[i]));
  if (!(dy.shape() == x.shape())) {
    return InvalidArgumentError("input 0 (y_backprop) has shape {} but x has shape {}",
                                dy.shape().DebugString(), x.shape().DebugString());
  }
  for (int i = 2; i < 5; ++i) {
    PX_RETURN_IF_ERROR(CheckPerChannel(context.input(i), i, kNames[i], x, l, attrs.format));
  }
  return l;
}

}  // namespace parallax::batch_norm_plan
