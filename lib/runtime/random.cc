#include "lib/runtime/random.h"

#include <cstring>
#include <functional>

#include "lib/base/fnv1a.h"

namespace parallax {

PhiloxBlock Philox(PhiloxBlock counter, PhiloxKey key) {
  constexpr uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57;
  constexpr uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * counter[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * counter[2];
    counter = {static_cast<uint32_t>(p1 >> 32) ^ counter[1] ^ key[0], static_cast<uint32_t>(p1),
               static_cast<uint32_t>(p0 >> 32) ^ counter[3] ^ key[1], static_cast<uint32_t>(p0)};
    key[0] += kW0;
    key[1] += kW1;
  }
  return counter;
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

float UniformFloat(uint32_t bits) {
  const uint32_t v = (bits >> 9) | 0x3F800000u;
  float f;
  std::memcpy(&f, &v, sizeof(f));
  return f - 1.0f;
}

double UniformDouble(uint32_t lo, uint32_t hi) {
  const uint64_t v = ((static_cast<uint64_t>(hi) << 32 | lo) >> 12) | 0x3FF0000000000000ull;
  double d;
  std::memcpy(&d, &v, sizeof(d));
  return d - 1.0;
}

namespace {

// A stable hash of a node name (std::hash may differ between builds).
uint64_t HashName(std::string_view name) { return Fnv1a64(name); }

}  // namespace

RandomStream* RandomStreams::Stream(std::string_view node, int64_t seed, int64_t seed2) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string id = std::string(node) + "@" + std::to_string(stream_index_);
  auto it = streams_.find(id);
  if (it != streams_.end()) return it->second.get();
  uint64_t mixed = seed == 0 && seed2 == 0
                       ? SplitMix64(run_seed_ ^ SplitMix64(HashName(node)))
                       : SplitMix64(SplitMix64(static_cast<uint64_t>(seed)) ^ static_cast<uint64_t>(seed2));
  // Index 0 keeps the key of a run alone; rank r > 0 gets its own.
  if (stream_index_ != 0) mixed = SplitMix64(mixed ^ SplitMix64(static_cast<uint64_t>(stream_index_)));
  auto stream = std::make_unique<RandomStream>(
      PhiloxKey{static_cast<uint32_t>(mixed), static_cast<uint32_t>(mixed >> 32)});
  auto restored = restored_.find(id);
  if (restored != restored_.end()) stream->set_position(restored->second);
  return streams_.emplace(id, std::move(stream)).first->second.get();
}

void RandomStreams::set_run_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  if (seed == run_seed_) return;
  run_seed_ = seed;
  for (const auto& [id, stream] : streams_) restored_.emplace(id, stream->position());
  streams_.clear();
}

void RandomStreams::set_stream_index(int index) {
  std::lock_guard<std::mutex> lock(mu_);
  stream_index_ = index;
}

std::map<std::string, uint64_t> RandomStreams::Positions() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, uint64_t> positions = restored_;
  for (const auto& [id, stream] : streams_) positions[id] = stream->position();
  return positions;
}

void RandomStreams::Restore(const std::map<std::string, uint64_t>& positions) {
  std::lock_guard<std::mutex> lock(mu_);
  restored_ = positions;
  for (const auto& [id, stream] : streams_) {
    auto it = positions.find(id);
    stream->set_position(it != positions.end() ? it->second : 0);
  }
}

}  // namespace parallax
