// TensorBoard event files: EventReader over the input as a file, every event to the end
// or the first error; and the input as one record's payload (framed with valid CRCs),
// so that Event parsing is reached by inputs a CRC would otherwise stop.
#include "fuzz/fuzz_input.h"
#include "lib/runtime/summary/event_file.h"

namespace {

void ReadEvents(std::string contents) {
  using namespace parallax;
  StatusOr<std::unique_ptr<EventReader>> reader =
      EventReader::OpenString(std::move(contents), "events.out.tfevents.fuzz");
  fuzz::CheckStatus(reader);
  if (!reader.ok()) return;
  tensorflow::Event event;
  for (;;) {
    StatusOr<bool> more = (*reader)->Next(&event);
    fuzz::CheckStatus(more);
    if (!more.ok() || !*more) return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = parallax::fuzz::AsText(data, size);
  ReadEvents(std::string(input));
  std::string framed;
  parallax::AppendTFRecord(input, &framed);
  ReadEvents(std::move(framed));
  return 0;
}
