#include "lib/runtime/checkpoint/job_checkpoint.h"

#include <cstdlib>
#include <filesystem>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "lib/base/file.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/safetensors.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

// Row i of the full [5, 2] variable is {10i, 10i+1}.
Tensor Rows(std::vector<int64_t> rows) {
  std::vector<float> values;
  for (int64_t i : rows) {
    values.push_back(10.0f * static_cast<float>(i));
    values.push_back(10.0f * static_cast<float>(i) + 1);
  }
  return Tensor::FromVector(values, {static_cast<int64_t>(rows.size()), 2});
}

struct RankFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> rows;  // local name -> ranges
};

// `layout`: the job_layout metadata of every file; "" writes none (files written before
// the key existed). `job_size`: 0 for ranks.size() (every rank wrote its file).
void WriteJob(const std::string& dir, int64_t step, const std::vector<RankFile>& ranks,
              std::string_view layout = "", size_t job_size = 0) {
  for (size_t r = 0; r < ranks.size(); ++r) {
    SafetensorsContents contents;
    contents.tensors = ranks[r].tensors;
    contents.metadata = {{"format", "parallax-checkpoint-1"}, {"step", std::to_string(step)},
                         {"job_rank", std::to_string(r)},
                         {"job_size", std::to_string(job_size > 0 ? job_size : ranks.size())}};
    if (!layout.empty()) contents.metadata["job_layout"] = std::string(layout);
    for (const auto& [name, ranges] : ranks[r].rows) contents.metadata["rows:" + name] = ranges;
    const std::string rank_dir = fmt::format("{}/rank-{}", dir, r);
    std::filesystem::create_directories(rank_dir);
    REQUIRE(WriteSafetensors(CheckpointPath(rank_dir, step), contents).ok());
  }
}

