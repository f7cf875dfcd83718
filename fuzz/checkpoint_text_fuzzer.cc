// The small text forms of checkpoints, every input through each: a shape and slice
// ("4 3 0,2:-", RestoreV2's), a tensor slice ("0,2:-"), a job checkpoint's row ranges
// ("0-500,700-1000") and TF's `checkpoint` state file (protobuf text).
#include "fuzz/fuzz_input.h"
#include "lib/runtime/checkpoint/job_checkpoint.h"
#include "lib/runtime/checkpoint/tensor_slice.h"
#include "lib/runtime/checkpoint/tf_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  const std::string_view text = fuzz::AsText(data, size);
  StatusOr<ShapeAndSlice> spec = ParseShapeAndSlice(text);
  fuzz::CheckStatus(spec);
  if (spec.ok()) spec->slice.DebugString();
  StatusOr<TensorSlice> slice = TensorSlice::Parse(text);
  fuzz::CheckStatus(slice);
  if (slice.ok()) {
    // A parsed slice prints back to text that parses to the same slice.
    StatusOr<TensorSlice> again = TensorSlice::Parse(slice->DebugString());
    if (!again.ok() || !(*again == *slice)) std::abort();
  }
  StatusOr<std::vector<RowRange>> ranges = ParseRowRanges(text);
  fuzz::CheckStatus(ranges);
  if (ranges.ok()) {
    StatusOr<std::vector<RowRange>> again = ParseRowRanges(FormatRowRanges(*ranges));
    if (!again.ok() || *again != *ranges) std::abort();
  }
  fuzz::CheckStatus(ParseTfCheckpointState(text, "checkpoint"));
  return 0;
}
