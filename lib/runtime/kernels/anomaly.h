// The non-finite values CheckNumerics reports, for the CPU kernel (cpu/check_ops.cc) and
// the GPU's (cuda/cwise_ops.cc): each value's anomaly bits, and the words TF's message
// uses for a set of them. Plain C++ read by g++ and nvcc alike (AnomalyBits runs on both
// devices; AnomalyWords is host code).
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_ANOMALY_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_ANOMALY_H_

#include <cmath>
#include <string>
#include <vector>

#include "lib/runtime/kernels/host_device.h"

namespace parallax::anomaly {

enum Bits : int { kNaN = 1, kNegativeInf = 2, kPositiveInf = 4 };

// 0 for a finite value, else kNaN, kNegativeInf or kPositiveInf.
template <typename T>
PX_HOST_DEVICE inline int AnomalyBits(T v) {
  if (std::isnan(v)) return kNaN;
  if (std::isinf(v)) return v < T(0) ? kNegativeInf : kPositiveInf;
  return 0;
}

// What "<message> : Tensor had <words> values" says for `bits` (not 0): CheckNumerics's
// "NaN", "Inf" or "Inf and NaN"; CheckNumericsV2 (kV2) tells -Inf from +Inf: "-Inf",
// "+Inf", "NaN" joined as "-Inf and NaN", "-Inf, +Inf, and NaN".
inline std::string AnomalyWords(int bits, bool v2) {
  if (!v2) {
    const bool inf = bits & (kNegativeInf | kPositiveInf);
    const bool nan = bits & kNaN;
    return inf && nan ? "Inf and NaN" : inf ? "Inf" : "NaN";
  }
  std::vector<std::string> found;
  if (bits & kNegativeInf) found.push_back("-Inf");
  if (bits & kPositiveInf) found.push_back("+Inf");
  if (bits & kNaN) found.push_back("NaN");
  if (found.size() == 3) return found[0] + ", " + found[1] + ", and " + found[2];
  if (found.size() == 2) return found[0] + " and " + found[1];
  return found.empty() ? "" : found[0];
}

}  // namespace parallax::anomaly

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_ANOMALY_H_
