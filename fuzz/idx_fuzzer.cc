// IDX files (MNIST): what ReadIdx does with a file's bytes: gunzip when they start with
// gzip's magic, then ParseIdx.
#include "fuzz/fuzz_input.h"
#include "lib/runtime/data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  const std::string_view input = fuzz::AsText(data, size);
  if (IsGzip(input)) {
    StatusOr<std::string> plain = Gunzip(input, "fuzz.idx.gz");
    fuzz::CheckStatus(plain);
    if (plain.ok()) fuzz::CheckStatus(ParseIdx(*plain, "fuzz.idx.gz"));
    return 0;
  }
  fuzz::CheckStatus(ParseIdx(input, "fuzz.idx"));
  return 0;
}
