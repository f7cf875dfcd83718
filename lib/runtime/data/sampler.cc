#include "lib/runtime/data/sampler.h"

#include <numeric>
#include <utility>

#include "lib/runtime/data/random.h"

namespace parallax {

std::vector<int64_t> EpochOrder(int64_t num_examples, uint64_t seed, int64_t epoch, bool shuffle) {
  std::vector<int64_t> order(static_cast<size_t>(num_examples));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (!shuffle) return order;
  DataRng rng(Mix64(seed) ^ Mix64(static_cast<uint64_t>(epoch) + 0x5851f42d4c957f2dULL));
  for (int64_t i = num_examples - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(i) + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

std::vector<int64_t> ShardOrder(const std::vector<int64_t>& order, ShardSpec shard) {
  const auto n = static_cast<int64_t>(order.size());
  const int64_t per_shard = n / shard.count;
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(per_shard));
  for (int64_t k = 0; k < per_shard; ++k) {
    out.push_back(order[static_cast<size_t>(shard.index + k * shard.count)]);
  }
  return out;
}

StatusOr<Sampler> Sampler::Create(int64_t num_examples, uint64_t seed, bool shuffle,
                                  ShardSpec shard) {
  if (shard.count < 1 || shard.index < 0 || shard.index >= shard.count) {
    return InvalidArgumentError("data shard {} of {} is not a valid shard", shard.index,
                                shard.count);
  }
  if (num_examples < 1) return InvalidArgumentError("the dataset has no examples");
  if (num_examples < shard.count) {
    return InvalidArgumentError("the dataset has {} examples, fewer than the {} shards",
                                num_examples, shard.count);
  }
  return Sampler(num_examples, seed, shuffle, shard);
}

Sampler::Sampler(int64_t num_examples, uint64_t seed, bool shuffle, ShardSpec shard)
    : num_examples_(num_examples),
      seed_(seed),
      shuffle_(shuffle),
      shard_(shard),
      per_epoch_(num_examples / shard.count) {}

void Sampler::LoadEpoch(int64_t epoch) {
  if (loaded_epoch_ == epoch) return;
  order_ = ShardOrder(EpochOrder(num_examples_, seed_, epoch, shuffle_), shard_);
  loaded_epoch_ = epoch;
}

std::vector<int64_t> Sampler::Next(int64_t count) {
  std::vector<int64_t> ids;
  ids.reserve(static_cast<size_t>(count));
  while (static_cast<int64_t>(ids.size()) < count) {
    if (position_.index >= per_epoch_) {
      ++position_.epoch;
      position_.index = 0;
    }
    LoadEpoch(position_.epoch);
    const int64_t take = std::min(count - static_cast<int64_t>(ids.size()), per_epoch_ - position_.index);
    ids.insert(ids.end(), order_.begin() + position_.index, order_.begin() + position_.index + take);
    position_.index += take;
  }
  return ids;
}

Status Sampler::Seek(DataPosition position) {
  if (position.epoch < 0 || position.index < 0 || position.index > per_epoch_) {
    return InvalidArgumentError(
        "data position (epoch {}, index {}) is outside the data: this shard reads {} examples "
        "per epoch",
        position.epoch, position.index, per_epoch_);
  }
  position_ = position;
  return Status::Ok();
}

}  // namespace parallax
