#include "lib/launch/child_process.h"

#include <algorithm>
#include <string_view>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace parallax {

StatusOr<pid_t> StartChild(const std::vector<std::string>& argv, const ChildIo& io) {
  if (argv.empty()) return InternalError("StartChild: empty argv");
  int output = -1;
  if (!io.output_path.empty()) {
    output = ::open(io.output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (output < 0) {
      return InvalidArgumentError("{}: cannot write: {}", io.output_path, std::strerror(errno));
    }
  }
  std::vector<char*> args;
  for (const std::string& word : argv) args.push_back(const_cast<char*>(word.c_str()));
  args.push_back(nullptr);
  // The child's environment, made before fork (nothing allocates between fork and exec).
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const bool replaced = std::any_of(io.env.begin(), io.env.end(), [&](const std::string& set) {
      const size_t equals = set.find('=');
      return entry.size() > equals && entry.substr(0, equals + 1) == set.substr(0, equals + 1);
    });
    if (!replaced) env.push_back(*e);
  }
  for (const std::string& set : io.env) env.push_back(const_cast<char*>(set.c_str()));
  env.push_back(nullptr);
  // The child writes its exec error here; a successful exec closes it (O_CLOEXEC).
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) {
    if (output >= 0) ::close(output);
    return InternalError("cannot start {}: {}", argv[0], std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    if (output >= 0) ::close(output);
    ::close(error_pipe[0]);
    ::close(error_pipe[1]);
    return InternalError("cannot start {}: {}", argv[0], std::strerror(err));
  }
  if (pid == 0) {
    ::close(error_pipe[0]);
    if (io.stdin_null) {
      const int null = ::open("/dev/null", O_RDONLY);
      if (null >= 0) ::dup2(null, STDIN_FILENO);
    }
    if (output >= 0 && (::dup2(output, STDOUT_FILENO) < 0 || ::dup2(output, STDERR_FILENO) < 0)) {
      ::_exit(127);
    }
    if (output < 0 && io.stderr_fd >= 0 && ::dup2(io.stderr_fd, STDERR_FILENO) < 0) ::_exit(127);
    ::execvpe(args[0], args.data(), env.data());
    const int err = errno;
    (void)!::write(error_pipe[1], &err, sizeof(err));
    ::_exit(127);
  }
  ::close(error_pipe[1]);
  if (output >= 0) ::close(output);
  int exec_errno = 0;
  ssize_t got = 0;
  do {
    got = ::read(error_pipe[0], &exec_errno, sizeof(exec_errno));
  } while (got < 0 && errno == EINTR);
  ::close(error_pipe[0]);
  if (got == sizeof(exec_errno)) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return NotFoundError("cannot run '{}': {}", argv[0], std::strerror(exec_errno));
  }
  return pid;
}

int ExitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

StatusOr<int> WaitChild(pid_t pid, const std::string& name) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return InternalError("waiting for {}: {}", name, std::strerror(errno));
  }
  return ExitStatus(status);
}

}  // namespace parallax
