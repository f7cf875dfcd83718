// CPU kernels for TF1 TensorArrays (V3): TensorArrayV3, TensorArrayWriteV3, ReadV3,
// GatherV3, ScatterV3, ConcatV3, SplitV3, SizeV3, CloseV3, TensorArrayGradV3 and
// TensorArrayGradWithShape, with TensorFlow's semantics (core/kernels/tensor_array.h).
//
// Terms:
//  - a TensorArray is a per-step resource (resource.h): TensorArrayV3 makes a new one each
//    time it runs, named after its `tensor_array_name` attr (else its node name), and
//    outputs a DT_RESOURCE scalar naming it. Messages name an array by that name:
//    "TensorArray 'rnn/output_0': ...".
//  - `flow` tensors are float scalars that only order the accesses to one array in the
//    graph; the kernels pass flow_in through to flow_out and never read it.
//  - an element is *written* once a value (or, in a gradient array, a shape standing for
//    zeros) is stored at its index; *read* once a read returned it; *cleared* when that
//    read dropped it (clear_after_read). A written element cannot be written again, and a
//    read one never, except in gradient arrays.
//  - a *gradient array* (TensorArrayGradV3 with attr `source`) holds the gradients of a
//    forward array's elements: one per (forward array, source), made on the first call
//    and returned by every later one (TF's while-loop gradients call it every iteration).
//    It is sized like the forward array at that time (whose size is frozen from then
//    on), knows the shape of each element the forward array had written, and
//    *aggregates*: a second write to an index adds to it. Reading an element nobody wrote
//    gives zeros of its known shape. TensorArrayGradWithShape prepends
//    `shape_to_prepend` to those shapes.
//  - the *element shape* of an array is a partial shape (unknown rank, or dims with
//    unknown sizes): its `element_shape` attr, merged with what Gather's attr says;
//    with `identical_element_shapes` the first write fixes it. Writes must match it.
//    Reading an unwritten element of any array gives zeros when it is fully defined
//    (TF's behaviour), and is an error otherwise.
//
// Copies: writes and reads share the value's buffer (no copy); Gather/Concat copy each
// element once into the output, Scatter/Split copy each row once out of the input. A
// gradient array copies a value only on its second write to an index (the sum).
//
// Devices: the element kernels (Write, Read, Gather, Scatter, Concat, Split) run on the
// GPU too (float and double), the handle, indices and lengths read on the host, so
// a while-loop RNN's elements stay in device memory. An element lives where it was
// written; a kernel brings what it reads to its own device. A gradient array adds on the
// host (the second write to an index: rare).
#include <algorithm>
#include <complex>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/cpu/array_util.h"
#include "lib/runtime/kernels/cpu/nn_kernel_util.h"
#include "lib/runtime/kernels/cpu/on_device.h"
#include "lib/runtime/resource.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using tensorflow::DT_RESOURCE;

// ---- Partial shapes ----

// A shape from an attr: unknown rank, or dims where -1 is an unknown size.
struct PartialShape {
  bool known_rank = false;
  std::vector<int64_t> dims;

  static PartialShape Unknown() { return {}; }
  static PartialShape Of(const TensorShape& shape) { return {true, shape.dims()}; }
  static PartialShape FromProto(const tensorflow::TensorShapeProto* proto) {
    if (proto == nullptr || proto->unknown_rank()) return Unknown();
    PartialShape shape{true, {}};
    for (const auto& dim : proto->dim()) shape.dims.push_back(dim.size() < 0 ? -1 : dim.size());
    return shape;
  }

  bool FullyDefined() const {
    return known_rank && std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
  }
  bool CompatibleWith(const TensorShape& shape) const {
    if (!known_rank) return true;
    if (static_cast<int>(dims.size()) != shape.rank()) return false;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] >= 0 && dims[i] != shape.dim(static_cast<int>(i))) return false;
    }
    return true;
  }
  // The most specific shape both allow; nullopt when they contradict each other.
  std::optional<PartialShape> MergedWith(const PartialShape& other) const {
    if (!known_rank) return other;
    if (!other.known_rank) return *this;
    if (dims.size() != other.dims.size()) return std::nullopt;
    PartialShape merged = *this;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (merged.dims[i] < 0) {
        merged.dims[i] = other.dims[i];
      } else if (other.dims[i] >= 0 && other.dims[i] != merged.dims[i]) {
        return std::nullopt;
      }
    }
    return merged;
  }
  TensorShape AsShape() const { return TensorShape(dims); }  // when FullyDefined()
  std::string DebugString() const {
    if (!known_rank) return "<unknown>";
    std::string out = "[";
    for (size_t i = 0; i < dims.size(); ++i) {
      out += (i ? "," : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
    }
    return out + "]";
  }
};

// ---- Element helpers ----

// Zeros of `shape` (empty strings for string arrays).
Tensor Zeros(DataType dtype, const TensorShape& shape) {
  Tensor t(dtype, shape);
  if (t.bytes() > 0) std::memset(t.raw_data(), 0, t.bytes());
  return t;
}

template <typename T>
void AddInto(const Tensor& a, const Tensor& b, Tensor* sum) {
  const T* x = static_cast<const T*>(a.raw_data());
  const T* y = static_cast<const T*>(b.raw_data());
  T* z = static_cast<T*>(sum->raw_data());
  const int64_t n = sum->num_elements();
  for (int64_t i = 0; i < n; ++i) z[i] = x[i] + y[i];
}

