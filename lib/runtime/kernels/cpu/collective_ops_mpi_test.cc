// Multi-process test of the communication kernels: a main() run under mpirun
// (lib/runtime/comm/testing/mpirun_test.sh runs it with 2, 3 and 4 ranks). Each rank runs
// one-node graphs through the executor on a CPU device that carries the job's
// communicator, and compares the outputs with references computed from every rank's
// inputs (each rank can rebuild any rank's inputs from the seed). Sparse pull and push
// run over P = 1, 2, 3 partitions (one layout with an empty partition), owned round-robin
// from rank 0 or from the last rank (so some ranks own nothing), with duplicate ids and a
// rank that asks for / pushes nothing; pushing and then pulling every row must give what
// one device computes.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "lib/graph/graph.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/comm/communicator.h"
#include "lib/runtime/comm/testing/mpi_test_report.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/testing/op_test_util.h"

namespace parallax {
namespace {

using testing::AttrMap;
using testing::CompareTensors;
using testing::TestReport;
using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;

// Runs `op` once on `device` (inputs fed through placeholders), fetching `num_outputs`.
StatusOr<std::vector<Tensor>> RunOp(Device& device, const std::string& op,
                                    const std::vector<Tensor>& inputs, const AttrMap& attrs,
                                    int num_outputs = 1) {
  Graph graph;
  graph.set_source("collective-test");
  RunRequest request;
  std::vector<OutputRef> edges;
  for (size_t i = 0; i < inputs.size(); ++i) {
    NodeSpec feed;
    feed.name = "input_" + std::to_string(i);
    feed.op = "Placeholder";
    feed.attrs["dtype"] = TypeAttr(inputs[i].dtype());
    PX_ASSIGN_OR_RETURN(NodeId id, graph.AddNode(feed));
    edges.push_back(OutputRef{id, 0});
    request.feeds.push_back({feed.name, inputs[i]});
  }
  NodeSpec spec;
  spec.name = "op";
  spec.op = op;
  spec.inputs = edges;
  spec.attrs = attrs;
  PX_RETURN_IF_ERROR(graph.AddNode(spec).status());
  for (int k = 0; k < num_outputs; ++k) request.fetches.push_back("op:" + std::to_string(k));
  Executor executor(graph, device);
  return executor.Run(request);
}

std::mt19937_64 Rng(uint64_t seed, int rank) {
  return std::mt19937_64(seed * 7919 + static_cast<uint64_t>(rank));
}

// Rank `rank`'s dense input for test `seed`: small integers (exact in every dtype, so
// sums in any order are exact too).
Tensor DenseInput(DataType dtype, const TensorShape& shape, int rank, uint64_t seed) {
  Tensor t(dtype, shape);
  std::mt19937_64 rng = Rng(seed, rank);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    const int64_t v = static_cast<int64_t>(rng() % 41) - 20;
    switch (dtype) {
      case DT_FLOAT: t.data<float>()[i] = static_cast<float>(v) * 0.25f; break;
      case DT_DOUBLE: t.data<double>()[i] = static_cast<double>(v) * 0.125; break;
      case DT_INT32: t.data<int32_t>()[i] = static_cast<int32_t>(v); break;
      default: t.data<int64_t>()[i] = v; break;
    }
  }
  return t;
}

double Get(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DT_FLOAT: return t.data<float>()[i];
    case DT_DOUBLE: return t.data<double>()[i];
    case DT_INT32: return t.data<int32_t>()[i];
    default: return static_cast<double>(t.data<int64_t>()[i]);
  }
}
void Set(Tensor& t, int64_t i, double v) {
  switch (t.dtype()) {
    case DT_FLOAT: t.data<float>()[i] = static_cast<float>(v); break;
    case DT_DOUBLE: t.data<double>()[i] = v; break;
    case DT_INT32: t.data<int32_t>()[i] = static_cast<int32_t>(v); break;
    default: t.data<int64_t>()[i] = static_cast<int64_t>(v); break;
  }
}

std::vector<Tensor> V2Inputs(const Tensor& input, int64_t group_size, int32_t instance_key) {
  return {input, Tensor::Scalar<int32_t>(static_cast<int32_t>(group_size)),
          Tensor::Scalar<int32_t>(1), Tensor::Scalar<int32_t>(instance_key)};
}

