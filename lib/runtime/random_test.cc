#include "lib/runtime/random.h"

#include <catch2/catch.hpp>

#include <set>

namespace parallax {
namespace {

std::vector<PhiloxBlock> Draw(RandomStream* stream, int n) {
  std::vector<PhiloxBlock> blocks;
  for (int i = 0; i < n; ++i) blocks.push_back(stream->Next());
  return blocks;
}

TEST_CASE("Philox4x32-10 matches the published known-answer vectors") {
  // Random123's kat_vectors: philox4x32 10 rounds.
  CHECK(Philox({0, 0, 0, 0}, {0, 0}) ==
        PhiloxBlock{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(Philox({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
        PhiloxBlock{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(Philox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
        PhiloxBlock{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("a stream is fixed by its op's seeds, its node (seeds 0) and the stream index") {
  RandomStreams a(/*run_seed=*/5), b(/*run_seed=*/5), c(/*run_seed=*/6);
  CHECK(Draw(a.Stream("drop", 1, 2), 3) == Draw(b.Stream("drop", 1, 2), 3));
  // Seeds given: the run seed and node name do not matter.
  CHECK(Draw(a.Stream("x", 1, 2), 1) == Draw(c.Stream("y", 1, 2), 1));
  // Seeds 0: the run seed and the node name do.
  RandomStreams d(5);
  CHECK(Draw(a.Stream("z", 0, 0), 2) == Draw(d.Stream("z", 0, 0), 2));
  CHECK(Draw(c.Stream("z", 0, 0), 2) != Draw(RandomStreams(5).Stream("z", 0, 0), 2));
  CHECK(Draw(RandomStreams(5).Stream("z", 0, 0), 1) != Draw(RandomStreams(5).Stream("w", 0, 0), 1));
  // Each rank its own stream; index 0 is the stream of a run alone.
  RandomStreams rank1(5);
  rank1.set_stream_index(1);
  CHECK(Draw(rank1.Stream("q", 1, 2), 1) != Draw(RandomStreams(5).Stream("q", 1, 2), 1));
  rank1.set_stream_index(0);
  CHECK(Draw(rank1.Stream("q", 1, 2), 1) == Draw(RandomStreams(5).Stream("q", 1, 2), 1));
}

TEST_CASE("restored positions continue a stream where it stopped") {
  RandomStreams run(3);
  run.set_stream_index(2);
  std::vector<PhiloxBlock> first = Draw(run.Stream("drop", 0, 0), 4);
  const std::map<std::string, uint64_t> saved = run.Positions();
  CHECK(saved == std::map<std::string, uint64_t>{{"drop@2", 4}});
  std::vector<PhiloxBlock> next = Draw(run.Stream("drop", 0, 0), 3);

  RandomStreams resumed(3);
  resumed.Restore(saved);
  resumed.set_stream_index(2);
  CHECK(Draw(resumed.Stream("drop", 0, 0), 3) == next);
  // A restored stream not drawn from again keeps its position in the next checkpoint.
  RandomStreams idle(3);
  idle.Restore(saved);
  CHECK(idle.Positions() == saved);
  // Restore also rewinds streams already made.
  run.Restore(saved);
  CHECK(Draw(run.Stream("drop", 0, 0), 3) == next);
  std::set<PhiloxBlock> distinct(first.begin(), first.end());
  distinct.insert(next.begin(), next.end());
  CHECK(distinct.size() == 7);
}

}  // namespace
}  // namespace parallax