// sum = a + b element-wise (same dtype and shape; sum may alias a). The number types
// TF's gradient arrays aggregate.
Status Add(const Tensor& a, const Tensor& b, Tensor* sum) {
  switch (a.dtype()) {
    case tensorflow::DT_FLOAT:
      AddInto<float>(a, b, sum);
      break;
    case tensorflow::DT_DOUBLE:
      AddInto<double>(a, b, sum);
      break;
    case tensorflow::DT_INT32:
      AddInto<int32_t>(a, b, sum);
      break;
    case tensorflow::DT_INT64:
      AddInto<int64_t>(a, b, sum);
      break;
    case tensorflow::DT_INT16:
      AddInto<int16_t>(a, b, sum);
      break;
    case tensorflow::DT_INT8:
      AddInto<int8_t>(a, b, sum);
      break;
    case tensorflow::DT_UINT8:
      AddInto<uint8_t>(a, b, sum);
      break;
    case tensorflow::DT_UINT16:
      AddInto<uint16_t>(a, b, sum);
      break;
    case tensorflow::DT_COMPLEX64:
      AddInto<std::complex<float>>(a, b, sum);
      break;
    case tensorflow::DT_COMPLEX128:
      AddInto<std::complex<double>>(a, b, sum);
      break;
    default:
      return UnimplementedError("cannot add {} elements", DataTypeShortName(a.dtype()));
  }
  return Status::Ok();
}

// Cuts `value` along dimension 0 into consecutive pieces, piece k lengths[k] rows long
// and shaped shapes[k] (with as many elements): Scatter's rows, Split's pieces. On a
// device with its own memory the pieces are made there, one device copy each.
StatusOr<std::vector<Tensor>> CutRows(KernelContext& context, const Tensor& value,
                                      const std::vector<int64_t>& lengths,
                                      const std::vector<TensorShape>& shapes) {
  const int64_t row = value.dim(0) == 0 ? 0 : value.num_elements() / value.dim(0);
  const std::shared_ptr<DeviceMemory> memory = context.device().memory();
  std::vector<Tensor> pieces;
  std::vector<int64_t> offsets;
  pieces.reserve(lengths.size());
  offsets.reserve(lengths.size());
  int64_t offset = 0;
  for (size_t k = 0; k < lengths.size(); ++k) {
    PX_ASSIGN_OR_RETURN(Tensor piece, Tensor::Allocate(memory, value.dtype(), shapes[k]));
    pieces.push_back(std::move(piece));
    offsets.push_back(offset);
    offset += lengths[k] * row;
  }
  const int64_t n = static_cast<int64_t>(pieces.size());
  if (memory != nullptr) {
    const size_t element = static_cast<size_t>(DataTypeSize(value.dtype()));
    for (int64_t k = 0; k < n; ++k) {
      Tensor& piece = pieces[static_cast<size_t>(k)];
      if (piece.bytes() == 0) continue;
      PX_RETURN_IF_ERROR(memory->CopyOnDevice(
          static_cast<const char*>(value.raw_data()) +
              static_cast<size_t>(offsets[static_cast<size_t>(k)]) * element,
          piece.raw_data(), piece.bytes()));
    }
    return pieces;
  }
  const int64_t per_piece = n == 0 ? 1 : std::max<int64_t>(1, offset / n);
  PX_RETURN_IF_ERROR(cpu_array::VisitElementKind(value.dtype(), [&]<typename U>() {
    const U* src = cpu_array::Elements<U>(value);
    nn::ParallelRange(context, n, std::max<int64_t>(1, nn::kMinParallelElements / per_piece),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t k = begin; k < end; ++k) {
                          Tensor& piece = pieces[static_cast<size_t>(k)];
                          std::copy_n(src + offsets[static_cast<size_t>(k)], piece.num_elements(),
                                      cpu_array::MutableElements<U>(&piece));
                        }
                      });
  }));
  return pieces;
}

// Joins `values` along dimension 0 into `out` (their shapes agree past dimension 0):
// Gather's stacked elements, Concat's pieces. `out` is in the kernel's device's memory;
// values elsewhere are brought there first.
Status JoinRows(KernelContext& context, std::vector<Tensor> values, Tensor* out) {
  const std::shared_ptr<DeviceMemory> memory = context.device().memory();
  for (Tensor& v : values) {
    PX_ASSIGN_OR_RETURN(v, v.CopiedTo(memory));
  }
  std::vector<int64_t> offsets;
  offsets.reserve(values.size());
  int64_t offset = 0;
  for (const Tensor& v : values) {
    offsets.push_back(offset);
    offset += v.num_elements();
  }
  const int64_t n = static_cast<int64_t>(values.size());
  if (memory != nullptr) {
    const size_t element = static_cast<size_t>(DataTypeSize(out->dtype()));
    for (int64_t k = 0; k < n; ++k) {
      const Tensor& v = values[static_cast<size_t>(k)];
      if (v.bytes() == 0) continue;
      PX_RETURN_IF_ERROR(memory->CopyOnDevice(
          v.raw_data(),
          static_cast<char*>(out->raw_data()) +
              static_cast<size_t>(offsets[static_cast<size_t>(k)]) * element,
          v.bytes()));
    }
    return Status::Ok();
  }
  const int64_t per_value = n == 0 ? 1 : std::max<int64_t>(1, offset / n);
  return cpu_array::VisitElementKind(out->dtype(), [&]<typename U>() {
    U* dst = cpu_array::MutableElements<U>(out);
    nn::ParallelRange(context, n, std::max<int64_t>(1, nn::kMinParallelElements / per_value),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t k = begin; k < end; ++k) {
                          const Tensor& v = values[static_cast<size_t>(k)];
                          std::copy_n(cpu_array::Elements<U>(v), v.num_elements(),
                                      dst + offsets[static_cast<size_t>(k)]);
                        }
                      });
  });
}

