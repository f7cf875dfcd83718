// Tensor: the runtime's value type — a dtype, a shape and a reference-counted,
// 64-byte-aligned buffer.
//
// Copies of a Tensor share the buffer (cheap, like TensorFlow's); DeepCopy makes an
// independent one. Numeric tensors hold raw little-endian elements in row-major order;
// DT_STRING and DT_RESOURCE tensors hold std::string elements (a resource handle is the
// resource's name); DT_VARIANT tensors hold Variant elements: shared pointers to
// immutable runtime objects (a tf.data dataset, ...). Shapes are fully defined: unknown
// dimensions exist only in graphs.
//
// A numeric tensor may live in a device's memory (device_memory.h: a GPU's) instead of
// the host's: then memory() names it, data() must not be called (host code never
// dereferences device memory; assert in debug builds) and CopiedTo moves the value.
// Strings, resources and variants live on the host only.
#ifndef PARALLAX_LIB_RUNTIME_TENSOR_H_
#define PARALLAX_LIB_RUNTIME_TENSOR_H_

#include <cassert>
#include <complex>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/device_memory.h"
#include "protos/graph.pb.h"

namespace parallax {

using tensorflow::DataType;

class TensorShape {
 public:
  TensorShape() = default;  // a scalar
  TensorShape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit TensorShape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  // Errors for unknown (-1) or negative dims and for element counts that overflow.
  static StatusOr<TensorShape> FromProto(const tensorflow::TensorShapeProto& proto);
  tensorflow::TensorShapeProto ToProto() const;

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[static_cast<size_t>(i)]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t num_elements() const;

  void AddDim(int64_t size) { dims_.push_back(size); }
  void set_dim(int i, int64_t size) { dims_[static_cast<size_t>(i)] = size; }
  void RemoveDim(int i) { dims_.erase(dims_.begin() + i); }
  void InsertDim(int i, int64_t size) { dims_.insert(dims_.begin() + i, size); }

  std::string DebugString() const;  // "[2,3]"; "[]" for a scalar

  friend bool operator==(const TensorShape&, const TensorShape&) = default;

 private:
  std::vector<int64_t> dims_;
};

// Owns one allocation. Numeric buffers are uninitialised; string buffers hold
// default-constructed std::strings and destroy them.
//
// Memory comes from BufferCache::Global() (buffer_cache.h): a caching allocator with
// size classes, bounded, thread-safe, 64-byte aligned. Chosen over tuning glibc
// (mallopt M_MMAP_THRESHOLD / M_TRIM_THRESHOLD) because a training step allocates the
// same large tensors every step, and with plain aligned_alloc each could come back as
// fresh pages (munmap'd or trimmed in between; glibc's thresholds adapt, so whether they
// do depends on the process's history): bench/step_time_bench's MLP batch 256 took ~600
// page faults and ~2.5 ms of system time per 6.5 ms step; with the cache 0 and 0.4 ms.
// mallopt would keep them mapped too, but process-wide, for every arena, without a bound
// or a way to measure it (BufferCache::stats).
class VariantValue;
using Variant = std::shared_ptr<const VariantValue>;

class Buffer {
 public:
  static std::shared_ptr<Buffer> Allocate(size_t bytes);
  static std::shared_ptr<Buffer> AllocateStrings(size_t count);
  static std::shared_ptr<Buffer> AllocateVariants(size_t count);
  // `bytes` of `memory` (a device's); its error when the device has no room.
  static StatusOr<std::shared_ptr<Buffer>> AllocateOn(std::shared_ptr<DeviceMemory> memory,
                                                      size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  DeviceMemory* memory() const { return memory_.get(); }  // nullptr: host memory

 private:
  Buffer() = default;
  void* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;  // the BufferCache size class data_ came from
  size_t num_strings_ = 0;
  size_t num_variants_ = 0;
  std::shared_ptr<DeviceMemory> memory_;
};

// The value of one DT_VARIANT element: an object that flows along edges (a tf.data
// dataset). Immutable once made, so tensors may share it.
class VariantValue {
 public:
  virtual ~VariantValue() = default;
  virtual std::string TypeName() const = 0;  // "Dataset", for messages
};

// C++ type <-> DataType.
template <typename T> struct DataTypeOf;
template <> struct DataTypeOf<float> { static constexpr DataType value = tensorflow::DT_FLOAT; };
template <> struct DataTypeOf<double> { static constexpr DataType value = tensorflow::DT_DOUBLE; };
template <> struct DataTypeOf<int32_t> { static constexpr DataType value = tensorflow::DT_INT32; };
template <> struct DataTypeOf<int64_t> { static constexpr DataType value = tensorflow::DT_INT64; };
template <> struct DataTypeOf<uint8_t> { static constexpr DataType value = tensorflow::DT_UINT8; };
template <> struct DataTypeOf<int8_t> { static constexpr DataType value = tensorflow::DT_INT8; };
template <> struct DataTypeOf<int16_t> { static constexpr DataType value = tensorflow::DT_INT16; };
template <> struct DataTypeOf<uint16_t> { static constexpr DataType value = tensorflow::DT_UINT16; };
template <> struct DataTypeOf<bool> { static constexpr DataType value = tensorflow::DT_BOOL; };
template <> struct DataTypeOf<std::string> { static constexpr DataType value = tensorflow::DT_STRING; };
template <> struct DataTypeOf<Variant> { static constexpr DataType value = tensorflow::DT_VARIANT; };

class Tensor {
 public:
  Tensor() = default;  // uninitialised: dtype DT_INVALID, no buffer
  // Allocates (numeric: uninitialised memory; strings: empty strings).
  Tensor(DataType dtype, TensorShape shape);

