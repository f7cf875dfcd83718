// safetensors files: DecodeSafetensors (what ReadSafetensors does with the file's
// bytes); a file that decodes is encoded again and must decode to the same tensors.
#include "fuzz/fuzz_input.h"
#include "lib/runtime/checkpoint/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  StatusOr<SafetensorsContents> contents =
      DecodeSafetensors(fuzz::AsText(data, size), "fuzz.safetensors");
  fuzz::CheckStatus(contents);
  if (!contents.ok()) return 0;
  StatusOr<std::string> encoded = EncodeSafetensors(*contents);
  if (!encoded.ok()) std::abort();  // every dtype a file holds can be written back
  StatusOr<SafetensorsContents> again = DecodeSafetensors(*encoded, "encoded.safetensors");
  if (!again.ok() || again->tensors.size() != contents->tensors.size() ||
      again->metadata != contents->metadata) {
    std::fprintf(stderr, "EncodeSafetensors' output does not decode to the same contents: %s\n",
                 again.status().ToString().c_str());
    std::abort();
  }
  return 0;
}