void TestReduce(Device& device, Communicator& comm, TestReport& report) {
  const int size = comm.size();
  uint64_t seed = 10;
  for (DataType dtype : {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}) {
    for (const TensorShape& shape : {TensorShape{5, 7}, TensorShape{0}, TensorShape{}}) {
      for (const auto& [merge, final_op] : std::vector<std::pair<std::string, std::string>>{
               {"Add", "Id"}, {"Add", "Div"}, {"Min", "Id"}, {"Max", "Id"}}) {
        ++seed;
        Tensor expected(dtype, shape);
        for (int r = 0; r < size; ++r) {
          const Tensor in = DenseInput(dtype, shape, r, seed);
          for (int64_t i = 0; i < in.num_elements(); ++i) {
            const double x = Get(in, i);
            const double e = r == 0 ? x : Get(expected, i);
            Set(expected, i, r == 0 ? x : merge == "Add" ? e + x : merge == "Min" ? std::min(e, x)
                                                                              : std::max(e, x));
          }
        }
        if (final_op == "Div") {
          for (int64_t i = 0; i < expected.num_elements(); ++i) {
            const double sum = Get(expected, i);
            const bool is_float = dtype == DT_FLOAT || dtype == DT_DOUBLE;
            // floats: sum / n in the dtype; integers: truncating division
            if (dtype == DT_FLOAT) {
              Set(expected, i, static_cast<float>(sum) / static_cast<float>(size));
            } else {
              Set(expected, i, is_float ? sum / size : std::trunc(sum / size));
            }
          }
        }
        const std::string name =
            fmt::format("CollectiveReduceV2 {}/{} {} {}", merge, final_op,
                        DataTypeShortName(dtype), shape.DebugString());
        const AttrMap attrs = {{"T", TypeAttr(dtype)},
                               {"merge_op", StringAttr(merge)},
                               {"final_op", StringAttr(final_op)}};
        StatusOr<std::vector<Tensor>> out = RunOp(
            device, "CollectiveReduceV2",
            V2Inputs(DenseInput(dtype, shape, comm.rank(), seed), size, 5), attrs);
        if (!report.ExpectOk(out.status(), name)) continue;
        report.Expect(TensorsBitEqual((*out)[0], expected), name, (*out)[0].DebugString() +
                                                                     " expected " +
                                                                     expected.DebugString());
      }
    }
  }
  // A group that is not the job: the same error on every rank, nothing sent.
  StatusOr<std::vector<Tensor>> out =
      RunOp(device, "CollectiveReduceV2",
            V2Inputs(Tensor::Scalar<float>(1), size + 1, 6),
            {{"T", TypeAttr(DT_FLOAT)},
             {"merge_op", StringAttr("Add")},
             {"final_op", StringAttr("Id")}});
  report.ExpectError(out.status(),
                     fmt::format("node 'op' (CollectiveReduceV2): group_size is {}, but the job "
                                 "has {} ranks (collectives over a subset of the ranks are not "
                                 "supported)",
                                 size + 1, size),
                     "CollectiveReduceV2 with a group_size that is not the job's");
}

void TestGather(Device& device, Communicator& comm, TestReport& report) {
  const int size = comm.size();
  for (DataType dtype : {DT_FLOAT, DT_INT64}) {
    for (int pattern = 0; pattern < 2; ++pattern) {
      auto rows_of = [&](int r) -> int64_t { return pattern == 0 ? r % 3 : 2 * r + 1; };
      const uint64_t seed = 100 + static_cast<uint64_t>(pattern);
      int64_t total = 0;
      for (int r = 0; r < size; ++r) total += rows_of(r);
      Tensor expected(dtype, TensorShape{total, 2});
      int64_t at = 0;
      for (int r = 0; r < size; ++r) {
        const Tensor in = DenseInput(dtype, TensorShape{rows_of(r), 2}, r, seed);
        for (int64_t i = 0; i < in.num_elements(); ++i) Set(expected, at++, Get(in, i));
      }
      const std::string name =
          fmt::format("CollectiveGatherV2 {} pattern {}", DataTypeShortName(dtype), pattern);
      StatusOr<std::vector<Tensor>> out = RunOp(
          device, "CollectiveGatherV2",
          V2Inputs(DenseInput(dtype, TensorShape{rows_of(comm.rank()), 2}, comm.rank(), seed),
                   size, 8),
          {{"T", TypeAttr(dtype)}});
      if (!report.ExpectOk(out.status(), name)) continue;
      report.Expect(TensorsBitEqual((*out)[0], expected), name, (*out)[0].DebugString());
    }
  }
}

