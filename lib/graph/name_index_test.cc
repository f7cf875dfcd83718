#include "lib/graph/name_index.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace parallax {
namespace {

TEST_CASE("NameIndex finds, rejects duplicates, erases and grows") {
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i) names.push_back("layer_" + std::to_string(i) + "/MatMul");
  const NameIndex::NameOf name_of = [&](int32_t id) {
    return std::string_view(names[static_cast<size_t>(id)]);
  };
  NameIndex index;
  CHECK(index.Find("absent", name_of) == NameIndex::kAbsent);
  for (int32_t i = 0; i < 5000; ++i) REQUIRE(index.Insert(names[i], i, name_of) == NameIndex::kAbsent);
  for (int32_t i = 0; i < 5000; ++i) REQUIRE(index.Find(names[i], name_of) == i);
  CHECK(index.Insert(names[42], 4242, name_of) == 42);  // duplicate: reports the holder
  CHECK(index.Find(names[42], name_of) == 42);
  for (int32_t i = 0; i < 5000; i += 2) index.Erase(names[i], name_of);
  for (int32_t i = 0; i < 5000; ++i) CHECK(index.Find(names[i], name_of) == (i % 2 ? i : NameIndex::kAbsent));
  // Reuse erased names (tombstones) many times over: the table must not fill up.
  for (int round = 0; round < 20; ++round) {
    for (int32_t i = 0; i < 5000; i += 2) REQUIRE(index.Insert(names[i], i, name_of) == NameIndex::kAbsent);
    for (int32_t i = 0; i < 5000; i += 2) index.Erase(names[i], name_of);
  }
  CHECK(index.Find(names[1], name_of) == 1);
  CHECK(index.bytes() <= 16 * 5000 * 2);
}

}  // namespace
}  // namespace parallax
