#include "lib/transform/report.h"

#include <algorithm>
#include <functional>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "lib/base/file.h"
#include "lib/transform/plan_io.h"

namespace parallax {

namespace {

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    out += fmt::format("{}{}", i ? "," : "", shape[i] < 0 ? "?" : std::to_string(shape[i]));
  }
  return out + "]";
}

// "0,4,1,5", at most 8 owners then "... (16 ranks)".
std::string OwnersString(const std::vector<Partition>& partitions) {
  if (partitions.empty()) return "-";
  std::vector<int> owners;
  for (const Partition& p : partitions) {
    if (std::find(owners.begin(), owners.end(), p.owner) == owners.end()) owners.push_back(p.owner);
  }
  std::string out;
  for (size_t i = 0; i < owners.size() && i < 8; ++i) out += fmt::format("{}{}", i ? "," : "", owners[i]);
  if (owners.size() > 8) out += fmt::format(",... ({} ranks)", owners.size());
  return out;
}

// "-" for what has no gradient: slots (a PS variable's are listed as ps) and local state.
std::string Gradient(const VariablePlan& v, bool is_slot) {
  if (is_slot) return "-";
  switch (v.method) {
    case SyncMethod::kLocal: return "-";
    case SyncMethod::kNone: return v.sparse ? "sparse" : "?";
    default: return v.sparse ? "sparse" : "dense";
  }
}

std::string Columns(const std::vector<std::vector<std::string>>& rows,
                    const std::vector<bool>& right_align) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = " ";
    for (size_t c = 0; c < row.size(); ++c) {
      const size_t pad = widths[c] - row[c].size();
      const bool right = c < right_align.size() && right_align[c];
      line += " ";
      if (right) line.append(pad, ' ');
      line += row[c];
      if (!right && c + 1 < row.size()) line.append(pad, ' ');
      if (c + 1 < row.size()) line += " ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string HostsSummary(const Plan& plan) {
  std::vector<std::pair<std::string, int>> hosts;  // in rank order
  for (const RankPlacement& r : plan.ranks) {
    if (hosts.empty() || hosts.back().first != r.host) hosts.emplace_back(r.host, 0);
    ++hosts.back().second;
  }
  std::string kinds;
  bool gpu = false, cpu = false;
  for (const RankPlacement& r : plan.ranks) (r.device == DeviceKind::kGpu ? gpu : cpu) = true;
  kinds = gpu && cpu ? "GPU and CPU" : gpu ? "GPU" : "CPU";
  std::string list;
  for (size_t i = 0; i < hosts.size() && i < 6; ++i) {
    list += fmt::format("{}{} ({})", i ? ", " : "", hosts[i].first, hosts[i].second);
  }
  if (hosts.size() > 6) list += fmt::format(", ... {} more", hosts.size() - 6);
  return fmt::format("{} {} ranks on {} host{}: {}", plan.world_size(), kinds, hosts.size(),
                     hosts.size() == 1 ? "" : "s", list);
}

}  // namespace

