#include "lib/runtime/comm/watchdog.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace parallax {
namespace {

// "rank 3" / "ranks 0, 1"
std::string RankList(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", fmt::join(ranks, ", "));
}

}  // namespace

void CopyTruncated(char* to, size_t capacity, std::string_view from) {
  const size_t n = std::min(capacity - 1, from.size());
  std::memcpy(to, from.data(), n);
  to[n] = '\0';
}

std::string DescribeCollective(std::string_view op, std::string_view label) {
  return label.empty() ? std::string(op) : fmt::format("{}; {}", op, label);
}

TimeoutVerdict DiagnoseTimeout(int64_t number, int rank, const RankState& mine,
                               std::span<const std::optional<RankState>> answers) {
  if (mine.completed >= number) return {TimeoutVerdict::kCompleted, ""};
  std::vector<std::string> missing;
  std::vector<int> waiting, finished;
  for (int r = 0; r < static_cast<int>(answers.size()); ++r) {
    const std::optional<RankState>& state =
        r == rank ? std::optional<RankState>(mine) : answers[static_cast<size_t>(r)];
    if (!state) {
      missing.push_back(fmt::format("rank {} (no answer: it died, or is stuck outside MPI)", r));
    } else if (state->completed >= number) {
      finished.push_back(r);
    } else if (state->in_progress == number) {
      waiting.push_back(r);
    } else if (state->in_progress == 0) {
      missing.push_back(fmt::format("rank {} (busy outside collectives, {} finished)", r,
                                    state->completed));
    } else {
      missing.push_back(fmt::format("rank {} (waiting in collective #{} ({}) instead)", r,
                                    state->in_progress,
                                    DescribeCollective(state->op, state->label)));
    }
  }
  std::string arrived = fmt::format("{} waiting in it", RankList(waiting));
  if (!finished.empty()) arrived += fmt::format(", {} finished it", RankList(finished));
  if (missing.empty()) {
    return {TimeoutVerdict::kEveryoneArrived, fmt::format("every rank has arrived ({})", arrived)};
  }
  return {TimeoutVerdict::kMissing,
          fmt::format("missing {}; {}", fmt::join(missing, ", "), arrived)};
}

}  // namespace parallax
