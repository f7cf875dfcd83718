// Feed columns `--feed NAME=FILE:KEY` reads (record_columns.h): the input as FILE, by
// content a CSV file or a TFRecord file of tf.train.Example records, column or feature
// "x"; and the input as one record's payload (framed with valid CRCs), so that Example
// parsing is reached by inputs a CRC would otherwise stop.
#include "fuzz/fuzz_input.h"
#include "lib/runtime/data/record_columns.h"
#include "lib/runtime/data/tfrecord.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  const std::string_view input = fuzz::AsText(data, size);
  fuzz::CheckStatus(ParseKeyedColumn(std::string(input), "x", "fuzz.data"));
  std::string framed;
  AppendTFRecord(input, &framed);
  fuzz::CheckStatus(ParseKeyedColumn(std::move(framed), "x", "fuzz.tfrecord"));
  return 0;
}
