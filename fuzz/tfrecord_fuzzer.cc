// TFRecord files: every input is read as each compression the reader supports (none,
// ZLIB, GZIP), record by record to the end or the first error, through the smallest
// buffers (64 bytes) so that records and compressed streams cross buffer boundaries.
#include "fuzz/fuzz_input.h"
#include "lib/runtime/data/tfrecord.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  for (TFRecordCompression compression :
       {TFRecordCompression::kNone, TFRecordCompression::kZlib, TFRecordCompression::kGzip}) {
    StatusOr<std::unique_ptr<TFRecordReader>> reader = TFRecordReader::OpenString(
        std::string(fuzz::AsText(data, size)), "fuzz.tfrecord", compression, 64);
    fuzz::CheckStatus(reader);
    if (!reader.ok()) continue;
    std::string record;
    for (;;) {
      StatusOr<bool> more = (*reader)->Next(&record);
      fuzz::CheckStatus(more);
      if (!more.ok() || !*more) break;
    }
  }
  return 0;
}
