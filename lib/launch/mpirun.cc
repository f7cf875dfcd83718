#include "lib/launch/mpirun.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <thread>

#include "lib/base/machine.h"
#include "lib/base/test_hooks.h"
#include "lib/launch/child_process.h"

extern char** environ;

namespace parallax {

bool ForwardedToRanks(std::string_view name) {
  if (name.starts_with("NCCL_")) return true;
  for (std::string_view known : kRankEnvironment) {
    if (name == known) return true;
  }
  if (!TestHooksEnabled()) return false;
  return std::find(kTestHooks.begin(), kTestHooks.end(), name) != kTestHooks.end();
}

MpirunOptions MpirunOptionsForThisMachine() {
  MpirunOptions options;
  options.as_root = ::geteuid() == 0;
  options.local_cores = std::max(1u, std::thread::hardware_concurrency());
  if (std::string host = MachineHostName(); !host.empty()) options.local_hosts.push_back(host);
  char self[PATH_MAX] = {};
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) options.parallax = std::string(self, static_cast<size_t>(n));
  std::vector<std::string> extra;
  for (char** env = environ; env != nullptr && *env != nullptr; ++env) {
    const std::string_view entry(*env);
    const std::string name(entry.substr(0, entry.find('=')));
    if (ForwardedToRanks(name)) extra.push_back(name);
  }
  std::sort(extra.begin(), extra.end());
  options.forward_env.insert(options.forward_env.end(), extra.begin(), extra.end());
  return options;
}

Hostfile PlanHostfile(const Plan& plan) {
  Hostfile hostfile;
  hostfile.source = "plan";
  for (const RankPlacement& r : plan.ranks) {
    if (hostfile.hosts.empty() || hostfile.hosts.back().name != r.host) {
      HostfileEntry entry;
      entry.name = r.host;
      entry.slots = 0;
      hostfile.hosts.push_back(entry);
    }
    ++hostfile.hosts.back().slots;
  }
  return hostfile;
}

std::vector<std::string> MpirunArgv(const Hostfile& hosts, std::string_view hostfile_path,
                                    std::string_view job_dir, const MpirunOptions& options) {
  const std::string dir(job_dir);
  std::vector<std::string> argv = {options.mpirun,     "-np",
                                   std::to_string(hosts.total_slots()),
                                   "--hostfile",       std::string(hostfile_path),
                                   "--map-by",         "slot",
                                   "--bind-to",        "none",
                                   "--tag-output"};
  for (const std::string& name : options.forward_env) {
    argv.push_back("-x");
    argv.push_back(name);
  }
  if (options.as_root) argv.push_back("--allow-run-as-root");
  int local_ranks = 0;
  for (const HostfileEntry& host : hosts.hosts) {
    if (std::find(options.local_hosts.begin(), options.local_hosts.end(), host.name) !=
        options.local_hosts.end()) {
      local_ranks += host.slots;
    }
  }
  if (local_ranks > options.local_cores) argv.push_back("--oversubscribe");
  argv.insert(argv.end(), options.extra_mpirun_args.begin(), options.extra_mpirun_args.end());
  argv.push_back(options.parallax);
  argv.push_back("run");
  argv.push_back(dir);
  argv.insert(argv.end(), options.run_args.begin(), options.run_args.end());
  return argv;
}

std::vector<std::string> MpirunArgv(const Plan& plan, std::string_view job_dir,
                                    const MpirunOptions& options) {
  return MpirunArgv(PlanHostfile(plan), std::string(job_dir) + "/hostfile", job_dir, options);
}

std::string TemporaryFile::Pattern(std::string_view prefix) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  return fmt::format("{}/{}.XXXXXX", dir, prefix);
}

StatusOr<TemporaryFile> TemporaryFile::Create(std::string_view prefix, std::string_view contents) {
  std::string path = Pattern(prefix);
  const int fd = ::mkstemp(path.data());
  if (fd < 0) {
    return InternalError("cannot create a temporary file {}: {}", path, std::strerror(errno));
  }
  TemporaryFile file(path);  // removes it on any error below
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      return InternalError("cannot write {}: {}", path, std::strerror(err));
    }
    written += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return InternalError("cannot write {}: {}", path, std::strerror(errno));
  return file;
}

