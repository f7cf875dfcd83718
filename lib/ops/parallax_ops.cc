// Parallax's own communication ops, for what TensorFlow has no op for. Every rank runs
// the same op with the same attrs; `instance_key` orders collectives identically on all
// ranks (DESIGN §5). The runtime implements them over MPI (host) and NCCL (device).
#include "lib/ops/op_registry.h"

namespace parallax {
namespace {

// Partitioned (parameter-server) variables: rows [row_splits[p], row_splits[p+1]) live on
// rank owners[p]; a rank's local storage is its partitions concatenated in partition
// order.
OpSchemaBuilder PartitionedOp(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Attr("T: type").Attr("Tindices: {int32, int64} = DT_INT32").Attr("num_rows: int")
      .Attr("row_splits: list(int)").Attr("owners: list(int)").Attr("group_size: int")
      .Attr("instance_key: int").Collective();
  return b;
}

// The initial rows of a partitioned variable, from rank root_rank to their owners: one
// collective made of a send on the root and a receive on every other rank (one instance
// key, like TensorFlow's CollectiveBcastSend/Recv).
OpSchemaBuilder ScatterRowsOp(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Output("local_rows: T").Attr("T: type").Attr("num_rows: int").Attr("row_splits: list(int)")
      .Attr("owners: list(int)").Attr("root_rank: int = 0").Attr("group_size: int")
      .Attr("instance_key: int").Collective();
  return b;
}

}  // namespace

// Every rank's output is rank `root_rank`'s input (used to start all replicas from the
// same initial values).
PX_REGISTER_OP(OpSchemaBuilder("ParallaxBroadcast").Input("input: T").Output("output: T")
                   .Attr("T: type").Attr("root_rank: int = 0").Attr("group_size: int")
                   .Attr("instance_key: int").Collective());

// rows[i] = row ids[i] of the partitioned variable, fetched from its owner. `params` is
// this rank's local storage (shape [0, ...] when it owns no partition).
PX_REGISTER_OP(PartitionedOp("ParallaxSparsePull").Input("params: T").Input("ids: Tindices")
                   .Output("rows: T"));

// Sends each (indices[i], values[i] * scale) to the owner of row indices[i]. Each rank
// receives what every rank sent for its partitions, as rows of its local storage
// (local_indices: positions in the local storage; duplicates are not summed).
PX_REGISTER_OP(PartitionedOp("ParallaxSparsePush").Input("values: T").Input("indices: Tindices")
                   .Output("local_values: T").Output("local_indices: Tindices")
                   .Attr("scale: float = 1"));


// On rank root_rank: sends each owner the rows of `value` (the whole variable, [num_rows,
// ...]) that it owns, packed as its local storage (its partitions concatenated in
// partition order); local_rows is the root's own share ([0, ...] when it owns none).
PX_REGISTER_OP(ScatterRowsOp("ParallaxScatterRowsSend").Input("value: T"));

// On every other rank: receives this rank's rows of the root's value ([0, ...] when it
// owns no partition). No data input: the rows' dtype and shape come from the attrs
// (`shape`: the whole variable's), so the initial value is never computed here.
PX_REGISTER_OP(ScatterRowsOp("ParallaxScatterRowsRecv").Attr("shape: shape"));

}  // namespace parallax
