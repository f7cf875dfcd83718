// See cuda_device.h.
#include "lib/runtime/cuda/cuda_device.h"

#include <fmt/format.h>

namespace parallax {

Status CudaStatus(cudaError_t error, std::string_view call, std::string_view device) {
  if (error == cudaSuccess) return Status::Ok();
  return InternalError("{} on {}: {}: {}", call, device, cudaGetErrorName(error),
                       cudaGetErrorString(error));
}

Status CublasStatus(cublasStatus_t status, std::string_view call, std::string_view device) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return InternalError("{} on {}: {}", call, device, cublasGetStatusString(status));
}

Status CudnnStatus(cudnnStatus_t status, std::string_view call, std::string_view device) {
  if (status == CUDNN_STATUS_SUCCESS) return Status::Ok();
  return InternalError("{} on {}: {}", call, device, cudnnGetErrorString(status));
}

StatusOr<int> CudaDeviceCount() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error of the failed probe
    return FailedPreconditionError("no usable GPU: cudaGetDeviceCount: {}: {}",
                                   cudaGetErrorName(error), cudaGetErrorString(error));
  }
  if (count == 0) return FailedPreconditionError("no usable GPU: cudaGetDeviceCount found none");
  return count;
}

namespace {

class CudaMallocBackend : public MemoryBackend {
 public:
  explicit CudaMallocBackend(int ordinal) : ordinal_(ordinal) {}
  void* Allocate(size_t bytes) override {
    cudaSetDevice(ordinal_);
    void* block = nullptr;
    if (cudaMalloc(&block, bytes) != cudaSuccess) {
      cudaGetLastError();  // out of memory is not sticky; clear it for the next call
      return nullptr;
    }
    return block;
  }
  void Free(void* block) override {
    cudaSetDevice(ordinal_);
    cudaFree(block);
  }

 private:
  int ordinal_;
};

}  // namespace

CudaMemory::CudaMemory(std::string name, int ordinal, cudaStream_t stream)
    : name_(std::move(name)),
      ordinal_(ordinal),
      stream_(stream),
      allocator_(name_, std::make_unique<CudaMallocBackend>(ordinal)) {}

StatusOr<void*> CudaMemory::Allocate(size_t bytes) { return allocator_.Allocate(bytes); }

void CudaMemory::Free(void* block) { allocator_.Free(block); }

Status CudaMemory::CopyToHost(const void* device_src, void* host_dst, size_t bytes) {
  PX_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(ordinal_), "cudaSetDevice", name_));
  PX_RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, stream_),
                 "cudaMemcpyAsync (to the host)", name_));
  return CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", name_);
}

Status CudaMemory::CopyFromHost(const void* host_src, void* device_dst, size_t bytes) {
  PX_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(ordinal_), "cudaSetDevice", name_));
  // From pageable memory the call returns once the source has been staged: the caller may
  // reuse or free it then (CUDA runtime API, "API synchronization behavior").
  return CudaStatus(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, stream_),
                    "cudaMemcpyAsync (to the device)", name_);
}

Status CudaMemory::CopyOnDevice(const void* device_src, void* device_dst, size_t bytes) {
  PX_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(ordinal_), "cudaSetDevice", name_));
  return CudaStatus(
      cudaMemcpyAsync(device_dst, device_src, bytes, cudaMemcpyDeviceToDevice, stream_),
      "cudaMemcpyAsync (on the device)", name_);
}

CudaDevice::CudaDevice(int ordinal, int host_threads)
    : ordinal_(ordinal), name_(fmt::format("/device:GPU:{}", ordinal)), host_(host_threads) {}

CudaDevice::~CudaDevice() {
  cudaSetDevice(ordinal_);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  memory_.reset();  // tensors still alive keep the memory (and its stream) until they go
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  if (cudnn_ != nullptr) cudnnDestroy(cudnn_);
}

StatusOr<std::unique_ptr<CudaDevice>> CudaDevice::Open(int ordinal, int host_threads,
                                                       GpuPrecision precision) {
  PX_ASSIGN_OR_RETURN(const int count, CudaDeviceCount());
  if (ordinal < 0 || ordinal >= count) {
    return InvalidArgumentError("GPU {} does not exist: this process sees {} GPU{}", ordinal, count,
                                count == 1 ? "" : "s");
  }
  std::unique_ptr<CudaDevice> device(new CudaDevice(ordinal, host_threads));
  device->precision_ = precision;
  PX_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(ordinal), "cudaSetDevice", device->name_));
  cudaDeviceProp props{};
  PX_RETURN_IF_ERROR(CudaStatus(cudaGetDeviceProperties(&props, ordinal), "cudaGetDeviceProperties",
                                device->name_));
  device->description_ =
      fmt::format("{}, {:.1f} GiB, compute capability {}.{}", props.name,
                  static_cast<double>(props.totalGlobalMem) / (1 << 30), props.major, props.minor);
  PX_RETURN_IF_ERROR(CudaStatus(cudaStreamCreateWithFlags(&device->stream_, cudaStreamNonBlocking),
                                "cudaStreamCreate", device->name_));
  device->memory_ = std::make_shared<CudaMemory>(device->name_, ordinal, device->stream_);
  return device;
}

StatusOr<cublasHandle_t> CudaDevice::cublas() {
  if (cublas_ != nullptr) return cublas_;
  PX_RETURN_IF_ERROR(MakeCurrent());
  PX_RETURN_IF_ERROR(CublasStatus(cublasCreate(&cublas_), "cublasCreate", name_));
  PX_RETURN_IF_ERROR(CublasStatus(cublasSetStream(cublas_, stream_), "cublasSetStream", name_));
  return cublas_;
}

StatusOr<cudnnHandle_t> CudaDevice::cudnn() {
  if (cudnn_ != nullptr) return cudnn_;
  PX_RETURN_IF_ERROR(MakeCurrent());
  PX_RETURN_IF_ERROR(CudnnStatus(cudnnCreate(&cudnn_), "cudnnCreate", name_));
  PX_RETURN_IF_ERROR(CudnnStatus(cudnnSetStream(cudnn_, stream_), "cudnnSetStream", name_));
  return cudnn_;
}

Status CudaDevice::MakeCurrent() const {
  return CudaStatus(cudaSetDevice(ordinal_), "cudaSetDevice", name_);
}

Status CudaDevice::Synchronize() const {
  PX_RETURN_IF_ERROR(MakeCurrent());
  return CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", name_);
}

namespace {

StatusOr<std::unique_ptr<Device>> OpenCudaDevice(int ordinal, int host_threads,
                                                 GpuPrecision precision) {
  PX_ASSIGN_OR_RETURN(std::unique_ptr<CudaDevice> device,
                      CudaDevice::Open(ordinal, host_threads, precision));
  return std::unique_ptr<Device>(std::move(device));
}

// Registered when this library is linked (alwayslink): OpenGpuDevice then opens GPUs.
const bool kRegistered = [] {
  RegisterGpuSupport({.device_count = &CudaDeviceCount, .open = &OpenCudaDevice});
  return true;
}();

}  // namespace

}  // namespace parallax