// ---- The TensorArray resource ----

class TensorArray : public Resource {
 public:
  struct Options {
    std::string name;  // for messages
    DataType dtype = tensorflow::DT_INVALID;
    PartialShape element_shape;
    bool identical_element_shapes = false;
    bool dynamic_size = false;
    bool clear_after_read = true;
    bool is_grad = false;      // writes aggregate; unwritten elements read as zeros
    int64_t marked_size = -1;  // the size after the last Split (-1: none)
  };

  TensorArray(Options options, int64_t size)
      : options_(std::move(options)), elements_(static_cast<size_t>(size)) {}

  std::string TypeName() const override { return "TensorArray"; }
  const std::string& name() const { return options_.name; }
  DataType dtype() const { return options_.dtype; }

  // Writes `values[k]` at `indices[k]` in order (a write with one index is Write).
  Status WriteMany(const std::vector<int64_t>& indices, const std::vector<Tensor>& values) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t k = 0; k < indices.size(); ++k) {
      PX_RETURN_IF_ERROR(LockedWrite(indices[k], values[k]));
    }
    return Status::Ok();
  }

  // The elements at `indices`, in order.
  StatusOr<std::vector<Tensor>> ReadMany(const std::vector<int64_t>& indices) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Tensor> values;
    values.reserve(indices.size());
    for (int64_t index : indices) {
      PX_ASSIGN_OR_RETURN(Tensor value, LockedRead(index));
      values.push_back(std::move(value));
    }
    return values;
  }

  StatusOr<int64_t> Size() const {
    std::lock_guard<std::mutex> lock(mu_);
    PX_RETURN_IF_ERROR(LockedCheckOpen());
    return static_cast<int64_t>(elements_.size());
  }
  // What Concat joins: a gradient array's forward size at its last Split, else the size.
  StatusOr<int64_t> ConcatSize() const {
    std::lock_guard<std::mutex> lock(mu_);
    PX_RETURN_IF_ERROR(LockedCheckOpen());
    if (options_.is_grad && options_.marked_size >= 0) return options_.marked_size;
    return static_cast<int64_t>(elements_.size());
  }
  bool dynamic_size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return options_.dynamic_size;
  }
  void SetMarkedSize(int64_t size) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!options_.is_grad) options_.marked_size = size;
  }
  PartialShape element_shape() const {
    std::lock_guard<std::mutex> lock(mu_);
    return options_.element_shape;
  }

  // Merges `shape` (a Gather's element_shape attr) into the element shape.
  Status MergeElementShape(const PartialShape& shape) {
    std::lock_guard<std::mutex> lock(mu_);
    std::optional<PartialShape> merged = options_.element_shape.MergedWith(shape);
    if (!merged) {
      return InvalidArgumentError(
          "TensorArray '{}': element_shape {} does not match the array's element shape {}",
          options_.name, shape.DebugString(), options_.element_shape.DebugString());
    }
    options_.element_shape = std::move(*merged);
    return Status::Ok();
  }

  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    elements_.clear();
    closed_ = true;
  }

  // The gradient array of this one for `source` (see the header): its resource name,
  // made by `add` on the first call. `prepend` (TensorArrayGradWithShape) is prepended to
  // every element shape.
  StatusOr<std::string> GradientArray(
      const std::string& source, const std::optional<TensorShape>& prepend,
      const std::function<std::string(std::shared_ptr<TensorArray>)>& add) {
    std::lock_guard<std::mutex> lock(mu_);
    PX_RETURN_IF_ERROR(LockedCheckOpen());
    options_.dynamic_size = false;  // the gradient is sized by this array from now on
    if (gradients_disallowed_) {
      return InvalidArgumentError(
          "TensorArray '{}': an index was written more than once (aggregated), so it has no "
          "gradient",
          options_.name);
    }
    auto found = gradients_.find(source);
    if (found != gradients_.end()) return found->second;

    Options grad;
    grad.name = options_.name + "@" + source;
    grad.dtype = options_.dtype;
    grad.identical_element_shapes = options_.identical_element_shapes;
    grad.clear_after_read = true;
    grad.is_grad = true;
    grad.marked_size = options_.marked_size;
    grad.element_shape = options_.element_shape;
    if (prepend) {
      grad.element_shape = PartialShape::Unknown();
      if (options_.element_shape.known_rank) {
        grad.element_shape = PartialShape::Of(*prepend);
        for (int64_t d : options_.element_shape.dims) grad.element_shape.dims.push_back(d);
      }
    }
    auto array =
        std::make_shared<TensorArray>(std::move(grad), static_cast<int64_t>(elements_.size()));
    // The shapes of the elements written here: unwritten gradients read as their zeros.
    for (size_t i = 0; i < elements_.size(); ++i) {
      if (!elements_[i].written) continue;
      Element& e = array->elements_[i];
      e.shape = prepend ? *prepend : TensorShape();
      for (int64_t d : elements_[i].shape.dims()) e.shape.AddDim(d);
      e.has_shape = true;
      e.written = true;
    }
    std::string name = add(std::move(array));
    gradients_.emplace(source, name);
    return name;
  }

 private:
  struct Element {
    Tensor value;  // not initialized: never written, cleared, or zeros of `shape`
    TensorShape shape;
    bool has_shape = false;  // shape is known (written, or copied by GradientArray)
    bool written = false;
    bool read = false;
    bool cleared = false;
    bool local_copy = false;  // value is this array's own sum (may be added to in place)
  };

  Status LockedCheckOpen() const {
    if (closed_) return InvalidArgumentError("TensorArray '{}' has been closed", options_.name);
    return Status::Ok();
  }

  Status LockedWrite(int64_t index, const Tensor& value) {
    PX_RETURN_IF_ERROR(LockedCheckOpen());
    const int64_t size = static_cast<int64_t>(elements_.size());
    if (index < 0 || (!options_.dynamic_size && index >= size)) {
      return InvalidArgumentError(
          "TensorArray '{}': cannot write index {}: the array has size {} and is not dynamically "
          "sized",
          options_.name, index, size);
    }
    if (index >= size) elements_.resize(static_cast<size_t>(index) + 1);
    if (value.dtype() != options_.dtype) {
      return InvalidArgumentError(
          "TensorArray '{}': cannot write a {} value to index {}: the array holds {}",
          options_.name, DataTypeShortName(value.dtype()), index,
          DataTypeShortName(options_.dtype));
    }
    if (!options_.element_shape.CompatibleWith(value.shape())) {
      return InvalidArgumentError(
          "TensorArray '{}': cannot write a value of shape {} to index {}: the element shape is {}",
          options_.name, value.shape().DebugString(), index, options_.element_shape.DebugString());
    }
    if (options_.identical_element_shapes && !options_.element_shape.FullyDefined()) {
      options_.element_shape = PartialShape::Of(value.shape());
    }
    Element& e = elements_[static_cast<size_t>(index)];
    if (e.read) {
      return InvalidArgumentError(
          "TensorArray '{}': cannot write index {}: it has already been read", options_.name,
          index);
    }
    if (!e.written) {
      e.value = value;
      e.shape = value.shape();
      e.has_shape = true;
      e.written = true;
      return Status::Ok();
    }
    if (!options_.is_grad) {
      return InvalidArgumentError("TensorArray '{}': cannot write index {} twice", options_.name,
                                  index);
    }
    // A gradient array: a later write adds to the element.
    if (value.shape() != e.shape) {
      return InvalidArgumentError(
          "TensorArray '{}': cannot add a value of shape {} to index {}, which holds shape {}",
          options_.name, value.shape().DebugString(), index, e.shape.DebugString());
    }
    if (!e.value.initialized() || e.value.num_elements() == 0) {
      e.value = value;  // the element was zeros (a shape only)
      return Status::Ok();
    }
    // The sum is made on the host, whichever device wrote the two.
    PX_ASSIGN_OR_RETURN(const Tensor addend, value.CopiedTo(nullptr));
    if (!e.local_copy || !e.value.on_host()) {
      PX_ASSIGN_OR_RETURN(const Tensor held, e.value.CopiedTo(nullptr));
      Tensor sum(options_.dtype, e.shape);
      PX_RETURN_IF_ERROR(Add(held, addend, &sum));
      e.value = std::move(sum);
      e.local_copy = true;
    } else {
      PX_RETURN_IF_ERROR(Add(e.value, addend, &e.value));
    }
    gradients_disallowed_ = true;
    return Status::Ok();
  }

  StatusOr<Tensor> LockedRead(int64_t index) {
    PX_RETURN_IF_ERROR(LockedCheckOpen());
    const int64_t size = static_cast<int64_t>(elements_.size());
    // A gradient array reads zeros past its end (gradients stopped before they were
    // written); a forward array may not.
    if (index < 0 || (!options_.is_grad && index >= size)) {
      return InvalidArgumentError("TensorArray '{}': cannot read index {}: the array has size {}",
                                  options_.name, index, size);
    }
    if (index >= size || !elements_[static_cast<size_t>(index)].written) {
      // Unwritten: zeros of the element's known shape.
      TensorShape shape;
      if (options_.is_grad && index < size && elements_[static_cast<size_t>(index)].has_shape) {
        shape = elements_[static_cast<size_t>(index)].shape;
      } else if (options_.element_shape.FullyDefined()) {
        shape = options_.element_shape.AsShape();
      } else {
        return InvalidArgumentError(
            "TensorArray '{}': cannot read index {}: it was not written and the element shape {} "
            "is not fully defined",
            options_.name, index, options_.element_shape.DebugString());
      }
      if (index >= size) elements_.resize(static_cast<size_t>(index) + 1);
      Element& e = elements_[static_cast<size_t>(index)];
      e.shape = shape;
      e.has_shape = true;
      e.written = true;
    }
    Element& e = elements_[static_cast<size_t>(index)];
    if (e.cleared) {
      return InvalidArgumentError(
          "TensorArray '{}': cannot read index {} twice: the first read cleared it "
          "(clear_after_read is true)",
          options_.name, index);
    }
    if (!e.value.initialized() || e.value.num_elements() == 0) {
      e.value = Zeros(options_.dtype, e.shape);
    }
    Tensor value = e.value;
    if (options_.clear_after_read) {
      e.value = Tensor();
      e.cleared = true;
    }
    e.read = true;
    return value;
  }

  mutable std::mutex mu_;
  Options options_;
  bool closed_ = false;
  bool gradients_disallowed_ = false;  // an index was aggregated
  std::vector<Element> elements_;
  std::map<std::string, std::string> gradients_;  // source -> gradient array's resource name
};

