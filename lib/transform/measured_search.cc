#include "lib/transform/measured_search.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lib/transform/strategy.h"

namespace parallax {

namespace {

// A probe this much slower than the best so far ends the climb (noise of short runs).
constexpr double kWorseThanBest = 1.03;

}  // namespace

std::vector<int64_t> PartitionCandidates(int world_size, int hosts, int64_t min_rows) {
  const int64_t most = std::min<int64_t>(int64_t{kMaxPartitionsPerRank} * world_size, min_rows);
  std::set<int64_t> counts;
  for (int64_t p = std::max(1, hosts); p <= most; p *= 2) counts.insert(p);
  for (int k = 1; k <= kMaxPartitionsPerRank && int64_t{k} * world_size <= most; ++k) {
    counts.insert(int64_t{k} * world_size);
  }
  if (counts.empty() && min_rows >= 1) counts.insert(most);
  return {counts.begin(), counts.end()};
}

std::vector<int64_t> BucketLimitCandidates(const TrainingAnalysis& analysis,
                                           const std::vector<VariablePlan>& variables) {
  std::vector<int64_t> limits = {0};
  std::vector<std::vector<GradientBucket>> seen = {{}};
  for (int64_t mib : {1, 2, 4, 8, 16, 25, 64}) {
    std::vector<GradientBucket> buckets = BucketGradients(analysis, variables, mib << 20);
    // Bucket bytes and dtypes aside, a grouping is its lists of variables.
    auto same = [&](const std::vector<GradientBucket>& other) {
      if (other.size() != buckets.size()) return false;
      for (size_t i = 0; i < other.size(); ++i) {
        if (other[i].variables != buckets[i].variables) return false;
      }
      return true;
    };
    if (std::none_of(seen.begin(), seen.end(), same)) {
      limits.push_back(mib << 20);
      seen.push_back(std::move(buckets));
    }
  }
  return limits;
}

StatusOr<MeasuredSearch> SearchByProbes(const std::vector<int64_t>& candidates,
                                        const SearchBudget& budget, const ProbeFn& probe,
                                        const std::function<double()>& now,
                                        const std::function<std::string(int64_t)>& describe) {
  if (candidates.empty()) return InvalidArgumentError("measured search: no candidates");
  MeasuredSearch search;
  search.candidates = candidates;
  search.budget_seconds = budget.seconds;
  search.steps = budget.steps;
  const double start = now();
  double longest = 0;
  std::map<int64_t, double> measured;  // value -> step seconds
  // Runs the probe of candidates[i] unless the budget cannot hold it; false then.
  auto run = [&](size_t i) -> StatusOr<bool> {
    const int64_t value = candidates[i];
    if (measured.count(value) != 0) return true;
    if (!measured.empty() && now() - start + longest > budget.seconds) {
      search.stopped = fmt::format("budget: another probe would end past {:g} s", budget.seconds);
      return false;
    }
    const double began = now();
    StatusOr<double> seconds = probe(value);
    if (!seconds.ok()) return seconds.status().WithPrefix("probe of " + describe(value));
    longest = std::max(longest, now() - began);
    measured[value] = *seconds;
    search.probes.push_back(SearchProbe{value, *seconds});
    return true;
  };
  auto best = [&]() {
    return std::min_element(measured.begin(), measured.end(), [](const auto& a, const auto& b) {
      return a.second < b.second || (a.second == b.second && a.first < b.first);
    });
  };

  // The climb: candidates that roughly double, while the step time improves.
  std::vector<size_t> climbed;
  bool out_of_budget = false;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!climbed.empty() && candidates[i] < 2 * candidates[climbed.back()]) continue;
    PX_ASSIGN_OR_RETURN(const bool ran, run(i));
    if (!ran) {
      out_of_budget = true;
      break;
    }
    climbed.push_back(i);
    if (measured[candidates[i]] > kWorseThanBest * best()->second) {
      search.stopped = fmt::format("{} ran {:.0f}% slower than {}: the climb ended there",
                                   describe(candidates[i]),
                                   100 * (measured[candidates[i]] / best()->second - 1),
                                   describe(best()->first));
      break;
    }
  }
  // The refinement: untried candidates between the best's climbed neighbours.
  if (!out_of_budget) {
    const int64_t best_value = best()->first;
    const size_t at = static_cast<size_t>(
        std::find(candidates.begin(), candidates.end(), best_value) - candidates.begin());
    const auto climbed_at = std::find(climbed.begin(), climbed.end(), at);
    const size_t low = climbed_at == climbed.begin() ? at : *(climbed_at - 1);
    const size_t high = climbed_at + 1 == climbed.end() ? at : *(climbed_at + 1);
    std::vector<size_t> between;
    for (size_t i = low + 1; i < high; ++i) {
      if (i != at) between.push_back(i);
    }
    std::stable_sort(between.begin(), between.end(), [&](size_t a, size_t b) {
      auto distance = [&](size_t i) { return i > at ? i - at : at - i; };
      return distance(a) < distance(b);
    });
    for (size_t i : between) {
      PX_ASSIGN_OR_RETURN(const bool ran, run(i));
      if (!ran) break;
    }
  }
  search.chosen = best()->first;
  search.used_seconds = now() - start;
  if (search.stopped.empty()) search.stopped = "the largest candidate reached";
  return search;
}

}  // namespace parallax
