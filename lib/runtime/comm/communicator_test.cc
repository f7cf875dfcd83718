// Single-process tests of the Communicator: LocalCommunicator, FromMpi outside mpirun and
// the MPI options (collective timeout, heartbeat, wait policy). The multi-process tests
// are mpi_communicator_mpitest.cc.
#include "lib/runtime/comm/communicator.h"

#include <cstdlib>
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include "lib/runtime/comm/mpi_communicator.h"

namespace parallax {
namespace {

TEST_CASE("FromMpi outside mpirun gives a LocalCommunicator of one rank") {
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("PMIX_RANK");
  StatusOr<std::unique_ptr<Communicator>> comm = Communicator::FromMpi();
  REQUIRE(comm.ok());
  CHECK((*comm)->kind() == "local");
  CHECK((*comm)->rank() == 0);
  CHECK((*comm)->size() == 1);
  CHECK((*comm)->local_rank() == 0);
  CHECK((*comm)->local_size() == 1);
  CHECK((*comm)->host_id() == 0);
  CHECK((*comm)->num_hosts() == 1);
}

TEST_CASE("LocalCommunicator: AllReduce is the input for every op") {
  LocalCommunicator comm;
  const Tensor input = Tensor::FromVector<float>({1.5f, -2, 3}, TensorShape{3});
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                      ReduceOp::kProd}) {
    Tensor output;
    REQUIRE(comm.AllReduce(input, &output, op).ok());
    CHECK(TensorsBitEqual(output, input));
    CHECK_FALSE(output.SharesBufferWith(input));  // the caller may write it
  }
  Tensor in_place = input.DeepCopy();
  REQUIRE(comm.AllReduce(in_place, ReduceOp::kMean).ok());
  CHECK(TensorsBitEqual(in_place, input));
  Tensor ints = Tensor::FromVector<int64_t>({7, -7}, TensorShape{2});
  REQUIRE(comm.AllReduce(ints, ReduceOp::kMean).ok());
  CHECK(ints.data<int64_t>()[0] == 7);
}

TEST_CASE("LocalCommunicator: AllReduce rejects types it cannot reduce") {
  LocalCommunicator comm;
  Tensor strings(tensorflow::DT_STRING, TensorShape{1});
  CHECK(comm.AllReduce(strings, ReduceOp::kSum).message() ==
        "all-reduce (sum) of string tensors is not supported (float, double, int32, int64 are)");
  Tensor bytes(tensorflow::DT_UINT8, TensorShape{1});
  CHECK(comm.AllReduce(bytes, ReduceOp::kMax).ok());
  CHECK(comm.AllReduce(bytes, ReduceOp::kMean).message() ==
        "all-reduce (mean) of uint8 tensors is not supported (float, double, int32, int64 are)");
}

TEST_CASE("LocalCommunicator: AllGatherV, Broadcast, AllToAllV and Barrier") {
  LocalCommunicator comm;
  const Tensor rows = Tensor::FromVector<int32_t>({1, 2, 3, 4}, TensorShape{2, 2});
  Tensor gathered;
  REQUIRE(comm.AllGatherV(rows, &gathered).ok());
  CHECK(TensorsBitEqual(gathered, rows));
  CHECK(comm.AllGatherV(Tensor::Scalar<float>(1), &gathered).message() ==
        "all-gather needs a tensor of rank >= 1 (it moves rows of dimension 0), got a scalar "
        "float");

  Tensor b = rows.DeepCopy();
  CHECK(comm.Broadcast(b, 0).ok());
  CHECK(TensorsBitEqual(b, rows));
  CHECK(comm.Broadcast(b, 1).message() == "broadcast from rank 1, but the job has 1 rank");

  Tensor received;
  std::vector<int64_t> counts;
  const std::vector<int64_t> send_counts = {2};
  REQUIRE(comm.AllToAllV(rows, send_counts, &received, &counts).ok());
  CHECK(TensorsBitEqual(received, rows));
  CHECK(counts == std::vector<int64_t>{2});
  const std::vector<int64_t> wrong = {3};
  CHECK(comm.AllToAllV(rows, wrong, &received, &counts).message() ==
        "all-to-all: send counts sum to 3 rows, the send tensor has 2");
  const std::vector<int64_t> two = {1, 1};
  CHECK(comm.AllToAllV(rows, two, &received, &counts).message() ==
        "all-to-all: 2 send counts for 1 ranks");
  CHECK(comm.Barrier().ok());
}

