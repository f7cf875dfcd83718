// Communication: NCCL and collective ops between replicas, and the _Send/_Recv pairs that
// TensorFlow's partitioner puts on cut edges.
#include "lib/ops/op_registry.h"

namespace parallax {
namespace {

constexpr std::string_view kHint = "communication_hint: string = 'auto'";
constexpr std::string_view kTimeout = "timeout_seconds: float = 0";

// V1 collectives carry their group and instance as attrs.
OpSchemaBuilder CollectiveV1(std::string name, std::string_view types) {
  OpSchemaBuilder b(std::move(name));
  b.Output("data: T").Attr("T: " + std::string(types)).Attr("group_size: int")
      .Attr("group_key: int").Attr("instance_key: int").Attr(kHint).Attr(kTimeout)
      .Collective();
  return b;
}

// V2 collectives take them as int32 inputs, so they can be chosen at run time.
OpSchemaBuilder CollectiveV2(std::string name, std::string_view types, bool send) {
  OpSchemaBuilder b(std::move(name));
  if (send) b.Input("input: T");
  b.Input("group_size: int32").Input("group_key: int32").Input("instance_key: int32")
      .Output("data: T").Attr("T: " + std::string(types)).Attr(kHint).Attr(kTimeout)
      .Collective();
  return b;
}

// _Send/_Recv move one tensor between devices of one partitioned graph; they are
// point-to-point, not replica collectives, but must never be pruned or deduplicated.
OpSchemaBuilder Transfer(std::string name, bool send) {
  OpSchemaBuilder b(std::move(name));
  if (send) {
    b.Input("tensor: T").Attr("T: type");
  } else {
    b.Output("tensor: tensor_type").Attr("tensor_type: type");
  }
  b.Attr("tensor_name: string").Attr("send_device: string")
      .Attr("send_device_incarnation: int").Attr("recv_device: string")
      .Attr("client_terminated: bool = false").Stateful();
  return b;
}

// NCCL.
PX_REGISTER_OP(OpSchemaBuilder("NcclAllReduce").Input("input: T").Output("data: T")
                   .Attr("reduction: {'min', 'max', 'prod', 'sum'}")
                   .Attr("T: {half, float, float64, int32, int64}").Attr("num_devices: int")
                   .Attr("shared_name: string").Collective());
PX_REGISTER_OP(OpSchemaBuilder("NcclReduce").Input("input: num_devices * T").Output("data: T")
                   .Attr("reduction: {'min', 'max', 'prod', 'sum'}")
                   .Attr("T: {half, float, float64, int32, int64}")
                   .Attr("num_devices: int >= 1").Collective());
PX_REGISTER_OP(OpSchemaBuilder("NcclBroadcast").Input("input: T").Output("output: T")
                   .Attr("T: {half, float, float64, int32, int64}").Attr("shape: shape")
                   .Collective());

// Collectives (CollectiveOps runtime).
PX_REGISTER_OP(CollectiveV1("CollectiveReduce", "{bfloat16, float, float16, float64, int32, int64}")
                   .Input("input: T").Attr("merge_op: {'Min', 'Max', 'Mul', 'Add'}")
                   .Attr("final_op: {'Id', 'Div'}").Attr("subdiv_offsets: list(int)")
                   .Attr("wait_for: list(int) = []"));
PX_REGISTER_OP(CollectiveV2("CollectiveReduceV2",
                            "{bfloat16, float, float16, float64, int32, int64}", true)
                   .Input("ordering_token: Nordering_token * resource")
                   .Attr("merge_op: {'Min', 'Max', 'Mul', 'Add'}")
                   .Attr("final_op: {'Id', 'Div'}").Attr("Nordering_token: int >= 0 = 0")
                   .Attr("max_subdivs_per_device: int = -1"));
PX_REGISTER_OP(CollectiveV1("CollectiveGather", "{float, float16, float64, int32, int64}")
                   .Input("input: T").Attr("shape: shape"));
PX_REGISTER_OP(CollectiveV2("CollectiveGatherV2", "{float, float16, float64, int32, int64}",
                            true)
                   .Input("ordering_token: Nordering_token * resource")
                   .Attr("Nordering_token: int >= 0 = 0"));
PX_REGISTER_OP(CollectiveV1("CollectiveBcastSend",
                            "{bool, float, float16, float64, int32, int64}")
                   .Input("input: T").Attr("shape: shape"));
PX_REGISTER_OP(CollectiveV1("CollectiveBcastRecv",
                            "{bool, float, float16, float64, int32, int64}")
                   .Attr("shape: shape"));
PX_REGISTER_OP(CollectiveV2("CollectiveBcastSendV2",
                            "{bool, float, float16, float64, int32, int64}", true));
PX_REGISTER_OP(CollectiveV2("CollectiveBcastRecvV2",
                            "{bool, float, float16, float64, int32, int64}", false)
                   .Input("shape: Tshape").Attr("Tshape: {int32, int64} = DT_INT32"));

// Transfers inside a partitioned graph.
PX_REGISTER_OP(Transfer("_Send", true));
PX_REGISTER_OP(Transfer("_Recv", false));
PX_REGISTER_OP(Transfer("_HostSend", true));
PX_REGISTER_OP(Transfer("_HostRecv", false));

// Horovod's ops, in graphs made data-parallel by hand (hvd.DistributedOptimizer,
// hvd.broadcast_global_variables). Older Horovod sets T (and root_rank) only.
PX_REGISTER_OP(OpSchemaBuilder("HorovodAllreduce").Input("tensor: T").Output("sum: T")
                   .Attr("T: {int32, int64, half, float, double}").Attr("reduce_op: int = 1")
                   .Attr("prescale_factor: float = 1.0").Attr("postscale_factor: float = 1.0")
                   .Attr("ignore_name_scope: bool = false").Attr("process_set_id: int = 0")
                   .Collective());
PX_REGISTER_OP(OpSchemaBuilder("HorovodBroadcast").Input("tensor: T").Output("output: T")
                   .Attr("T: {uint8, int8, uint16, int16, int32, int64, half, float, double, bool}")
                   .Attr("root_rank: int").Attr("ignore_name_scope: bool = false")
                   .Attr("process_set_id: int = 0").Collective());
PX_REGISTER_OP(OpSchemaBuilder("HorovodAllgather").Input("tensor: T").Output("output: T")
                   .Attr("T: {uint8, int8, uint16, int16, int32, int64, half, float, double, bool}")
                   .Attr("ignore_name_scope: bool = false").Attr("process_set_id: int = 0")
                   .Collective());

}  // namespace
}  // namespace parallax