// 3 ranks: V's rows 0-2 on rank 0, 3-4 on rank 1, 2-3 and 4-5 on rank 2; rank 1 holds
// no slot rows (empty ranges, no tensor); b replicated.
std::vector<RankFile> ThreeRanks() {
  const Tensor b = Tensor::FromVector<float>({7, 8}, {2});
  return {
      {{{"V/parallax/local", Rows({0, 1})}, {"S/parallax/local", Rows({0, 1, 2})}, {"b", b}},
       {{"V/parallax/local", "0-2"}, {"S/parallax/local", "0-3"}}},
      {{{"V/parallax/local", Rows({3})}, {"b", b}},
       {{"V/parallax/local", "3-4"}, {"S/parallax/local", ""}}},
      {{{"V/parallax/local", Rows({2, 4})}, {"S/parallax/local", Rows({3, 4})}, {"b", b}},
       {{"V/parallax/local", "2-3,4-5"}, {"S/parallax/local", "3-5"}}},
  };
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.bytes() == b.bytes() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

TEST_CASE("ParseRowRanges") {
  auto ranges = ParseRowRanges("0-500,700-1000");
  REQUIRE(ranges.ok());
  CHECK(*ranges == std::vector<RowRange>{{0, 500}, {700, 1000}});
  CHECK(FormatRowRanges(*ranges) == "0-500,700-1000");
  CHECK(ParseRowRanges("")->empty());
  CHECK(ParseRowRanges("500-200").status().message() ==
        "row ranges '500-200': '500-200' is not BEGIN-END with 0 <= BEGIN < END");
  CHECK(ParseRowRanges("1-2\n3").status().message() ==
        "row ranges '1-2\\x0a3': '1-2\\x0a3' is not BEGIN-END with 0 <= BEGIN < END");
  CHECK(!ParseRowRanges("1-2,").ok());
  CHECK(!ParseRowRanges("x").ok());
}

TEST_CASE("SliceRows") {
  auto sliced = SliceRows(Rows({0, 1, 2, 3, 4}), std::vector<RowRange>{{3, 5}, {0, 1}});
  REQUIRE(sliced.ok());
  CHECK(SameBytes(*sliced, Rows({3, 4, 0})));
  CHECK(SliceRows(Rows({0, 1}), std::vector<RowRange>{{1, 3}}).status().message() ==
        "rows 1-3 are outside the tensor's 2 rows");
}

TEST_CASE("ReadJobCheckpoint reassembles partitioned variables") {
  const std::string dir = testing::TempDir();
  WriteJob(dir, 10, ThreeRanks());
  WriteJob(dir, 20, {ThreeRanks()[0]});  // only rank 0 wrote 20 (as if the others died)
  // rank 0's newest file (step 20) says 1 rank: step 20 is complete for that job.
  auto newest = NewestCompleteJobStep(dir);
  REQUIRE(newest.ok());
  CHECK(newest->value() == JobStep{20, 1});

  auto job = ReadJobCheckpoint(dir, 10);
  REQUIRE(job.ok());
  CHECK(job->job_size == 3);
  CHECK(job->files.size() == 3);
  CHECK(job->partitioned == std::set<std::string>{"S", "V"});
  CHECK(job->variables.size() == 3);
  CHECK(SameBytes(job->variables.at("V"), Rows({0, 1, 2, 3, 4})));
  CHECK(SameBytes(job->variables.at("S"), Rows({0, 1, 2, 3, 4})));
  CHECK(SameBytes(job->variables.at("b"), Tensor::FromVector<float>({7, 8}, {2})));
}

TEST_CASE("each step is judged complete by its own job size") {
  const std::string dir = testing::TempDir();
  const auto three = ThreeRanks();
  // A 2-rank job wrote steps 10 and 20; resumed on 3 ranks, it wrote step 30 on ranks 0
  // and 1 only (rank 2 died): 30 is incomplete, 20 is the newest complete step, on 2 ranks.
  WriteJob(dir, 10, {three[0], three[1]});
  WriteJob(dir, 20, {three[0], three[1]});
  WriteJob(dir, 30, {three[0], three[1]}, "", 3);
  auto steps = FindCompleteJobSteps(dir);
  REQUIRE(steps.ok());
  CHECK(steps->complete == std::vector<JobStep>{{20, 2}, {10, 2}});
  REQUIRE(steps->incomplete.size() == 1);
  CHECK(steps->incomplete[0].step == 30);
  CHECK(steps->incomplete[0].job_size == 3);
  CHECK(steps->incomplete[0].problem == dir + "/rank-2/checkpoint-30.safetensors is missing");
  CHECK(NewestCompleteJobStep(dir)->value() == JobStep{20, 2});
  CHECK(JobSizeOfStep(dir, 30).value() == 3);
  // Once the 3-rank job completes a step, that one is the newest.
  WriteJob(dir, 40, three);
  CHECK(NewestCompleteJobStep(dir)->value() == JobStep{40, 3});
  // A rank 0 file whose header cannot be read makes its step incomplete, not an error.
  REQUIRE(WriteFileAtomically(CheckpointPath(dir + "/rank-0", 50), "garbage").ok());
  CHECK(NewestCompleteJobStep(dir)->value() == JobStep{40, 3});
  std::filesystem::remove_all(dir + "/rank-1");
  std::filesystem::remove_all(dir + "/rank-2");
  CHECK(NewestCompleteJobStep(dir).status().message() ==
        dir + ": no checkpoint step is complete (the newest: " + dir +
            "/rank-0/checkpoint-50.safetensors: truncated safetensors file: 7 bytes, the "
            "header length alone takes 8)");
}

TEST_CASE("ReadJobCheckpoint errors") {
  const std::string dir = testing::TempDir();
  SECTION("a missing rank file") {
    WriteJob(dir, 10, ThreeRanks());
    std::filesystem::remove(dir + "/rank-1/checkpoint-10.safetensors");
    CHECK(ReadJobCheckpoint(dir, 10).status().message() ==
          dir + "/rank-1/checkpoint-10.safetensors: missing: the job checkpoint of step 10 was "
                "written by 3 ranks (rank 0's job_size) but rank 1 has no file");
    CHECK(NewestCompleteJobStep(dir).status().message() ==
          dir + ": no checkpoint step is on every one of the 3 ranks that wrote it (" + dir +
              "/rank-1/checkpoint-10.safetensors is missing)");
  }
  SECTION("overlapping rows") {
    auto ranks = ThreeRanks();
    ranks[1].tensors["V/parallax/local"] = Rows({1});
    ranks[1].rows["V/parallax/local"] = "1-2";
    WriteJob(dir, 10, ranks);
    CHECK(ReadJobCheckpoint(dir, 10).status().message() ==
          dir + "/rank-1/checkpoint-10.safetensors: variable 'V/parallax/local': rows 1-2 are "
                "also in " + dir + "/rank-0/checkpoint-10.safetensors");
  }
  SECTION("a gap") {
    auto ranks = ThreeRanks();
    ranks[1].tensors.erase("V/parallax/local");
    ranks[1].rows.erase("V/parallax/local");
    WriteJob(dir, 10, ranks);
    CHECK(ReadJobCheckpoint(dir, 10).status().message() ==
          dir + ": variable 'V': no file of step 10 holds rows 3-4 (the row ranges have a gap)");
  }
  SECTION("rows that disagree in dtype") {
    auto ranks = ThreeRanks();
    ranks[1].tensors["V/parallax/local"] = Tensor::FromVector<double>({30, 31}, {1, 2});
    WriteJob(dir, 10, ranks);
    CHECK(ReadJobCheckpoint(dir, 10).status().message() ==
          dir + "/rank-1/checkpoint-10.safetensors: variable 'V/parallax/local' is F64 with rows "
                "[2], " + dir + "/rank-0/checkpoint-10.safetensors holds F32 with rows [2]");
  }
  SECTION("a tensor that does not hold its ranges") {
    auto ranks = ThreeRanks();
    ranks[2].rows["V/parallax/local"] = "2-3";
    WriteJob(dir, 10, ranks);
    CHECK(ReadJobCheckpoint(dir, 10).status().message() ==
          dir + "/rank-2/checkpoint-10.safetensors: variable 'V/parallax/local' is [2,2], its "
                "row ranges '2-3' hold 1 rows");
  }
}

// ThreeRanks() as the replicated-once layout writes it: `b` (replicated) in rank 0's file
// only; `m` (per-rank state) in every file, each rank's own value.
std::vector<RankFile> ThreeRanksReplicatedOnce() {
  std::vector<RankFile> ranks = ThreeRanks();
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (r > 0) ranks[r].tensors.erase("b");
    ranks[r].tensors["m"] = Tensor::Scalar<float>(static_cast<float>(r));
  }
  return ranks;
}