TEST_CASE("LocalCommunicator: ScatterV from rank 0 is the send tensor") {
  LocalCommunicator comm;
  const Tensor rows = Tensor::FromVector<int32_t>({1, 2, 3, 4}, TensorShape{2, 2});
  Tensor received;
  const std::vector<int64_t> counts = {2};
  REQUIRE(comm.ScatterV(rows, counts, &received, 0).ok());
  CHECK(TensorsBitEqual(received, rows));
  const std::vector<int64_t> wrong = {3};
  CHECK(comm.ScatterV(rows, wrong, &received, 0).message() ==
        "scatter: send counts sum to 3 rows, the send tensor has 2");
  CHECK(comm.ScatterV(rows, counts, &received, 1).message() ==
        "scatter from rank 1, but the job has 1 rank");
  CHECK(comm.ScatterV(Tensor(), counts, &received, 0).message() ==
        "scatter of an uninitialised tensor");
  CHECK(comm.bytes_sent() == 0);
}

TEST_CASE("LocalCommunicator sends nothing: its traffic counters stay 0") {
  LocalCommunicator comm;
  Tensor t = Tensor::FromVector<float>({1, 2, 3}, TensorShape{3});
  REQUIRE(comm.AllReduce(t, ReduceOp::kSum).ok());
  REQUIRE(comm.Broadcast(t, 0).ok());
  REQUIRE(comm.Barrier().ok());
  CHECK(comm.bytes_sent() == 0);
  CHECK(comm.messages_sent() == 0);
}

TEST_CASE("DivideInPlace (the mean) gives the bits of a division by the divisor") {
  // Powers of two are multiplied by the inverse, others divided: both must be x / d.
  std::vector<float> values = {1.0f, -3.0f, 0.1f, 1e-40f, -1e-45f, 3e38f, 0.0f, -0.0f, 7.0f};
  for (int i = 0; i < 1000; ++i) values.push_back(static_cast<float>(i) * 0.37f - 100.0f);
  std::vector<double> doubles(values.begin(), values.end());
  doubles.push_back(4.9e-324);
  for (int divisor : {1, 2, 3, 4, 6, 8, 64, 1024}) {
    Tensor f = Tensor::FromVector<float>(values, TensorShape{static_cast<int64_t>(values.size())});
    comm_internal::DivideInPlace(f, divisor);
    Tensor d = Tensor::FromVector<double>(doubles, TensorShape{static_cast<int64_t>(doubles.size())});
    comm_internal::DivideInPlace(d, divisor);
    for (size_t i = 0; i < values.size(); ++i) {
      const float expected = values[i] / static_cast<float>(divisor);
      INFO("float " << values[i] << " / " << divisor);
      CHECK(std::memcmp(&f.data<float>()[i], &expected, sizeof expected) == 0);
    }
    for (size_t i = 0; i < doubles.size(); ++i) {
      const double expected = doubles[i] / divisor;
      INFO("double " << doubles[i] << " / " << divisor);
      CHECK(std::memcmp(&d.data<double>()[i], &expected, sizeof expected) == 0);
    }
  }
}

TEST_CASE("ScopedLabel sets the label for its scope") {
  LocalCommunicator comm;
  {
    Communicator::ScopedLabel outer(&comm, "outer");
    CHECK(comm.label() == "outer");
    {
      Communicator::ScopedLabel inner(&comm, "inner");
      CHECK(comm.label() == "inner");
    }
    CHECK(comm.label() == "outer");
  }
  CHECK(comm.label().empty());
  Communicator::ScopedLabel none(nullptr, "ignored");  // kernels without a communicator
}

