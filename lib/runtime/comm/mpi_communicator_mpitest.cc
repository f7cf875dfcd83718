// Multi-process test of MpiCommunicator: run under mpirun with any number of ranks
// (testing/mpirun_test.sh runs it with 2, 3 and 4 on one host, and with 3 to 6 as fake
// hosts under PARALLAX_TEST_RANKS_PER_HOST). Every rank builds its inputs from a
// seed and its rank, so each rank can compute the expected result of a collective from
// every rank's inputs and compare.
//
// `--fail=MODE` makes the last rank fail before a collective instead (the failure test):
//   abort: it calls Communicator::Abort; exit: it exits with status 1 without MPI_Finalize;
//   hang: it sleeps 60 s outside any collective (run with PARALLAX_COLLECTIVE_TIMEOUT_S=2);
//   stop: it stops itself with SIGSTOP, every thread with it (run with a short
//   PARALLAX_HEARTBEAT_TIMEOUT_S: the next rank names it).
#include <algorithm>
#include <bit>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lib/ops/dtypes.h"
#include "lib/runtime/comm/communicator.h"
#include "lib/runtime/comm/mpi_communicator.h"
#include "lib/runtime/comm/testing/mpi_test_report.h"

namespace parallax {
namespace {

using testing::TestReport;

// Rank `rank`'s input for test `seed`: n elements of dtype with `rows` rows.
Tensor Input(DataType dtype, TensorShape shape, int rank, uint64_t seed) {
  Tensor t(dtype, std::move(shape));
  std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(rank));
  const int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t bits = rng();
    switch (dtype) {
      case tensorflow::DT_FLOAT:
        t.data<float>()[i] = static_cast<float>(bits % 20001) / 1000.0f - 10.0f;
        break;
      case tensorflow::DT_DOUBLE:
        t.data<double>()[i] = static_cast<double>(bits % 2000001) / 100000.0 - 10.0;
        break;
      case tensorflow::DT_INT32: t.data<int32_t>()[i] = static_cast<int32_t>(bits % 201) - 100; break;
      case tensorflow::DT_INT64:
        t.data<int64_t>()[i] = static_cast<int64_t>(bits % 2000001) - 1000000;
        break;
      case tensorflow::DT_UINT8: t.data<uint8_t>()[i] = static_cast<uint8_t>(bits); break;
      default: break;
    }
  }
  return t;
}

double Element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case tensorflow::DT_FLOAT: return t.data<float>()[i];
    case tensorflow::DT_DOUBLE: return t.data<double>()[i];
    case tensorflow::DT_INT32: return t.data<int32_t>()[i];
    case tensorflow::DT_INT64: return static_cast<double>(t.data<int64_t>()[i]);
    case tensorflow::DT_UINT8: return t.data<uint8_t>()[i];
    default: return 0;
  }
}

bool IsFloat(DataType dtype) {
  return dtype == tensorflow::DT_FLOAT || dtype == tensorflow::DT_DOUBLE;
}

// "" when equal (floats: within 1e-5 relative), else the first difference.
std::string Compare(const Tensor& actual, const std::vector<double>& expected, DataType dtype) {
  if (actual.dtype() != dtype) return "dtype " + DataTypeShortName(actual.dtype());
  if (actual.num_elements() != static_cast<int64_t>(expected.size())) {
    return fmt::format("{} elements, expected {}", actual.num_elements(), expected.size());
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const double a = Element(actual, static_cast<int64_t>(i)), e = expected[i];
    const bool ok = IsFloat(dtype) ? std::abs(a - e) <= 1e-5 * std::max(1.0, std::abs(e)) : a == e;
    if (!ok) return fmt::format("element {}: {} != expected {}", i, a, e);
  }
  return "";
}

// True when every rank holds the same bytes in `t` (compares to rank 0's via a broadcast).
bool SameOnEveryRank(Communicator& comm, const Tensor& t) {
  Tensor root = comm.rank() == 0 ? t : Tensor(t.dtype(), t.shape());
  if (!comm.Broadcast(root, 0).ok()) return false;
  // An empty tensor has no buffer, and memcmp's pointers must not be null even for 0 bytes.
  Tensor mine_ok = Tensor::Scalar<int32_t>(
      root.shape() == t.shape() &&
      (t.bytes() == 0 || std::memcmp(root.raw_data(), t.raw_data(), t.bytes()) == 0));
  if (!comm.AllReduce(mine_ok, ReduceOp::kMin).ok()) return false;
  return mine_ok.data<int32_t>()[0] == 1;
}