void TestBroadcast(Device& device, Communicator& comm, TestReport& report) {
  const int size = comm.size();
  for (int root : {0, size - 1}) {
    const uint64_t seed = 200 + static_cast<uint64_t>(root);
    const Tensor expected = DenseInput(DT_FLOAT, TensorShape{4, 3}, root, seed);
    const AttrMap attrs = {{"T", TypeAttr(DT_FLOAT)},
                           {"root_rank", IntAttr(root)},
                           {"group_size", IntAttr(size)},
                           {"instance_key", IntAttr(9)}};
    const Tensor input = DenseInput(DT_FLOAT, TensorShape{4, 3}, comm.rank(), seed);
    const Tensor before = input.DeepCopy();
    const std::string name = fmt::format("ParallaxBroadcast root {}", root);
    StatusOr<std::vector<Tensor>> out = RunOp(device, "ParallaxBroadcast", {input}, attrs);
    if (!report.ExpectOk(out.status(), name)) continue;
    report.Expect(TensorsBitEqual((*out)[0], expected), name);
    report.Expect(TensorsBitEqual(input, before), name + " leaves the input alone");
  }
}

// ---- Partitioned variables ----

constexpr int64_t kRows = 10;
constexpr int64_t kWidth = 3;

// The whole variable: row i is (10 i, 10 i + 1, 10 i + 2).
float TableValue(int64_t row, int64_t column) { return static_cast<float>(row * 10 + column); }

struct Layout {
  std::string name;
  std::vector<int64_t> splits;
  std::vector<int64_t> owners;

  int PartitionOf(int64_t row) const {
    return static_cast<int>(std::upper_bound(splits.begin(), splits.end(), row) - splits.begin() -
                            1);
  }
  // Rows of `rank`'s local storage, in order: its partitions concatenated.
  std::vector<int64_t> LocalRows(int rank) const {
    std::vector<int64_t> rows;
    for (size_t p = 0; p < owners.size(); ++p) {
      if (owners[p] != rank) continue;
      for (int64_t r = splits[p]; r < splits[p + 1]; ++r) rows.push_back(r);
    }
    return rows;
  }
  int64_t LocalIndex(int64_t row) const {
    const int p = PartitionOf(row);
    const std::vector<int64_t> local = LocalRows(static_cast<int>(owners[static_cast<size_t>(p)]));
    return std::find(local.begin(), local.end(), row) - local.begin();
  }
};

std::vector<Layout> Layouts(int size) {
  std::vector<Layout> layouts;
  const std::vector<std::vector<int64_t>> splits = {
      {0, kRows}, {0, 6, kRows}, {0, 4, 7, kRows}, {0, 5, 5, kRows}};
  for (const auto& s : splits) {
    const int partitions = static_cast<int>(s.size()) - 1;
    Layout round_robin{fmt::format("P={} round-robin", partitions), s, {}};
    Layout reversed{fmt::format("P={} from the last rank", partitions), s, {}};
    for (int p = 0; p < partitions; ++p) {
      round_robin.owners.push_back(p % size);
      reversed.owners.push_back(size - 1 - p % size);
    }
    layouts.push_back(round_robin);
    layouts.push_back(reversed);
  }
  return layouts;
}

Tensor LocalStorage(const Layout& layout, int rank) {
  const std::vector<int64_t> rows = layout.LocalRows(rank);
  Tensor t(DT_FLOAT, TensorShape{static_cast<int64_t>(rows.size()), kWidth});
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int64_t c = 0; c < kWidth; ++c) t.data<float>()[i * kWidth + c] = TableValue(rows[i], c);
  }
  return t;
}

// Rank `rank`'s ids: duplicates included; rank 1 asks for nothing.
std::vector<int64_t> Ids(int rank, uint64_t seed) {
  if (rank == 1) return {};
  std::mt19937_64 rng = Rng(seed, rank);
  std::vector<int64_t> ids(static_cast<size_t>(5 + 3 * rank));
  for (int64_t& id : ids) id = static_cast<int64_t>(rng() % kRows);
  if (ids.size() > 2) ids[1] = ids[0];
  return ids;
}

Tensor IndexTensor(DataType dtype, const std::vector<int64_t>& values) {
  Tensor t(dtype, TensorShape{static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DT_INT32) {
      t.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    } else {
      t.data<int64_t>()[i] = values[i];
    }
  }
  return t;
}

// Values pushed by `rank`: multiples of 1/8, exact under scaling by 1/4 and in sums.
Tensor PushValues(int rank, uint64_t seed, int64_t n) {
  Tensor t(DT_FLOAT, TensorShape{n, kWidth});
  std::mt19937_64 rng = Rng(seed + 1, rank);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    t.data<float>()[i] = static_cast<float>(static_cast<int64_t>(rng() % 33) - 16) * 0.125f;
  }
  return t;
}

