// CPU kernels for string tensors: Substr, Equal/NotEqual on strings (the numeric kernels
// live in cwise_ops.cc) and the hash buckets StringToHashBucketFast, StringToHashBucketStrong
// and StringToHashBucket.
//
// Semantics (TF's op documentation):
//  - Substr(input, pos, len): pos and len have the same shape and broadcast against
//    input (NumPy rules; TF documents up to two dimensions, any rank works here). A
//    negative pos counts from the end; pos must land in [0, size] after that, else
//    InvalidArgument naming pos, the string and the flat index. A negative len, or one
//    past the end, takes as much as there is. unit 'BYTE' counts bytes, 'UTF8_CHAR'
//    counts UTF-8 characters (an invalid UTF-8 input is an error).
//  - Equal/NotEqual broadcast; with incompatible_shape_error=false, shapes that do not
//    broadcast give a scalar false (Equal) / true (NotEqual), as cwise_ops does.
//  - StringToHashBucketFast: Fingerprint64(s) mod num_buckets (FarmHash, TF's function),
//    so bucket ids match TF's for the same strings. StringToHashBucketStrong: SipHash-2-4
//    keyed by the two ints of attr `key` (TF's StrongKeyedHash) mod num_buckets.
//    StringToHashBucket (deprecated in TF): TF's legacy Hash64 mod num_buckets. The
//    hashes are lib/base/tf_hash.h; every one is checked there against published values.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "lib/base/tf_hash.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;

// NumPy broadcasting of a few shapes: the output shape, and for each input the element
// stride per output dim (0 where the input is broadcast). Strings are not hot, so the
// kernels walk the output with an index vector instead of cwise_util's runs.
struct Broadcast {
  TensorShape shape;
  std::vector<std::vector<int64_t>> strides;  // [input][output dim]

  // Flat offset of output element `flat` in input k.
  int64_t Offset(int k, int64_t flat) const {
    int64_t offset = 0;
    for (int d = shape.rank() - 1; d >= 0; --d) {
      const int64_t size = shape.dim(d);
      offset += (flat % size) * strides[static_cast<size_t>(k)][static_cast<size_t>(d)];
      flat /= size;
    }
    return offset;
  }
};

// nullopt-like: returns false when the shapes do not broadcast.
bool PlanBroadcast(const std::vector<const TensorShape*>& shapes, Broadcast* plan) {
  int rank = 0;
  for (const TensorShape* s : shapes) rank = std::max(rank, s->rank());
  std::vector<int64_t> out(static_cast<size_t>(rank), 1);
  for (const TensorShape* s : shapes) {
    for (int i = 0; i < s->rank(); ++i) {
      const size_t d = static_cast<size_t>(rank - s->rank() + i);
      const int64_t dim = s->dim(i);
      if (dim == 1) continue;
      if (out[d] == 1) {
        out[d] = dim;
      } else if (out[d] != dim) {
        return false;
      }
    }
  }
  plan->shape = TensorShape(out);
  plan->strides.clear();
  for (const TensorShape* s : shapes) {
    std::vector<int64_t> strides(static_cast<size_t>(rank), 0);
    int64_t step = 1;
    for (int i = s->rank() - 1; i >= 0; --i) {
      const size_t d = static_cast<size_t>(rank - s->rank() + i);
      if (s->dim(i) != 1) strides[d] = step;
      step *= s->dim(i);
    }
    plan->strides.push_back(std::move(strides));
  }
  return true;
}

// ---- Substr ----

// Byte offset of UTF-8 character `chars` counted from `from` (at most s.size()); -1 for
// an invalid lead byte.
int64_t Utf8Advance(const std::string& s, int64_t from, int64_t chars) {
  int64_t at = from;
  const int64_t size = static_cast<int64_t>(s.size());
  for (int64_t c = 0; c < chars && at < size; ++c) {
    const unsigned char lead = static_cast<unsigned char>(s[static_cast<size_t>(at)]);
    const int length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3
                                       : (lead >> 3) == 0x1E ? 4 : 0;
    if (length == 0) return -1;
    at += length;
  }
  return std::min(at, size);
}