// The ranks per fake host (PARALLAX_TEST_RANKS_PER_HOST), or 0 when hosts are real.
int FakeRanksPerHost() {
  const char* text = std::getenv("PARALLAX_TEST_RANKS_PER_HOST");
  return text == nullptr ? 0 : std::atoi(text);
}

void TestTopology(Communicator& comm, TestReport& report) {
  report.Expect(comm.kind() == "mpi", "kind");
  report.Expect(comm.rank() >= 0 && comm.rank() < comm.size(), "rank in range");
  const int size = comm.size(), me = comm.rank();
  if (const int k = FakeRanksPerHost(); k > 0) {
    // Fake hosts of k consecutive ranks, the last one possibly smaller.
    report.Expect(comm.host_id() == me / k && comm.num_hosts() == (size + k - 1) / k,
                  "fake host_id/num_hosts");
    report.Expect(comm.local_rank() == me % k &&
                      comm.local_size() == std::min(k, size - me / k * k),
                  "fake local_rank/local_size");
    for (int r = 0; r < size; ++r) {
      report.Expect(comm.host_of(r) == r / k, fmt::format("fake host_of({})", r));
    }
    return;
  }
  // One machine: every rank shares the host.
  report.Expect(comm.local_size() == comm.size(), "local_size",
                fmt::format("{} for {} ranks", comm.local_size(), comm.size()));
  report.Expect(comm.local_rank() == comm.rank(), "local_rank");
  report.Expect(comm.host_id() == 0 && comm.num_hosts() == 1, "host_id/num_hosts");
}

// The hierarchical all-reduce (mpi_communicator.h): float and double sums and products
// are each host's ranks combined in rank order, then the hosts' results in host order,
// bit for bit, on every rank, whatever the size (small, all-to-all, several 4 MiB parts)
// and however many ranks each host has (the fewest decides the slices); means within
// 1e-5 of that; integers exact. With one host, or one rank per host, it is the flat
// all-reduce bit for bit.
template <typename T>
void HierarchicalCase(Communicator& comm, TestReport& report, DataType dtype, int64_t n,
                      ReduceOp op, uint64_t seed) {
  const int size = comm.size();
  const std::string name = fmt::format("hierarchical AllReduce {} {} n={} ({} hosts)",
                                       ReduceOpName(op), DataTypeShortName(dtype), n,
                                       comm.num_hosts());
  const bool product = op == ReduceOp::kProd;
  Tensor expected(dtype, TensorShape{n});
  for (int h = 0; h < comm.num_hosts(); ++h) {
    std::vector<T> host(static_cast<size_t>(n));
    bool first_rank = true;
    for (int r = 0; r < size; ++r) {
      if (comm.host_of(r) != h) continue;
      const Tensor in = Input(dtype, TensorShape{n}, r, seed);
      for (int64_t i = 0; i < n; ++i) {
        T& e = host[static_cast<size_t>(i)];
        const T x = in.data<T>()[i];
        e = first_rank ? x : product ? e * x : e + x;
      }
      first_rank = false;
    }
    for (int64_t i = 0; i < n; ++i) {
      T& e = expected.data<T>()[i];
      const T x = host[static_cast<size_t>(i)];
      e = h == 0 ? x : product ? e * x : e + x;
    }
  }
  const Tensor input = Input(dtype, TensorShape{n}, comm.rank(), seed);
  const Tensor before = input.DeepCopy();
  Tensor output;
  if (!report.ExpectOk(comm.AllReduce(input, &output, op, AllReduceAlgorithm::kHierarchical),
                       name)) {
    return;
  }
  if (op == ReduceOp::kMean) {
    std::vector<double> mean(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) mean[static_cast<size_t>(i)] = expected.data<T>()[i] / size;
    const std::string diff = Compare(output, mean, dtype);
    report.Expect(diff.empty(), name, diff);
  } else {
    report.Expect(TensorsBitEqual(output, expected), name + ": hosts' sums in host order");
  }
  report.Expect(TensorsBitEqual(input, before), name + " leaves the input alone");
  report.Expect(SameOnEveryRank(comm, output), name + " bit-identical on every rank");
  Tensor in_place = input.DeepCopy();
  if (report.ExpectOk(comm.AllReduce(in_place, &in_place, op, AllReduceAlgorithm::kHierarchical),
                      name + " in place")) {
    report.Expect(TensorsBitEqual(in_place, output), name + " in place = out of place");
  }
  Tensor flat;
  if (!report.ExpectOk(comm.AllReduce(input, &flat, op), name + " flat")) return;
  if (comm.num_hosts() == 1 || comm.num_hosts() == size) {
    report.Expect(TensorsBitEqual(flat, output), name + " = flat (one rank per host or one host)");
  } else if (op == ReduceOp::kSum && n >= 1000 && comm.host_of(size - 2) == comm.host_of(size - 1)) {
    // A later host of two ranks or more adds its own ranks first: some element's bits
    // differ from the flat order's (so the hierarchical path did run).
    report.Expect(!TensorsBitEqual(flat, output), name + " differs from flat somewhere");
  }
}

