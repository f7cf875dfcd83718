// The job directory: written atomically, never over an existing one without force,
// nothing left behind on failure; hostfile and launch.sh contents.
#include "lib/transform/job_writer.h"

#include <sys/stat.h>

#include <filesystem>

#include <catch2/catch.hpp>

#include "lib/base/file.h"
#include "lib/graph/graph_io.h"
#include "lib/testing/testdata.h"
#include "lib/transform/plan_io.h"

namespace parallax {
namespace {

namespace fs = std::filesystem;

Plan TwoHostPlan() {
  Plan plan;
  plan.source_graph = "graph.pb";
  plan.strategy = "auto";
  for (int r = 0; r < 3; ++r) {
    RankPlacement p;
    p.rank = r;
    p.host = r < 2 ? "node1" : "node-2";
    p.local_rank = r < 2 ? r : 0;
    p.local_size = r < 2 ? 2 : 1;
    p.device = DeviceKind::kCpu;
    p.device_index = p.local_rank;
    plan.ranks.push_back(p);
    plan.rank_devices.push_back("/job:worker/replica:0/task:" + std::to_string(r) + "/device:CPU:0");
  }
  return plan;
}

std::vector<Graph> Graphs(int n) {
  StatusOr<Graph> graph = LoadGraph(testing::RepoPath("lib/analysis/testdata/sgd_mlp.pbtxt"));
  REQUIRE(graph.ok());
  return std::vector<Graph>(static_cast<size_t>(n), *graph);
}

// Entries of `dir` other than `keep` (leftover temporaries).
std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST_CASE("a complete job directory") {
  const std::string root = testing::TempDir();
  const std::string job = root + "/job";
  const Plan plan = TwoHostPlan();
  REQUIRE(WriteJob(job + "/", /*force=*/false, plan, Graphs(3), MpirunOptions{}).ok());
  CHECK(Entries(root) == std::vector<std::string>{"job"});
  CHECK(Entries(job) == std::vector<std::string>{"hostfile", "launch.sh", "plan.yaml", "rank-0.pb",
                                                 "rank-1.pb", "rank-2.pb", "report.txt"});
  CHECK(*ReadFileToString(job + "/hostfile") == "node1 slots=2\nnode-2 slots=1\n");
  struct stat st = {};
  REQUIRE(::stat((job + "/launch.sh").c_str(), &st) == 0);
  CHECK((st.st_mode & S_IXUSR) != 0);
  const std::string script = *ReadFileToString(job + "/launch.sh");
  CHECK(script.starts_with("#!/bin/sh\n"));
  CHECK(script.find("\nexec mpirun -np 3 --hostfile \"$job/hostfile\" --map-by slot --bind-to none "
                    "--tag-output -x PATH -x LD_LIBRARY_PATH $forward $root parallax run \"$job\" "
                    "\"$@\"\n") !=
        std::string::npos);
  StatusOr<Plan> back = LoadPlan(job);
  REQUIRE(back.ok());
  CHECK(back->ranks == plan.ranks);
  StatusOr<Graph> rank1 = LoadGraph(job + "/rank-1.pb");
  REQUIRE(rank1.ok());
  CHECK(rank1->num_nodes() == Graphs(1)[0].num_nodes());
}

TEST_CASE("an existing directory is not replaced without force, and untouched") {
  const std::string root = testing::TempDir();
  const std::string job = root + "/job";
  fs::create_directories(job);
  REQUIRE(WriteFileAtomically(job + "/mine.txt", "keep").ok());
  Status status = WriteJob(job, /*force=*/false, TwoHostPlan(), Graphs(3), MpirunOptions{});
  CHECK(status.code() == StatusCode::kAlreadyExists);
  CHECK(status.message() == job + ": already exists; pass --force to replace it");
  CHECK(Entries(job) == std::vector<std::string>{"mine.txt"});
  CHECK(Entries(root) == std::vector<std::string>{"job"});

  SECTION("with force a job is replaced as a whole") {
    REQUIRE(WriteFileAtomically(job + "/plan.yaml", "# an older plan").ok());
    REQUIRE(WriteJob(job, /*force=*/true, TwoHostPlan(), Graphs(3), MpirunOptions{}).ok());
    CHECK_FALSE(fs::exists(job + "/mine.txt"));
    CHECK(fs::exists(job + "/rank-2.pb"));
    CHECK(Entries(root) == std::vector<std::string>{"job"});
  }
  SECTION("with force a directory that is not a job is refused, untouched") {
    Status refused = WriteJob(job, /*force=*/true, TwoHostPlan(), Graphs(3), MpirunOptions{});
    CHECK(refused.code() == StatusCode::kAlreadyExists);
    CHECK(refused.message() == job + ": exists and is not a Parallax job (it has no plan.yaml); "
                                     "--force replaces only a job directory or an empty one");
    CHECK(Entries(job) == std::vector<std::string>{"mine.txt"});
    CHECK(Entries(root) == std::vector<std::string>{"job"});
  }
  SECTION("with force an empty directory is filled") {
    fs::remove(job + "/mine.txt");
    REQUIRE(WriteJob(job, /*force=*/true, TwoHostPlan(), Graphs(3), MpirunOptions{}).ok());
    CHECK(fs::exists(job + "/plan.yaml"));
  }
  SECTION("a file in the way is refused even with force") {
    REQUIRE(WriteFileAtomically(root + "/file", "x").ok());
    Status refused = WriteJob(root + "/file", /*force=*/true, TwoHostPlan(), Graphs(3), MpirunOptions{});
    CHECK(refused.message() == root + "/file: exists and is not a directory; Parallax replaces only "
                                      "directories (with --force)");
  }
}

TEST_CASE("a failure leaves nothing behind") {
  const std::string root = testing::TempDir();
  const std::string job = root + "/job";
  SECTION("a write fails") {
    StatusOr<std::unique_ptr<JobWriter>> writer = JobWriter::Begin(job, false);
    REQUIRE(writer.ok());
    (*writer)->InjectFailureFor("rank-1.pb");
    std::vector<Graph> graphs = Graphs(3);
    CHECK((*writer)->WriteRankGraph(0, graphs[0]).ok());
    CHECK(fs::exists((*writer)->temp_dir() + "/rank-0.pb"));
    Status failed = (*writer)->WriteRankGraph(1, graphs[1]);
    CHECK(failed.message() == job + "/rank-1.pb: write failed: No space left on device");
    writer->reset();  // the command returns its error: the writer goes away uncommitted
    CHECK(Entries(root).empty());
  }
  SECTION("with force, a failure keeps the old job") {
    fs::create_directories(job);
    REQUIRE(WriteFileAtomically(job + "/plan.yaml", "old").ok());
    {
      StatusOr<std::unique_ptr<JobWriter>> writer = JobWriter::Begin(job, true);
      REQUIRE(writer.ok());
      (*writer)->InjectFailureFor("plan.yaml");
      CHECK_FALSE((*writer)->WriteFile("plan.yaml", "x").ok());
    }
    CHECK(Entries(root) == std::vector<std::string>{"job"});
    CHECK(Entries(job) == std::vector<std::string>{"plan.yaml"});
    CHECK(*ReadFileToString(job + "/plan.yaml", 100) == "old");
  }
  SECTION("the parent directory is missing") {
    StatusOr<std::unique_ptr<JobWriter>> writer = JobWriter::Begin(root + "/no/job", false);
    REQUIRE_FALSE(writer.ok());
    CHECK(writer.status().message() ==
          root + "/no/job: the parent directory " + root + "/no does not exist");
    CHECK(Entries(root).empty());
  }
}

}  // namespace
}  // namespace parallax
