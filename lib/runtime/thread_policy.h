// The thread policy of a Parallax process: how the three thread pools that run kernels
// share the cores without fighting.
//
// A CPU training step runs kernels one after another on the executor's thread; each
// kernel parallelises inside with one of three pools:
//  - the device's ThreadPool (element-wise ops, reductions, pooling; condition-variable
//    waits, so idle workers take no CPU),
//  - OpenBLAS's pthread workers (MatMul; SetBlasThreads sets their count to the device's),
//  - oneDNN's OpenMP (libgomp) team (float convolutions; its size is set to the device's
//    thread count before each call, see conv_impl.h).
// Left at their defaults, the idle workers of the last two busy-wait: libgomp spins
// ~300000 iterations (milliseconds) after every parallel region, and an OpenBLAS worker
// calls sched_yield in a loop for 2^28 cycles (~0.1 s) after every GEMM. On 2 cores a
// spinning worker takes a core from whatever pool runs next: measured on LeNet (batch 64,
// Adam; bench/step_time_bench) 44 ms per step with the defaults vs 31 ms with the policy
// below; PyTorch's MLP, which has the same two runtimes, 150 ms vs 5 ms per step with
// libgomp spinning vs passive.
//
// The policy, applied at process start to the environment (a variable the user set is
// left alone):
//   OMP_WAIT_POLICY=PASSIVE         idle OpenMP threads sleep at once;
//   OPENBLAS_THREAD_TIMEOUT=20      idle OpenBLAS workers yield for 2^20 cycles (~0.4 ms,
//                                   longer than the gap between the GEMMs of one layer's
//                                   forward and backward), then sleep.
// Both runtimes read these once, in their shared libraries' constructors, which run
// before main() and before any static constructor of the executable, so setenv in main()
// is too late (checked: libgomp's initialize_env and OpenBLAS's gotoblas_init are
// constructors). Even the executable's .preinit_array, which the dynamic loader runs
// before every library constructor, cannot simply setenv: libc's initialisation, which
// runs right after it, resets `environ` to the original array. So the hook in
// .preinit_array re-executes the process once (execve of /proc/self/exe, before any
// library was initialised; a few milliseconds) with the missing variables added and a
// marker, PARALLAX_THREAD_POLICY, that stops a second re-execution and remembers which
// values were the user's. PARALLAX_THREAD_POLICY=off in the environment disables all of
// it. A .preinit_array is allowed only in an executable: this library is linkstatic
// (linked into the binary, never a .so) and alwayslink, and the binaries that run
// training steps depend on it (//lib/runtime:trainer, the benchmarks).
#ifndef PARALLAX_LIB_RUNTIME_THREAD_POLICY_H_
#define PARALLAX_LIB_RUNTIME_THREAD_POLICY_H_

#include <string>

namespace parallax {

// True when the process-start hook ran (this library is linked into the executable).
bool ThreadPolicyApplied();

// "OMP_WAIT_POLICY=PASSIVE (policy) OPENBLAS_THREAD_TIMEOUT=20 (policy)", with "(user)"
// for values the user set and "(unset)" when the hook did not run; for logs.
std::string DescribeThreadPolicy();

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_THREAD_POLICY_H_