void TestHierarchicalAllReduce(Communicator& comm, TestReport& report) {
  uint64_t seed = 3000;
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{100003},
                    (int64_t{1} << 21) + 3}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kProd}) {
      if (op == ReduceOp::kProd && n > 1000) continue;
      HierarchicalCase<float>(comm, report, tensorflow::DT_FLOAT, n, op, ++seed);
      if (n <= 100003) HierarchicalCase<double>(comm, report, tensorflow::DT_DOUBLE, n, op, ++seed);
    }
  }
  // Integers, min and max go flat: exact either way.
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
    const Tensor ints = Input(tensorflow::DT_INT32, TensorShape{1000}, comm.rank(), 77);
    Tensor flat, hierarchical;
    const std::string name = fmt::format("hierarchical AllReduce {} int32", ReduceOpName(op));
    if (report.ExpectOk(comm.AllReduce(ints, &flat, op), name + " flat") &&
        report.ExpectOk(comm.AllReduce(ints, &hierarchical, op, AllReduceAlgorithm::kHierarchical),
                        name)) {
      report.Expect(TensorsBitEqual(flat, hierarchical), name + " = flat");
    }
  }
}

void TestAllReduce(Communicator& comm, TestReport& report) {
  const int size = comm.size();
  uint64_t seed = 1;
  for (DataType dtype : {tensorflow::DT_FLOAT, tensorflow::DT_DOUBLE, tensorflow::DT_INT32,
                         tensorflow::DT_INT64}) {
    for (int64_t n : {0, 1, 7, 1000, 100003}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                          ReduceOp::kProd}) {
        // Products of int64 inputs overflow, and of int32 inputs (up to 100) beyond 4
        // ranks; large products lose the reference's precision.
        if (op == ReduceOp::kProd &&
            (n > 1000 || dtype == tensorflow::DT_INT64 ||
             (dtype == tensorflow::DT_INT32 && size > 4))) {
          continue;
        }
        ++seed;
        const TensorShape shape = n == 1000 ? TensorShape{10, 100} : TensorShape{n};
        // Expected: rank by rank, as doubles (exact for these integers and close for floats).
        std::vector<double> expected(static_cast<size_t>(n));
        for (int r = 0; r < size; ++r) {
          const Tensor in = Input(dtype, shape, r, seed);
          for (int64_t i = 0; i < n; ++i) {
            const double x = Element(in, i);
            double& e = expected[static_cast<size_t>(i)];
            if (r == 0) {
              e = x;
            } else if (op == ReduceOp::kSum || op == ReduceOp::kMean) {
              e += x;
            } else if (op == ReduceOp::kMin) {
              e = std::min(e, x);
            } else if (op == ReduceOp::kMax) {
              e = std::max(e, x);
            } else {
              e *= x;
            }
          }
        }
        if (op == ReduceOp::kMean) {
          for (double& e : expected) e = IsFloat(dtype) ? e / size : std::trunc(e / size);
        }
        const std::string name = fmt::format("AllReduce {} {} n={}", ReduceOpName(op),
                                             DataTypeShortName(dtype), n);
        const Tensor input = Input(dtype, shape, comm.rank(), seed);
        const Tensor before = input.DeepCopy();
        Tensor output;
        if (!report.ExpectOk(comm.AllReduce(input, &output, op), name)) continue;
        report.Expect(output.shape() == shape, name + " shape");
        const std::string diff = Compare(output, expected, dtype);
        report.Expect(diff.empty(), name, diff);
        report.Expect(TensorsBitEqual(input, before), name + " leaves the input alone");
        report.Expect(SameOnEveryRank(comm, output), name + " bit-identical on every rank");
        // In place gives the same bits.
        Tensor in_place = input.DeepCopy();
        if (report.ExpectOk(comm.AllReduce(in_place, op), name + " in place")) {
          report.Expect(TensorsBitEqual(in_place, output), name + " in place = out of place");
        }
      }
    }
  }
  // A larger buffer (16 MB).
  Tensor big = Input(tensorflow::DT_FLOAT, TensorShape{4 << 20}, comm.rank(), 99);
  Tensor sum;
  if (report.ExpectOk(comm.AllReduce(big, &sum, ReduceOp::kMean), "AllReduce 16 MB")) {
    std::vector<double> expected(static_cast<size_t>(big.num_elements()), 0.0);
    for (int r = 0; r < size; ++r) {
      const Tensor in = Input(tensorflow::DT_FLOAT, TensorShape{4 << 20}, r, 99);
      for (int64_t i = 0; i < in.num_elements(); ++i) expected[static_cast<size_t>(i)] += Element(in, i);
    }
    for (double& e : expected) e /= size;
    const std::string diff = Compare(sum, expected, tensorflow::DT_FLOAT);
    report.Expect(diff.empty(), "AllReduce 16 MB mean", diff);
  }
  // Integers over several parts (MPI_Allreduce per 4 MiB part).
  {
    const int64_t n = (int64_t{1} << 21) + 5;
    Tensor ints(tensorflow::DT_INT32, TensorShape{n});
    for (int64_t i = 0; i < n; ++i) ints.data<int32_t>()[i] = static_cast<int32_t>(i % 1000) * (comm.rank() + 1);
    Tensor total;
    if (report.ExpectOk(comm.AllReduce(ints, &total, ReduceOp::kSum), "AllReduce int32 8 MB")) {
      const int32_t factor = size * (size + 1) / 2;
      bool exact = true;
      for (int64_t i = 0; i < n && exact; ++i) {
        exact = total.data<int32_t>()[i] == static_cast<int32_t>(i % 1000) * factor;
      }
      report.Expect(exact, "AllReduce int32 8 MB sum");
    }
  }
  // Floating sums in rank order, element by element, whatever the size (the gathered
  // and the all-to-all paths) and wherever the element lies: bit for bit the float
  // arithmetic ((x0 + x1) + x2) + ..., and a tensor reduced alone has the same bits as
  // the same elements reduced inside a larger one (gradient buckets rely on it).
  // (Over 4 MiB, calls go in parts of 4 MiB: n = 2^21 + 3 is three parts.)
  for (int64_t n : {int64_t{3}, int64_t{1000}, int64_t{100003}, int64_t{1} << 20,
                    (int64_t{1} << 21) + 3}) {
    const std::string name = fmt::format("AllReduce sum float n={} in rank order", n);
    const Tensor input = Input(tensorflow::DT_FLOAT, TensorShape{n}, comm.rank(), 500 + n);
    Tensor expected(tensorflow::DT_FLOAT, TensorShape{n});
    for (int r = 0; r < size; ++r) {
      const Tensor in = Input(tensorflow::DT_FLOAT, TensorShape{n}, r, 500 + n);
      for (int64_t i = 0; i < n; ++i) {
        float& e = expected.data<float>()[i];
        e = r == 0 ? in.data<float>()[i] : e + in.data<float>()[i];
      }
    }
    Tensor output;
    if (!report.ExpectOk(comm.AllReduce(input, &output, ReduceOp::kSum), name)) continue;
    report.Expect(TensorsBitEqual(output, expected), name);
    // The same elements at offset 5 of a tensor 17 elements longer.
    Tensor padded(tensorflow::DT_FLOAT, TensorShape{n + 17});
    const Tensor pad = Input(tensorflow::DT_FLOAT, TensorShape{17}, comm.rank(), 7);
    std::copy(pad.data<float>(), pad.data<float>() + 5, padded.data<float>());
    std::copy(input.data<float>(), input.data<float>() + n, padded.data<float>() + 5);
    std::copy(pad.data<float>() + 5, pad.data<float>() + 17, padded.data<float>() + 5 + n);
    if (!report.ExpectOk(comm.AllReduce(padded, ReduceOp::kSum), name + " inside a larger one")) {
      continue;
    }
    report.Expect(std::equal(output.data<float>(), output.data<float>() + n,
                             padded.data<float>() + 5,
                             [](float a, float b) { return std::bit_cast<uint32_t>(a) ==
                                                           std::bit_cast<uint32_t>(b); }),
                  name + " = the same elements inside a larger tensor");
  }
  // Unsupported types fail the same way on every rank, before anything is sent.
  Tensor strings(tensorflow::DT_STRING, TensorShape{2});
  report.ExpectError(comm.AllReduce(strings, ReduceOp::kSum),
                     "all-reduce (sum) of string tensors is not supported (float, double, "
                     "int32, int64 are)",
                     "AllReduce of strings");
}