// ---- Input helpers ----

StatusOr<std::shared_ptr<TensorArray>> GetTensorArray(KernelContext& context) {
  const Tensor& handle = context.input(0);
  if (handle.dtype() != DT_RESOURCE || handle.rank() != 0) {
    return InvalidArgumentError("input 0 (handle) must be a resource scalar, got {} {}",
                                DataTypeShortName(handle.dtype()), handle.shape().DebugString());
  }
  return context.resources().Lookup<TensorArray>(handle.resource_name());
}

// An int32 scalar input (size, index).
StatusOr<int64_t> Int32Scalar(const KernelContext& context, int input, const char* name) {
  const Tensor& t = context.input(input);
  if (t.dtype() != DT_INT32 || t.rank() != 0) {
    return InvalidArgumentError("input {} ({}) must be an int32 scalar, got {} {}", input, name,
                                DataTypeShortName(t.dtype()), t.shape().DebugString());
  }
  return static_cast<int64_t>(t.data<int32_t>()[0]);
}

// An int32 vector input (indices).
StatusOr<std::vector<int64_t>> Int32Vector(const KernelContext& context, int input,
                                           const char* name) {
  const Tensor& t = context.input(input);
  if (t.dtype() != DT_INT32 || t.rank() != 1) {
    return InvalidArgumentError("input {} ({}) must be an int32 vector, got {} {}", input, name,
                                DataTypeShortName(t.dtype()), t.shape().DebugString());
  }
  return std::vector<int64_t>(t.data<int32_t>(), t.data<int32_t>() + t.num_elements());
}

