// Literal feeds (`--feed NAME=VALUE`): ParseLiteral, then the tensor it gives a feed of
// each dtype family, of unknown shape and of the literal's own shape.
#include "fuzz/fuzz_input.h"
#include "lib/runtime/data/literal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  StatusOr<std::optional<Literal>> literal = ParseLiteral(fuzz::AsText(data, size));
  fuzz::CheckStatus(literal);
  if (!literal.ok() || !literal->has_value()) return 0;
  for (DataType dtype : {tensorflow::DT_FLOAT, tensorflow::DT_DOUBLE, tensorflow::DT_INT32,
                         tensorflow::DT_INT64, tensorflow::DT_UINT8, tensorflow::DT_BOOL,
                         tensorflow::DT_STRING, tensorflow::DT_HALF}) {
    fuzz::CheckStatus(LiteralToTensor(**literal, dtype, std::nullopt, "--feed x"));
    fuzz::CheckStatus(LiteralToTensor(**literal, dtype, (*literal)->dims, "--feed x"));
  }
  return 0;
}
