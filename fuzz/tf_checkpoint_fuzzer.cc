// TensorFlow V2 checkpoints: the input's parts (fuzz_input.h SplitParts) are P.index's
// bytes, then the data shards' bytes (a file of the corpus with one part is an index
// alone, its data files missing). The reader opens the index and reads
// every tensor (read_checkpoint.h). Mutations rarely get past the index's block
// checksums; tf_checkpoint_entries_fuzzer.cc reaches the entries.
#include "fuzz/read_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  const std::vector<std::string_view> parts = fuzz::SplitParts(fuzz::AsText(data, size));
  const std::vector<std::string> shards(parts.begin() + 1, parts.end());
  StatusOr<TfCheckpointReader> reader =
      TfCheckpointReader::OpenInMemory("fuzz", parts[0], shards);
  fuzz::CheckStatus(reader);
  if (reader.ok()) fuzz::ReadEveryTensor(*reader);
  return 0;
}