Status CheckArrayDtype(const TensorArray& array, DataType dtype) {
  if (array.dtype() == dtype) return Status::Ok();
  return InvalidArgumentError("TensorArray '{}' holds {}, but the op's dtype is {}", array.name(),
                              DataTypeShortName(array.dtype()), DataTypeShortName(dtype));
}

// The value a Scatter or Split cuts into elements: the array's dtype, at least a vector.
Status CheckValue(const TensorArray& array, const Tensor& value, const char* verb) {
  if (value.dtype() != array.dtype()) {
    return InvalidArgumentError("TensorArray '{}': cannot {} a {} value: the array holds {}",
                                array.name(), verb, DataTypeShortName(value.dtype()),
                                DataTypeShortName(array.dtype()));
  }
  if (value.rank() == 0) {
    return InvalidArgumentError(
        "TensorArray '{}': cannot {} a scalar value (it needs a dimension 0)", array.name(), verb);
  }
  return Status::Ok();
}

Status GetShapeAttr(const KernelInit& init, const char* name, PartialShape* shape) {
  const tensorflow::TensorShapeProto* proto = nullptr;
  PX_RETURN_IF_ERROR(init.GetAttrOr<const tensorflow::TensorShapeProto*>(name, &proto, nullptr));
  *shape = PartialShape::FromProto(proto);
  return Status::Ok();
}

// ---- Creation ----

// TensorArrayV3(size) -> (handle, flow).
class TensorArrayOp : public OpKernel {
 public:
  TensorArrayOp(const KernelInit& init, Status* status) {
    *status = init.GetAttr("dtype", &options_.dtype);
    if (!status->ok()) return;
    *status = GetShapeAttr(init, "element_shape", &options_.element_shape);
    if (!status->ok()) return;
    *status = init.GetAttrOr("dynamic_size", &options_.dynamic_size, false);
    if (!status->ok()) return;
    *status = init.GetAttrOr("clear_after_read", &options_.clear_after_read, true);
    if (!status->ok()) return;
    *status = init.GetAttrOr("identical_element_shapes", &options_.identical_element_shapes, false);
    if (!status->ok()) return;
    *status = init.GetAttrOr<std::string>("tensor_array_name", &options_.name, "");
    if (options_.name.empty()) options_.name = init.node().name();
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(int64_t size, Int32Scalar(context, 0, "size"));
    if (size < 0) return InvalidArgumentError("input 0 (size) must be >= 0, got {}", size);
    auto array = std::make_shared<TensorArray>(options_, size);
    context.set_output(0, Tensor::ResourceHandle(context.AddStepResource(options_.name, array)));
    context.set_output(1, Tensor::Scalar<float>(0.0f));
    return Status::Ok();
  }

 private:
  TensorArray::Options options_;
};
PX_REGISTER_KERNEL(TensorArrayOp, "TensorArrayV3", kCpu);