AttrMap PartitionAttrs(const Layout& layout, DataType index_type, int size) {
  return {{"T", TypeAttr(DT_FLOAT)},
          {"Tindices", TypeAttr(index_type)},
          {"num_rows", IntAttr(kRows)},
          {"row_splits", IntListAttr(layout.splits)},
          {"owners", IntListAttr(layout.owners)},
          {"group_size", IntAttr(size)},
          {"instance_key", IntAttr(11)}};
}

// The root sends the whole table; every rank gets its local storage, packed in partition
// order (layouts with several partitions per rank, empty partitions and ranks owning
// nothing included).
void TestScatterRows(Device& device, Communicator& comm, TestReport& report) {
  const int size = comm.size();
  const int me = comm.rank();
  Tensor table(DT_FLOAT, TensorShape{kRows, kWidth});
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kWidth; ++c) table.data<float>()[r * kWidth + c] = TableValue(r, c);
  }
  for (const Layout& layout : Layouts(size)) {
    for (int root : {0, size - 1}) {
      AttrMap attrs = PartitionAttrs(layout, DT_INT32, size);
      attrs.erase("Tindices");
      attrs["root_rank"] = IntAttr(root);
      const std::string name = fmt::format("ParallaxScatterRows {} root {}", layout.name, root);
      AttrMap recv_attrs = attrs;  // the receive half knows the shape from its attrs
      recv_attrs["shape"] = ShapeAttr({kRows, kWidth});
      StatusOr<std::vector<Tensor>> out =
          me == root ? RunOp(device, "ParallaxScatterRowsSend", {table}, attrs)
                     : RunOp(device, "ParallaxScatterRowsRecv", {}, recv_attrs);
      if (!report.ExpectOk(out.status(), name)) continue;
      report.Expect(TensorsBitEqual((*out)[0], LocalStorage(layout, me)), name + " = local storage",
                    (*out)[0].DebugString(4));
    }
  }
}

