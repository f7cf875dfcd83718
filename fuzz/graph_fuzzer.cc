// Graph files: ParseGraph recognises binary and text protobuf, GraphDef, MetaGraphDef and
// SavedModel by content (LoadGraph adds only the SavedModel directory lookup and the
// size check), then the verifier runs as after every load; a graph that loads is saved
// again in both formats.
#include "fuzz/fuzz_input.h"
#include "lib/graph/graph_io.h"
#include "lib/graph/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  StatusOr<Graph> graph = ParseGraph(std::string(fuzz::AsText(data, size)), "fuzz.pb");
  fuzz::CheckStatus(graph);
  if (!graph.ok()) return 0;
  fuzz::CheckStatus(VerifyGraph(*graph));
  SerializeGraphDef(*graph);
  fuzz::CheckStatus(SerializeGraphDefText(*graph));
  return 0;
}
