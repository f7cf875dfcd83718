// CudaDevice: one GPU as a device of the runtime (device.h), in the --config=cuda build.
//
// Terms:
//  - the *stream*: every kernel, cuBLAS call and copy of the device is queued on its one
//    stream, in the order the executor runs the nodes, so the GPU sees each value written
//    before it is read, and a freed block (device_memory.h: CachingAllocator over
//    cudaMalloc) can serve the next allocation at once. A kernel's Compute returns once
//    its work is queued; CopyToHost waits for the stream.
//  - *launch lock*: cuBLAS and cuDNN handles are not to be used from two threads at once, and the
//    executor runs independent nodes on several threads: a kernel queues its work under
//    LaunchLock() (queuing takes microseconds; the GPU runs it after).
//  - precision (device.h, GpuPrecision): FP32 unless the job asks for TF32 or bf16, so
//    GPU results track the CPU's.
//  - errors: a CUDA or cuBLAS failure is a Status naming the call and the device; an
//    asynchronous fault of an earlier kernel shows at the next synchronising call.
#ifndef PARALLAX_LIB_RUNTIME_CUDA_CUDA_DEVICE_H_
#define PARALLAX_LIB_RUNTIME_CUDA_CUDA_DEVICE_H_

#include <cublas_v2.h>
#include <cudnn.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <string>

#include "lib/base/status.h"
#include "lib/runtime/device.h"
#include "lib/runtime/device_memory.h"

namespace parallax {

// OK, or an error "CALL on DEVICE: cudaErrorX: text".
Status CudaStatus(cudaError_t error, std::string_view call, std::string_view device);
Status CublasStatus(cublasStatus_t status, std::string_view call, std::string_view device);
Status CudnnStatus(cudnnStatus_t status, std::string_view call, std::string_view device);

// The GPUs this process can use; an error saying why there are none.
StatusOr<int> CudaDeviceCount();

class CudaMemory : public DeviceMemory {
 public:
  CudaMemory(std::string name, int ordinal, cudaStream_t stream);
  const std::string& name() const override { return name_; }
  StatusOr<void*> Allocate(size_t bytes) override;
  void Free(void* block) override;
  Status CopyToHost(const void* device_src, void* host_dst, size_t bytes) override;
  Status CopyFromHost(const void* host_src, void* device_dst, size_t bytes) override;
  Status CopyOnDevice(const void* device_src, void* device_dst, size_t bytes) override;
  CachingAllocator::Stats stats() const { return allocator_.stats(); }

 private:
  std::string name_;
  int ordinal_;
  cudaStream_t stream_;
  CachingAllocator allocator_;
};

class CudaDevice : public Device {
 public:
  // GPU `ordinal` with a host device of `host_threads` threads (<= 0: one per core).
  static StatusOr<std::unique_ptr<CudaDevice>> Open(int ordinal, int host_threads,
                                                    GpuPrecision precision = GpuPrecision::kFp32);
  ~CudaDevice() override;

  DeviceType type() const override { return DeviceType::kCuda; }
  const std::string& name() const override { return name_; }
  ThreadPool& threads() override { return host_.threads(); }
  std::shared_ptr<DeviceMemory> memory() const override { return memory_; }
  Device& host() override { return host_; }

  int ordinal() const { return ordinal_; }
  cudaStream_t stream() const { return stream_; }
  // Made on first use, bound to the stream; call under LaunchLock().
  StatusOr<cublasHandle_t> cublas();
  // The same for cuDNN.
  StatusOr<cudnnHandle_t> cudnn();
  std::unique_lock<std::mutex> LaunchLock() { return std::unique_lock<std::mutex>(launch_mutex_); }
  // Makes current the device of the calling thread (the executor's threads are shared).
  Status MakeCurrent() const;
  Status Synchronize() const;

  GpuPrecision precision() const { return precision_; }
  // "NVIDIA H200, 139.8 GiB, compute capability 9.0"
  const std::string& description() const { return description_; }

 private:
  CudaDevice(int ordinal, int host_threads);

  int ordinal_;
  std::string name_;
  std::string description_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  std::mutex launch_mutex_;
  GpuPrecision precision_ = GpuPrecision::kFp32;
  std::shared_ptr<CudaMemory> memory_;
  CpuDevice host_;
};

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_CUDA_CUDA_DEVICE_H_