void TestSparse(Device& device, Communicator& comm, TestReport& report) {
  const int size = comm.size();
  const int me = comm.rank();
  uint64_t seed = 300;
  for (const Layout& layout : Layouts(size)) {
    for (DataType index_type : {DT_INT32, DT_INT64}) {
      ++seed;
      const std::string suffix =
          fmt::format("{} Tindices={}", layout.name, DataTypeShortName(index_type));
      const AttrMap attrs = PartitionAttrs(layout, index_type, size);
      const Tensor storage = LocalStorage(layout, me);

      // Pull: rows = table[ids].
      const std::vector<int64_t> ids = Ids(me, seed);
      Tensor expected_rows(DT_FLOAT, TensorShape{static_cast<int64_t>(ids.size()), kWidth});
      for (size_t i = 0; i < ids.size(); ++i) {
        for (int64_t c = 0; c < kWidth; ++c) {
          expected_rows.data<float>()[i * kWidth + c] = TableValue(ids[i], c);
        }
      }
      StatusOr<std::vector<Tensor>> pulled = RunOp(
          device, "ParallaxSparsePull", {storage, IndexTensor(index_type, ids)}, attrs);
      if (report.ExpectOk(pulled.status(), "ParallaxSparsePull " + suffix)) {
        report.Expect(TensorsBitEqual((*pulled)[0], expected_rows), "ParallaxSparsePull " + suffix,
                      (*pulled)[0].DebugString(6));
      }

      // Push: what each rank sent to me, by source rank, in the sender's order.
      AttrMap push_attrs = attrs;
      push_attrs["scale"] = FloatAttr(0.25f);
      std::vector<float> expected_values;
      std::vector<int64_t> expected_indices;
      Tensor dense_sum(DT_FLOAT, TensorShape{kRows, kWidth});  // every push, summed by row
      std::fill_n(dense_sum.data<float>(), dense_sum.num_elements(), 0.0f);
      for (int r = 0; r < size; ++r) {
        const std::vector<int64_t> indices = Ids(r, seed + 1000);
        const Tensor values = PushValues(r, seed, static_cast<int64_t>(indices.size()));
        for (size_t i = 0; i < indices.size(); ++i) {
          for (int64_t c = 0; c < kWidth; ++c) {
            dense_sum.data<float>()[indices[i] * kWidth + c] +=
                values.data<float>()[i * kWidth + c] * 0.25f;
          }
          if (layout.owners[static_cast<size_t>(layout.PartitionOf(indices[i]))] != me) continue;
          expected_indices.push_back(layout.LocalIndex(indices[i]));
          for (int64_t c = 0; c < kWidth; ++c) {
            expected_values.push_back(values.data<float>()[i * kWidth + c] * 0.25f);
          }
        }
      }
      const std::vector<int64_t> my_indices = Ids(me, seed + 1000);
      StatusOr<std::vector<Tensor>> pushed = RunOp(
          device, "ParallaxSparsePush",
          {PushValues(me, seed, static_cast<int64_t>(my_indices.size())),
           IndexTensor(index_type, my_indices)},
          push_attrs, 2);
      if (!report.ExpectOk(pushed.status(), "ParallaxSparsePush " + suffix)) continue;
      const Tensor& local_values = (*pushed)[0];
      const Tensor& local_indices = (*pushed)[1];
      const int64_t m = static_cast<int64_t>(expected_indices.size());
      if (comm.num_hosts() == 1) {
        report.Expect(TensorsBitEqual(local_values,
                                      Tensor::FromVector<float>(expected_values,
                                                                TensorShape{m, kWidth})),
                      "ParallaxSparsePush values " + suffix, local_values.DebugString(6));
        report.Expect(TensorsBitEqual(local_indices, IndexTensor(index_type, expected_indices)),
                      "ParallaxSparsePush indices " + suffix, local_indices.DebugString(6));
      } else {
        // Aggregated per host (push_aggregation.h): other hosts' rows arrive summed, so
        // compare the sums per local row (exact: the values are multiples of 1/32) and
        // check that no more rows arrived than were pushed.
        std::map<int64_t, std::vector<float>> want, got;
        auto add = [](std::map<int64_t, std::vector<float>>& sums, int64_t row, const float* v) {
          std::vector<float>& sum = sums[row];
          sum.resize(kWidth, 0.0f);
          for (int64_t c = 0; c < kWidth; ++c) sum[static_cast<size_t>(c)] += v[c];
        };
        for (int64_t k = 0; k < m; ++k) {
          add(want, expected_indices[static_cast<size_t>(k)], &expected_values[k * kWidth]);
        }
        for (int64_t k = 0; k < local_indices.num_elements(); ++k) {
          add(got, static_cast<int64_t>(Get(local_indices, k)),
              local_values.data<float>() + k * kWidth);
        }
        report.Expect(got == want && local_indices.num_elements() <= m,
                      "ParallaxSparsePush across hosts: sums per row " + suffix,
                      fmt::format("{} rows received for {} pushed", local_indices.num_elements(),
                                  m));
      }

      // Owners add what they received to their storage; pulling every row then gives the
      // table plus every rank's pushes summed (what one device would compute).
      Tensor updated = storage.DeepCopy();
      for (int64_t k = 0; k < local_indices.num_elements(); ++k) {
        const int64_t row = static_cast<int64_t>(Get(local_indices, k));
        for (int64_t c = 0; c < kWidth; ++c) {
          updated.data<float>()[row * kWidth + c] += local_values.data<float>()[k * kWidth + c];
        }
      }
      std::vector<int64_t> all_rows(kRows);
      for (int64_t r = 0; r < kRows; ++r) all_rows[static_cast<size_t>(r)] = r;
      StatusOr<std::vector<Tensor>> after = RunOp(
          device, "ParallaxSparsePull", {updated, IndexTensor(index_type, all_rows)}, attrs);
      if (!report.ExpectOk(after.status(), "pull after push " + suffix)) continue;
      Tensor expected_after(DT_FLOAT, TensorShape{kRows, kWidth});
      for (int64_t r = 0; r < kRows; ++r) {
        for (int64_t c = 0; c < kWidth; ++c) {
          expected_after.data<float>()[r * kWidth + c] =
              TableValue(r, c) + dense_sum.data<float>()[r * kWidth + c];
        }
      }
      const std::string diff = CompareTensors((*after)[0], expected_after, 1e-6, 1e-6);
      report.Expect(diff.empty(), "pull after push = one device " + suffix, diff);
    }
  }
}

int Run() {
  StatusOr<std::unique_ptr<Communicator>> made = Communicator::FromMpi();
  if (!made.ok()) {
    std::fprintf(stderr, "FromMpi: %s\n", made.status().ToString().c_str());
    return 1;
  }
  Communicator& comm = **made;
  CpuDevice device(1);
  device.set_communicator(&comm);
  TestReport report(comm);
  TestReduce(device, comm, report);
  TestGather(device, comm, report);
  TestBroadcast(device, comm, report);
  TestScatterRows(device, comm, report);
  TestSparse(device, comm, report);
  return report.Finish();
}

}  // namespace
}  // namespace parallax

int main() { return parallax::Run(); }