std::string RenderReport(const Plan& plan, std::string_view output_dir) {
  std::string out;
  out += fmt::format("parallax transform: {}{}\n", plan.source_graph,
                     output_dir.empty() ? "" : fmt::format(" -> {}", output_dir));
  out += fmt::format("  graph      {} (fingerprint {})\n", plan.source_graph,
                     plan.source_fingerprint.empty() ? "-" : plan.source_fingerprint);
  out += fmt::format("  ranks      {}\n", HostsSummary(plan));
  out += fmt::format("  strategy   {}; gradients {} over the ranks\n", plan.strategy,
                     plan.average ? "averaged" : "summed");
  out += fmt::format("  train op   {}; init op {}\n", plan.train_op.empty() ? "none found" : plan.train_op,
                     plan.init_op.empty() ? "none found" : plan.init_op);
  std::string feeds, fetches;
  for (const std::string& f : plan.feeds) feeds += (feeds.empty() ? "" : ", ") + f;
  for (const std::string& f : plan.fetches) fetches += (fetches.empty() ? "" : ", ") + f;
  out += fmt::format("  feeds      {} (each rank feeds its own shard); fetches {}\n",
                     feeds.empty() ? "none" : feeds, fetches.empty() ? "none" : fetches);
  out += "\n";

  std::vector<std::vector<std::string>> rows;
  rows.push_back({"variable", "shape", "bytes", "gradient", "strategy", "partitions", "owners",
                  "sent/rank/step"});
  for (const VariablePlan& v : plan.variables) {
    const bool is_slot = plan.FindSlotOwner(v.name) != nullptr;
    rows.push_back({v.name, ShapeString(v.shape),
                    v.bytes < 0 ? "?" : HumanBytes(static_cast<uint64_t>(v.bytes)),
                    Gradient(v, is_slot), std::string(SyncMethodName(v.method)),
                    v.partitions.empty() ? "-" : std::to_string(v.partitions.size()),
                    OwnersString(v.partitions),
                    is_slot || v.method == SyncMethod::kLocal || v.method == SyncMethod::kNone
                        ? "-"
                        : HumanBytes(static_cast<uint64_t>(v.bytes_sent_per_rank_per_step))});
  }
  out += Columns(rows, {false, false, true, false, false, true, false, true});

  const PlanTotals totals = ComputeTotals(plan);
  std::string methods;
  for (SyncMethod m : {SyncMethod::kAllReduce, SyncMethod::kParameterServer, SyncMethod::kAllGather,
                       SyncMethod::kDensify, SyncMethod::kLocal, SyncMethod::kNone}) {
    const int n = totals.by_method[static_cast<int>(m)];
    if (n > 0) methods += fmt::format("{}{} {}", methods.empty() ? "" : ", ", n, SyncMethodName(m));
  }
  out += fmt::format("\n  total: {} variables ({}); {} synchronised, {} of parameters; "
                     "each rank sends {} per step\n",
                     totals.variables, methods.empty() ? "none" : methods, totals.synchronised,
                     HumanBytes(static_cast<uint64_t>(totals.parameter_bytes)),
                     HumanBytes(static_cast<uint64_t>(totals.bytes_sent_per_rank_per_step)));

  if (plan.world_size() > 1) {
    out += fmt::format("\nall-reduce: {}", plan.allreduce.algorithm);
    if (plan.allreduce.off_host_bytes_per_step > 0) {
      out += fmt::format(", {} per step leaves each host",
                         HumanBytes(static_cast<uint64_t>(plan.allreduce.off_host_bytes_per_step)));
    }
    out += fmt::format(" ({})\n", plan.allreduce.reason);
  }
  if (!plan.memory.empty()) {
    const auto most = std::max_element(
        plan.memory.begin(), plan.memory.end(),
        [](const RankMemory& a, const RankMemory& b) { return a.total() < b.total(); });
    const RankMemory& m = *most;
    const auto largest = most - plan.memory.begin();
    out += fmt::format("\nmemory: {} on {} by the estimate ({} of variables and slots, {} of "
                       "gradient buffers; activations not counted)\n",
                       HumanBytes(static_cast<uint64_t>(m.total())),
                       plan.memory.size() == 1 ? std::string("the rank")
                                               : fmt::format("rank {}, the most of any rank",
                                                             largest),
                       HumanBytes(static_cast<uint64_t>(m.state_bytes)),
                       HumanBytes(static_cast<uint64_t>(m.gradient_bytes)));
  }

  if (!plan.buckets.empty()) {
    size_t gradients = 0;
    for (const GradientBucket& b : plan.buckets) gradients += b.variables.size();
    out += fmt::format("\ngradient buckets ({} of up to {}; {} gradients, all-reduced as one "
                       "tensor per bucket, in this order):\n",
                       plan.buckets.size(), HumanBytes(static_cast<uint64_t>(plan.bucket_bytes)),
                       gradients);
    for (size_t i = 0; i < plan.buckets.size(); ++i) {
      const GradientBucket& b = plan.buckets[i];
      std::string names;
      for (size_t k = 0; k < b.variables.size(); ++k) {
        if (k == 6) {
          names += fmt::format(", ... {} more", b.variables.size() - 6);
          break;
        }
        names += (k ? ", " : "") + b.variables[k];
      }
      out += fmt::format("  bucket {}: {} {}, {} gradients: {}\n", i, b.dtype,
                         HumanBytes(static_cast<uint64_t>(b.bytes)), b.variables.size(), names);
    }
  }

  // `name` gives a value alone ("8", "1.0 MiB"), `unit` what follows it in the probes.
  auto search = [&](std::string_view what, const std::optional<MeasuredSearch>& found,
                    const std::function<std::string(int64_t)>& name, std::string_view unit) {
    if (!found) return;
    std::string candidates;
    for (int64_t c : found->candidates) candidates += (candidates.empty() ? "" : ", ") + name(c);
    out += fmt::format("\n{}: {}{} chosen from {} probes of {} steps in {:.1f} s (budget {:g} s; "
                       "candidates {}); {}\n",
                       what, name(found->chosen), unit, found->probes.size(), found->steps,
                       found->used_seconds, found->budget_seconds, candidates, found->stopped);
    for (const SearchProbe& probe : found->probes) {
      out += fmt::format("  {:>13}: {:.3f} ms per step{}\n", name(probe.value) + std::string(unit),
                         probe.step_seconds * 1e3, probe.value == found->chosen ? "  <- chosen" : "");
    }
  };
  search("partition search", plan.partition_search,
         [](int64_t p) { return std::to_string(p); }, " partitions");
  search("bucket search", plan.bucket_search, [](int64_t bytes) {
    return bytes == 0 ? std::string("no buckets") : HumanBytes(static_cast<uint64_t>(bytes));
  }, "");

  std::string reasons;
  for (const VariablePlan& v : plan.variables) {
    if (v.method == SyncMethod::kLocal) continue;
    reasons += fmt::format("  {}: {}: {}\n", v.name, SyncMethodName(v.method), v.reason);
  }
  if (!reasons.empty()) out += "\nreasons:\n" + reasons;
  if (!plan.warnings.empty()) {
    out += fmt::format("\nwarnings ({}):\n", plan.warnings.size());
    for (const std::string& w : plan.warnings) out += "  " + w + "\n";
  }
  return out;
}

}  // namespace parallax
