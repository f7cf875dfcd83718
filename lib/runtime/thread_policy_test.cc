#include "lib/runtime/thread_policy.h"

#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>

namespace parallax {
namespace {

TEST_CASE("the thread policy is in the environment before main") {
  REQUIRE(ThreadPolicyApplied());
  const char* omp = std::getenv("OMP_WAIT_POLICY");
  const char* blas = std::getenv("OPENBLAS_THREAD_TIMEOUT");
  REQUIRE(omp != nullptr);
  REQUIRE(blas != nullptr);
  const std::string description = DescribeThreadPolicy();
  // The test runner may set either variable; then the user's value is kept.
  if (description.find("OMP_WAIT_POLICY=PASSIVE (policy)") == std::string::npos) {
    CHECK(description.find("OMP_WAIT_POLICY=" + std::string(omp) + " (user)") != std::string::npos);
  }
  if (description.find("OPENBLAS_THREAD_TIMEOUT=20 (policy)") == std::string::npos) {
    CHECK(description.find("OPENBLAS_THREAD_TIMEOUT=" + std::string(blas) + " (user)") !=
          std::string::npos);
  }
}

}  // namespace
}  // namespace parallax
