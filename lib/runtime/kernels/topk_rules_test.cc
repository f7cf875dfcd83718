// topk_rules.h's heap functions against the standard library's (libstdc++, whose
// algorithms TF's gtl::TopN runs): the same permutation after every call, on rows with
// ties and NaN, where the ranking is no strict weak order and only the algorithm's own
// steps decide the result.
#include "lib/runtime/kernels/topk_rules.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace parallax::topk_rules {
namespace {

// Values in {0, 1, 2, 3} with NaN now and then: many ties, unordered pairs.
std::vector<float> RandomRow(std::mt19937& rng, int n) {
  std::uniform_int_distribution<int> pick(0, 4);
  std::vector<float> row(static_cast<size_t>(n));
  for (float& v : row) {
    const int p = pick(rng);
    v = p == 4 ? std::nanf("") : static_cast<float>(p);
  }
  return row;
}

std::vector<int32_t> Positions(int n) {
  std::vector<int32_t> positions(static_cast<size_t>(n));
  std::iota(positions.begin(), positions.end(), 0);
  return positions;
}

TEST_CASE("the heap functions step as libstdc++'s do") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = 1 + trial % 37;
    const std::vector<float> row = RandomRow(rng, n);
    const Above<float> above{row.data()};
    std::vector<int32_t> ours = Positions(n);
    std::shuffle(ours.begin(), ours.end(), rng);
    std::vector<int32_t> theirs = ours;
    CAPTURE(trial, n);
    MakeHeap(ours.data(), n, above);
    std::make_heap(theirs.begin(), theirs.end(), above);
    REQUIRE(ours == theirs);
    PopHeap(ours.data(), n, above);
    std::pop_heap(theirs.begin(), theirs.end(), above);
    REQUIRE(ours == theirs);
    PushHeap(ours.data(), n, above);
    std::push_heap(theirs.begin(), theirs.end(), above);
    REQUIRE(ours == theirs);
    SortHeap(ours.data(), n, above);
    std::sort_heap(theirs.begin(), theirs.end(), above);
    REQUIRE(ours == theirs);
  }
}

TEST_CASE("TopKRow's bounded heap and full sort give the library's orders") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 1000; ++trial) {
    const int n = 2 + trial % 29;
    const std::vector<float> row = RandomRow(rng, n);
    CAPTURE(trial, n);
    // k == n: std::sort under TotalAbove.
    std::vector<int32_t> want = Positions(n);
    std::sort(want.begin(), want.end(), TotalAbove<float>{row.data()});
    std::vector<int32_t> got(static_cast<size_t>(n));
    std::vector<int32_t> heap(static_cast<size_t>(n + 1));
    TopKRow(row.data(), n, n, true, got.data(), heap.data());
    CHECK(got == want);
    // 1 < k < n, sorted and not: the library's heap steps.
    const int k = 2 + trial % std::max(1, n - 2);
    if (k >= n) continue;
    const Above<float> above{row.data()};
    std::vector<int32_t> lib = Positions(k + 1);
    std::make_heap(lib.begin(), lib.end(), above);
    std::pop_heap(lib.begin(), lib.end(), above);
    for (int32_t c = k + 1; c < n; ++c) {
      if (!above(c, lib.front())) continue;
      lib.back() = c;
      std::push_heap(lib.begin(), lib.end(), above);
      std::pop_heap(lib.begin(), lib.end(), above);
    }
    got.assign(static_cast<size_t>(k), -1);
    TopKRow(row.data(), n, k, false, got.data(), heap.data());
    CHECK(got == std::vector<int32_t>(lib.begin(), lib.end() - 1));
    std::sort_heap(lib.begin(), lib.end() - 1, above);
    TopKRow(row.data(), n, k, true, got.data(), heap.data());
    CHECK(got == std::vector<int32_t>(lib.begin(), lib.end() - 1));
  }
}

}  // namespace
}  // namespace parallax::topk_rules