void TestAllGatherV(Communicator& comm, TestReport& report) {
  const int size = comm.size();
  uint64_t seed = 500;
  for (DataType dtype : {tensorflow::DT_FLOAT, tensorflow::DT_INT64, tensorflow::DT_UINT8}) {
    for (int pattern = 0; pattern < 3; ++pattern) {
      ++seed;
      // Rows per rank: different counts, some ranks send none.
      auto rows_of = [&](int r) -> int64_t {
        switch (pattern) {
          case 0: return (r * 3) % 5;           // rank 0 sends none
          case 1: return r == size - 1 ? 0 : r + 1;  // the last sends none
          default: return 1000 + r;
        }
      };
      const std::vector<int64_t> row_shape = pattern == 2 ? std::vector<int64_t>{} : std::vector<int64_t>{3, 2};
      auto shape_of = [&](int r) {
        std::vector<int64_t> dims = {rows_of(r)};
        dims.insert(dims.end(), row_shape.begin(), row_shape.end());
        return TensorShape(dims);
      };
      std::vector<double> expected;
      int64_t total = 0;
      for (int r = 0; r < size; ++r) {
        const Tensor in = Input(dtype, shape_of(r), r, seed);
        for (int64_t i = 0; i < in.num_elements(); ++i) expected.push_back(Element(in, i));
        total += rows_of(r);
      }
      const std::string name =
          fmt::format("AllGatherV {} pattern {}", DataTypeShortName(dtype), pattern);
      Tensor output;
      if (!report.ExpectOk(comm.AllGatherV(Input(dtype, shape_of(comm.rank()), comm.rank(), seed),
                                           &output),
                           name)) {
        continue;
      }
      std::vector<int64_t> dims = {total};
      dims.insert(dims.end(), row_shape.begin(), row_shape.end());
      report.Expect(output.shape() == TensorShape(dims), name + " shape",
                    output.shape().DebugString());
      const std::string diff = Compare(output, expected, dtype);
      report.Expect(diff.empty(), name, diff);
    }
  }
  // Rows that differ between ranks: the same error everywhere.
  if (size > 1) {
    const TensorShape shape = comm.rank() == 1 ? TensorShape{2, 3} : TensorShape{2, 2};
    Tensor output;
    report.ExpectError(comm.AllGatherV(Tensor(tensorflow::DT_FLOAT, shape), &output),
                       "all-gather: rank 1 sends float rows of 12 bytes, rank 0 float rows of 8 "
                       "bytes (every rank must send rows of one dtype and shape)",
                       "AllGatherV of mismatched rows");
  }
  Tensor output;
  report.ExpectError(comm.AllGatherV(Tensor::Scalar<float>(1), &output),
                     "all-gather needs a tensor of rank >= 1 (it moves rows of dimension 0), got "
                     "a scalar float",
                     "AllGatherV of a scalar");
}

