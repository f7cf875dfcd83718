// CPU kernel of AsString: numbers, bools and strings formatted as strings, as TF's
// tf.strings.as_string (how tf.feature_column.categorical_column_with_hash_bucket turns
// integer ids into the strings it hashes).
//
// Semantics (TF's kernel): each element goes through printf's "%<fill><width>.<precision>
// <conversion>" with
//  - conversion d (signed integers), u (unsigned), and for float/double f, or e with
//    `scientific`, or g with `shortest` (printf's %g: 6 significant digits unless
//    `precision` says otherwise; not the shortest round-trip form);
//  - `width` (-1: none) and `precision` (-1: printf's default); precision, scientific and
//    shortest are errors for non-floating types, and scientific with shortest is one;
//  - `fill` one of "", " ", "+", "-", "0", "#": a printf flag, so "0" pads with zeros,
//    "-" pads on the right, " " and "+" put a space or a plus before positives;
//  - bool gives "true"/"false"; a string is passed through unless `width` pads it.
// Attr errors are reported when the kernel is built, with TF's messages.
#include <cstdio>
#include <string>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;
using tensorflow::DataType;

bool IsFloating(DataType t) { return t == tensorflow::DT_FLOAT || t == tensorflow::DT_DOUBLE; }
bool IsSignedInt(DataType t) {
  return t == tensorflow::DT_INT8 || t == tensorflow::DT_INT16 || t == tensorflow::DT_INT32 ||
         t == tensorflow::DT_INT64;
}
bool IsUnsignedInt(DataType t) {
  return t == tensorflow::DT_UINT8 || t == tensorflow::DT_UINT16 || t == tensorflow::DT_UINT32 ||
         t == tensorflow::DT_UINT64;
}

// printf into a std::string; the values are numbers, so the output is short.
template <typename... Args>
std::string Format(const std::string& format, Args... args) {
  char small[64];
  const int n = std::snprintf(small, sizeof(small), format.c_str(), args...);
  if (n < 0) return std::string();
  if (static_cast<size_t>(n) < sizeof(small)) return std::string(small, static_cast<size_t>(n));
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), format.c_str(), args...);
  out.resize(static_cast<size_t>(n));
  return out;
}

class AsStringOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  AsStringOp(const KernelInit& init, Status* status) {
    std::string fill;
    bool scientific = false;
    bool shortest = false;
    *status = init.GetAttr("T", &dtype_);
    if (status->ok()) *status = init.GetAttrOr("precision", &precision_, int64_t{-1});
    if (status->ok()) *status = init.GetAttrOr("scientific", &scientific, false);
    if (status->ok()) *status = init.GetAttrOr("shortest", &shortest, false);
    if (status->ok()) *status = init.GetAttrOr("width", &width_, int64_t{-1});
    if (status->ok()) *status = init.GetAttrOr("fill", &fill, std::string());
    if (!status->ok()) return;
    const std::string type = DataTypeShortName(dtype_);
    if (dtype_ != tensorflow::DT_STRING && !IsFloating(dtype_)) {
      if (scientific || shortest) {
        *status = InvalidArgumentError(
            "scientific and shortest format not supported for datatype {}", type);
        return;
      }
      if (precision_ >= 0) {
        *status = InvalidArgumentError("precision not supported for datatype {}", type);
        return;
      }
    }
    if (fill.size() > 1) {
      *status = InvalidArgumentError("Fill string must be one or fewer characters");
      return;
    }
    if (scientific && shortest) {
      *status = InvalidArgumentError("Cannot select both scientific and shortest notation");
      return;
    }
    if (!fill.empty() && std::string(" +-0#").find(fill[0]) == std::string::npos) {
      *status = InvalidArgumentError("Fill argument not supported: \"{}\"", fill);
      return;
    }
    if (width_ < 0) width_ = 0;
    // printf's width and precision are ints; larger ones would make absurd strings.
    if (width_ > 1 << 20 || precision_ > 1 << 20) {
      *status = InvalidArgumentError("attr 'width' or 'precision' too large: {}, {}", width_,
                                     precision_);
      return;
    }
    std::string conversion;
    if (dtype_ == tensorflow::DT_STRING) {
      conversion = "s";
    } else if (IsSignedInt(dtype_)) {
      conversion = "lld";
    } else if (IsUnsignedInt(dtype_)) {
      conversion = "llu";
    } else if (IsFloating(dtype_)) {
      conversion = shortest ? "g" : scientific ? "e" : "f";
    } else if (dtype_ != tensorflow::DT_BOOL) {
      *status = InvalidArgumentError("Type not supported: {}", type);
      return;
    }
    format_ = "%" + fill + "*.*" + conversion;
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    if (input.dtype() != dtype_) {
      return InvalidArgumentError("input 0 is {}, attr 'T' says {}",
                                  DataTypeShortName(input.dtype()), DataTypeShortName(dtype_));
    }
    if (dtype_ == tensorflow::DT_STRING && width_ == 0) {
      context.set_output(0, input);
      return Status::Ok();
    }
    Tensor* output = context.AllocateOutput(0, tensorflow::DT_STRING, input.shape());
    std::string* out = output->data<std::string>();
    const int64_t n = input.num_elements();
    const int width = static_cast<int>(width_);
    const int precision = static_cast<int>(precision_);
    switch (dtype_) {
      case tensorflow::DT_BOOL:
        for (int64_t i = 0; i < n; ++i) out[i] = input.data<bool>()[i] ? "true" : "false";
        break;
      case tensorflow::DT_STRING:
        for (int64_t i = 0; i < n; ++i) {
          out[i] = Format(format_, width, precision, input.data<std::string>()[i].c_str());
        }
        break;
      case tensorflow::DT_FLOAT: FormatAll<float, double>(input, width, precision, out); break;
      case tensorflow::DT_DOUBLE: FormatAll<double, double>(input, width, precision, out); break;
      case tensorflow::DT_INT8: FormatAll<int8_t, long long>(input, width, precision, out); break;
      case tensorflow::DT_INT16: FormatAll<int16_t, long long>(input, width, precision, out); break;
      case tensorflow::DT_INT32: FormatAll<int32_t, long long>(input, width, precision, out); break;
      case tensorflow::DT_INT64: FormatAll<int64_t, long long>(input, width, precision, out); break;
      case tensorflow::DT_UINT8:
        FormatAll<uint8_t, unsigned long long>(input, width, precision, out);
        break;
      case tensorflow::DT_UINT16:
        FormatAll<uint16_t, unsigned long long>(input, width, precision, out);
        break;
      case tensorflow::DT_UINT32:
        FormatAll<uint32_t, unsigned long long>(input, width, precision, out);
        break;
      case tensorflow::DT_UINT64:
        FormatAll<uint64_t, unsigned long long>(input, width, precision, out);
        break;
      default:
        return InvalidArgumentError("Cannot encode input of type {}", DataTypeShortName(dtype_));
    }
    return Status::Ok();
  }

 private:
  // Elements of type T passed to printf as P (the type the conversion expects).
  template <typename T, typename P>
  void FormatAll(const Tensor& input, int width, int precision, std::string* out) const {
    // raw_data: Tensor::data<T> knows no uint32/uint64; the buffer holds T elements.
    const T* in = static_cast<const T*>(input.raw_data());
    for (int64_t i = 0; i < input.num_elements(); ++i) {
      out[i] = Format(format_, width, precision, static_cast<P>(in[i]));
    }
  }

  DataType dtype_ = tensorflow::DT_INVALID;
  int64_t precision_ = -1;
  int64_t width_ = -1;
  std::string format_;  // "%<fill>*.*<conversion>"; width and precision are arguments
};
PX_REGISTER_KERNEL(AsStringOp, "AsString", kCpu);

}  // namespace
}  // namespace parallax