TemporaryFile::TemporaryFile(TemporaryFile&& other) noexcept : path_(std::move(other.path_)) {
  other.path_.clear();
}

TemporaryFile::~TemporaryFile() {
  if (!path_.empty()) ::unlink(path_.c_str());
}

std::string ShellQuote(std::string_view word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_-./=:,+@%") == std::string_view::npos;
  if (plain) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string ShellLine(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& word : argv) {
    if (!line.empty()) line += ' ';
    line += ShellQuote(word);
  }
  return line;
}

std::string CommentText(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

// Starts argv (stdout and stderr to `output_path` when given, else stderr to
// `stderr_fd` when that is not -1), calls `started` with its pid, and waits for it.
StatusOr<int> RunChild(const std::vector<std::string>& argv, const std::string& output_path,
                       int stderr_fd, const std::function<void(pid_t)>& started) {
  PX_ASSIGN_OR_RETURN(const pid_t pid,
                      StartChild(argv, ChildIo{.output_path = output_path, .stderr_fd = stderr_fd}));
  if (started) started(pid);
  return WaitChild(pid, argv[0]);
}

// RunForwardingSignals' state, read by its handler.
std::atomic<pid_t> forward_to{0};
volatile std::sig_atomic_t signal_received = 0;

void ForwardSignal(int signal) {
  signal_received = signal;
  const pid_t pid = forward_to.load();
  if (pid > 0) ::kill(pid, SIGTERM);
}

// Copies what arrives on `from` to this process's stderr until the end of the stream, or
// until `child_exited` is set and nothing more arrives for 100 ms (a daemon the child
// started may hold the pipe open). Once a signal has been received the bytes are read and
// dropped: they are the stopped ranks' teardown noise (OpenMPI's "Read -1, expected ...").
void PassStderrUntilInterrupted(int from, const std::atomic<bool>& child_exited) {
  char buffer[4096];
  while (true) {
    pollfd ready{.fd = from, .events = POLLIN, .revents = 0};
    const int polled = ::poll(&ready, 1, 100);
    if (polled < 0 && errno != EINTR) return;
    if (polled <= 0) {
      if (child_exited) return;
      continue;
    }
    const ssize_t got = ::read(from, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return;
    if (signal_received != 0) continue;
    for (ssize_t written = 0; written < got;) {
      const ssize_t n = ::write(STDERR_FILENO, buffer + written, got - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      written += n;
    }
  }
}

}  // namespace

StatusOr<int> RunAndWait(const std::vector<std::string>& argv) { return RunAndWait(argv, ""); }

StatusOr<int> RunAndWait(const std::vector<std::string>& argv, const std::string& output_path) {
  return RunChild(argv, output_path, -1, nullptr);
}

StatusOr<InterruptibleRun> RunForwardingSignals(const std::vector<std::string>& argv) {
  signal_received = 0;
  forward_to = 0;
  struct sigaction action = {};
  action.sa_handler = ForwardSignal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int = {}, old_term = {};
  ::sigaction(SIGINT, &action, &old_int);
  ::sigaction(SIGTERM, &action, &old_term);
  int stderr_pipe[2] = {-1, -1};
  const bool piped = ::pipe2(stderr_pipe, O_CLOEXEC) == 0;
  std::atomic<bool> child_exited{false};
  std::thread passer;
  if (piped) {
    passer = std::thread(PassStderrUntilInterrupted, stderr_pipe[0], std::cref(child_exited));
  }
  StatusOr<int> status = RunChild(argv, "", piped ? stderr_pipe[1] : -1, [](pid_t pid) {
    forward_to = pid;
    if (signal_received != 0) ::kill(pid, SIGTERM);  // it came before the pid was known
  });
  child_exited = true;
  if (piped) {
    ::close(stderr_pipe[1]);
    passer.join();
    ::close(stderr_pipe[0]);
  }
  forward_to = 0;
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  if (!status.ok()) return status.status();
  return InterruptibleRun{.exit_status = *status, .signal = static_cast<int>(signal_received)};
}

}  // namespace parallax
