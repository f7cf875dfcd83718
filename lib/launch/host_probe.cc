#include "lib/launch/host_probe.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

#include "lib/base/file.h"
#include "lib/launch/child_process.h"

namespace parallax {
namespace {

// Whether `line` is one of OpenMPI's own diagnostics, "[host:pid] plm:rsh: Warning: ...":
// under load its rsh launcher can warn of a setpgid race before the agent's complaint.
bool IsOpenMpiDiagnostic(std::string_view line) {
  if (!line.starts_with('[')) return false;
  const size_t close = line.find("] ");
  const size_t colon = line.rfind(':', close);
  if (close == std::string_view::npos || colon == std::string_view::npos || colon + 1 >= close) {
    return false;
  }
  const std::string_view pid = line.substr(colon + 1, close - colon - 1);
  return pid.find_first_not_of("0123456789") == std::string_view::npos;
}

// The first line of `text` that says something (not blank, not one of OpenMPI's rules
// of dashes or its own diagnostics), trimmed: ssh's or the agent's complaint comes before
// OpenMPI's explanation.
std::string FirstLine(std::string_view text) {
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    if (line.find_first_not_of('-') != std::string_view::npos && !IsOpenMpiDiagnostic(line)) {
      return std::string(line);
    }
  }
  return "";
}

struct RunningProbe {
  pid_t pid = -1;
  std::optional<TemporaryFile> output;
  // The probe's own TMPDIR: OpenMPI makes its session directory there, so probes started
  // together (and other mpiruns of this machine) do not race on a shared one.
  std::optional<TempDir> session;
  bool done = false;
  int status = 0;
  bool timed_out = false;
};

}  // namespace

std::vector<std::string> ProbeArgv(std::string_view host, const MpirunOptions& options) {
  std::vector<std::string> argv = {options.mpirun, "-np", "1", "--host", std::string(host)};
  for (const std::string& name : options.forward_env) {
    argv.push_back("-x");
    argv.push_back(name);
  }
  if (options.as_root) argv.push_back("--allow-run-as-root");
  argv.insert(argv.end(), options.extra_mpirun_args.begin(), options.extra_mpirun_args.end());
  argv.push_back(options.parallax);
  argv.push_back("--version");
  return argv;
}

namespace {

// One probe of each of `hosts` at the same time (ProbeHosts without the second try).
StatusOr<std::vector<HostProbe>> ProbeOnce(const std::vector<std::string>& hosts,
                                           const MpirunOptions& options,
                                           std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  std::vector<RunningProbe> probes(hosts.size());
  Status start_error = Status::Ok();
  for (size_t i = 0; i < hosts.size() && start_error.ok(); ++i) {
    StatusOr<TemporaryFile> output = TemporaryFile::Create("parallax-probe", "");
    if (!output.ok()) {
      start_error = output.status();
      break;
    }
    probes[i].output.emplace(*std::move(output));
    StatusOr<TempDir> session = TempDir::Make("parallax-probe-session");
    if (!session.ok()) {
      start_error = session.status();
      break;
    }
    probes[i].session.emplace(*std::move(session));
    StatusOr<pid_t> pid = StartChild(ProbeArgv(hosts[i], options),
                                     ChildIo{.output_path = probes[i].output->path(),
                                             .stdin_null = true,
                                             .env = {"TMPDIR=" + probes[i].session->path()}});
    if (!pid.ok()) {
      start_error = pid.status();
    } else {
      probes[i].pid = *pid;
    }
  }
  // Wait for every started probe, stopping those past the deadline.
  const Clock::time_point deadline = Clock::now() + timeout;
  bool terminated = false;
  Clock::time_point kill_at;
  for (;;) {
    bool running = false;
    for (RunningProbe& probe : probes) {
      if (probe.pid < 0 || probe.done) continue;
      int status = 0;
      const pid_t got = ::waitpid(probe.pid, &status, WNOHANG);
      if (got == probe.pid || (got < 0 && errno == ECHILD)) {
        probe.done = true;
        probe.status = status;
      } else {
        running = true;
      }
    }
    if (!running) break;
    const Clock::time_point now = Clock::now();
    if (!start_error.ok() && !terminated) {
      kill_at = now;  // a probe could not start: stop the others at once
      terminated = true;
    }
    if (!terminated && now >= deadline) {
      for (RunningProbe& probe : probes) {
        if (probe.pid < 0 || probe.done) continue;
        probe.timed_out = true;
        ::kill(probe.pid, SIGTERM);
      }
      terminated = true;
      kill_at = now + std::chrono::seconds(2);
    }
    if (terminated && now >= kill_at) {
      for (RunningProbe& probe : probes) {
        if (probe.pid >= 0 && !probe.done) ::kill(probe.pid, SIGKILL);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!start_error.ok()) return start_error;

  std::vector<HostProbe> results;
  for (size_t i = 0; i < hosts.size(); ++i) {
    const RunningProbe& probe = probes[i];
    HostProbe result;
    result.host = hosts[i];
    const bool exited_zero = WIFEXITED(probe.status) && WEXITSTATUS(probe.status) == 0;
    result.answered = exited_zero && !probe.timed_out;
    result.timed_out = probe.timed_out;
    if (probe.timed_out) {
      result.problem = fmt::format("no answer within {:g} s", timeout.count() / 1000.0);
    } else if (!result.answered) {
      StatusOr<std::string> text = ReadFileToString(probe.output->path(), 1 << 20);
      const std::string first = text.ok() ? FirstLine(*text) : std::string();
      const std::string how = WIFEXITED(probe.status)
                                  ? fmt::format("exit status {}", WEXITSTATUS(probe.status))
                                  : fmt::format("signal {}", WTERMSIG(probe.status));
      result.problem = first.empty() ? fmt::format("the probe ended with {}", how)
                                     : fmt::format("the probe ended with {}: {}", how, first);
    }
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace

StatusOr<std::vector<HostProbe>> ProbeHosts(const std::vector<std::string>& hosts,
                                            const MpirunOptions& options,
                                            std::chrono::milliseconds timeout) {
  PX_ASSIGN_OR_RETURN(std::vector<HostProbe> results, ProbeOnce(hosts, options, timeout));
  // A probe that failed (not one that timed out) gets a second try after a pause.
  std::vector<size_t> again;
  std::vector<std::string> again_hosts;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].answered && !results[i].timed_out) {
      again.push_back(i);
      again_hosts.push_back(results[i].host);
    }
  }
  if (again.empty()) return results;
  std::this_thread::sleep_for(kHostProbeRetryPause);
  PX_ASSIGN_OR_RETURN(std::vector<HostProbe> second, ProbeOnce(again_hosts, options, timeout));
  for (size_t k = 0; k < again.size(); ++k) results[again[k]] = std::move(second[k]);
  return results;
}

}  // namespace parallax
