// CPU kernels for the run-time checks that training graphs carry: Assert, CheckNumerics
// and CheckNumericsV2.
//
// Messages are TensorFlow's, word for word, so a failing graph reads the same here as in
// TF (the executor prefixes "node '<name>' (<op>): "):
//  - Assert: "assertion failed: [<data 0>] [<data 1>] ..." where each data tensor is
//    summarised as TF's Tensor::SummarizeValue(summarize) does: at most `summarize`
//    elements (all when negative), space separated, nested "[...]" per dimension above
//    the last, "..." when elements were left out; strings C-escaped without quotes; bools
//    as 1/0; floats in the shortest of %.6g / %.9g (doubles %.15g / %.17g) that reads
//    back exactly.
//  - CheckNumerics: "<message> : Tensor had NaN values" (or "Inf", or "Inf and NaN").
//  - CheckNumericsV2 tells -Inf from +Inf: "-Inf", "+Inf", "NaN", joined as
//    "A and B" or "A, B, and C".
// CheckNumerics passes its input through (the output shares the buffer).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/anomaly.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;

// ---- Assert ----

// TF's FloatToBuffer/DoubleToBuffer: the short form when it round-trips.
std::string FormatFloat(double value, bool is_float) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buffer[64];
  const int short_digits = is_float ? 6 : 15;
  const int long_digits = is_float ? 9 : 17;
  std::snprintf(buffer, sizeof(buffer), "%.*g", short_digits, value);
  const bool exact = is_float ? std::strtof(buffer, nullptr) == static_cast<float>(value)
                              : std::strtod(buffer, nullptr) == value;
  if (!exact) std::snprintf(buffer, sizeof(buffer), "%.*g", long_digits, value);
  return buffer;
}

// absl::Utf8SafeCEscape: C escapes for control characters, quotes and backslashes;
// bytes >= 0x80 pass through.
std::string CEscape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\"': out += "\\\""; break;
      case '\'': out += "\\'"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char octal[8];
          std::snprintf(octal, sizeof(octal), "\\%03o", c);
          out += octal;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

// Element i of `t` as TF's PrintOneElement (print_v2 = false) writes it.
std::string FormatElement(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case tensorflow::DT_FLOAT: return FormatFloat(t.data<float>()[i], true);
    case tensorflow::DT_DOUBLE: return FormatFloat(t.data<double>()[i], false);
    case tensorflow::DT_INT32: return std::to_string(t.data<int32_t>()[i]);
    case tensorflow::DT_INT64: return std::to_string(t.data<int64_t>()[i]);
    case tensorflow::DT_INT16: return std::to_string(t.data<int16_t>()[i]);
    case tensorflow::DT_INT8: return std::to_string(t.data<int8_t>()[i]);
    case tensorflow::DT_UINT8: return std::to_string(t.data<uint8_t>()[i]);
    case tensorflow::DT_UINT16: return std::to_string(t.data<uint16_t>()[i]);
    case tensorflow::DT_BOOL: return t.data<bool>()[i] ? "1" : "0";
    case tensorflow::DT_STRING: return CEscape(t.data<std::string>()[i]);
    default: return "?";
  }
}

// TF's PrintOneDim: nested brackets for every dimension but the last.
void PrintDim(const Tensor& t, int dim, int64_t limit, int64_t* index, std::string* out) {
  if (*index >= limit) return;
  const int64_t count = t.dim(dim);
  if (dim == t.rank() - 1) {
    for (int64_t i = 0; i < count; ++i) {
      if (*index >= limit) {
        if (dim != 0) *out += "...";
        return;
      }
      if (i > 0) *out += " ";
      *out += FormatElement(t, (*index)++);
    }
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    const bool opened = *index < limit;
    if (opened) *out += "[";
    PrintDim(t, dim + 1, limit, index, out);
    if (*index < limit || opened) *out += "]";
  }
}

// TF's Tensor::SummarizeValue(max_entries) with print_v2 = false.
std::string SummarizeValue(const Tensor& t, int64_t max_entries) {
  const int64_t n = t.num_elements();
  if (max_entries < 0) max_entries = n;
  const int64_t limit = std::min(max_entries, n);
  std::string out;
  if (t.rank() == 0) {
    for (int64_t i = 0; i < limit; ++i) {
      if (i > 0) out += " ";
      out += FormatElement(t, i);
    }
  } else {
    int64_t index = 0;
    PrintDim(t, 0, limit, &index, &out);
  }
  if (n > limit) out += "...";
  return out;
}