TEST_CASE("MpiOptions read PARALLAX_COLLECTIVE_TIMEOUT_S") {
  unsetenv("PARALLAX_COLLECTIVE_TIMEOUT_S");
  REQUIRE(MpiOptions::FromEnvironment().ok());
  CHECK(MpiOptions::FromEnvironment()->collective_timeout_s == 300);
  setenv("PARALLAX_COLLECTIVE_TIMEOUT_S", "2.5", 1);
  CHECK(MpiOptions::FromEnvironment()->collective_timeout_s == 2.5);
  setenv("PARALLAX_COLLECTIVE_TIMEOUT_S", "0", 1);
  CHECK(MpiOptions::FromEnvironment()->collective_timeout_s == 0);
  for (const char* bad : {"-1", "soon", "5s", "inf"}) {
    setenv("PARALLAX_COLLECTIVE_TIMEOUT_S", bad, 1);
    CHECK(MpiOptions::FromEnvironment().status().message() ==
          fmt::format("PARALLAX_COLLECTIVE_TIMEOUT_S='{}': expected a number of seconds >= 0 "
                      "(0: no timeout)",
                      bad));
  }
  unsetenv("PARALLAX_COLLECTIVE_TIMEOUT_S");
}

TEST_CASE("MpiOptions read the heartbeat and the wait policy") {
  for (const char* name : {"PARALLAX_HEARTBEAT_TIMEOUT_S", "PARALLAX_HEARTBEAT_INTERVAL_S",
                           "PARALLAX_COLLECTIVE_WAIT"}) {
    unsetenv(name);
  }
  REQUIRE(MpiOptions::FromEnvironment().ok());
  CHECK(MpiOptions::FromEnvironment()->heartbeat_timeout_s == 20);
  CHECK(MpiOptions::FromEnvironment()->heartbeat_interval_s == 1);
  CHECK(MpiOptions::FromEnvironment()->sleep_while_waiting);
  setenv("PARALLAX_HEARTBEAT_TIMEOUT_S", "3", 1);
  setenv("PARALLAX_HEARTBEAT_INTERVAL_S", "0.5", 1);
  setenv("PARALLAX_COLLECTIVE_WAIT", "spin", 1);
  REQUIRE(MpiOptions::FromEnvironment().ok());
  CHECK(MpiOptions::FromEnvironment()->heartbeat_timeout_s == 3);
  CHECK(MpiOptions::FromEnvironment()->heartbeat_interval_s == 0.5);
  CHECK(!MpiOptions::FromEnvironment()->sleep_while_waiting);
  setenv("PARALLAX_HEARTBEAT_TIMEOUT_S", "0", 1);  // off: any interval
  setenv("PARALLAX_HEARTBEAT_INTERVAL_S", "10", 1);
  CHECK(MpiOptions::FromEnvironment().ok());
  setenv("PARALLAX_HEARTBEAT_TIMEOUT_S", "15", 1);
  CHECK(MpiOptions::FromEnvironment().status().message() ==
        "PARALLAX_HEARTBEAT_TIMEOUT_S=15 must be at least twice PARALLAX_HEARTBEAT_INTERVAL_S=10 "
        "(a heartbeat may come up to one interval late)");
  setenv("PARALLAX_HEARTBEAT_TIMEOUT_S", "soon", 1);
  CHECK(MpiOptions::FromEnvironment().status().message() ==
        "PARALLAX_HEARTBEAT_TIMEOUT_S='soon': expected a number of seconds >= 0 (0: no "
        "heartbeat)");
  unsetenv("PARALLAX_HEARTBEAT_TIMEOUT_S");
  unsetenv("PARALLAX_HEARTBEAT_INTERVAL_S");
  setenv("PARALLAX_COLLECTIVE_WAIT", "busy", 1);
  CHECK(MpiOptions::FromEnvironment().status().message() ==
        "PARALLAX_COLLECTIVE_WAIT='busy': expected sleep (the default) or spin");
  unsetenv("PARALLAX_COLLECTIVE_WAIT");
}

}  // namespace
}  // namespace parallax