int64_t Utf8Length(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

template <typename T>
class SubstrOp : public OpKernel {
 public:
  SubstrOp(const KernelInit& init, Status* status) {
    std::string unit;
    *status = init.GetAttrOr("unit", &unit, std::string("BYTE"));
    if (!status->ok()) return;
    if (unit != "BYTE" && unit != "UTF8_CHAR") {
      *status = InvalidArgumentError("attr 'unit' must be 'BYTE' or 'UTF8_CHAR', got '{}'", unit);
    }
    utf8_ = unit == "UTF8_CHAR";
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const Tensor& pos = context.input(1);
    const Tensor& len = context.input(2);
    if (!(pos.shape() == len.shape())) {
      return InvalidArgumentError("pos and len should have the same shape, got: {} vs. {}",
                                  pos.shape().DebugString(), len.shape().DebugString());
    }
    Broadcast plan;
    if (!PlanBroadcast({&input.shape(), &pos.shape()}, &plan)) {
      return InvalidArgumentError("input and pos do not broadcast: {} vs. {}",
                                  input.shape().DebugString(), pos.shape().DebugString());
    }
    Tensor* out = context.AllocateOutput(0, tensorflow::DT_STRING, plan.shape);
    const std::string* in = input.data<std::string>();
    std::string* y = out->data<std::string>();
    for (int64_t i = 0; i < out->num_elements(); ++i) {
      const std::string& s = in[plan.Offset(0, i)];
      const int64_t offset = plan.Offset(1, i);
      const int64_t p = static_cast<int64_t>(pos.data<T>()[offset]);
      const int64_t l = static_cast<int64_t>(len.data<T>()[offset]);
      const int64_t size = utf8_ ? Utf8Length(s) : static_cast<int64_t>(s.size());
      const int64_t start = p < 0 ? p + size : p;
      if (start < 0 || start > size) {
        return InvalidArgumentError("pos {} out of range for string b'{}' at index {}", p, s, i);
      }
      const int64_t count = l < 0 ? size - start : std::min(l, size - start);
      if (!utf8_) {
        y[i] = s.substr(static_cast<size_t>(start), static_cast<size_t>(count));
        continue;
      }
      const int64_t begin = Utf8Advance(s, 0, start);
      const int64_t end = begin < 0 ? -1 : Utf8Advance(s, begin, count);
      if (begin < 0 || end < 0) {
        return InvalidArgumentError("invalid UTF-8 in string at index {}", i);
      }
      y[i] = s.substr(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
    }
    return Status::Ok();
  }

 private:
  bool utf8_ = false;
};
PX_REGISTER_KERNEL(SubstrOp<int32_t>, "Substr", kCpu, "T", tensorflow::DT_INT32);
PX_REGISTER_KERNEL(SubstrOp<int64_t>, "Substr", kCpu, "T", tensorflow::DT_INT64);

// ---- Equal / NotEqual on strings ----

template <bool kEqual>
class StringEqualOp : public OpKernel {
 public:
  StringEqualOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("incompatible_shape_error", &incompatible_shape_error_, true);
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& y = context.input(1);
    Broadcast plan;
    if (!PlanBroadcast({&x.shape(), &y.shape()}, &plan)) {
      if (!incompatible_shape_error_) {
        context.set_output(0, Tensor::Scalar<bool>(!kEqual));
        return Status::Ok();
      }
      return InvalidArgumentError("incompatible shapes: {} vs. {}", x.shape().DebugString(),
                                  y.shape().DebugString());
    }
    Tensor* out = context.AllocateOutput(0, tensorflow::DT_BOOL, plan.shape);
    const std::string* a = x.data<std::string>();
    const std::string* b = y.data<std::string>();
    bool* z = out->data<bool>();
    for (int64_t i = 0; i < out->num_elements(); ++i) {
      z[i] = (a[plan.Offset(0, i)] == b[plan.Offset(1, i)]) == kEqual;
    }
    return Status::Ok();
  }

 private:
  bool incompatible_shape_error_ = true;
};
PX_REGISTER_KERNEL(StringEqualOp<true>, "Equal", kCpu, "T", tensorflow::DT_STRING);
PX_REGISTER_KERNEL(StringEqualOp<false>, "NotEqual", kCpu, "T", tensorflow::DT_STRING);

// ---- StringToHashBucketFast / Strong / legacy ----

enum class BucketHash { kFast, kStrong, kLegacy };

template <BucketHash kHash>
class StringToHashBucketOp : public OpKernel {
 public:
  StringToHashBucketOp(const KernelInit& init, Status* status) {
    *status = init.GetAttr("num_buckets", &num_buckets_);
    if (status->ok() && num_buckets_ < 1) {
      *status = InvalidArgumentError("attr 'num_buckets' must be >= 1, got {}", num_buckets_);
    }
    if (!status->ok() || kHash != BucketHash::kStrong) return;
    std::vector<int64_t> key;
    *status = init.GetAttr("key", &key);
    if (status->ok() && key.size() != 2) {
      *status = InvalidArgumentError("attr 'key' must have 2 elements, got {}", key.size());
    }
    if (!status->ok()) return;
    key_ = {static_cast<uint64_t>(key[0]), static_cast<uint64_t>(key[1])};
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    if (input.dtype() != tensorflow::DT_STRING) {
      return InvalidArgumentError("input 0 must be string, got {}",
                                  DataTypeShortName(input.dtype()));
    }
    Tensor* out = context.AllocateOutput(0, tensorflow::DT_INT64, input.shape());
    const std::string* in = input.data<std::string>();
    int64_t* y = out->data<int64_t>();
    const uint64_t buckets = static_cast<uint64_t>(num_buckets_);
    for (int64_t i = 0; i < input.num_elements(); ++i) {
      y[i] = static_cast<int64_t>(Hash(in[i]) % buckets);
    }
    return Status::Ok();
  }

 private:
  uint64_t Hash(const std::string& s) const {
    switch (kHash) {
      case BucketHash::kFast: return tf_hash::Fingerprint64(s);
      case BucketHash::kStrong: return tf_hash::StrongKeyedHash(key_, s);
      case BucketHash::kLegacy: return tf_hash::LegacyHash64(s);
    }
    return 0;
  }

  int64_t num_buckets_ = 1;
  std::array<uint64_t, 2> key_ = {0, 0};
};
using StringToHashBucketFastOp = StringToHashBucketOp<BucketHash::kFast>;
using StringToHashBucketStrongOp = StringToHashBucketOp<BucketHash::kStrong>;
using StringToHashBucketLegacyOp = StringToHashBucketOp<BucketHash::kLegacy>;
PX_REGISTER_KERNEL(StringToHashBucketFastOp, "StringToHashBucketFast", kCpu);
PX_REGISTER_KERNEL(StringToHashBucketStrongOp, "StringToHashBucketStrong", kCpu);
PX_REGISTER_KERNEL(StringToHashBucketLegacyOp, "StringToHashBucket", kCpu);

}  // namespace
}  // namespace parallax
