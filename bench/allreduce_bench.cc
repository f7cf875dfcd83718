// Benchmark: Parallax's all-reduce against raw MPI_Allreduce on the same buffers.
//
// Runs under mpirun (scripts/bench.sh starts it with 2 ranks: its BUILD target is tagged
// `mpirun`). For float32 buffers of 1 KB to 64 MB it times three variants that take turns
// call by call, in --rounds rounds of about 32 MB reduced each:
//   mpi        MPI_Allreduce(send, recv, MPI_SUM) on MPI_COMM_WORLD (the baseline);
//   parallax   MpiCommunicator::AllReduce(input, &output, kSum): the same call on
//              Parallax's own communicator, with the watchdog's bookkeeping;
//   kernel     a CollectiveReduceV2 node (Add, Id) run by the executor: feeds, a new
//              output tensor per step (page faults for large buffers), the fetch.
// Bandwidth is the algorithm bandwidth, buffer bytes / time per call, in the best round;
// a ratio is the median over rounds of (mpi time / variant time), so that other processes
// on the machine disturb the comparison as little as possible. Target (from the issue):
// parallax >= 0.95x mpi at every size.
//
// Usage: mpirun -np 2 allreduce_bench [--rounds R] [--max-mb M]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <mpi.h>

#include "lib/graph/attr_values.h"
#include "lib/graph/graph.h"
#include "lib/runtime/comm/communicator.h"
#include "lib/runtime/comm/mpi_communicator.h"
#include "lib/runtime/device.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/tensor.h"

