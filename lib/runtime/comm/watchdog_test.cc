// The watchdog's verdict on timed-out collectives, on made-up answers of the other ranks.
#include "lib/runtime/comm/watchdog.h"

#include <vector>

#include <catch2/catch.hpp>

namespace parallax {
namespace {

RankState Waiting(int64_t number, const char* op = "all-reduce") {
  RankState s;
  s.in_progress = number;
  s.completed = number - 1;
  CopyTruncated(s.op, sizeof s.op, op);
  return s;
}

RankState Outside(int64_t completed) {
  RankState s;
  s.completed = completed;
  return s;
}

TEST_CASE("a timed-out collective names the missing ranks and where they are") {
  std::vector<std::optional<RankState>> answers(4);
  answers[1] = Waiting(12);
  answers[2] = Outside(11);
  RankState other = Waiting(11, "broadcast");  // #11 completed here first (a root)
  CopyTruncated(other.label, sizeof other.label, "node 'b'");
  answers[3] = other;
  const TimeoutVerdict verdict = DiagnoseTimeout(12, 0, Waiting(12), answers);
  CHECK(verdict.kind == TimeoutVerdict::kMissing);
  CHECK(verdict.detail ==
        "missing rank 2 (busy outside collectives, 11 finished), rank 3 (waiting in collective "
        "#11 (broadcast; node 'b') instead); ranks 0, 1 waiting in it");
}

TEST_CASE("a rank that does not answer is missing") {
  std::vector<std::optional<RankState>> answers(2);
  const TimeoutVerdict verdict = DiagnoseTimeout(5, 0, Waiting(5), answers);
  CHECK(verdict.kind == TimeoutVerdict::kMissing);
  CHECK(verdict.detail ==
        "missing rank 1 (no answer: it died, or is stuck outside MPI); rank 0 waiting in it");
}

// The deadline passes while rank 1 is stopped; it resumes during the diagnosis.
TEST_CASE("a rank that resumes just at the deadline is judged by where it is now") {
  std::vector<std::optional<RankState>> answers(3);
  answers[1] = Waiting(7);
  SECTION("it arrived and the collective completed here: the job goes on") {
    answers[2] = Waiting(7);
    CHECK(DiagnoseTimeout(7, 0, Outside(7), answers).kind == TimeoutVerdict::kCompleted);
    RankState next = Waiting(8);
    CHECK(DiagnoseTimeout(7, 0, next, answers).kind == TimeoutVerdict::kCompleted);
  }
  SECTION("it arrived and the collective may still complete: not named as missing") {
    answers[2] = Waiting(7);
    const TimeoutVerdict verdict = DiagnoseTimeout(7, 0, Waiting(7), answers);
    CHECK(verdict.kind == TimeoutVerdict::kEveryoneArrived);
    CHECK(verdict.detail == "every rank has arrived (ranks 0, 1, 2 waiting in it)");
  }
  SECTION("it already finished the collective and went on: not 'in another collective'") {
    answers[2] = Waiting(8);
    const TimeoutVerdict verdict = DiagnoseTimeout(7, 0, Waiting(7), answers);
    CHECK(verdict.kind == TimeoutVerdict::kEveryoneArrived);
    CHECK(verdict.detail ==
          "every rank has arrived (ranks 0, 1 waiting in it, rank 2 finished it)");
  }
  SECTION("it answered from before the collective: still missing") {
    answers[2] = Outside(6);
    const TimeoutVerdict verdict = DiagnoseTimeout(7, 0, Waiting(7), answers);
    CHECK(verdict.kind == TimeoutVerdict::kMissing);
    CHECK(verdict.detail ==
          "missing rank 2 (busy outside collectives, 6 finished); ranks 0, 1 waiting in it");
  }
}

TEST_CASE("this rank's own answer slot is ignored: its state is read after the answers") {
  std::vector<std::optional<RankState>> answers(2);
  answers[0] = Outside(0);  // stale
  answers[1] = Waiting(3);
  const TimeoutVerdict verdict = DiagnoseTimeout(3, 0, Waiting(3), answers);
  CHECK(verdict.kind == TimeoutVerdict::kEveryoneArrived);
}

TEST_CASE("labels are truncated to their field") {
  RankState s;
  CopyTruncated(s.op, sizeof s.op, std::string(100, 'x'));
  CHECK(std::string(s.op) == std::string(sizeof s.op - 1, 'x'));
  CHECK(DescribeCollective("barrier", "") == "barrier");
  CHECK(DescribeCollective("barrier", "the end") == "barrier; the end");
}

}  // namespace
}  // namespace parallax
