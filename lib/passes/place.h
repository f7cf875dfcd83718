// place: puts every node of rank r's graph on rank r's device.
//
// Each rank's graph runs on one device (DESIGN §5): every node's device string becomes
// the rank's device from the plan, `/job:worker/replica:0/task:R/device:GPU:0` (or
// CPU:0). The one exception keeps host work on the host: a node the source graph
// explicitly placed on a CPU goes to the rank's CPU, `/job:worker/replica:0/task:R/
// device:CPU:0`, when the rank is a GPU rank (input pipelines, string ops and
// summaries have no GPU kernels).
//
// Terms: a device string *names a CPU* when its device type contains "CPU", in any of
// TF's spellings: `/cpu:0`, `/device:CPU:0`, `/job:localhost/replica:0/task:0/cpu:0`,
// `/device:XLA_CPU:0`. A *colocation device* `@other` means "wherever `other` goes"; it
// is resolved through the source graph's device strings (chains followed, cycles and
// unknown names count as unplaced) and then placed by the same rule. `_class`
// colocation attrs are left untouched: they only say which nodes go together, and
// every node of a rank lands on that rank's devices anyway.
//
// Changed: any device string changed. It is the one pass that changes a 1-rank graph
// (the devices get the job/task form). Idempotent: its output placed again is unchanged.
// Cost: one pass over the nodes, O(nodes). Limits: `_Send`/`_Recv` nodes of an already
// partitioned graph keep their send_device/recv_device attrs (they describe the source
// machine); a source graph's GPU indices other than 0 collapse onto the rank's GPU.
#ifndef PARALLAX_LIB_PASSES_PLACE_H_
#define PARALLAX_LIB_PASSES_PLACE_H_

#include <memory>
#include <string_view>

#include "lib/passes/pass.h"

namespace parallax {

class PlacePass : public Pass {
 public:
  std::string_view name() const override { return "place"; }
  std::string_view description() const override {
    return "every node on the rank's device; CPU-placed nodes on the rank's CPU";
  }

 protected:
  StatusOr<bool> RunImpl(Graph& graph, PassContext& context) override;
};

std::unique_ptr<Pass> CreatePlacePass();

// True when `device` names a CPU device (see the file comment); false for "" and "@x".
bool DeviceNamesCpu(std::string_view device);

}  // namespace parallax

#endif  // PARALLAX_LIB_PASSES_PLACE_H_