  // A numeric tensor in `memory` (nullptr: the host); the device's error when it has no
  // room, InvalidArgument for a string, resource or variant dtype on a device.
  static StatusOr<Tensor> Allocate(const std::shared_ptr<DeviceMemory>& memory, DataType dtype,
                                   TensorShape shape);

  // A scalar holding `value`.
  template <typename T>
  static Tensor Scalar(T value) {
    Tensor t(DataTypeOf<T>::value, TensorShape());
    *t.data<T>() = value;
    return t;
  }
  // A tensor of `shape` filled from `values` (which must have shape.num_elements()).
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values, TensorShape shape) {
    Tensor t(DataTypeOf<T>::value, std::move(shape));
    assert(static_cast<int64_t>(values.size()) == t.num_elements());
    std::copy(values.begin(), values.end(), t.data<T>());
    return t;
  }
  // A DT_RESOURCE scalar naming a resource.
  static Tensor ResourceHandle(std::string name);
  // A DT_VARIANT scalar holding `value`.
  static Tensor VariantScalar(Variant value);

  // From a TensorProto (Const values): tensor_content, typed *_val lists (one value fills
  // the shape), half_val bit patterns. Errors name the field at fault.
  static StatusOr<Tensor> FromProto(const tensorflow::TensorProto& proto);
  tensorflow::TensorProto ToProto() const;

  bool initialized() const { return dtype_ != tensorflow::DT_INVALID; }
  DataType dtype() const { return dtype_; }
  const TensorShape& shape() const { return shape_; }
  int64_t num_elements() const { return shape_.num_elements(); }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_.dim(i); }
  size_t bytes() const;  // of the elements (0 for string and variant tensors)

  // The device memory holding the elements; nullptr on the host.
  DeviceMemory* memory() const { return buffer_ ? buffer_->memory() : nullptr; }
  bool on_host() const { return memory() == nullptr; }
  // The value in `memory` (nullptr: the host): this tensor itself when it is there
  // already, else a copy (ordered on the device's stream).
  StatusOr<Tensor> CopiedTo(const std::shared_ptr<DeviceMemory>& memory) const;

  template <typename T>
  T* data() {
    assert(on_host() && "Tensor::data() of a tensor in device memory");
    assert(DataTypeOf<T>::value == dtype_ || (std::is_same_v<T, std::string> &&
                                               dtype_ == tensorflow::DT_RESOURCE));
    return static_cast<T*>(buffer_ ? buffer_->data() : nullptr);
  }
  template <typename T>
  const T* data() const {
    return const_cast<Tensor*>(this)->data<T>();
  }
  template <typename T>
  std::span<T> flat() {
    return std::span<T>(data<T>(), static_cast<size_t>(num_elements()));
  }
  template <typename T>
  std::span<const T> flat() const {
    return std::span<const T>(data<T>(), static_cast<size_t>(num_elements()));
  }
  // The elements' address, in memory() (a device address for a device tensor).
  void* raw_data() const { return buffer_ ? buffer_->data() : nullptr; }

  // The same buffer seen with another shape of the same number of elements.
  StatusOr<Tensor> Reshaped(TensorShape shape) const;
  Tensor DeepCopy() const;  // host tensors (a device tensor: CopiedTo)
  bool SharesBufferWith(const Tensor& other) const {
    return buffer_ != nullptr && buffer_ == other.buffer_;
  }
  // The resource name held by a DT_RESOURCE scalar.
  const std::string& resource_name() const { return *data<std::string>(); }

  // "float[2,3] {1, 2, 3, 4, 5, 6}", eliding after max_values elements.
  std::string DebugString(int max_values = 8) const;

 private:
  DataType dtype_ = tensorflow::DT_INVALID;
  TensorShape shape_;
  std::shared_ptr<Buffer> buffer_;
};

// Element-wise equality of dtype, shape and bytes (bit-identical floats); host tensors.
bool TensorsBitEqual(const Tensor& a, const Tensor& b);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_TENSOR_H_
