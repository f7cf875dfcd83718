// The verdict of MpiCommunicator's watchdog on a collective that timed out, kept apart
// from MPI so that it can be tested on made-up answers (watchdog_test.cc).
//
// Terms:
//  - *collective #N*: the N-th call on a communicator, the same N on every rank.
//  - a rank's *state* (RankState): the collective it waits in (#N, 0 when none), how many
//    it has finished, and the operation and label of the one in progress. A timed-out
//    rank asks every other rank for its state (mpi_communicator.h); a rank that does not
//    answer in time has none.
//  - a rank has *arrived* in #N when it waits in #N or has finished it (finished #N
//    while this rank still waits: #N completed there first, as a broadcast's root does);
//    it is *missing* otherwise: busy outside collectives, waiting in another collective,
//    or silent.
//
// The verdict is taken after the answers came in, with this rank's own state read again
// then, so that a rank that resumes just at the deadline is judged by where it is now:
//  - kCompleted: #N finished on this rank meanwhile; the job goes on (the watchdog says
//    so in a warning line);
//  - kEveryoneArrived: no rank is missing; #N may still complete (the last rank arrived
//    during the diagnosis), so the watchdog waits once more before it ends the job with
//    `every rank has arrived ... (MPI made no progress)`;
//  - kMissing: the message names the missing ranks and where they are, and the ranks that
//    wait in #N.
#ifndef PARALLAX_LIB_RUNTIME_COMM_WATCHDOG_H_
#define PARALLAX_LIB_RUNTIME_COMM_WATCHDOG_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace parallax {

// What a watchdog tells another rank's watchdog about its rank (sent as raw bytes
// between processes of one build).
struct RankState {
  int64_t asked = 0;        // the #N of the question it answers
  int64_t in_progress = 0;  // the collective it waits in (#N), 0 when none
  int64_t completed = 0;    // collectives it has finished
  char op[24] = {};
  char label[216] = {};
};

// Copies `from` into the fixed-size field `to` (truncated, NUL-terminated).
void CopyTruncated(char* to, size_t capacity, std::string_view from);

// "all-reduce; node 'w/parallax/allreduce' ..." (the label after the operation, if any).
std::string DescribeCollective(std::string_view op, std::string_view label);

struct TimeoutVerdict {
  enum Kind { kCompleted, kEveryoneArrived, kMissing };
  Kind kind = kMissing;
  // kMissing: "missing rank 2 (busy outside collectives, 11 finished); ranks 0, 1 waiting
  // in it"; kEveryoneArrived: "every rank has arrived (ranks 0, 1 waiting in it, rank 2
  // finished it)".
  std::string detail;
};

// The verdict on collective #`number`, which timed out on this rank: `mine` is this
// rank's state read after the answers came in, `answers` every rank's answer by rank
// (this rank's own entry is ignored; nullopt: no answer).
TimeoutVerdict DiagnoseTimeout(int64_t number, int rank, const RankState& mine,
                               std::span<const std::optional<RankState>> answers);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_COMM_WATCHDOG_H_
