#include "lib/runtime/tensor.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "lib/ops/dtypes.h"
#include "lib/runtime/buffer_cache.h"

namespace parallax {

// ---- TensorShape ----

int64_t TensorShape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

StatusOr<TensorShape> TensorShape::FromProto(const tensorflow::TensorShapeProto& proto) {
  if (proto.unknown_rank()) return InvalidArgumentError("shape has unknown rank");
  TensorShape shape;
  int64_t elements = 1;
  for (const auto& dim : proto.dim()) {
    if (dim.size() < 0) return InvalidArgumentError("shape has an unknown dimension");
    if (dim.size() > 0 && elements > std::numeric_limits<int64_t>::max() / dim.size()) {
      return InvalidArgumentError("shape has more than 2^63 elements");
    }
    elements *= dim.size();
    shape.AddDim(dim.size());
  }
  return shape;
}

tensorflow::TensorShapeProto TensorShape::ToProto() const {
  tensorflow::TensorShapeProto proto;
  for (int64_t d : dims_) proto.add_dim()->set_size(d);
  return proto;
}

std::string TensorShape::DebugString() const {
  std::string out = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i > 0) out += ",";
    out += std::to_string(dims_[i]);
  }
  return out + "]";
}

// ---- Buffer ----

std::shared_ptr<Buffer> Buffer::Allocate(size_t bytes) {
  std::shared_ptr<Buffer> buffer(new Buffer());
  buffer->size_ = bytes;
  if (bytes > 0) buffer->data_ = BufferCache::Global().Allocate(bytes, &buffer->capacity_);
  return buffer;
}

std::shared_ptr<Buffer> Buffer::AllocateStrings(size_t count) {
  std::shared_ptr<Buffer> buffer = Allocate(count * sizeof(std::string));
  auto* strings = static_cast<std::string*>(buffer->data_);
  for (size_t i = 0; i < count; ++i) new (strings + i) std::string();
  buffer->num_strings_ = count;
  return buffer;
}

std::shared_ptr<Buffer> Buffer::AllocateVariants(size_t count) {
  std::shared_ptr<Buffer> buffer = Allocate(count * sizeof(Variant));
  auto* variants = static_cast<Variant*>(buffer->data_);
  for (size_t i = 0; i < count; ++i) new (variants + i) Variant();
  buffer->num_variants_ = count;
  return buffer;
}

StatusOr<std::shared_ptr<Buffer>> Buffer::AllocateOn(std::shared_ptr<DeviceMemory> memory,
                                                     size_t bytes) {
  std::shared_ptr<Buffer> buffer(new Buffer());
  buffer->size_ = bytes;
  if (bytes > 0) {
    PX_ASSIGN_OR_RETURN(buffer->data_, memory->Allocate(bytes));
  }
  buffer->memory_ = std::move(memory);
  return buffer;
}

Buffer::~Buffer() {
  if (memory_ != nullptr) {
    memory_->Free(data_);
    return;
  }
  auto* strings = static_cast<std::string*>(data_);
  for (size_t i = 0; i < num_strings_; ++i) strings[i].~basic_string();
  auto* variants = static_cast<Variant*>(data_);
  for (size_t i = 0; i < num_variants_; ++i) variants[i].~Variant();
  BufferCache::Global().Free(data_, capacity_);
}

// ---- Tensor ----

namespace {
bool HoldsStrings(DataType dtype) {
  return dtype == tensorflow::DT_STRING || dtype == tensorflow::DT_RESOURCE;
}
bool HoldsVariants(DataType dtype) { return dtype == tensorflow::DT_VARIANT; }
}  // namespace

Tensor::Tensor(DataType dtype, TensorShape shape) : dtype_(dtype), shape_(std::move(shape)) {
  const size_t n = static_cast<size_t>(shape_.num_elements());
  buffer_ = HoldsStrings(dtype)    ? Buffer::AllocateStrings(n)
            : HoldsVariants(dtype) ? Buffer::AllocateVariants(n)
                                   : Buffer::Allocate(n * static_cast<size_t>(DataTypeSize(dtype)));
}

StatusOr<Tensor> Tensor::Allocate(const std::shared_ptr<DeviceMemory>& memory, DataType dtype,
                                  TensorShape shape) {
  if (memory == nullptr) return Tensor(dtype, std::move(shape));
  if (HoldsStrings(dtype) || HoldsVariants(dtype)) {
    return InvalidArgumentError("a {} tensor cannot live in {}'s memory (host only)",
                                DataTypeShortName(dtype), memory->name());
  }
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  PX_ASSIGN_OR_RETURN(t.buffer_, Buffer::AllocateOn(
                                     memory, static_cast<size_t>(t.shape_.num_elements()) *
                                                 static_cast<size_t>(DataTypeSize(dtype))));
  return t;
}

