#include "lib/runtime/kernels/cpu/push_aggregation.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

namespace parallax {
namespace {

template <typename T>
void AddRow(char* dst, const char* src, int64_t elements) {
  T* d = reinterpret_cast<T*>(dst);
  const T* s = reinterpret_cast<const T*>(src);
  for (int64_t i = 0; i < elements; ++i) d[i] += s[i];
}

}  // namespace

HostLayout HostLayout::FromHosts(std::vector<int> host_of) {
  HostLayout layout;
  int hosts = 0;
  for (int h : host_of) hosts = std::max(hosts, h + 1);
  layout.ranks.resize(static_cast<size_t>(hosts));
  for (size_t r = 0; r < host_of.size(); ++r) {
    layout.ranks[static_cast<size_t>(host_of[r])].push_back(static_cast<int>(r));
  }
  layout.host_of = std::move(host_of);
  return layout;
}

HostLayout HostLayout::Of(const Communicator& communicator) {
  std::vector<int> host_of(static_cast<size_t>(communicator.size()));
  for (int r = 0; r < communicator.size(); ++r) host_of[static_cast<size_t>(r)] = communicator.host_of(r);
  return FromHosts(std::move(host_of));
}

int PushAggregator(const HostLayout& layout, int host, int owner) {
  if (layout.host_of[static_cast<size_t>(owner)] == host) return owner;
  const std::vector<int>& ranks = layout.ranks[static_cast<size_t>(host)];
  return ranks[static_cast<size_t>(owner) % ranks.size()];
}

CombinedRows CombineRows(std::span<const int64_t> owner, std::span<const int64_t> local_index,
                         const Tensor& values) {
  const int64_t n = static_cast<int64_t>(owner.size());
  const int64_t row_bytes = n == 0 ? 0 : static_cast<int64_t>(values.bytes()) / n;
  const int64_t row_elements = n == 0 ? 0 : values.num_elements() / n;
  const DataType dtype = values.dtype();
  const bool summable = dtype == tensorflow::DT_FLOAT || dtype == tensorflow::DT_DOUBLE ||
                        dtype == tensorflow::DT_INT32 || dtype == tensorflow::DT_INT64;
  CombinedRows out;
  std::vector<int64_t> slot_of(static_cast<size_t>(n));  // per input row: its output row
  std::map<std::pair<int64_t, int64_t>, int64_t> slots;
  for (int64_t i = 0; i < n; ++i) {
    const auto key = std::make_pair(owner[static_cast<size_t>(i)], local_index[static_cast<size_t>(i)]);
    auto [it, inserted] = summable ? slots.emplace(key, static_cast<int64_t>(out.owner.size()))
                                   : std::make_pair(slots.end(), true);
    if (inserted) {
      slot_of[static_cast<size_t>(i)] = static_cast<int64_t>(out.owner.size());
      out.owner.push_back(key.first);
      out.local_index.push_back(key.second);
    } else {
      slot_of[static_cast<size_t>(i)] = it->second;
    }
  }
  TensorShape shape = values.shape();
  if (shape.rank() == 0) shape = TensorShape{0};
  shape.set_dim(0, static_cast<int64_t>(out.owner.size()));
  out.values = Tensor(dtype, shape);
  char* dst = static_cast<char*>(out.values.raw_data());
  const char* src = static_cast<const char*>(values.raw_data());
  std::vector<bool> written(out.owner.size(), false);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t slot = slot_of[static_cast<size_t>(i)];
    char* row = dst + slot * row_bytes;
    const char* in = src + i * row_bytes;
    if (!written[static_cast<size_t>(slot)]) {
      std::memcpy(row, in, static_cast<size_t>(row_bytes));
      written[static_cast<size_t>(slot)] = true;
      continue;
    }
    switch (dtype) {
      case tensorflow::DT_FLOAT: AddRow<float>(row, in, row_elements); break;
      case tensorflow::DT_DOUBLE: AddRow<double>(row, in, row_elements); break;
      case tensorflow::DT_INT32: AddRow<int32_t>(row, in, row_elements); break;
      default: AddRow<int64_t>(row, in, row_elements); break;
    }
  }
  return out;
}

}  // namespace parallax