void TestBroadcast(Communicator& comm, TestReport& report) {
  const int size = comm.size();
  for (int root = 0; root < size; ++root) {
    for (const TensorShape& shape : {TensorShape{}, TensorShape{0, 4}, TensorShape{17, 3},
                                     TensorShape{300000}, TensorShape{(3 << 20) + 5}}) {
      const uint64_t seed = 900 + static_cast<uint64_t>(root);
      const Tensor root_input = Input(tensorflow::DT_FLOAT, shape, root, seed);
      const std::string name = fmt::format("Broadcast root {} {}", root, shape.DebugString());
      // Non-roots pass a tensor of another shape: they learn the root's.
      Tensor t = comm.rank() == root ? Input(tensorflow::DT_FLOAT, shape, root, seed)
                                     : Tensor(tensorflow::DT_FLOAT, TensorShape{1});
      if (report.ExpectOk(comm.Broadcast(t, root), name)) {
        report.Expect(TensorsBitEqual(t, root_input), name + " = root's", t.DebugString(4));
      }
      // Same shape: received in place.
      Tensor same = comm.rank() == root ? root_input.DeepCopy() : Tensor(tensorflow::DT_FLOAT, shape);
      if (report.ExpectOk(comm.Broadcast(same, root), name + " same shape")) {
        report.Expect(TensorsBitEqual(same, root_input), name + " same shape = root's");
      }
    }
  }
  Tensor t = Tensor::Scalar<int64_t>(comm.rank());
  report.ExpectError(comm.Broadcast(t, size),
                     fmt::format("broadcast from rank {}, but the job has {} ranks", size, size),
                     "Broadcast from a rank outside the job");
}

