#include "lib/cluster/rank_layout.h"

#include <set>
#include <utility>

namespace parallax {

// Appends hosts one at a time, checking each; the only code that fills a RankLayout.
class RankLayoutBuilder {
 public:
  explicit RankLayoutBuilder(std::string_view source) : source_(source) {}

  // Adds `host` with `ranks_per_device` ranks per entry of device_indices (in order).
  Status AddHost(const std::string& host, DeviceKind device,
                 const std::vector<int>& device_indices, int ranks_per_device = 1) {
    if (!IsValidHostName(host)) {
      return InvalidArgumentError("{}: {}", source_, HostNameProblem(host));
    }
    if (!names_.insert(host).second) {
      return InvalidArgumentError("{}: host '{}' is listed twice", source_, host);
    }
    if (device_indices.empty()) {
      return InvalidArgumentError("{}: host '{}' has no ranks", source_, host);
    }
    if (device_indices.size() > static_cast<size_t>(kMaxRanksPerHost)) {
      return InvalidArgumentError("{}: host '{}' has {} ranks, over the limit of {}", source_,
                                  host, device_indices.size(), kMaxRanksPerHost);
    }
    std::set<int> seen;
    for (int index : device_indices) {
      if (index < 0) {
        return InvalidArgumentError("{}: host '{}': device index {} is negative", source_,
                                    host, index);
      }
      if (!seen.insert(index).second) {
        return InvalidArgumentError("{}: host '{}': {} {} is listed twice", source_, host,
                                    DeviceKindName(device), index);
      }
    }
    const int local_size = static_cast<int>(device_indices.size()) * ranks_per_device;
    if (local_size > kMaxRanksPerHost) {
      return InvalidArgumentError("{}: host '{}' has {} ranks, over the limit of {}", source_,
                                  host, local_size, kMaxRanksPerHost);
    }
    for (int local = 0; local < local_size; ++local) {
      RankPlacement placement;
      placement.rank = layout_.world_size();
      placement.host = host;
      placement.local_rank = local;
      placement.local_size = local_size;
      placement.device = device;
      placement.device_index = device_indices[static_cast<size_t>(local / ranks_per_device)];
      layout_.ranks_.push_back(std::move(placement));
    }
    layout_.hosts_.push_back(host);
    return Status::Ok();
  }

  StatusOr<RankLayout> Finish() && {
    if (layout_.ranks_.empty()) return InvalidArgumentError("{}: no hosts", source_);
    return std::move(layout_);
  }

 private:
  std::string source_;
  std::set<std::string> names_;
  RankLayout layout_;
};

namespace {

std::vector<int> Iota(int n) {
  std::vector<int> values(static_cast<size_t>(n > 0 ? n : 0));
  for (int i = 0; i < n; ++i) values[static_cast<size_t>(i)] = i;
  return values;
}

}  // namespace

std::vector<int> RankLayout::RanksOnHost(std::string_view host) const {
  std::vector<int> ranks;
  for (const RankPlacement& placement : ranks_) {
    if (placement.host == host) ranks.push_back(placement.rank);
  }
  return ranks;
}

std::string RankLayout::DeviceString(int rank) const {
  return fmt::format("/job:worker/replica:0/task:{}/device:{}:0", rank,
                     DeviceKindName(this->rank(rank).device));
}

std::string RankLayout::Summary() const {
  std::string text = fmt::format("{} rank{} on {} host{}:", world_size(),
                                 world_size() == 1 ? "" : "s", num_hosts(),
                                 num_hosts() == 1 ? "" : "s");
  size_t r = 0;
  for (size_t h = 0; h < hosts_.size(); ++h) {
    const RankPlacement& first = ranks_[r];
    std::set<int> devices;
    for (int local = 0; local < first.local_size; ++local) {
      devices.insert(ranks_[r + static_cast<size_t>(local)].device_index);
    }
    const int shared = static_cast<int>(devices.size());
    if (first.device == DeviceKind::kGpu && shared < first.local_size) {  // ranks_per_gpu
      text += fmt::format("{} {} ({} ranks on {} GPU{}", h == 0 ? "" : ",", first.host,
                          first.local_size, shared, shared == 1 ? "" : "s");
    } else {
      text += fmt::format("{} {} ({} {}{}", h == 0 ? "" : ",", first.host, first.local_size,
                          DeviceKindName(first.device), first.local_size == 1 ? "" : "s");
    }
    if (first.device == DeviceKind::kGpu) {
      for (int local = 0; local < first.local_size; ++local) {
        text += fmt::format("{}{}", local == 0 ? ": " : ",", ranks_[r + local].device_index);
      }
    }
    text += ")";
    r += static_cast<size_t>(first.local_size);
  }
  return text;
}

StatusOr<RankLayout> LayoutRanks(const ClusterSpec& spec) {
  const std::string source = spec.source.empty() ? "cluster spec" : spec.source;
  RankLayoutBuilder builder(source);
  for (const HostSpec& host : spec.hosts) {
    if (host.device == DeviceKind::kCpu && host.cpus > kMaxRanksPerHost) {
      return InvalidArgumentError("{}: host '{}' has {} CPU ranks, over the limit of {}",
                                  source, host.name, host.cpus, kMaxRanksPerHost);
    }
    const bool gpu = host.device == DeviceKind::kGpu;
    PX_RETURN_IF_ERROR(builder.AddHost(host.name, host.device, gpu ? host.gpus : Iota(host.cpus),
                                       gpu ? host.ranks_per_gpu : 1));
  }
  return std::move(builder).Finish();
}

StatusOr<RankLayout> LayoutRanks(const Hostfile& hostfile, DeviceKind device) {
  RankLayoutBuilder builder(hostfile.source.empty() ? "hostfile" : hostfile.source);
  for (const HostfileEntry& host : hostfile.hosts) {
    PX_RETURN_IF_ERROR(builder.AddHost(host.name, device, Iota(host.slots)));
  }
  return std::move(builder).Finish();
}

}  // namespace parallax