namespace parallax {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// x -> CollectiveReduceV2(x, group_size, group_key, instance_key), all fed.
StatusOr<Graph> ReduceGraph() {
  Graph graph;
  graph.set_source("allreduce-bench");
  std::vector<OutputRef> inputs;
  for (const auto& [name, dtype] : std::vector<std::pair<std::string, tensorflow::DataType>>{
           {"x", tensorflow::DT_FLOAT},
           {"group_size", tensorflow::DT_INT32},
           {"group_key", tensorflow::DT_INT32},
           {"instance_key", tensorflow::DT_INT32}}) {
    NodeSpec feed;
    feed.name = name;
    feed.op = "Placeholder";
    feed.attrs["dtype"] = TypeAttr(dtype);
    PX_ASSIGN_OR_RETURN(NodeId id, graph.AddNode(feed));
    inputs.push_back(OutputRef{id, 0});
  }
  NodeSpec reduce;
  reduce.name = "x/parallax/allreduce";
  reduce.op = "CollectiveReduceV2";
  reduce.inputs = inputs;
  reduce.attrs["T"] = TypeAttr(tensorflow::DT_FLOAT);
  reduce.attrs["merge_op"] = StringAttr("Add");
  reduce.attrs["final_op"] = StringAttr("Id");
  PX_RETURN_IF_ERROR(graph.AddNode(reduce).status());
  return graph;
}

int Run(int argc, char** argv) {
  int rounds = 15;
  int64_t max_mb = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--rounds") {
      rounds = std::max(1, std::atoi(argv[i + 1]));
    } else if (flag == "--max-mb") {
      max_mb = std::max<int64_t>(1, std::atoll(argv[i + 1]));
    } else {  // BENCH_ARGS goes to every benchmark: others' flags are not errors here
      std::fprintf(stderr, "allreduce_bench: ignoring %s %s\n", flag.c_str(), argv[i + 1]);
    }
  }
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr) {
    std::fprintf(stderr, "allreduce_bench: run it under mpirun, e.g. `mpirun -np 2 %s` "
                         "(scripts/bench.sh does)\n",
                 argv[0]);
    return 2;
  }
  StatusOr<MpiOptions> options = MpiOptions::FromEnvironment();
  if (!options.ok()) {
    std::fprintf(stderr, "allreduce_bench: %s\n", options.status().message().c_str());
    return 2;
  }
  StatusOr<std::unique_ptr<MpiCommunicator>> made = MpiCommunicator::Create(*options);
  if (!made.ok()) {
    std::fprintf(stderr, "allreduce_bench: %s\n", made.status().message().c_str());
    return 1;
  }
  MpiCommunicator& comm = **made;
  const bool print = comm.rank() == 0;
  StatusOr<Graph> graph = ReduceGraph();
  if (!graph.ok()) {
    std::fprintf(stderr, "allreduce_bench: %s\n", graph.status().message().c_str());
    return 1;
  }
  CpuDevice device(1);
  device.set_communicator(&comm);
  Executor executor(*graph, device);
  if (print) {
    std::printf("allreduce_bench: %d ranks, float32, %d rounds\n", comm.size(), rounds);
  }

  bool all_met = true;
  for (int64_t bytes = 1024; bytes <= max_mb << 20; bytes *= 4) {
    const int64_t n = bytes / 4;
    Tensor input(tensorflow::DT_FLOAT, TensorShape{n});
    for (int64_t i = 0; i < n; ++i) input.data<float>()[i] = static_cast<float>(i % 1000) * 0.001f;
    Tensor output(tensorflow::DT_FLOAT, TensorShape{n});
    std::memset(output.raw_data(), 0, output.bytes());
    // Short rounds (~32 MB reduced each), many of them: the best round is the one that
    // other processes on the machine disturbed least.
    const int iterations = static_cast<int>(std::clamp<int64_t>((32 << 20) / bytes, 2, 500));
    RunRequest request;
    request.feeds = {{"x", input},
                     {"group_size", Tensor::Scalar<int32_t>(comm.size())},
                     {"group_key", Tensor::Scalar<int32_t>(1)},
                     {"instance_key", Tensor::Scalar<int32_t>(1)}};
    request.fetches = {"x/parallax/allreduce"};

    // One call of each variant; false on error (printed).
    auto call = [&](int variant) -> bool {
      if (variant == 0) {
        return MPI_Allreduce(input.raw_data(), output.raw_data(), static_cast<int>(n), MPI_FLOAT,
                             MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS;
      }
      Status status;
      if (variant == 1) {
        status = comm.AllReduce(input, &output, ReduceOp::kSum);
      } else {
        status = executor.Run(request).status();
      }
      if (!status.ok()) std::fprintf(stderr, "allreduce_bench: %s\n", status.ToString().c_str());
      return status.ok();
    };
    double best[3] = {1e30, 1e30, 1e30};
    std::vector<double> ratios, kernel_ratios;  // per round: mpi time / variant time
    for (int variant = 0; variant < 3; ++variant) {
      if (!call(variant) || !call(variant)) return 1;  // warm-up
    }
    for (int round = 0; round < rounds; ++round) {
      // The variants take turns call by call (rotating who goes first), so that load from
      // other processes falls on all of them alike.
      double total[3] = {0, 0, 0};
      MPI_Barrier(MPI_COMM_WORLD);
      for (int k = 0; k < iterations; ++k) {
        for (int turn = 0; turn < 3; ++turn) {
          const int variant = (k + turn) % 3;
          const double start = Now();
          if (!call(variant)) return 1;
          total[variant] += Now() - start;
        }
      }
      // The slowest rank's time: a call is done when every rank is.
      MPI_Allreduce(MPI_IN_PLACE, total, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      for (int variant = 0; variant < 3; ++variant) {
        best[variant] = std::min(best[variant], total[variant] / iterations);
      }
      ratios.push_back(total[0] / total[1]);
      kernel_ratios.push_back(total[0] / total[2]);
    }
    if (!print) continue;
    const std::string size = bytes >= (1 << 20) ? std::to_string(bytes >> 20) + "MB"
                                                : std::to_string(bytes >> 10) + "KB";
    auto gbps = [&](double seconds) { return static_cast<double>(bytes) / seconds / 1e9; };
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double ratio = median(ratios);
    const double kernel_ratio = median(kernel_ratios);
    std::printf("allreduce.%s.mpi: %.3f GB/s (baseline, %.1f us)\n", size.c_str(), gbps(best[0]),
                best[0] * 1e6);
    std::printf("allreduce.%s.parallax: %.3f GB/s (%.2fx vs MPI_Allreduce)\n", size.c_str(),
                gbps(best[1]), ratio);
    const bool met = ratio >= 0.95;
    all_met &= met;
    std::printf("  target: >= 0.95x MPI_Allreduce: %s\n", met ? "target met" : "TARGET MISSED");
    std::printf("allreduce.%s.kernel: %.3f GB/s (%.2fx vs MPI_Allreduce; executor + new output)\n",
                size.c_str(), gbps(best[2]), kernel_ratio);
    std::fflush(stdout);
  }
  if (print && !all_met) {
    std::printf("allreduce_bench: some sizes missed the target (a loaded machine makes small "
                "sizes noisy; rerun on a quiet one)\n");
  }
  return 0;
}

}  // namespace
}  // namespace parallax

int main(int argc, char** argv) { return parallax::Run(argc, argv); }
