// NumPy .npy files: ParseNpy; an array that parses is encoded again and must parse to
// the same shape.
#include "fuzz/fuzz_input.h"
#include "lib/runtime/data/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  StatusOr<Tensor> tensor = ParseNpy(fuzz::AsText(data, size), "fuzz.npy");
  fuzz::CheckStatus(tensor);
  if (!tensor.ok()) return 0;
  StatusOr<std::string> encoded = EncodeNpy(*tensor);
  if (!encoded.ok()) std::abort();  // every dtype a file holds can be written back
  StatusOr<Tensor> again = ParseNpy(*encoded, "encoded.npy");
  if (!again.ok() || !(again->shape() == tensor->shape())) std::abort();
  return 0;
}