// TensorArrayGradV3(handle, flow_in) and TensorArrayGradWithShape(handle, flow_in,
// shape_to_prepend) -> (grad_handle, flow_out).
class TensorArrayGradOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  TensorArrayGradOp(const KernelInit& init, Status* status)
      : with_shape_(init.node().op() == "TensorArrayGradWithShape") {
    *status = init.GetAttr("source", &source_);
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<TensorArray> forward, GetTensorArray(context));
    std::optional<TensorShape> prepend;
    if (with_shape_) {
      const Tensor& shape = context.input(2);
      if (shape.dtype() != DT_INT32 || shape.rank() != 1) {
        return InvalidArgumentError("input 2 (shape_to_prepend) must be an int32 vector, got {} {}",
                                    DataTypeShortName(shape.dtype()), shape.shape().DebugString());
      }
      prepend = TensorShape();
      for (int64_t i = 0; i < shape.num_elements(); ++i) {
        const int32_t d = shape.data<int32_t>()[i];
        if (d < 0) {
          return InvalidArgumentError(
              "input 2 (shape_to_prepend) has a negative size {} at index {}", d, i);
        }
        prepend->AddDim(d);
      }
    }
    const std::string base = context.input(0).resource_name() + "@" + source_;
    PX_ASSIGN_OR_RETURN(
        std::string name,
        forward->GradientArray(source_, prepend, [&](std::shared_ptr<TensorArray> grad) {
          return context.AddStepResource(base, std::move(grad));
        }));
    context.set_output(0, Tensor::ResourceHandle(std::move(name)));
    context.set_output(1, context.input(1));
    return Status::Ok();
  }

 private:
  bool with_shape_;
  std::string source_;
};
PX_REGISTER_KERNEL(TensorArrayGradOp, "TensorArrayGradV3", kCpu);
PX_REGISTER_KERNEL(TensorArrayGradOp, "TensorArrayGradWithShape", kCpu);

// ---- Element access ----

// TensorArrayWriteV3(handle, index, value, flow_in) -> flow_out.
class TensorArrayWriteOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  TensorArrayWriteOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(int64_t index, Int32Scalar(context, 1, "index"));
    PX_ASSIGN_OR_RETURN(std::shared_ptr<TensorArray> array, GetTensorArray(context));
    PX_RETURN_IF_ERROR(array->WriteMany({index}, {context.input(2)}));
    context.set_output(0, context.input(3));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(TensorArrayWriteOp, "TensorArrayWriteV3", kCpu);

// TensorArrayReadV3(handle, index, flow_in) -> value.
class TensorArrayReadOp : public OpKernel {
 public:
  TensorArrayReadOp(const KernelInit& init, Status* status) {
    *status = init.GetAttr("dtype", &dtype_);
  }
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(int64_t index, Int32Scalar(context, 1, "index"));
    PX_ASSIGN_OR_RETURN(std::shared_ptr<TensorArray> array, GetTensorArray(context));
    PX_RETURN_IF_ERROR(CheckArrayDtype(*array, dtype_));
    PX_ASSIGN_OR_RETURN(std::vector<Tensor> values, array->ReadMany({index}));
    PX_ASSIGN_OR_RETURN(Tensor value, values[0].CopiedTo(context.device().memory()));
    context.set_output(0, std::move(value));
    return Status::Ok();
  }

 private:
  DataType dtype_ = tensorflow::DT_INVALID;
};
PX_REGISTER_KERNEL(TensorArrayReadOp, "TensorArrayReadV3", kCpu);

// TensorArrayGatherV3(handle, indices, flow_in) -> value: the elements at `indices`
// stacked along a new dimension 0. All must have one shape; with no indices, the
// element shape must be fully defined (value is [0] + it).
class TensorArrayGatherOp : public OpKernel {
 public:
  TensorArrayGatherOp(const KernelInit& init, Status* status) {
    *status = init.GetAttr("dtype", &dtype_);
    if (status->ok()) *status = GetShapeAttr(init, "element_shape", &element_shape_);
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> indices, Int32Vector(context, 1, "indices"));
    PX_ASSIGN_OR_RETURN(std::shared_ptr<TensorArray> array, GetTensorArray(context));
    PX_RETURN_IF_ERROR(CheckArrayDtype(*array, dtype_));
    PX_RETURN_IF_ERROR(array->MergeElementShape(element_shape_));
    const int64_t n = static_cast<int64_t>(indices.size());
    if (n == 0) {
      const PartialShape shape = array->element_shape();
      if (!shape.FullyDefined()) {
        return InvalidArgumentError(
            "TensorArray '{}': gathering no elements needs a fully defined element shape, got {}",
            array->name(), shape.DebugString());
      }
      TensorShape out = shape.AsShape();
      out.InsertDim(0, 0);
      return context.AllocateDeviceOutput(0, dtype_, std::move(out)).status();
    }
    PX_ASSIGN_OR_RETURN(std::vector<Tensor> values, array->ReadMany(indices));
    const TensorShape& first = values[0].shape();
    for (int64_t k = 1; k < n; ++k) {
      if (values[static_cast<size_t>(k)].shape() != first) {
        return InvalidArgumentError(
            "TensorArray '{}': cannot gather elements of different shapes: index {} has shape {}, "
            "index {} has shape {}",
            array->name(), indices[0], first.DebugString(), indices[static_cast<size_t>(k)],
            values[static_cast<size_t>(k)].shape().DebugString());
      }
    }
    TensorShape out_shape = first;
    out_shape.InsertDim(0, n);
    PX_ASSIGN_OR_RETURN(Tensor * out, context.AllocateDeviceOutput(0, dtype_, std::move(out_shape)));
    return JoinRows(context, std::move(values), out);
  }

 private:
  DataType dtype_ = tensorflow::DT_INVALID;
  PartialShape element_shape_;
};
PX_REGISTER_KERNEL(TensorArrayGatherOp, "TensorArrayGatherV3", kCpu);

