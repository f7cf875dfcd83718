// See nccl_communicator.h.
#include "lib/runtime/comm/nccl_communicator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <optional>

#include "lib/base/machine.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/comm/gpu_sharing.h"

namespace parallax {
namespace {

std::optional<ncclDataType_t> NcclType(DataType dtype) {
  switch (dtype) {
    case tensorflow::DT_FLOAT:
      return ncclFloat32;
    case tensorflow::DT_DOUBLE:
      return ncclFloat64;
    case tensorflow::DT_INT32:
      return ncclInt32;
    case tensorflow::DT_INT64:
      return ncclInt64;
    case tensorflow::DT_UINT8:
      return ncclUint8;
    case tensorflow::DT_INT8:
      return ncclInt8;
    default:
      return std::nullopt;
  }
}

std::optional<ncclRedOp_t> NcclOp(ReduceOp op, DataType dtype) {
  const bool floating = dtype == tensorflow::DT_FLOAT || dtype == tensorflow::DT_DOUBLE;
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kMean:
      return floating ? std::optional<ncclRedOp_t>(ncclAvg) : std::nullopt;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kProd:
      return ncclProd;
  }
  return std::nullopt;
}

// A fixed-size record of this rank's GPU: "host/PCI bus id".
constexpr int64_t kGpuNameBytes = 128;

StatusOr<std::string> GpuName(const CudaDevice& gpu) {
  char bus_id[64] = {};
  PX_RETURN_IF_ERROR(CudaStatus(cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), gpu.ordinal()),
                                "cudaDeviceGetPCIBusId", gpu.name()));
  return fmt::format("{}/{}", MachineHostName(), bus_id);
}

// Every rank's GPU name, in rank order, through the host communicator.
StatusOr<std::vector<std::string>> GatherGpuNames(Communicator& host, const std::string& mine) {
  Tensor record(tensorflow::DT_UINT8, TensorShape{1, kGpuNameBytes});
  std::memset(record.raw_data(), 0, kGpuNameBytes);
  std::memcpy(record.raw_data(), mine.data(), std::min<size_t>(mine.size(), kGpuNameBytes - 1));
  Tensor all;
  PX_RETURN_IF_ERROR(host.AllGatherV(record, &all));
  std::vector<std::string> names;
  for (int64_t r = 0; r < all.dim(0); ++r) {
    names.emplace_back(reinterpret_cast<const char*>(all.data<uint8_t>() + r * kGpuNameBytes));
  }
  return names;
}

}  // namespace

Status NcclCommunicator::NcclStatus(ncclResult_t result, std::string_view call) const {
  if (result == ncclSuccess) return Status::Ok();
  return InternalError("{} on {} (rank {}): {}", call, gpu_.name(), rank(),
                       ncclGetErrorString(result));
}

StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Create(Communicator& host,
                                                                     CudaDevice& gpu) {
  std::unique_ptr<NcclCommunicator> comm(new NcclCommunicator(host, gpu));
  PX_ASSIGN_OR_RETURN(const std::string name, GpuName(gpu));
  PX_ASSIGN_OR_RETURN(const std::vector<std::string> names, GatherGpuNames(host, name));
  if (const std::string shared = DescribeSharedGpus(names); !shared.empty()) {
    if (host.rank() == 0) {
      spdlog::warn("{} (NCCL needs a GPU per rank): GPU tensors go through MPI in host memory",
                   shared);
    }
    return comm;
  }
  ncclUniqueId id{};
  if (host.rank() == 0)
    PX_RETURN_IF_ERROR(comm->NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId"));
  Tensor id_tensor(tensorflow::DT_UINT8, TensorShape{static_cast<int64_t>(sizeof(id))});
  std::memcpy(id_tensor.raw_data(), &id, sizeof(id));
  PX_RETURN_IF_ERROR(host.Broadcast(id_tensor, 0));
  std::memcpy(&id, id_tensor.raw_data(), sizeof(id));
  PX_RETURN_IF_ERROR(gpu.MakeCurrent());
  PX_RETURN_IF_ERROR(comm->NcclStatus(ncclCommInitRank(&comm->nccl_, host.size(), id, host.rank()),
                                      "ncclCommInitRank"));
  if (host.rank() == 0) spdlog::info("NCCL joins the job's {} GPUs", host.size());
  return comm;
}

NcclCommunicator::~NcclCommunicator() {
  if (nccl_ != nullptr) {
    gpu_.Synchronize();
    ncclCommDestroy(nccl_);
  }
}

template <typename HostCall>
StatusOr<Tensor> NcclCommunicator::ThroughHost(const Tensor& device_tensor, HostCall&& call) {
  PX_ASSIGN_OR_RETURN(Tensor host, device_tensor.CopiedTo(nullptr));
  PX_ASSIGN_OR_RETURN(Tensor result, call(host));
  return result.CopiedTo(gpu_.memory());
}

Status NcclCommunicator::AllReduce(const Tensor& input, Tensor* output, ReduceOp op,
                                   AllReduceAlgorithm algorithm) {
  ScopedLabel label(&host_, this->label());
  if (!OnGpu(input)) return host_.AllReduce(input, output, op, algorithm);
  PX_RETURN_IF_ERROR(comm_internal::CheckReducible(input, op));
  const std::optional<ncclDataType_t> type = NcclType(input.dtype());
  const std::optional<ncclRedOp_t> nccl_op = NcclOp(op, input.dtype());
  if (nccl_ == nullptr || !type || !nccl_op) {  // host-staged
    PX_ASSIGN_OR_RETURN(*output, ThroughHost(input, [&](Tensor& host) -> StatusOr<Tensor> {
      PX_RETURN_IF_ERROR(host_.AllReduce(host, &host, op, algorithm));
      return host;
    }));
    return Status::Ok();
  }
  if (!output->initialized() || output->memory() != input.memory() ||
      output->dtype() != input.dtype() || !(output->shape() == input.shape())) {
    PX_ASSIGN_OR_RETURN(*output, Tensor::Allocate(gpu_.memory(), input.dtype(), input.shape()));
  }
  auto lock = gpu_.LaunchLock();
  PX_RETURN_IF_ERROR(gpu_.MakeCurrent());
  CountSent(static_cast<int64_t>(input.bytes()));
  return NcclStatus(
      ncclAllReduce(input.raw_data(), output->raw_data(), static_cast<size_t>(input.num_elements()),
                    *type, *nccl_op, nccl_, gpu_.stream()),
      "ncclAllReduce");
}

Status NcclCommunicator::AllGatherV(const Tensor& input, Tensor* output) {
  ScopedLabel label(&host_, this->label());
  if (!OnGpu(input)) return host_.AllGatherV(input, output);
  PX_RETURN_IF_ERROR(comm_internal::CheckRows(input, "all-gather"));
  if (nccl_ == nullptr) {
    PX_ASSIGN_OR_RETURN(*output, ThroughHost(input, [&](Tensor& host) -> StatusOr<Tensor> {
      Tensor gathered;
      PX_RETURN_IF_ERROR(host_.AllGatherV(host, &gathered));
      return gathered;
    }));
    return Status::Ok();
  }
  // Every rank's row count, through the host; then each rank's rows broadcast into place.
  Tensor count = Tensor::FromVector<int64_t>({input.dim(0)}, TensorShape{1});
  Tensor counts;
  PX_RETURN_IF_ERROR(host_.AllGatherV(count, &counts));
  TensorShape shape = input.shape();
  int64_t rows = 0;
  for (int64_t c : counts.flat<int64_t>()) rows += c;
  shape.set_dim(0, rows);
  PX_ASSIGN_OR_RETURN(*output, Tensor::Allocate(gpu_.memory(), input.dtype(), shape));
  int64_t row_bytes = DataTypeSize(input.dtype());
  for (int d = 1; d < input.rank(); ++d) row_bytes *= input.dim(d);
  auto lock = gpu_.LaunchLock();
  PX_RETURN_IF_ERROR(gpu_.MakeCurrent());
  PX_RETURN_IF_ERROR(NcclStatus(ncclGroupStart(), "ncclGroupStart"));
  int64_t offset = 0;
  for (int r = 0; r < size(); ++r) {
    const int64_t bytes = counts.flat<int64_t>()[static_cast<size_t>(r)] * row_bytes;
    char* place = static_cast<char*>(output->raw_data()) + offset;
    const Status status =
        NcclStatus(ncclBroadcast(r == rank() ? input.raw_data() : place, place,
                                 static_cast<size_t>(bytes), ncclUint8, r, nccl_, gpu_.stream()),
                   "ncclBroadcast");
    if (!status.ok()) {
      ncclGroupEnd();
      return status;
    }
    offset += bytes;
  }
  CountSent(static_cast<int64_t>(input.bytes()) * (size() - 1), size());
  return NcclStatus(ncclGroupEnd(), "ncclGroupEnd");
}

Status NcclCommunicator::Broadcast(Tensor& tensor, int root) {
  ScopedLabel label(&host_, this->label());
  if (!OnGpu(tensor)) return host_.Broadcast(tensor, root);
  PX_ASSIGN_OR_RETURN(tensor, ThroughHost(tensor, [&](Tensor& host) -> StatusOr<Tensor> {
                        PX_RETURN_IF_ERROR(host_.Broadcast(host, root));
                        return host;
                      }));
  return Status::Ok();
}

Status NcclCommunicator::AllToAllV(const Tensor& send, std::span<const int64_t> send_counts,
                                   Tensor* received, std::vector<int64_t>* received_counts) {
  ScopedLabel label(&host_, this->label());
  if (!OnGpu(send)) return host_.AllToAllV(send, send_counts, received, received_counts);
  PX_ASSIGN_OR_RETURN(*received, ThroughHost(send, [&](Tensor& host) -> StatusOr<Tensor> {
    Tensor got;
    PX_RETURN_IF_ERROR(host_.AllToAllV(host, send_counts, &got, received_counts));
    return got;
  }));
  return Status::Ok();
}

Status NcclCommunicator::ScatterV(const Tensor& send, std::span<const int64_t> send_counts,
                                  Tensor* received, int root) {
  ScopedLabel label(&host_, this->label());
  // The rows land where `send` is: in host memory on the ranks that pass an empty one.
  if (!OnGpu(send)) return host_.ScatterV(send, send_counts, received, root);
  PX_ASSIGN_OR_RETURN(*received, ThroughHost(send, [&](Tensor& host) -> StatusOr<Tensor> {
    Tensor got;
    PX_RETURN_IF_ERROR(host_.ScatterV(host, send_counts, &got, root));
    return got;
  }));
  return Status::Ok();
}

namespace {

StatusOr<std::shared_ptr<Communicator>> MakeNcclCommunicator(Communicator& host, Device& gpu) {
  if (gpu.type() != DeviceType::kCuda) {
    return InvalidArgumentError("{} is not a CUDA device", gpu.name());
  }
  PX_ASSIGN_OR_RETURN(std::unique_ptr<NcclCommunicator> comm,
                      NcclCommunicator::Create(host, static_cast<CudaDevice&>(gpu)));
  return std::shared_ptr<Communicator>(std::move(comm));
}

const bool kRegistered = [] {
  RegisterGpuCommunicator(&MakeNcclCommunicator);
  return true;
}();

}  // namespace

}  // namespace parallax
