#include "lib/runtime/kernels/cpu/push_aggregation.h"

#include <map>
#include <random>
#include <set>
#include <tuple>

#include <catch2/catch.hpp>

namespace parallax {
namespace {

TEST_CASE("PushAggregator: the owner on its host, else a rank of the host by owner") {
  const HostLayout layout = HostLayout::FromHosts({0, 0, 1, 1, 1});
  CHECK(layout.num_hosts() == 2);
  CHECK(layout.ranks[1] == std::vector<int>{2, 3, 4});
  CHECK(PushAggregator(layout, 0, 1) == 1);  // same host: straight to the owner
  CHECK(PushAggregator(layout, 0, 2) == 0);  // 2 % 2
  CHECK(PushAggregator(layout, 0, 3) == 1);
  CHECK(PushAggregator(layout, 1, 0) == 2);  // 0 % 3
  CHECK(PushAggregator(layout, 1, 1) == 3);
  CHECK(PushAggregator(layout, 1, 4) == 4);
}

TEST_CASE("CombineRows sums rows with equal keys in first-occurrence order") {
  const Tensor values = Tensor::FromVector<float>({1, 2, 10, 20, 100, 200, 3, 4}, {4, 2});
  const std::vector<int64_t> owner = {1, 2, 1, 1};
  const std::vector<int64_t> index = {5, 5, 5, 6};
  const CombinedRows out = CombineRows(owner, index, values);
  CHECK(out.owner == std::vector<int64_t>{1, 2, 1});
  CHECK(out.local_index == std::vector<int64_t>{5, 5, 6});
  REQUIRE(out.values.shape() == TensorShape{3, 2});
  const std::vector<float> got(out.values.data<float>(), out.values.data<float>() + 6);
  CHECK(got == std::vector<float>{101, 202, 10, 20, 3, 4});
}

// The two phases of an aggregated push simulated for 4 ranks on 2 hosts (what the
// ParallaxSparsePush kernel does with AllToAllV): every rank pushes random rows, many
// repeated. Counted: the messages and rows that cross hosts, against the direct push.
TEST_CASE("an aggregated push crosses hosts once per (host, owner) with distinct rows") {
  const HostLayout layout = HostLayout::FromHosts({0, 0, 1, 1});
  const int size = 4;
  constexpr int64_t kRowsPerOwner = 6;
  struct Item {
    int owner;
    int64_t index;
    double value;
  };
  std::mt19937_64 rng(7);
  std::vector<std::vector<Item>> pushes(size);
  std::map<std::pair<int, int64_t>, double> expected;  // (owner, index) -> sum
  for (int r = 0; r < size; ++r) {
    for (int i = 0; i < 40; ++i) {
      Item item{static_cast<int>(rng() % size), static_cast<int64_t>(rng() % kRowsPerOwner),
                static_cast<double>(rng() % 17) - 8};
      pushes[static_cast<size_t>(r)].push_back(item);
      expected[{item.owner, item.index}] += item.value;
    }
  }
  // Direct: each item from its rank to its owner.
  int64_t direct_rows = 0;
  std::set<std::pair<int, int>> direct_messages;
  for (int r = 0; r < size; ++r) {
    for (const Item& item : pushes[static_cast<size_t>(r)]) {
      if (layout.host_of[static_cast<size_t>(r)] != layout.host_of[static_cast<size_t>(item.owner)]) {
        ++direct_rows;
        direct_messages.insert({r, item.owner});
      }
    }
  }
  // Phase 1: to the host's aggregator of the owner.
  std::vector<std::vector<Item>> at(size);
  for (int r = 0; r < size; ++r) {
    for (const Item& item : pushes[static_cast<size_t>(r)]) {
      const int a = PushAggregator(layout, layout.host_of[static_cast<size_t>(r)], item.owner);
      CHECK(layout.host_of[static_cast<size_t>(a)] == layout.host_of[static_cast<size_t>(r)]);
      at[static_cast<size_t>(a)].push_back(item);
    }
  }
  // Phase 2: combine what is not this rank's, send to the owners.
  std::map<std::pair<int, int64_t>, double> received;
  int64_t crossing_rows = 0;
  std::map<std::pair<int, int>, int> messages;  // (source host, owner) -> messages
  for (int a = 0; a < size; ++a) {
    std::vector<int64_t> owner, index;
    std::vector<float> values;
    for (const Item& item : at[static_cast<size_t>(a)]) {
      if (item.owner == a) {
        received[{a, item.index}] += item.value;
        continue;
      }
      owner.push_back(item.owner);
      index.push_back(item.index);
      values.push_back(static_cast<float>(item.value));
    }
    const CombinedRows combined = CombineRows(
        owner, index, Tensor::FromVector<float>(values, {static_cast<int64_t>(values.size()), 1}));
    std::set<int> owners_sent_to;
    for (size_t j = 0; j < combined.owner.size(); ++j) {
      const int o = static_cast<int>(combined.owner[j]);
      CHECK(layout.host_of[static_cast<size_t>(o)] != layout.host_of[static_cast<size_t>(a)]);
      received[{o, combined.local_index[j]}] += combined.values.data<float>()[j];
      ++crossing_rows;
      owners_sent_to.insert(o);
    }
    for (int o : owners_sent_to) ++messages[{layout.host_of[static_cast<size_t>(a)], o}];
  }
  CHECK(received == expected);
  // One message per (host, other-host owner) pair, each distinct row of it once.
  for (const auto& [pair, count] : messages) CHECK(count == 1);
  CHECK(messages.size() <= 4);  // 2 hosts x 2 owners on the other host
  std::set<std::tuple<int, int, int64_t>> distinct;  // (source host, owner, index)
  for (int r = 0; r < size; ++r) {
    for (const Item& item : pushes[static_cast<size_t>(r)]) {
      const int h = layout.host_of[static_cast<size_t>(r)];
      if (h != layout.host_of[static_cast<size_t>(item.owner)]) distinct.insert({h, item.owner, item.index});
    }
  }
  CHECK(crossing_rows == static_cast<int64_t>(distinct.size()));
  INFO("direct: " << direct_rows << " rows in " << direct_messages.size()
                  << " messages; aggregated: " << crossing_rows << " rows in " << messages.size());
  CHECK(crossing_rows < direct_rows);
  CHECK(messages.size() < direct_messages.size());
  WARN("cross-host rows per push: direct " << direct_rows << " in " << direct_messages.size()
                                           << " messages, aggregated " << crossing_rows << " in "
                                           << messages.size());
}

}  // namespace
}  // namespace parallax
