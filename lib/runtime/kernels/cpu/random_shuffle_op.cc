// CPU kernel for RandomShuffle: a random permutation of a tensor along dimension 0 (rows
// move whole; any dtype, strings included).
//
// Seeds as random_ops.cc takes them (TF's rule): seed = seed2 = 0 is nondeterministic
// (a per-process random value mixed with a process-wide kernel counter); otherwise the
// key is a hash of (seed, seed2) and the op gives the same sequence of permutations in
// every process. Each call draws the next permutation: the kernel counts its calls (an
// atomic, so concurrent Computes are safe), and call n's generator is seeded from (key,
// n). The permutation is Fisher-Yates with 64-bit draws reduced mod the range, TF's
// method; the values are deterministic per seed but are not TF's.
#include <atomic>
#include <cstring>
#include <random>
#include <vector>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"

namespace parallax {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t MakeKey(int64_t seed, int64_t seed2) {
  if (seed == 0 && seed2 == 0) {
    static const uint64_t process_seed = [] {
      std::random_device device;
      return (static_cast<uint64_t>(device()) << 32) ^ device();
    }();
    static std::atomic<uint64_t> kernels{0};
    return SplitMix64(process_seed ^ SplitMix64(kernels.fetch_add(1)));
  }
  return SplitMix64(SplitMix64(static_cast<uint64_t>(seed)) ^ static_cast<uint64_t>(seed2));
}

class RandomShuffleOp : public OpKernel {
 public:
  bool ForwardsInputs() const override { return true; }
  RandomShuffleOp(const KernelInit& init, Status* status) {
    int64_t seed = 0, seed2 = 0;
    *status = init.GetAttrOr("seed", &seed, int64_t{0});
    if (status->ok()) *status = init.GetAttrOr("seed2", &seed2, int64_t{0});
    key_ = MakeKey(seed, seed2);
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const uint64_t call = calls_.fetch_add(1);
    if (input.rank() == 0 || input.dim(0) <= 1) {
      context.set_output(0, input);
      return Status::Ok();
    }
    const int64_t rows = input.dim(0);
    std::vector<int64_t> order(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) order[static_cast<size_t>(i)] = i;
    std::mt19937_64 rng(SplitMix64(key_ ^ SplitMix64(call)));
    for (int64_t i = rows - 1; i > 0; --i) {
      const int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
      std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
    }
    Tensor* out = context.AllocateOutput(0, input.dtype(), input.shape());
    const int64_t per_row = input.num_elements() / rows;
    if (input.dtype() == tensorflow::DT_STRING) {
      const std::string* x = input.data<std::string>();
      std::string* y = out->data<std::string>();
      for (int64_t i = 0; i < rows; ++i) {
        std::copy(x + order[static_cast<size_t>(i)] * per_row,
                  x + (order[static_cast<size_t>(i)] + 1) * per_row, y + i * per_row);
      }
      return Status::Ok();
    }
    const int element = DataTypeSize(input.dtype());
    if (element == 0) {
      return UnimplementedError("RandomShuffle of {} tensors is not supported",
                                DataTypeShortName(input.dtype()));
    }
    const size_t row_bytes = static_cast<size_t>(per_row * element);
    const char* x = static_cast<const char*>(input.raw_data());
    char* y = static_cast<char*>(out->raw_data());
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(y + static_cast<size_t>(i) * row_bytes,
                  x + static_cast<size_t>(order[static_cast<size_t>(i)]) * row_bytes, row_bytes);
    }
    return Status::Ok();
  }

 private:
  uint64_t key_ = 0;
  mutable std::atomic<uint64_t> calls_{0};  // see the file comment
};
PX_REGISTER_KERNEL(RandomShuffleOp, "RandomShuffle", DeviceType::kCpu);

}  // namespace
}  // namespace parallax
