// JSON text (safetensors headers): ParseJson.
#include "fuzz/fuzz_input.h"
#include "lib/runtime/checkpoint/json_value.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  parallax::fuzz::CheckStatus(parallax::ParseJson(parallax::fuzz::AsText(data, size)));
  return 0;
}
