#include "lib/runtime/data/sampler.h"

#include <algorithm>
#include <set>

#include <catch2/catch.hpp>

namespace parallax {
namespace {

TEST_CASE("epoch orders are seeded permutations, reproducible and different per epoch") {
  const std::vector<int64_t> a = EpochOrder(1000, 7, 0, true);
  CHECK(a == EpochOrder(1000, 7, 0, true));
  CHECK(a != EpochOrder(1000, 7, 1, true));
  CHECK(a != EpochOrder(1000, 8, 0, true));
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == EpochOrder(1000, 7, 0, false));  // a permutation of 0..999
  CHECK(EpochOrder(4, 7, 3, false) == std::vector<int64_t>{0, 1, 2, 3});
  // Pinned values (also computed by an independent Python model of SplitMix64 +
  // Fisher-Yates): the order must never change between builds, or old checkpoints
  // would resume onto different data.
  CHECK(EpochOrder(8, 42, 0, true) == std::vector<int64_t>{5, 3, 1, 6, 0, 4, 2, 7});
  CHECK(EpochOrder(8, 42, 1, true) == std::vector<int64_t>{0, 1, 3, 2, 4, 6, 5, 7});
}

TEST_CASE("shards of an epoch are disjoint, equal-sized and cover it (minus N mod S)") {
  for (int64_t n : {12, 13, 100, 7}) {
    for (int64_t shards : {1, 2, 3, 4, 7}) {
      const std::vector<int64_t> order = EpochOrder(n, 3, 2, true);
      std::set<int64_t> seen;
      for (int64_t r = 0; r < shards; ++r) {
        const std::vector<int64_t> part = ShardOrder(order, {r, shards});
        CHECK(static_cast<int64_t>(part.size()) == n / shards);
        for (size_t k = 0; k < part.size(); ++k) {
          CHECK(part[k] == order[static_cast<size_t>(r) + k * static_cast<size_t>(shards)]);
          CHECK(seen.insert(part[k]).second);  // disjoint
        }
      }
      // Covering: everything but the last n mod S positions of the order.
      CHECK(static_cast<int64_t>(seen.size()) == n - n % shards);
      for (int64_t k = 0; k < n - n % shards; ++k) CHECK(seen.contains(order[static_cast<size_t>(k)]));
    }
  }
}

TEST_CASE("a sampler reads batches across epochs and resumes from a position") {
  StatusOr<Sampler> s = Sampler::Create(10, 5, true);
  REQUIRE(s.ok());
  std::vector<int64_t> stream;
  for (int i = 0; i < 7; ++i) {
    std::vector<int64_t> batch = s->Next(4);
    REQUIRE(batch.size() == 4);
    stream.insert(stream.end(), batch.begin(), batch.end());
  }
  CHECK(s->position() == DataPosition{2, 8});
  std::vector<int64_t> expected = EpochOrder(10, 5, 0, true);
  for (int e = 1; e <= 2; ++e) {
    std::vector<int64_t> next = EpochOrder(10, 5, e, true);
    expected.insert(expected.end(), next.begin(), next.end());
  }
  expected.resize(28);
  CHECK(stream == expected);

  // Resume at (1, 2): the same stream from there on.
  StatusOr<Sampler> resumed = Sampler::Create(10, 5, true);
  REQUIRE(resumed.ok());
  REQUIRE(resumed->Seek({1, 2}).ok());
  std::vector<int64_t> tail = resumed->Next(16);
  CHECK(tail == std::vector<int64_t>(expected.begin() + 12, expected.begin() + 28));

  CHECK(resumed->Seek({0, 11}).message() ==
        "data position (epoch 0, index 11) is outside the data: this shard reads 10 examples per "
        "epoch");
  CHECK(Sampler::Create(0, 1, true).status().message() == "the dataset has no examples");
  CHECK(Sampler::Create(3, 1, true, {0, 4}).status().message() ==
        "the dataset has 3 examples, fewer than the 4 shards");
  CHECK(Sampler::Create(3, 1, true, {2, 2}).status().message() ==
        "data shard 2 of 2 is not a valid shard");
}

TEST_CASE("sharded samplers partition each epoch between ranks") {
  const int64_t n = 20, shards = 4;
  std::vector<std::set<int64_t>> per_epoch(2);
  for (int64_t r = 0; r < shards; ++r) {
    StatusOr<Sampler> s = Sampler::Create(n, 9, true, {r, shards});
    REQUIRE(s.ok());
    CHECK(s->examples_per_epoch() == 5);
    for (int e = 0; e < 2; ++e) {
      for (int64_t id : s->Next(5)) CHECK(per_epoch[static_cast<size_t>(e)].insert(id).second);
    }
  }
  CHECK(per_epoch[0].size() == 20);
  CHECK(per_epoch[1].size() == 20);
}

TEST_CASE("without shuffling, examples come in file order") {
  StatusOr<Sampler> s = Sampler::Create(5, 1, false);
  REQUIRE(s.ok());
  CHECK(s->Next(7) == std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1});
}

}  // namespace
}  // namespace parallax