TEST_CASE("ReadRankFile: a replicated-once rank file takes what it lacks from rank 0's") {
  const std::string dir = testing::TempDir();
  WriteJob(dir, 10, ThreeRanksReplicatedOnce(), "replicated-once");
  const std::string rank0 = dir + "/rank-0/checkpoint-10.safetensors";
  const std::string rank2 = dir + "/rank-2/checkpoint-10.safetensors";

  auto file = ReadRankFile(rank2);
  REQUIRE(file.ok());
  CHECK(file->source == rank2 + " (replicated tensors: " + rank0 + ")");
  CHECK(file->contents.metadata.at("job_rank") == "2");
  CHECK(SameBytes(file->contents.tensors.at("b"), Tensor::FromVector<float>({7, 8}, {2})));
  // Its own per-rank state and partitions, not rank 0's; rank 1 holds no S rows and gets none.
  CHECK(file->contents.tensors.at("m").data<float>()[0] == 2.0f);
  CHECK(SameBytes(file->contents.tensors.at("V/parallax/local"), Rows({2, 4})));
  auto rank1 = ReadRankFile(dir + "/rank-1/checkpoint-10.safetensors");
  REQUIRE(rank1.ok());
  CHECK(!rank1->contents.tensors.contains("S/parallax/local"));
  CHECK(rank1->contents.tensors.size() == 3);  // V rows, m; b from rank 0

  // Rank 0's file, and files that hold everything, are read as they are.
  auto first = ReadRankFile(rank0);
  REQUIRE(first.ok());
  CHECK(first->source == rank0);
  CHECK(first->contents.tensors.size() == 4);
  const std::string old_dir = testing::TempDir() + "/old";
  WriteJob(old_dir, 10, ThreeRanks());
  auto old = ReadRankFile(old_dir + "/rank-1/checkpoint-10.safetensors");
  REQUIRE(old.ok());
  CHECK(old->source == old_dir + "/rank-1/checkpoint-10.safetensors");
  CHECK(old->contents.tensors.size() == 2);

  // The whole job reads the same in both layouts.
  auto job = ReadJobCheckpoint(dir, 10);
  REQUIRE(job.ok());
  CHECK(job->partitioned == std::set<std::string>{"S", "V"});
  CHECK(SameBytes(job->variables.at("V"), Rows({0, 1, 2, 3, 4})));
  CHECK(SameBytes(job->variables.at("b"), Tensor::FromVector<float>({7, 8}, {2})));
  CHECK(job->variables.at("m").data<float>()[0] == 0.0f);
}

TEST_CASE("ReadRankFile errors") {
  const std::string dir = testing::TempDir();
  const std::string rank0 = dir + "/rank-0/checkpoint-10.safetensors";
  const std::string rank1 = dir + "/rank-1/checkpoint-10.safetensors";
  SECTION("rank 0's file missing") {
    WriteJob(dir, 10, ThreeRanksReplicatedOnce(), "replicated-once");
    std::filesystem::remove(rank0);
    CHECK(ReadRankFile(rank1).status().message() ==
          rank0 + ": missing: " + rank1 + " (job_layout 'replicated-once') leaves its "
                  "replicated tensors to rank 0's file of the same step");
  }
  SECTION("rank 0's file of another job") {
    WriteJob(dir, 10, ThreeRanksReplicatedOnce(), "replicated-once");
    WriteJob(dir, 10, {ThreeRanks()[0], ThreeRanks()[1]}, "replicated-once");  // 2 ranks
    CHECK(ReadRankFile(dir + "/rank-2/checkpoint-10.safetensors").status().message() ==
          rank0 + ": __metadata__ 'job_rank' 0 and 'job_size' 2: not rank 0 of the 3-rank job "
                  "that wrote " + dir + "/rank-2/checkpoint-10.safetensors");
  }
  SECTION("an unknown layout") {
    WriteJob(dir, 10, ThreeRanks(), "sharded");
    const std::string message =
        ": __metadata__ 'job_layout' is 'sharded', expected 'replicated-once' or 'every-rank'";
    CHECK(ReadRankFile(rank1).status().message() == rank1 + message);
    CHECK(ReadJobCheckpoint(dir, 10).status().message() == rank0 + message);
  }
}

}  // namespace
}  // namespace parallax