StatusOr<Tensor> Tensor::CopiedTo(const std::shared_ptr<DeviceMemory>& memory) const {
  if (!initialized() || this->memory() == memory.get()) return *this;
  if (memory == nullptr) {  // device -> host
    Tensor host(dtype_, shape_);
    if (bytes() > 0) PX_RETURN_IF_ERROR(this->memory()->CopyToHost(raw_data(), host.raw_data(), bytes()));
    return host;
  }
  PX_ASSIGN_OR_RETURN(Tensor copy, Allocate(memory, dtype_, shape_));
  if (bytes() == 0) return copy;
  if (on_host()) {
    PX_RETURN_IF_ERROR(memory->CopyFromHost(raw_data(), copy.raw_data(), bytes()));
    return copy;
  }
  // Between two devices: through the host (one device per process today).
  PX_ASSIGN_OR_RETURN(Tensor host, CopiedTo(nullptr));
  PX_RETURN_IF_ERROR(memory->CopyFromHost(host.raw_data(), copy.raw_data(), bytes()));
  return copy;
}

Tensor Tensor::VariantScalar(Variant value) {
  Tensor t(tensorflow::DT_VARIANT, TensorShape());
  *t.data<Variant>() = std::move(value);
  return t;
}

Tensor Tensor::ResourceHandle(std::string name) {
  Tensor t(tensorflow::DT_RESOURCE, TensorShape());
  *t.data<std::string>() = std::move(name);
  return t;
}

size_t Tensor::bytes() const {
  if (HoldsStrings(dtype_) || HoldsVariants(dtype_)) return 0;
  return static_cast<size_t>(num_elements()) * static_cast<size_t>(DataTypeSize(dtype_));
}

