#include "lib/runtime/comm/gpu_sharing.h"

#include <catch2/catch.hpp>

namespace parallax {
namespace {

TEST_CASE("ranks on distinct GPUs share none") {
  CHECK(DescribeSharedGpus({"a/0000:1b:00.0", "a/0000:1c:00.0", "b/0000:1b:00.0"}) == "");
  CHECK(DescribeSharedGpus({"a/0000:1b:00.0"}) == "");
}

TEST_CASE("ranks sharing a GPU are named, GPU by GPU in the order of their first rank") {
  CHECK(DescribeSharedGpus({"a/0000:1b:00.0", "a/0000:1b:00.0"}) ==
        "ranks 0 and 1 share GPU a/0000:1b:00.0");
  CHECK(DescribeSharedGpus({"b/1", "a/1", "b/1", "a/1", "c/1", "a/1"}) ==
        "ranks 0 and 2 share GPU b/1; ranks 1, 3 and 5 share GPU a/1");
}

}  // namespace
}  // namespace parallax