// Rank r gets rows [offset_r, offset_r + counts[r]) of the root's send, in order; ranks
// with a count of 0 get [0, row shape...].
void TestScatterV(Communicator& comm, TestReport& report) {
  const int size = comm.size();
  const int me = comm.rank();
  for (int root = 0; root < size; ++root) {
    for (int pattern = 0; pattern < 3; ++pattern) {
      // 0: r + 1 rows each; 1: everything to the last rank; 2: nothing at all.
      std::vector<int64_t> counts(static_cast<size_t>(size), 0);
      for (int r = 0; r < size; ++r) {
        const bool last = r == size - 1;
        counts[static_cast<size_t>(r)] = pattern == 0 ? r + 1 : pattern == 1 && last ? 7 : 0;
      }
      int64_t total = 0, offset = 0;
      for (int r = 0; r < size; ++r) {
        if (r < me) offset += counts[static_cast<size_t>(r)];
        total += counts[static_cast<size_t>(r)];
      }
      for (DataType dtype : {tensorflow::DT_FLOAT, tensorflow::DT_INT64, tensorflow::DT_UINT8}) {
        const uint64_t seed = 1300 + static_cast<uint64_t>(root * 10 + pattern);
        const Tensor root_send = Input(dtype, TensorShape{total, 2, 3}, root, seed);
        const std::string name = fmt::format("ScatterV root {} pattern {} {}", root, pattern,
                                             DataTypeShortName(dtype));
        // Non-roots pass nothing: dtype and row shape come from the root.
        Tensor received;
        const Status status = me == root ? comm.ScatterV(root_send, counts, &received, root)
                                         : comm.ScatterV(Tensor(), {}, &received, root);
        if (!report.ExpectOk(status, name)) continue;
        const int64_t mine = counts[static_cast<size_t>(me)];
        report.Expect(received.dtype() == dtype && received.shape() == TensorShape{mine, 2, 3},
                      name + " shape", received.DebugString(2));
        const int64_t row_bytes = 6 * DataTypeSize(dtype);
        report.Expect(mine == 0 || std::memcmp(received.raw_data(),
                                               static_cast<const char*>(root_send.raw_data()) +
                                                   offset * row_bytes,
                                               static_cast<size_t>(mine * row_bytes)) == 0,
                      name + " = root's rows for this rank");
      }
    }
  }
  // The root's bad counts: every rank fails, the root with the cause.
  Tensor received;
  const std::vector<int64_t> wrong(static_cast<size_t>(size), 1);
  const Tensor two(tensorflow::DT_FLOAT, TensorShape{size + 1});  // one row too many
  const Status status = me == 0 ? comm.ScatterV(two, wrong, &received, 0)
                                : comm.ScatterV(Tensor(), {}, &received, 0);
  if (me == 0) {
    report.ExpectError(status,
                       fmt::format("scatter: send counts sum to {} rows, the send tensor has {}",
                                   size, size + 1),
                       "ScatterV with counts that do not match (root)");
  } else {
    report.ExpectError(status,
                       "scatter: rank 0's send tensor or counts are invalid (rank 0 says why)",
                       "ScatterV with counts that do not match (others)");
  }
  report.ExpectError(comm.ScatterV(two, wrong, &received, size),
                     fmt::format("scatter from rank {}, but the job has {} ranks", size, size),
                     "ScatterV from a rank outside the job");
}

