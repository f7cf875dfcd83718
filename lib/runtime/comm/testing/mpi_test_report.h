// TestReport: pass/fail bookkeeping for the multi-process tests that run under mpirun.
//
// Those tests are cc_binaries (Catch2 cannot span processes): every rank runs the same
// checks on its own data, prints each failure as it happens ("FAIL rank R: name: detail")
// and at the end the counts are summed over ranks and rank 0 prints the line that
// testing/mpirun_test.sh reads: "np=N: P passed, F failed".
#ifndef PARALLAX_LIB_RUNTIME_COMM_TESTING_MPI_TEST_REPORT_H_
#define PARALLAX_LIB_RUNTIME_COMM_TESTING_MPI_TEST_REPORT_H_

#include <cstdio>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/runtime/comm/communicator.h"

namespace parallax::testing {

class TestReport {
 public:
  explicit TestReport(Communicator& communicator) : communicator_(communicator) {}

  // Records one check; prints it when it failed.
  bool Expect(bool ok, std::string_view name, std::string_view detail = "") {
    if (ok) {
      ++passed_;
    } else {
      ++failed_;
      std::fprintf(stderr, "FAIL rank %d: %.*s%s%.*s\n", communicator_.rank(),
                   static_cast<int>(name.size()), name.data(), detail.empty() ? "" : ": ",
                   static_cast<int>(detail.size()), detail.data());
    }
    return ok;
  }
  bool ExpectOk(const Status& status, std::string_view name) {
    return Expect(status.ok(), name, status.ToString());
  }
  // The status must be an error with exactly this message.
  bool ExpectError(const Status& status, std::string_view message, std::string_view name) {
    return Expect(!status.ok() && status.message() == message, name,
                  fmt::format("got '{}', expected '{}'", status.ToString(), message));
  }

  // Sums the counts over ranks; rank 0 prints the closing line. Returns main's status.
  int Finish() {
    Tensor counts = Tensor::FromVector<int64_t>({passed_, failed_}, TensorShape{2});
    const Status status = communicator_.AllReduce(counts, ReduceOp::kSum);
    if (!status.ok()) {
      std::fprintf(stderr, "FAIL rank %d: summing the results: %s\n", communicator_.rank(),
                   status.ToString().c_str());
      return 1;
    }
    if (communicator_.rank() == 0) {
      std::printf("np=%d: %lld passed, %lld failed\n", communicator_.size(),
                  static_cast<long long>(counts.data<int64_t>()[0]),
                  static_cast<long long>(counts.data<int64_t>()[1]));
      std::fflush(stdout);
    }
    return counts.data<int64_t>()[1] == 0 ? 0 : 1;
  }

 private:
  Communicator& communicator_;
  int64_t passed_ = 0;
  int64_t failed_ = 0;
};

}  // namespace parallax::testing

#endif  // PARALLAX_LIB_RUNTIME_COMM_TESTING_MPI_TEST_REPORT_H_
