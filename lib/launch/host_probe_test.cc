#include "lib/launch/host_probe.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "lib/base/file.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

TEST_CASE("a probe starts parallax --version on the host as the job's ranks are started") {
  MpirunOptions options;
  options.parallax = "/opt/parallax";
  options.as_root = true;
  options.forward_env = {"PATH"};
  options.extra_mpirun_args = {"--mca", "plm_rsh_agent", "agent.sh"};
  CHECK(ProbeArgv("node2", options) ==
        std::vector<std::string>{"mpirun", "-np", "1", "--host", "node2", "-x", "PATH",
                                 "--allow-run-as-root", "--mca", "plm_rsh_agent", "agent.sh",
                                 "/opt/parallax", "--version"});
}

// A stand-in for mpirun: answers for host `up`, fails like ssh for `down` (after the
// setpgid warning OpenMPI's rsh launcher can print under load), hangs for `hung`, fails
// its first probe only for `flaky` (its argv: -np 1 --host HOST ...). Each probe appends
// the host to probes.log in the test's temporary folder.
std::string FakeMpirun() {
  const std::string path = testing::TempDir() + "/mpirun";
  REQUIRE(WriteFileAtomically(path, R"sh(#!/bin/sh
dir=$(dirname "$0")
echo "$4" >> "$dir/probes.log"
case "$4" in
  up) echo "parallax 0.1.0"; exit 0 ;;
  flaky) if [ -e "$dir/flaky.tried" ]; then echo "parallax 0.1.0"; exit 0; fi
         touch "$dir/flaky.tried"
         echo "A call to mkdir was unable to create the desired directory:" >&2; exit 1 ;;
  down) echo "[vm:31329] plm:rsh: Warning: setpgid(31336,31336) failed in parent with errno=Permission denied(13)" >&2
        echo "ssh: connect to host down port 22: Connection refused" >&2
        echo "-------------" >&2
        echo "ORTE was unable to reliably start one or more daemons." >&2; exit 1 ;;
  quiet) echo "" >&2; echo "  ----------" >&2; exit 1 ;;
  hung) exec sleep 60 ;;
  own-tmpdir) echo "$TMPDIR" >> "$dir/tmpdirs.log"
              case "$TMPDIR" in */parallax-probe-session.*) [ -d "$TMPDIR" ] && { echo "parallax 0.1.0"; exit 0; } ;; esac
              echo "no TMPDIR of its own: $TMPDIR" >&2; exit 1 ;;
esac
exit 2
)sh")
              .ok());
  REQUIRE(::chmod(path.c_str(), 0755) == 0);
  return path;
}

// The lines the fake mpirun at `mpirun` wrote to `log` beside it (none when it wrote none).
std::vector<std::string> LoggedLines(const std::string& mpirun, const std::string& log) {
  StatusOr<std::string> text =
      ReadFileToString(mpirun.substr(0, mpirun.rfind('/')) + "/" + log, 1 << 20);
  std::vector<std::string> lines;
  if (text.ok()) {
    std::string_view rest = *text;
    while (!rest.empty()) {
      const size_t end = rest.find('\n');
      lines.emplace_back(rest.substr(0, end));
      rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    }
  }
  return lines;
}

TEST_CASE("probing hosts: which answer, and why the others did not") {
  MpirunOptions options;
  options.mpirun = FakeMpirun();
  options.forward_env = {};
  const auto started = std::chrono::steady_clock::now();
  StatusOr<std::vector<HostProbe>> probes =
      ProbeHosts({"up", "down", "hung", "up", "quiet"}, options, std::chrono::milliseconds(700));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  REQUIRE(probes.ok());
  REQUIRE(probes->size() == 5);
  CHECK((*probes)[0].host == "up");
  CHECK((*probes)[0].answered);
  CHECK((*probes)[0].problem.empty());
  CHECK_FALSE((*probes)[1].answered);
  CHECK((*probes)[1].problem ==
        "the probe ended with exit status 1: ssh: connect to host down port 22: Connection "
        "refused");
  CHECK_FALSE((*probes)[2].answered);
  CHECK((*probes)[2].problem == "no answer within 0.7 s");
  CHECK((*probes)[3].answered);
  CHECK((*probes)[4].problem == "the probe ended with exit status 1");
  // The hung probe is stopped at the timeout (SIGTERM ends `sleep`), not waited for.
  // The bound is scaled by PARALLAX_TEST_SLOWDOWN (set by the sanitizer build, .bazelrc).
  const char* slowdown = std::getenv("PARALLAX_TEST_SLOWDOWN");
  CHECK(seconds < 5 * (slowdown != nullptr ? std::atof(slowdown) : 1.0));
}

TEST_CASE("each probe's mpirun has a TMPDIR of its own, removed after it") {
  MpirunOptions options;
  options.mpirun = FakeMpirun();
  options.forward_env = {};
  StatusOr<std::vector<HostProbe>> probes =
      ProbeHosts({"own-tmpdir", "own-tmpdir"}, options, std::chrono::seconds(10));
  REQUIRE(probes.ok());
  for (const HostProbe& probe : *probes) {
    INFO(probe.problem);
    CHECK(probe.answered);
  }
  const std::vector<std::string> tmpdirs = LoggedLines(options.mpirun, "tmpdirs.log");
  REQUIRE(tmpdirs.size() == 2);
  CHECK(tmpdirs[0] != tmpdirs[1]);
  struct stat info {};
  CHECK(::stat(tmpdirs[0].c_str(), &info) != 0);  // gone with its probe
  CHECK(::stat(tmpdirs[1].c_str(), &info) != 0);
}

// The hosts probed through the fake mpirun at `mpirun`, sorted, from its probes.log.
std::vector<std::string> ProbesLogged(const std::string& mpirun) {
  std::vector<std::string> hosts = LoggedLines(mpirun, "probes.log");
  std::sort(hosts.begin(), hosts.end());
  return hosts;
}

TEST_CASE("a failed probe is tried once more; a timed-out one is not") {
  MpirunOptions options;
  options.mpirun = FakeMpirun();
  options.forward_env = {};
  StatusOr<std::vector<HostProbe>> probes =
      ProbeHosts({"flaky", "down", "hung", "up"}, options, std::chrono::milliseconds(700));
  REQUIRE(probes.ok());
  REQUIRE(probes->size() == 4);
  // OpenMPI's session-directory race on the first start: the second try answers.
  CHECK((*probes)[0].answered);
  CHECK((*probes)[0].problem.empty());
  // A host that fails twice is lost, with the second failure's line.
  CHECK_FALSE((*probes)[1].answered);
  CHECK((*probes)[1].problem ==
        "the probe ended with exit status 1: ssh: connect to host down port 22: Connection "
        "refused");
  CHECK((*probes)[2].timed_out);
  CHECK((*probes)[3].answered);
  CHECK(ProbesLogged(options.mpirun) ==
        std::vector<std::string>{"down", "down", "flaky", "flaky", "hung", "up"});
}

TEST_CASE("a probe whose mpirun cannot run is an error naming it") {
  MpirunOptions options;
  options.mpirun = "/nonexistent/mpirun";
  StatusOr<std::vector<HostProbe>> probes =
      ProbeHosts({"up"}, options, std::chrono::milliseconds(2000));
  // Not a host's problem: the launcher itself is missing, and the probe says so.
  REQUIRE_FALSE(probes.ok());
  CHECK(probes.status().message() ==
        "cannot run '/nonexistent/mpirun': No such file or directory");
}

}  // namespace
}  // namespace parallax
