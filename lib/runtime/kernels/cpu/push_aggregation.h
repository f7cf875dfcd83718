// Per-host aggregation of parameter-server pushes (DESIGN §5: "a push of (indices,
// values) to the owners ... locally aggregated per host first"), used by the
// ParallaxSparsePush kernel (collective_ops.cc) when the job spans hosts. Pulls
// (ParallaxSparsePull) route their requests through the same aggregators.
//
// Terms:
//  - an *item* of a push is one (owner, local index, value row): a row of the gradient
//    for row `local index` of `owner`'s local storage.
//  - the *aggregator* of host h for owner o is the rank of h that combines all of h's
//    items for o: o itself when o is on h (nothing to combine before the owner sums), else
//    the rank of h with local rank o mod |h| (so a host's aggregation work and outgoing
//    messages spread over its ranks instead of one leader).
//
// The push then takes two phases instead of one:
//  1. every rank sends each item to its host's aggregator for the item's owner — traffic
//     that never leaves the host; items whose owner is on the host are delivered here.
//  2. each aggregator sums the items it received with equal (owner, local index)
//     (CombineRows, in arrival order: source rank, then the sender's order) and sends one
//     message per owner.
// So the bytes that cross hosts per push are one message per (host, other-host owner)
// pair, holding each distinct row once, instead of every rank's rows with duplicates.
// One host: phase 1 is the whole push (aggregator = owner) and phase 2 is skipped: the
// single-host path is the direct one, unchanged.
//
// Numerics: the owner receives partial sums instead of single rows and sums them; the
// total is the same up to the order of float additions (deterministic for a given
// layout).
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_PUSH_AGGREGATION_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_PUSH_AGGREGATION_H_

#include <cstdint>
#include <span>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/comm/communicator.h"
#include "lib/runtime/tensor.h"

namespace parallax {

struct HostLayout {
  std::vector<int> host_of;              // per rank
  std::vector<std::vector<int>> ranks;   // per host, ascending

  // From host ids numbered 0.. (every id below the largest used).
  static HostLayout FromHosts(std::vector<int> host_of);
  static HostLayout Of(const Communicator& communicator);
  int num_hosts() const { return static_cast<int>(ranks.size()); }
};

// The rank of `host` that combines its items for `owner` (see the file comment).
int PushAggregator(const HostLayout& layout, int host, int owner);

struct CombinedRows {
  std::vector<int64_t> owner;
  std::vector<int64_t> local_index;
  Tensor values;  // [distinct keys, row dims...]
};

// Sums the rows of `values` ([n, ...]) that share (owner[i], local_index[i]), keys in
// order of first occurrence, each sum in input order. Float, double, int32 and int64
// rows are summed; rows of other types are passed through one by one (the owner's update
// sums them).
CombinedRows CombineRows(std::span<const int64_t> owner, std::span<const int64_t> local_index,
                         const Tensor& values);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_PUSH_AGGREGATION_H_