StatusOr<Tensor> Tensor::Reshaped(TensorShape shape) const {
  if (shape.num_elements() != num_elements()) {
    return InvalidArgumentError("cannot reshape {} elements of shape {} to {}", num_elements(),
                                shape_.DebugString(), shape.DebugString());
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::DeepCopy() const {
  if (!initialized()) return Tensor();
  assert(on_host() && "Tensor::DeepCopy of a tensor in device memory (use CopiedTo)");
  Tensor copy(dtype_, shape_);
  if (HoldsStrings(dtype_)) {
    std::copy(data<std::string>(), data<std::string>() + num_elements(), copy.data<std::string>());
  } else if (HoldsVariants(dtype_)) {
    std::copy(data<Variant>(), data<Variant>() + num_elements(), copy.data<Variant>());
  } else if (bytes() > 0) {
    std::memcpy(copy.raw_data(), raw_data(), bytes());
  }
  return copy;
}

namespace {

// Fills `out` (n elements) from a typed value list: n values copied, fewer values
// repeat the last one (TensorFlow's rule; one value fills the shape), none is zeros.
template <typename Out, typename List>
Status FillFromList(const List& list, int64_t n, Out* out, std::string_view field) {
  const int64_t given = list.size();
  if (given > n) {
    return InvalidArgumentError("{} has {} values for a tensor of {} elements", field, given, n);
  }
  for (int64_t i = 0; i < n; ++i) {
    out[i] = given == 0 ? Out() : static_cast<Out>(list[static_cast<int>(std::min(i, given - 1))]);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Tensor> Tensor::FromProto(const tensorflow::TensorProto& proto) {
  const DataType dtype = proto.dtype();
  if (dtype == tensorflow::DT_INVALID || IsRefType(dtype)) {
    return InvalidArgumentError("tensor has invalid dtype {}", DataTypeShortName(dtype));
  }
  StatusOr<TensorShape> shape_or = TensorShape::FromProto(proto.tensor_shape());
  if (!shape_or.ok()) return shape_or.status().WithPrefix("tensor_shape");
  Tensor t(dtype, *shape_or);
  const int64_t n = t.num_elements();

  if (dtype == tensorflow::DT_STRING) {
    PX_RETURN_IF_ERROR(FillFromList(proto.string_val(), n, t.data<std::string>(), "string_val"));
    return t;
  }
  const int size = DataTypeSize(dtype);
  if (size == 0) {
    return UnimplementedError("tensors of type {} are not supported", DataTypeShortName(dtype));
  }
  if (!proto.tensor_content().empty()) {
    if (proto.tensor_content().size() != t.bytes()) {
      return InvalidArgumentError("tensor_content has {} bytes; shape {} of {} needs {}",
                                  proto.tensor_content().size(), t.shape().DebugString(),
                                  DataTypeShortName(dtype), t.bytes());
    }
    if (t.bytes() > 0) std::memcpy(t.raw_data(), proto.tensor_content().data(), t.bytes());
    return t;
  }
  switch (dtype) {
    case tensorflow::DT_FLOAT:
      // Some writers fill float constants through int_val.
      if (proto.float_val_size() == 0 && proto.int_val_size() > 0) {
        PX_RETURN_IF_ERROR(FillFromList(proto.int_val(), n, t.data<float>(), "int_val"));
      } else {
        PX_RETURN_IF_ERROR(FillFromList(proto.float_val(), n, t.data<float>(), "float_val"));
      }
      break;
    case tensorflow::DT_DOUBLE:
      PX_RETURN_IF_ERROR(FillFromList(proto.double_val(), n, t.data<double>(), "double_val"));
      break;
    case tensorflow::DT_INT32:
      PX_RETURN_IF_ERROR(FillFromList(proto.int_val(), n, t.data<int32_t>(), "int_val"));
      break;
    case tensorflow::DT_INT16:
      PX_RETURN_IF_ERROR(FillFromList(proto.int_val(), n, t.data<int16_t>(), "int_val"));
      break;
    case tensorflow::DT_INT8:
      PX_RETURN_IF_ERROR(FillFromList(proto.int_val(), n, t.data<int8_t>(), "int_val"));
      break;
    case tensorflow::DT_UINT8:
      PX_RETURN_IF_ERROR(FillFromList(proto.int_val(), n, t.data<uint8_t>(), "int_val"));
      break;
    case tensorflow::DT_UINT16:
      PX_RETURN_IF_ERROR(FillFromList(proto.int_val(), n, t.data<uint16_t>(), "int_val"));
      break;
    case tensorflow::DT_INT64:
      PX_RETURN_IF_ERROR(FillFromList(proto.int64_val(), n, t.data<int64_t>(), "int64_val"));
      break;
    case tensorflow::DT_BOOL:
      PX_RETURN_IF_ERROR(FillFromList(proto.bool_val(), n, t.data<bool>(), "bool_val"));
      break;
    case tensorflow::DT_HALF:
    case tensorflow::DT_BFLOAT16:
      PX_RETURN_IF_ERROR(
          FillFromList(proto.half_val(), n, static_cast<uint16_t*>(t.raw_data()), "half_val"));
      break;
    default:
      return UnimplementedError("constants of type {} are not supported", DataTypeShortName(dtype));
  }
  return t;
}

tensorflow::TensorProto Tensor::ToProto() const {
  assert(on_host() && "Tensor::ToProto of a tensor in device memory");
  tensorflow::TensorProto proto;
  proto.set_dtype(dtype_);
  *proto.mutable_tensor_shape() = shape_.ToProto();
  if (HoldsStrings(dtype_)) {
    for (const std::string& s : flat<std::string>()) proto.add_string_val(s);
  } else if (bytes() > 0) {
    proto.set_tensor_content(raw_data(), bytes());
  }
  return proto;
}

namespace {

template <typename T>
void AppendValues(const Tensor& t, int max_values, std::string* out) {
  const auto values = t.flat<T>();
  for (size_t i = 0; i < values.size() && static_cast<int>(i) < max_values; ++i) {
    if (i > 0) *out += ", ";
    if constexpr (std::is_same_v<T, std::string>) {
      *out += "\"" + values[i] + "\"";
    } else if constexpr (std::is_same_v<T, bool>) {
      *out += values[i] ? "true" : "false";
    } else {
      *out += fmt::format("{}", values[i]);
    }
  }
  if (static_cast<int64_t>(values.size()) > max_values) *out += ", ...";
}

}  // namespace

std::string Tensor::DebugString(int max_values) const {
  if (!initialized()) return "<uninitialised>";
  std::string out = DataTypeShortName(dtype_) + shape_.DebugString() + " {";
  if (!on_host()) return out + "in " + memory()->name() + "}";
  switch (dtype_) {
    case tensorflow::DT_FLOAT: AppendValues<float>(*this, max_values, &out); break;
    case tensorflow::DT_DOUBLE: AppendValues<double>(*this, max_values, &out); break;
    case tensorflow::DT_INT32: AppendValues<int32_t>(*this, max_values, &out); break;
    case tensorflow::DT_INT64: AppendValues<int64_t>(*this, max_values, &out); break;
    case tensorflow::DT_UINT8: AppendValues<uint8_t>(*this, max_values, &out); break;
    case tensorflow::DT_BOOL: AppendValues<bool>(*this, max_values, &out); break;
    case tensorflow::DT_STRING: AppendValues<std::string>(*this, max_values, &out); break;
    case tensorflow::DT_RESOURCE: out += "\"" + resource_name() + "\""; break;
    case tensorflow::DT_VARIANT:
      for (int64_t i = 0; i < num_elements() && i < max_values; ++i) {
        const Variant& v = data<Variant>()[i];
        out += (i > 0 ? ", " : "") + (v ? v->TypeName() : std::string("null"));
      }
      break;
    default: out += "..."; break;
  }
  return out + "}";
}

bool TensorsBitEqual(const Tensor& a, const Tensor& b) {
  assert(a.on_host() && b.on_host() && "TensorsBitEqual of tensors in device memory");
  if (a.dtype() != b.dtype() || !(a.shape() == b.shape())) return false;
  if (HoldsStrings(a.dtype())) {
    const auto x = a.flat<std::string>();
    const auto y = b.flat<std::string>();
    return std::equal(x.begin(), x.end(), y.begin());
  }
  if (HoldsVariants(a.dtype())) {
    const auto x = a.flat<Variant>();
    const auto y = b.flat<Variant>();
    return std::equal(x.begin(), x.end(), y.begin());  // the same objects
  }
  return a.bytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

}  // namespace parallax
