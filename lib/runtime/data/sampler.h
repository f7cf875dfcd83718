// The order in which examples are read: seeded shuffling per epoch, sharding across
// ranks, and the data position that checkpoints record.
//
// Terms:
//  - the *epoch order* of epoch e is a permutation of [0, N): Fisher-Yates driven by
//    SplitMix64 seeded from (seed, e), so the same seed gives the same orders on every
//    machine; without shuffling it is 0, 1, ..., N-1 in every epoch.
//  - *shard* r of S takes positions r, r+S, r+2S, ... of each epoch's order, floor(N/S)
//    examples, so every rank steps through the same number of examples per epoch and
//    the shards of an epoch are disjoint; the N mod S examples at the end of the order
//    (a different set each shuffled epoch) are left out of that epoch.
//  - the *data position* (epoch, index) is where the next batch starts: `index` counts
//    the examples of the shard already read in `epoch`. A batch that reaches the end of
//    an epoch continues with the next epoch's order, so no example is dropped and every
//    batch is full.
#ifndef PARALLAX_LIB_RUNTIME_DATA_SAMPLER_H_
#define PARALLAX_LIB_RUNTIME_DATA_SAMPLER_H_

#include <cstdint>
#include <vector>

#include "lib/base/status.h"

namespace parallax {

struct DataPosition {
  int64_t epoch = 0;
  int64_t index = 0;
  friend bool operator==(const DataPosition&, const DataPosition&) = default;
};

struct ShardSpec {
  int64_t index = 0;  // this rank
  int64_t count = 1;  // number of ranks
};

// The example ids of `epoch`, in reading order.
std::vector<int64_t> EpochOrder(int64_t num_examples, uint64_t seed, int64_t epoch, bool shuffle);

// The part of `order` that shard `shard` reads: order[r], order[r+S], ...
std::vector<int64_t> ShardOrder(const std::vector<int64_t>& order, ShardSpec shard);

class Sampler {
 public:
  // Errors: no examples, a bad shard, or fewer examples than shards.
  static StatusOr<Sampler> Create(int64_t num_examples, uint64_t seed, bool shuffle,
                                  ShardSpec shard = {});

  // The ids of the next `count` examples; advances the position (across epochs).
  std::vector<int64_t> Next(int64_t count);
  // Moves to `position`; an index beyond the shard's epoch is an error.
  Status Seek(DataPosition position);

  DataPosition position() const { return position_; }
  // Examples this shard reads per epoch: floor(N / S).
  int64_t examples_per_epoch() const { return per_epoch_; }
  uint64_t seed() const { return seed_; }
  bool shuffle() const { return shuffle_; }

 private:
  Sampler(int64_t num_examples, uint64_t seed, bool shuffle, ShardSpec shard);
  void LoadEpoch(int64_t epoch);

  int64_t num_examples_;
  uint64_t seed_;
  bool shuffle_;
  ShardSpec shard_;
  int64_t per_epoch_;
  DataPosition position_;
  int64_t loaded_epoch_ = -1;
  std::vector<int64_t> order_;  // this shard's order of loaded_epoch_
};

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_DATA_SAMPLER_H_