class AssertOp : public OpKernel {
 public:
  AssertOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("summarize", &summarize_, int64_t{3});
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& condition = context.input(0);
    // TF accepts a "legacy scalar" too: shape [1].
    const bool scalar = condition.rank() == 0 || (condition.rank() == 1 && condition.dim(0) == 1);
    if (!scalar) {
      return InvalidArgumentError("In[0] should be a scalar: {}", condition.shape().DebugString());
    }
    if (condition.dtype() != tensorflow::DT_BOOL) {
      return InvalidArgumentError("input 0 (condition) must be bool, got {}",
                                  DataTypeShortName(condition.dtype()));
    }
    if (condition.data<bool>()[0]) return Status::Ok();
    std::string message = "assertion failed: ";
    for (int i = 1; i < context.num_inputs(); ++i) {
      message += "[" + SummarizeValue(context.input(i), summarize_) + "]";
      if (i + 1 < context.num_inputs()) message += " ";
    }
    return InvalidArgumentError("{}", message);
  }

 private:
  int64_t summarize_ = 3;
};
PX_REGISTER_KERNEL(AssertOp, "Assert", kCpu);

// ---- CheckNumerics ----

using anomaly::AnomalyBits;

// The anomaly bits of the tensor's values, for float, double, half and bfloat16 (the
// 16-bit ones by bit pattern: an all-ones exponent is Inf when the mantissa is 0, else
// NaN).
int AnomaliesOf(const Tensor& t) {
  int bits = 0;
  const int64_t n = t.num_elements();
  switch (t.dtype()) {
    case tensorflow::DT_FLOAT:
      for (float v : t.flat<float>()) bits |= AnomalyBits(v);
      break;
    case tensorflow::DT_DOUBLE:
      for (double v : t.flat<double>()) bits |= AnomalyBits(v);
      break;
    case tensorflow::DT_HALF:
    case tensorflow::DT_BFLOAT16: {
      const bool half = t.dtype() == tensorflow::DT_HALF;
      const uint16_t exponent = half ? 0x7C00 : 0x7F80;
      const uint16_t mantissa = half ? 0x03FF : 0x007F;
      const auto* data = static_cast<const uint16_t*>(t.raw_data());
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t v = data[i];
        if ((v & exponent) != exponent) continue;
        if ((v & mantissa) != 0) {
          bits |= anomaly::kNaN;
        } else {
          bits |= (v & 0x8000) != 0 ? anomaly::kNegativeInf : anomaly::kPositiveInf;
        }
      }
      break;
    }
    default:
      break;
  }
  return bits;
}

template <bool kV2>
class CheckNumericsOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  CheckNumericsOp(const KernelInit& init, Status* status) {
    *status = init.GetAttr("message", &message_);
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    context.set_output(0, input);
    const int bits = AnomaliesOf(input);
    if (bits == 0) return Status::Ok();
    return InvalidArgumentError("{} : Tensor had {} values", message_,
                                anomaly::AnomalyWords(bits, kV2));
  }

 private:
  std::string message_;
};

using CheckNumericsV1 = CheckNumericsOp<false>;
using CheckNumericsV2 = CheckNumericsOp<true>;
PX_REGISTER_KERNEL(CheckNumericsV1, "CheckNumerics", kCpu, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(CheckNumericsV1, "CheckNumerics", kCpu, "T", tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(CheckNumericsV1, "CheckNumerics", kCpu, "T", tensorflow::DT_HALF);
PX_REGISTER_KERNEL(CheckNumericsV1, "CheckNumerics", kCpu, "T", tensorflow::DT_BFLOAT16);
PX_REGISTER_KERNEL(CheckNumericsV2, "CheckNumericsV2", kCpu, "T", tensorflow::DT_FLOAT);
PX_REGISTER_KERNEL(CheckNumericsV2, "CheckNumericsV2", kCpu, "T", tensorflow::DT_DOUBLE);
PX_REGISTER_KERNEL(CheckNumericsV2, "CheckNumericsV2", kCpu, "T", tensorflow::DT_HALF);
PX_REGISTER_KERNEL(CheckNumericsV2, "CheckNumericsV2", kCpu, "T", tensorflow::DT_BFLOAT16);

}  // namespace
}  // namespace parallax
