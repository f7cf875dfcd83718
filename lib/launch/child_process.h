// Starting another program and waiting for it: fork + execvp with its output redirected,
// a failed exec reported as an error of the caller (not as the child's exit status 127),
// and the child's end as one number.
//
// Terms: the *exit status* of a child is its exit code, or 128 + the signal that ended
// it (as a shell reports it).
#ifndef PARALLAX_LIB_LAUNCH_CHILD_PROCESS_H_
#define PARALLAX_LIB_LAUNCH_CHILD_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "lib/base/status.h"

namespace parallax {

struct ChildIo {
  std::string output_path;  // stdout and stderr to this file (created or truncated); "": inherited
  int stderr_fd = -1;       // else stderr to this descriptor; -1: inherited
  bool stdin_null = false;  // stdin from /dev/null instead of inherited
  // Variables set for the child ("TMPDIR=/tmp/x"), over the inherited environment.
  std::vector<std::string> env;
};

// Starts argv and returns its pid once it runs the program. Errors: the output file
// cannot be written (naming it), fork fails, or the program cannot run
// (NotFound: "cannot run 'mpirun': No such file or directory").
StatusOr<pid_t> StartChild(const std::vector<std::string>& argv, const ChildIo& io);

// Waits for `pid` (retrying interrupted waits) and returns its exit status.
StatusOr<int> WaitChild(pid_t pid, const std::string& name);

// The exit status of a waitpid status word.
int ExitStatus(int wait_status);

}  // namespace parallax

#endif  // PARALLAX_LIB_LAUNCH_CHILD_PROCESS_H_
