// What the TF checkpoint harnesses do with a reader that opened: read every tensor it
// lists whole, then restore each as RestoreV2 does with a shape and slice that takes the
// first half of its first dimension (or its first row).
#ifndef PARALLAX_FUZZ_READ_CHECKPOINT_H_
#define PARALLAX_FUZZ_READ_CHECKPOINT_H_

#include <algorithm>
#include <string>

#include "fuzz/fuzz_input.h"
#include "lib/runtime/checkpoint/tf_checkpoint.h"

namespace parallax::fuzz {

inline void ReadEveryTensor(const TfCheckpointReader& reader) {
  for (const TfCheckpointEntry& entry : reader.entries()) {
    CheckStatus(reader.Read(entry.name));
    if (entry.shape.rank() == 0) continue;
    std::string shape_and_slice;
    for (int64_t dim : entry.shape.dims()) shape_and_slice += std::to_string(dim) + " ";
    shape_and_slice += "0," + std::to_string(std::max<int64_t>(entry.shape.dim(0) / 2, 1));
    for (int d = 1; d < entry.shape.rank(); ++d) shape_and_slice += ":-";
    CheckStatus(reader.Restore(entry.name, shape_and_slice, entry.dtype));
  }
}

}  // namespace parallax::fuzz

#endif  // PARALLAX_FUZZ_READ_CHECKPOINT_H_