void TestAllToAllV(Communicator& comm, TestReport& report) {
  const int size = comm.size();
  const int me = comm.rank();
  for (int pattern = 0; pattern < 3; ++pattern) {
    // Rows from rank r to rank s.
    auto count = [&](int r, int s) -> int64_t {
      switch (pattern) {
        case 0: return (r + 2 * s) % 4;        // zeros included
        case 1: return r == s ? 0 : r + s;     // nothing to oneself
        default: return s == 0 ? 5 : 0;       // everything to rank 0
      }
    };
    // Row k from r to s holds (r, s, k).
    std::vector<int64_t> send_counts;
    std::vector<int64_t> send_data;
    for (int s = 0; s < size; ++s) {
      send_counts.push_back(count(me, s));
      for (int64_t k = 0; k < count(me, s); ++k) send_data.insert(send_data.end(), {me, s, k});
    }
    const Tensor send = Tensor::FromVector<int64_t>(
        send_data, TensorShape{static_cast<int64_t>(send_data.size() / 3), 3});
    std::vector<double> expected;
    std::vector<int64_t> expected_counts;
    for (int r = 0; r < size; ++r) {
      expected_counts.push_back(count(r, me));
      for (int64_t k = 0; k < count(r, me); ++k) {
        expected.insert(expected.end(), {double(r), double(me), double(k)});
      }
    }
    const std::string name = fmt::format("AllToAllV pattern {}", pattern);
    Tensor received;
    std::vector<int64_t> received_counts;
    if (!report.ExpectOk(comm.AllToAllV(send, send_counts, &received, &received_counts), name)) {
      continue;
    }
    report.Expect(received_counts == expected_counts, name + " counts");
    report.Expect(received.rank() == 2 && received.dim(1) == 3, name + " shape",
                  received.shape().DebugString());
    const std::string diff = Compare(received, expected, tensorflow::DT_INT64);
    report.Expect(diff.empty(), name, diff);
  }
  // Float rows of 2 x 2 with a sender that sends nothing at all.
  {
    std::vector<int64_t> counts(static_cast<size_t>(size), me == 0 ? 0 : 2);
    const Tensor send = Input(tensorflow::DT_FLOAT, TensorShape{counts[0] * size, 2, 2}, me, 77);
    Tensor received;
    std::vector<int64_t> received_counts;
    if (report.ExpectOk(comm.AllToAllV(send, counts, &received, &received_counts),
                        "AllToAllV float rows")) {
      std::vector<double> expected;
      for (int r = 1; r < size; ++r) {
        const Tensor theirs = Input(tensorflow::DT_FLOAT, TensorShape{2 * int64_t{size}, 2, 2}, r, 77);
        for (int64_t i = 0; i < 8; ++i) expected.push_back(Element(theirs, me * 8 + i));
      }
      const std::string diff = Compare(received, expected, tensorflow::DT_FLOAT);
      report.Expect(diff.empty(), "AllToAllV float rows", diff);
      report.Expect(received.shape() == TensorShape{2 * int64_t{size - 1}, 2, 2},
                    "AllToAllV float rows shape", received.shape().DebugString());
    }
  }
  std::vector<int64_t> wrong(static_cast<size_t>(size), 1);
  Tensor received;
  std::vector<int64_t> received_counts;
  report.ExpectError(
      comm.AllToAllV(Tensor(tensorflow::DT_FLOAT, TensorShape{0}), wrong, &received,
                     &received_counts),
      fmt::format("all-to-all: send counts sum to {} rows, the send tensor has 0", size),
      "AllToAllV with counts that do not match");
}

void TestBarrier(Communicator& comm, TestReport& report) {
  for (int i = 0; i < 3; ++i) report.ExpectOk(comm.Barrier(), "Barrier");
}

// The traffic counters: each call adds the bytes it hands to MPI for other ranks and one
// message per MPI call (communicator.h, docs/comm.md), derived here from the arguments.
void TestCounters(Communicator& comm, TestReport& report) {
  const int size = comm.size();
  const int me = comm.rank();
  // Runs `call` and checks what it added to the counters.
  auto expect = [&](const std::string& name, int64_t bytes, int64_t messages, auto&& call) {
    const int64_t bytes_before = comm.bytes_sent(), messages_before = comm.messages_sent();
    if (!report.ExpectOk(call(), name)) return;
    const int64_t b = comm.bytes_sent() - bytes_before, m = comm.messages_sent() - messages_before;
    report.Expect(b == bytes && m == messages, name + " counters",
                  fmt::format("{} bytes in {} messages, expected {} in {}", b, m, bytes, messages));
  };
  // All-reduce: the whole buffer; in place and mean alike (the division is local). Float
  // sums of up to 256 KiB times the ranks: one all-gather; larger: an all-to-all and an
  // all-gather (two messages).
  for (int64_t n : {1, 1000, 100003}) {
    const Tensor input = Input(tensorflow::DT_FLOAT, TensorShape{n}, me, 7);
    Tensor output;
    const int64_t messages = 4 * n * size <= (256 << 10) ? 1 : 2;
    expect(fmt::format("counters: AllReduce sum of {} floats", n), 4 * n, messages,
           [&] { return comm.AllReduce(input, &output, ReduceOp::kSum); });
    expect(fmt::format("counters: AllReduce mean of {} floats in place", n), 4 * n, messages,
           [&] { return comm.AllReduce(output, ReduceOp::kMean); });
  }
  Tensor doubles = Input(tensorflow::DT_DOUBLE, TensorShape{10, 100}, me, 8);
  expect("counters: AllReduce of 1000 doubles", 8000, 1,
         [&] { return comm.AllReduce(doubles, ReduceOp::kMax); });
  // All-gather: this rank's (rows, row bytes, dtype) as 3 int64, then its rows.
  const Tensor rows = Input(tensorflow::DT_FLOAT, TensorShape{me + 1, 3}, me, 9);
  Tensor gathered;
  expect("counters: AllGatherV", 24 + (me + 1) * 12, 2,
         [&] { return comm.AllGatherV(rows, &gathered); });
  // Broadcast: the root hands its header (verdict, dtype, rank, 32 dims: 35 int64) and
  // its data; the others send nothing. Two MPI_Bcast calls on every rank.
  for (int root : {0, size - 1}) {
    Tensor t = Input(tensorflow::DT_FLOAT, TensorShape{300}, root, 10);
    expect(fmt::format("counters: Broadcast from {}", root), me == root ? 280 + 1200 : 0, 2,
           [&] { return comm.Broadcast(t, root); });
  }
  // All-to-all: the counts for the other ranks (one int64 each), then the rows addressed
  // to them (s + 1 rows of 2 int64 to rank s); the rows for itself are not counted.
  std::vector<int64_t> send_counts;
  int64_t total_rows = 0, rows_to_others = 0;
  for (int s = 0; s < size; ++s) {
    send_counts.push_back(s + 1);
    total_rows += s + 1;
    if (s != me) rows_to_others += s + 1;
  }
  const Tensor send(tensorflow::DT_INT64, TensorShape{total_rows, 2});
  std::memset(send.raw_data(), 0, send.bytes());
  Tensor received;
  std::vector<int64_t> received_counts;
  expect("counters: AllToAllV", 8 * (size - 1) + rows_to_others * 16, 2,
         [&] { return comm.AllToAllV(send, send_counts, &received, &received_counts); });
  // Scatter: the root hands each other rank its header (verdict, dtype, rank, rows, 32
  // dims: 36 int64) and its rows (s + 1 rows of 2 int64 to rank s); the others send
  // nothing. One MPI_Scatter and one MPI_Scatterv on every rank.
  for (int root : {0, size - 1}) {
    int64_t to_others = 0;
    for (int s = 0; s < size; ++s) to_others += s == root ? 0 : (s + 1) * 16;
    expect(fmt::format("counters: ScatterV from {}", root),
           me == root ? (size - 1) * 288 + to_others : 0, 2, [&] {
             return me == root ? comm.ScatterV(send, send_counts, &received, root)
                               : comm.ScatterV(Tensor(), {}, &received, root);
           });
  }
  expect("counters: Barrier", 0, 1, [&] { return comm.Barrier(); });
  // A call refused before anything is sent counts nothing.
  const int64_t bytes_before = comm.bytes_sent(), messages_before = comm.messages_sent();
  Tensor strings(tensorflow::DT_STRING, TensorShape{2});
  report.Expect(!comm.AllReduce(strings, ReduceOp::kSum).ok(), "counters: refused AllReduce");
  report.Expect(comm.bytes_sent() == bytes_before && comm.messages_sent() == messages_before,
                "counters: a refused call counts nothing");
}