// TensorArrayScatterV3(handle, indices, value, flow_in) -> flow_out: writes row k of
// `value` at indices[k]. A dynamically sized array grows to fit.
class TensorArrayScatterOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  TensorArrayScatterOp(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::vector<int64_t> indices, Int32Vector(context, 1, "indices"));
    PX_ASSIGN_OR_RETURN(std::shared_ptr<TensorArray> array, GetTensorArray(context));
    const Tensor& value = context.input(2);
    PX_RETURN_IF_ERROR(CheckValue(*array, value, "scatter"));
    const int64_t n = static_cast<int64_t>(indices.size());
    if (n != value.dim(0)) {
      return InvalidArgumentError(
          "input 1 (indices) has {} elements but input 2 (value) has {} rows", n, value.dim(0));
    }
    PX_ASSIGN_OR_RETURN(int64_t size, array->Size());
    const bool dynamic = array->dynamic_size();
    for (int64_t k = 0; k < n; ++k) {
      const int64_t index = indices[static_cast<size_t>(k)];
      if (index < 0 || (!dynamic && index >= size)) {
        return InvalidArgumentError("TensorArray '{}': indices[{}] = {} is not in [0, {})",
                                    array->name(), k, index, size);
      }
    }
    TensorShape row_shape = value.shape();
    row_shape.RemoveDim(0);
    PX_ASSIGN_OR_RETURN(std::vector<Tensor> rows,
                        CutRows(context, value, std::vector<int64_t>(static_cast<size_t>(n), 1),
                                std::vector<TensorShape>(static_cast<size_t>(n), row_shape)));
    PX_RETURN_IF_ERROR(array->WriteMany(indices, rows));
    context.set_output(0, context.input(3));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(TensorArrayScatterOp, "TensorArrayScatterV3", kCpu);

// TensorArrayConcatV3(handle, flow_in) -> (value, lengths): the elements (each at least
// a vector, all of one shape past dimension 0) joined along dimension 0, and their
// dimension-0 sizes. An empty array needs a fully defined element_shape_except0.
class TensorArrayConcatOp : public OpKernel {
 public:
  TensorArrayConcatOp(const KernelInit& init, Status* status) {
    *status = init.GetAttr("dtype", &dtype_);
    if (status->ok()) *status = GetShapeAttr(init, "element_shape_except0", &except0_);
  }

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<TensorArray> array, GetTensorArray(context));
    PX_RETURN_IF_ERROR(CheckArrayDtype(*array, dtype_));
    PX_ASSIGN_OR_RETURN(int64_t n, array->ConcatSize());
    if (n == 0) {
      if (!except0_.FullyDefined()) {
        return InvalidArgumentError(
            "TensorArray '{}': concatenating no elements needs a fully defined "
            "element_shape_except0, got {}",
            array->name(), except0_.DebugString());
      }
      TensorShape out = except0_.AsShape();
      out.InsertDim(0, 0);
      PX_RETURN_IF_ERROR(context.AllocateDeviceOutput(0, dtype_, std::move(out)).status());
      context.AllocateOutput(1, DT_INT64, TensorShape({0}));  // lengths: on the host
      return Status::Ok();
    }
    std::vector<int64_t> indices(static_cast<size_t>(n));
    std::iota(indices.begin(), indices.end(), 0);
    PX_ASSIGN_OR_RETURN(std::vector<Tensor> values, array->ReadMany(indices));
    Tensor* lengths = context.AllocateOutput(1, DT_INT64, TensorShape({n}));
    TensorShape except0;
    int64_t total = 0;
    for (int64_t k = 0; k < n; ++k) {
      const TensorShape& shape = values[static_cast<size_t>(k)].shape();
      if (shape.rank() == 0) {
        return InvalidArgumentError(
            "TensorArray '{}': cannot concatenate scalars (index {}); gather them instead",
            array->name(), k);
      }
      TensorShape rest = shape;
      rest.RemoveDim(0);
      if (k == 0) {
        if (!except0_.CompatibleWith(rest)) {
          return InvalidArgumentError(
              "TensorArray '{}': index 0 has shape {} past dimension 0, but element_shape_except0 "
              "is {}",
              array->name(), rest.DebugString(), except0_.DebugString());
        }
        except0 = rest;
      } else if (rest != except0) {
        return InvalidArgumentError(
            "TensorArray '{}': cannot concatenate elements of different shapes past dimension 0: "
            "index 0 has {}, index {} has {}",
            array->name(), except0.DebugString(), k, rest.DebugString());
      }
      lengths->data<int64_t>()[k] = shape.dim(0);
      total += shape.dim(0);
    }
    TensorShape out_shape = except0;
    out_shape.InsertDim(0, total);
    PX_ASSIGN_OR_RETURN(Tensor * out, context.AllocateDeviceOutput(0, dtype_, std::move(out_shape)));
    PX_RETURN_IF_ERROR(JoinRows(context, std::move(values), out));
    return Status::Ok();
  }

 private:
  DataType dtype_ = tensorflow::DT_INVALID;
  PartialShape except0_;
};
PX_REGISTER_KERNEL(TensorArrayConcatOp, "TensorArrayConcatV3", kCpu);

