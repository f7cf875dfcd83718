#include "lib/launch/mpirun.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "lib/base/file.h"
#include "lib/launch/testing/plan_on_hosts.h"

namespace parallax {
namespace {

using testing::PlanOnHosts;

MpirunOptions Plain() {
  MpirunOptions options;
  options.parallax = "/opt/parallax/bin/parallax";
  options.local_cores = 2;
  return options;
}

TEST_CASE("one host: the argv Horovod would use, no root or oversubscribe flags") {
  const std::vector<std::string> argv =
      MpirunArgv(PlanOnHosts({{"localhost", 2}}), "/jobs/mlp", Plain());
  CHECK(ShellLine(argv) ==
        "mpirun -np 2 --hostfile /jobs/mlp/hostfile --map-by slot --bind-to none --tag-output "
        "-x PATH -x LD_LIBRARY_PATH /opt/parallax/bin/parallax run /jobs/mlp");
}

TEST_CASE("root, oversubscribed local host, forwarded variables, extra and run args") {
  MpirunOptions options = Plain();
  options.as_root = true;
  options.forward_env.push_back("NCCL_DEBUG");
  options.extra_mpirun_args = {"--mca", "btl", "self,tcp"};
  options.run_args = {"--steps", "20"};
  const std::vector<std::string> argv =
      MpirunArgv(PlanOnHosts({{"localhost", 4}}), "/jobs/a b", options);
  CHECK(ShellLine(argv) ==
        "mpirun -np 4 --hostfile '/jobs/a b/hostfile' --map-by slot --bind-to none --tag-output "
        "-x PATH -x LD_LIBRARY_PATH -x NCCL_DEBUG --allow-run-as-root --oversubscribe --mca btl "
        "self,tcp /opt/parallax/bin/parallax run '/jobs/a b' --steps 20");
}

TEST_CASE("several hosts: remote hosts never trigger --oversubscribe") {
  const Plan plan = PlanOnHosts({{"node1", 4}, {"node2", 4}, {"node3", 4}});
  const std::vector<std::string> argv = MpirunArgv(plan, "/shared/job", Plain());
  CHECK(argv[2] == "12");
  CHECK(std::find(argv.begin(), argv.end(), "--oversubscribe") == argv.end());
  const Hostfile hostfile = PlanHostfile(plan);
  CHECK(FormatHostfile(hostfile) == "node1 slots=4\nnode2 slots=4\nnode3 slots=4\n");
}

TEST_CASE("bound hosts: mpirun reads them from the file named, --oversubscribe by their names") {
  const Plan plan = PlanOnHosts({{"node1", 2}, {"node2", 2}});
  StatusOr<Hostfile> hosts = ParseHostList("localhost:2,127.0.0.1:2");
  REQUIRE(hosts.ok());
  const std::vector<std::string> argv =
      MpirunArgv(*hosts, "/tmp/parallax-hosts.a1b2c3", "/jobs/mlp", Plain());
  CHECK(ShellLine(argv) ==
        "mpirun -np 4 --hostfile /tmp/parallax-hosts.a1b2c3 --map-by slot --bind-to none "
        "--tag-output -x PATH -x LD_LIBRARY_PATH --oversubscribe /opt/parallax/bin/parallax run "
        "/jobs/mlp");
  // The plan's own hosts, from the job's hostfile: the same line as before binding existed.
  CHECK(MpirunArgv(plan, "/jobs/mlp", Plain()) ==
        MpirunArgv(PlanHostfile(plan), "/jobs/mlp/hostfile", "/jobs/mlp", Plain()));
}

TEST_CASE("a temporary file holds its contents until it is destroyed") {
  std::string path;
  {
    StatusOr<TemporaryFile> file = TemporaryFile::Create("parallax-test", "node1 slots=2\n");
    REQUIRE(file.ok());
    path = file->path();
    CHECK(path.find("parallax-test.") != std::string::npos);
    CHECK(*RunAndWait({"grep", "-qx", "node1 slots=2", path}) == 0);
    TemporaryFile moved = std::move(*file);
    CHECK(moved.path() == path);
  }
  CHECK(::access(path.c_str(), F_OK) != 0);
  CHECK(TemporaryFile::Pattern("parallax-hosts").ends_with("/parallax-hosts.XXXXXX"));
}

TEST_CASE("RunForwardingSignals passes a SIGINT or SIGTERM on as SIGTERM and restores the "
          "handlers") {
  for (int sig : {SIGINT, SIGTERM}) {
    // The child signals this process, which must stop the child (sleep would last 30 s).
    const std::string script = "kill -" + std::to_string(sig) + " $PPID; exec sleep 30";
    struct sigaction before = {}, after = {};
    ::sigaction(sig, nullptr, &before);
    StatusOr<InterruptibleRun> run = RunForwardingSignals({"sh", "-c", script});
    REQUIRE(run.ok());
    CHECK(run->signal == sig);
    CHECK(run->exit_status == 128 + SIGTERM);
    ::sigaction(sig, nullptr, &after);
    CHECK(after.sa_handler == before.sa_handler);
  }
  StatusOr<InterruptibleRun> quiet = RunForwardingSignals({"sh", "-c", "exit 4"});
  REQUIRE(quiet.ok());
  CHECK(quiet->signal == 0);
  CHECK(quiet->exit_status == 4);
}

TEST_CASE("RunForwardingSignals passes stderr through until the signal and drops it after") {
  // The child writes a line after the SIGTERM it ignores, as a rank's teardown noise
  // would come; this test's own stderr goes to a file for the run.
  TemporaryFile captured = *TemporaryFile::Create("parallax-stderr", "");
  const int saved = ::dup(STDERR_FILENO);
  const int file = ::open(captured.path().c_str(), O_WRONLY | O_TRUNC);
  REQUIRE(file >= 0);
  ::dup2(file, STDERR_FILENO);
  ::close(file);
  StatusOr<InterruptibleRun> run = RunForwardingSignals(
      {"sh", "-c",
       "trap '' TERM; echo before >&2; sleep 0.3; kill -INT $PPID; sleep 0.3; echo after >&2"});
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  REQUIRE(run.ok());
  CHECK(run->signal == SIGINT);
  CHECK(*ReadFileToString(captured.path()) == "before\n");
}

TEST_CASE("RunAndWait returns the exit status and reports programs that cannot start") {
  CHECK(*RunAndWait({"true"}) == 0);
  CHECK(*RunAndWait({"sh", "-c", "exit 3"}) == 3);
  CHECK(*RunAndWait({"sh", "-c", "kill -TERM $$"}) == 128 + 15);
  StatusOr<int> missing = RunAndWait({"/nonexistent/mpirun"});
  CHECK(missing.status().message() == "cannot run '/nonexistent/mpirun': No such file or directory");
}

TEST_CASE("ShellQuote") {
  CHECK(ShellQuote("node1") == "node1");
  CHECK(ShellQuote("a b") == "'a b'");
  CHECK(ShellQuote("it's") == "'it'\\''s'");
  CHECK(ShellQuote("") == "''");
}

TEST_CASE("CommentText keeps a name on its comment line") {
  CHECK(CommentText("model.pb") == "model.pb");
  CHECK(CommentText("g\ntouch /tmp/pwned\n.pb") == "g\\ntouch /tmp/pwned\\n.pb");
  CHECK(CommentText("a\tb\rc\x1b[0m\x7f") == "a\\tb\\rc\\x1b[0m\\x7f");
  CHECK(CommentText("caf\xc3\xa9") == "caf\xc3\xa9");  // UTF-8 is kept
}

}  // namespace
}  // namespace parallax