int Run(int argc, char** argv) {
  std::string fail;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--fail=", 0) == 0) fail = arg.substr(7);
  }
  StatusOr<std::unique_ptr<Communicator>> made = Communicator::FromMpi();
  if (!made.ok()) {
    std::fprintf(stderr, "FromMpi: %s\n", made.status().ToString().c_str());
    return 1;
  }
  Communicator& comm = **made;
  if (!fail.empty()) {
    // Everyone completes one collective, then the last rank fails before the second.
    Tensor t = Tensor::Scalar<float>(1);
    if (!comm.AllReduce(t, ReduceOp::kSum).ok()) return 1;
    if (comm.rank() == comm.size() - 1) {
      if (fail == "abort") comm.Abort(InternalError("injected failure"));
      if (fail == "exit") std::_Exit(1);
      if (fail == "exit0") std::_Exit(0);  // no MPI_Finalize: mpirun still ends the job
      if (fail == "hang") std::this_thread::sleep_for(std::chrono::seconds(60));
      if (fail == "stop") std::raise(SIGSTOP);
    }
    Communicator::ScopedLabel label(&comm, "the failure test's second all-reduce");
    const Status status = comm.AllReduce(t, ReduceOp::kSum);
    std::fprintf(stderr, "rank %d: the second all-reduce returned: %s\n", comm.rank(),
                 status.ToString().c_str());
    return 0;  // not reached when the job was ended as it should be
  }
  TestReport report(comm);
  TestTopology(comm, report);
  TestAllReduce(comm, report);
  TestHierarchicalAllReduce(comm, report);
  TestAllGatherV(comm, report);
  TestBroadcast(comm, report);
  TestScatterV(comm, report);
  TestAllToAllV(comm, report);
  TestBarrier(comm, report);
  TestCounters(comm, report);
  const int64_t before = static_cast<MpiCommunicator&>(comm).completed();
  report.ExpectOk(comm.Barrier(), "Barrier");
  report.Expect(static_cast<MpiCommunicator&>(comm).completed() == before + 1,
                "completed() counts calls");
  return report.Finish();
}

}  // namespace
}  // namespace parallax

int main(int argc, char** argv) { return parallax::Run(argc, argv); }
