// Slices of tensors as TensorFlow's checkpoints name them (TF's TensorSlice): how a
// partitioned variable is saved piece by piece and how RestoreV2 reads part of a tensor.
//
// Terms:
//  - a *slice* of a tensor of rank R has R *extents*, one per dimension: the rows
//    [start, start + length) of that dimension, or the whole dimension (a *full* extent,
//    length kFullExtent). A slice is *full* when every extent is.
//  - text form (TF's TensorSlice::DebugString, SaveV2/RestoreV2's shape_and_slices):
//    the extents joined by ':', each "start,length" or "-": "0,2:-" is the first two
//    rows of a matrix. A rank-0 slice is "".
//  - a *shape and slice* is the full tensor's dims then its slice, separated by spaces:
//    "4 3 0,2:-" (2 rows of a [4,3] tensor). It has at least one dim.
//  - a tensor saved as slices has, in a checkpoint index, one entry under its own name
//    (dtype, full shape, the list of slices; no bytes) and one entry per slice under the
//    key EncodeTensorNameSlice(name, slice), which holds that slice's elements.
#ifndef PARALLAX_LIB_RUNTIME_CHECKPOINT_TENSOR_SLICE_H_
#define PARALLAX_LIB_RUNTIME_CHECKPOINT_TENSOR_SLICE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/tensor.h"
#include "protos/tensor_bundle.pb.h"

namespace parallax {

class TensorSlice {
 public:
  static constexpr int64_t kFullExtent = -1;

  TensorSlice() = default;  // rank 0
  static TensorSlice Full(int rank);
  // "0,2:-". Errors quote the text: an extent that is neither "-" nor two integers, a
  // negative start, a length below 1.
  static StatusOr<TensorSlice> Parse(std::string_view text);
  // A checkpoint's TensorSliceProto (an extent without `length` is full). Errors: a
  // negative start or a length below 1.
  static StatusOr<TensorSlice> FromProto(const tensorflow::TensorSliceProto& proto);
  // Full extents are written without fields, as TF writes them.
  tensorflow::TensorSliceProto ToProto() const;

  void AddExtent(int64_t start, int64_t length);  // length kFullExtent: the whole dim
  int rank() const { return static_cast<int>(starts_.size()); }
  int64_t start(int d) const { return starts_[static_cast<size_t>(d)]; }
  int64_t length(int d) const { return lengths_[static_cast<size_t>(d)]; }
  bool IsFullAt(int d) const { return length(d) == kFullExtent; }
  bool IsFull() const;
  // Whether the slice covers all of `shape` (full, or extents that span every dim).
  bool Covers(const TensorShape& shape) const;

  // The extent of dimension d of a tensor of `shape` as [begin, end).
  int64_t Begin(int d) const { return IsFullAt(d) ? 0 : start(d); }
  int64_t End(int d, const TensorShape& shape) const {
    return IsFullAt(d) ? shape.dim(d) : start(d) + length(d);
  }

  // The shape of the slice of a tensor of `shape`. Errors: another rank, an extent past
  // its dimension's size.
  StatusOr<TensorShape> SliceShape(const TensorShape& shape) const;

  std::string DebugString() const;  // "0,2:-"

  friend bool operator==(const TensorSlice&, const TensorSlice&) = default;

 private:
  std::vector<int64_t> starts_;
  std::vector<int64_t> lengths_;
};

struct ShapeAndSlice {
  TensorShape shape;        // of the full tensor
  TensorSlice slice;
  TensorShape slice_shape;  // of the slice
};

// "4 3 0,2:-". Errors quote the text: fewer than two words, a dim that is not a
// non-negative integer, a bad slice, a slice of another rank or outside the shape.
StatusOr<ShapeAndSlice> ParseShapeAndSlice(std::string_view text);

// The index key of a slice's own entry (TF's checkpoint::EncodeTensorNameSlice, in
// TF's OrderedCode): the number 0, the name, the rank, then per dimension the start and
// the length (0 and -1 for a full extent) as order-preserving signed numbers.
std::string EncodeTensorNameSlice(std::string_view name, const TensorSlice& slice);

// OrderedCode's encodings, exposed for tests.
void AppendOrderedNumIncreasing(std::string* out, uint64_t value);
void AppendOrderedString(std::string* out, std::string_view value);
void AppendOrderedSignedNumIncreasing(std::string* out, int64_t value);

// The part of a tensor of `shape` that slices a and b share; nullopt when they do not
// overlap. Both have the rank of `shape` and lie inside it.
std::optional<TensorSlice> IntersectSlices(const TensorSlice& a, const TensorSlice& b,
                                           const TensorShape& shape);

// Copies the elements of a tensor of `shape` that lie in both src_slice and dst_slice
// from `src` (holding exactly src_slice's elements, row-major) into `dst` (holding
// dst_slice's). Numeric dtypes (any fixed element size) and strings; src and dst share
// the dtype.
void CopySliceIntersection(const TensorShape& shape, const TensorSlice& src_slice,
                           const Tensor& src, const TensorSlice& dst_slice, Tensor* dst);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_CHECKPOINT_TENSOR_SLICE_H_
