// GPU MatMul against cuBLAS called directly (scripts/device_check.sh; needs a GPU and
// the --config=cuda build). For square float products of 1024 to 8192, FP32 (TF32 off,
// as Parallax's default), prints
//   sgemm.<n>.parallax_tflops / .cublas_tflops / .ratio
// where parallax is the MatMul kernel run as the executor runs it (its Compute: checks,
// output allocation from the caching allocator, the cuBLAS call) and cublas is
// cublasSgemm on preallocated buffers, each the median of 20 timed runs after 3 warm-ups,
// timed by synchronising the device around each run.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "lib/graph/graph.h"
#include "lib/runtime/cuda/cuda_device.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/session.h"

namespace parallax {
namespace {

constexpr int kWarmups = 3;
constexpr int kRuns = 20;

template <typename Fn>
StatusOr<double> MedianSeconds(CudaDevice& gpu, Fn&& run) {
  std::vector<double> seconds;
  for (int i = 0; i < kWarmups + kRuns; ++i) {
    PX_RETURN_IF_ERROR(gpu.Synchronize());
    const auto start = std::chrono::steady_clock::now();
    PX_RETURN_IF_ERROR(run());
    PX_RETURN_IF_ERROR(gpu.Synchronize());
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i >= kWarmups) seconds.push_back(s);
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

Status Bench(CudaDevice& gpu, int64_t n) {
  Graph graph;
  NodeSpec a_spec{.name = "a", .op = "Placeholder", .attrs = {{"dtype", [] {
                                                                 tensorflow::AttrValue v;
                                                                 v.set_type(tensorflow::DT_FLOAT);
                                                                 return v;
                                                               }()}}};
  NodeSpec b_spec = a_spec;
  b_spec.name = "b";
  PX_ASSIGN_OR_RETURN(NodeId a, graph.AddNode(a_spec));
  PX_ASSIGN_OR_RETURN(NodeId b, graph.AddNode(b_spec));
  tensorflow::AttrValue t;
  t.set_type(tensorflow::DT_FLOAT);
  PX_ASSIGN_OR_RETURN(NodeId mm, graph.AddNode({.name = "mm",
                                                .op = "MatMul",
                                                .inputs = {OutputRef{a, 0}, OutputRef{b, 0}},
                                                .attrs = {{"T", t}}}));
  PX_ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> kernel, CreateKernel(graph.node(mm), gpu));
  Session session(graph, gpu);
  Tensor host(tensorflow::DT_FLOAT, TensorShape{n, n});
  for (int64_t i = 0; i < n * n; ++i)
    host.data<float>()[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f;
  PX_ASSIGN_OR_RETURN(Tensor x, host.CopiedTo(gpu.memory()));
  PX_ASSIGN_OR_RETURN(Tensor y, host.CopiedTo(gpu.memory()));
  PX_ASSIGN_OR_RETURN(Tensor z,
                      Tensor::Allocate(gpu.memory(), tensorflow::DT_FLOAT, TensorShape{n, n}));

  PX_ASSIGN_OR_RETURN(const double ours, MedianSeconds(gpu, [&]() -> Status {
                        std::vector<KernelValue> inputs{{x}, {y}}, outputs(1);
                        KernelContext context(graph.node(mm), gpu, session, inputs, outputs);
                        return kernel->Compute(context);
                      }));
  PX_ASSIGN_OR_RETURN(cublasHandle_t handle, gpu.cublas());
  PX_RETURN_IF_ERROR(CublasStatus(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH),
                                  "cublasSetMathMode", gpu.name()));
  PX_ASSIGN_OR_RETURN(const double theirs, MedianSeconds(gpu, [&]() -> Status {
                        const float one = 1, zero = 0;
                        const int dim = static_cast<int>(n);
                        return CublasStatus(
                            cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, dim, dim, dim, &one,
                                        static_cast<const float*>(y.raw_data()), dim,
                                        static_cast<const float*>(x.raw_data()), dim, &zero,
                                        static_cast<float*>(z.raw_data()), dim),
                            "cublasSgemm", gpu.name());
                      }));
  const double flops =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  std::printf("sgemm.%ld.parallax_tflops: %.2f TFLOP/s\n", static_cast<long>(n),
              flops / ours / 1e12);
  std::printf("sgemm.%ld.cublas_tflops: %.2f TFLOP/s\n", static_cast<long>(n),
              flops / theirs / 1e12);
  std::printf("sgemm.%ld.ratio: %.3f x (parallax / cuBLAS, >= 0.95 wanted)\n", static_cast<long>(n),
              theirs / ours);
  return Status::Ok();
}

int Main() {
  StatusOr<std::unique_ptr<CudaDevice>> gpu = CudaDevice::Open(0, 2);
  if (!gpu.ok()) {
    std::fprintf(stderr, "sgemm_bench: %s\n", gpu.status().message().c_str());
    return 2;
  }
  std::printf("sgemm.device: %s\n", (*gpu)->description().c_str());
  for (int64_t n : {1024, 2048, 4096, 8192}) {
    if (Status s = Bench(**gpu, n); !s.ok()) {
      std::fprintf(stderr, "sgemm_bench: %s\n", s.message().c_str());
      return 3;
    }
  }
  return 0;
}

}  // namespace
}  // namespace parallax

int main() { return parallax::Main(); }