// TensorArraySplitV3(handle, value, lengths, flow_in) -> flow_out: writes the k-th
// piece of `value` along dimension 0, lengths[k] rows long, at index k. The array must
// have one index per piece (a dynamically sized one grows to that).
class TensorArraySplitOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  TensorArraySplitOp(const KernelInit&, Status*) {}

  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<TensorArray> array, GetTensorArray(context));
    const Tensor& value = context.input(1);
    const Tensor& lengths_in = context.input(2);
    if (lengths_in.dtype() != DT_INT64 || lengths_in.rank() != 1) {
      return InvalidArgumentError("input 2 (lengths) must be an int64 vector, got {} {}",
                                  DataTypeShortName(lengths_in.dtype()),
                                  lengths_in.shape().DebugString());
    }
    PX_RETURN_IF_ERROR(CheckValue(*array, value, "split"));
    const int64_t n = lengths_in.num_elements();
    std::vector<int64_t> lengths(lengths_in.data<int64_t>(), lengths_in.data<int64_t>() + n);
    int64_t total = 0;
    for (int64_t k = 0; k < n; ++k) {
      if (lengths[static_cast<size_t>(k)] < 0) {
        return InvalidArgumentError("input 2 (lengths) has a negative length {} at index {}",
                                    lengths[static_cast<size_t>(k)], k);
      }
      total += lengths[static_cast<size_t>(k)];
    }
    if (total != value.dim(0)) {
      return InvalidArgumentError("input 2 (lengths) sums to {} but input 1 (value) has {} rows",
                                  total, value.dim(0));
    }
    PX_ASSIGN_OR_RETURN(int64_t size, array->Size());
    if (array->dynamic_size() && size < n) size = n;
    if (size != n) {
      return InvalidArgumentError(
          "TensorArray '{}': cannot split into {} pieces: the array has size {} and is not "
          "dynamically sized",
          array->name(), n, size);
    }
    std::vector<TensorShape> shapes(static_cast<size_t>(n), value.shape());
    for (int64_t k = 0; k < n; ++k)
      shapes[static_cast<size_t>(k)].set_dim(0, lengths[static_cast<size_t>(k)]);
    PX_ASSIGN_OR_RETURN(std::vector<Tensor> pieces, CutRows(context, value, lengths, shapes));
    array->SetMarkedSize(n);
    std::vector<int64_t> indices(static_cast<size_t>(n));
    std::iota(indices.begin(), indices.end(), 0);
    PX_RETURN_IF_ERROR(array->WriteMany(indices, pieces));
    context.set_output(0, context.input(3));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(TensorArraySplitOp, "TensorArraySplitV3", kCpu);

// TensorArraySizeV3(handle, flow_in) -> size (int32).
class TensorArraySizeOp : public OpKernel {
 public:
  TensorArraySizeOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<TensorArray> array, GetTensorArray(context));
    PX_ASSIGN_OR_RETURN(int64_t size, array->Size());
    context.set_output(0, Tensor::Scalar<int32_t>(static_cast<int32_t>(size)));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(TensorArraySizeOp, "TensorArraySizeV3", kCpu);

// TensorArrayCloseV3(handle): drops the elements; later uses of the array are errors.
class TensorArrayCloseOp : public OpKernel {
 public:
  TensorArrayCloseOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<TensorArray> array, GetTensorArray(context));
    array->Close();
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(TensorArrayCloseOp, "TensorArrayCloseV3", kCpu);

// The element kernels on the GPU: the handle, indices and lengths on the host. A flow is
// never read, only passed on: it stays where it is (in a loop, on the device with the
// loop's other float values, so an iteration waits on no copy of it).
using TensorArrayWriteOnDevice = OnDevice<TensorArrayWriteOp, 0, 1>;
using TensorArrayScatterOnDevice = OnDevice<TensorArrayScatterOp, 0, 1>;
using TensorArraySplitOnDevice = OnDevice<TensorArraySplitOp, 0, 2>;
using TensorArrayReadOnDevice = OnDevice<TensorArrayReadOp, 0, 1>;
using TensorArrayGatherOnDevice = OnDevice<TensorArrayGatherOp, 0, 1>;
using TensorArrayConcatOnDevice = OnDevice<TensorArrayConcatOp, 0>;
PX_REGISTER_FLOAT_ON_DEVICE(TensorArrayWriteOnDevice, "TensorArrayWriteV3");
PX_REGISTER_FLOAT_ON_DEVICE(TensorArrayScatterOnDevice, "TensorArrayScatterV3");
PX_REGISTER_FLOAT_ON_DEVICE(TensorArraySplitOnDevice, "TensorArraySplitV3");
#define PX_REGISTER_DTYPE_ON_DEVICE(kernel, op)                                      \
  PX_REGISTER_KERNEL(kernel, op, DeviceType::kCuda, "dtype", tensorflow::DT_FLOAT); \
  PX_REGISTER_KERNEL(kernel, op, DeviceType::kCuda, "dtype", tensorflow::DT_DOUBLE)
PX_REGISTER_DTYPE_ON_DEVICE(TensorArrayReadOnDevice, "TensorArrayReadV3");
PX_REGISTER_DTYPE_ON_DEVICE(TensorArrayGatherOnDevice, "TensorArrayGatherV3");
PX_REGISTER_DTYPE_ON_DEVICE(TensorArrayConcatOnDevice, "TensorArrayConcatV3");
#undef PX_REGISTER_DTYPE_ON_DEVICE

}  // namespace
}  // namespace parallax
