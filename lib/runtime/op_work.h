// Op work: the arithmetic and the memory traffic of one kernel run, from the shapes of
// the tensors it read and wrote, so that a timeline's op spans (timeline.h) carry what a
// node asks of a device, not only how long this device took: `parallax estimate
// --device` turns work into time on a device described by its peak figures
// (lib/estimate/device_model.h).
//
// Terms:
//  - *flops*: floating-point operations, a multiply-add counting two. Matrix products
//    and convolutions (forward and both backprops) count their multiply-adds; every other
//    op one per element of its largest side (the inputs' or the outputs' elements).
//  - *memory bytes*: bytes the kernel reads and writes in device memory: its inputs and
//    the outputs that are new buffers. Views (an output that is an input's buffer:
//    Identity, Reshape, a variable's read) move nothing. Gathers move their output twice
//    (rows read, rows written) and their indices, not the whole table. Updates of
//    variable state (Apply*, Scatter*, their Resource and Sparse forms) read and write
//    each state tensor as much as their largest plain input (the gradient, the
//    updates: the rows a sparse update touches), besides reading their plain inputs.
//  - a node that runs a function (While, If, Case, PartitionedCall and their stateless
//    and stateful forms) does no work of its own: the function's nodes record theirs.
// The figures are what the kernel's shapes imply, not what this machine's kernels did
// (blocking, caches); strings and variants count no bytes.
#ifndef PARALLAX_LIB_RUNTIME_OP_WORK_H_
#define PARALLAX_LIB_RUNTIME_OP_WORK_H_

#include <vector>

#include "lib/graph/graph.h"
#include "lib/runtime/kernel.h"

namespace parallax {

struct OpWork {
  double flops = 0;
  double memory_bytes = 0;
};

// The work of `node`'s kernel run that read `inputs` and wrote `outputs`.
OpWork KernelWork(const Node& node, const std::vector<KernelValue>& inputs,
                  const std::vector<KernelValue>& outputs);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_OP_WORK_H_
