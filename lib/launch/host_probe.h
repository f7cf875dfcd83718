// Probing hosts after a failed job: which of the hosts it ran on still answer.
//
// Before `parallax launch --restarts K` relaunches a failed job it probes every host the
// job was bound to: mpirun starts one `parallax --version` there, the way it starts the
// job's ranks (the same mpirun, root flag, forwarded variables and the launcher's own
// arguments, such as its remote shell agent). A host *answers* when the probe exits 0
// within the timeout; otherwise it is *lost*, with the first line the probe printed
// (ssh's "connect to host node2 port 22: Connection refused", else OpenMPI's "ORTE was
// unable to reliably start one or more daemons.") or "no answer within 15 s". The probes
// run at the same time; one still running at the timeout is stopped (SIGTERM, which
// mpirun passes on to its daemons, then SIGKILL 2 s later). A host whose probe failed
// (not timed out) is probed once more after 1 s, and only the second failure counts: one
// failed start can be OpenMPI's own. Each probe's mpirun gets a TMPDIR of its own, where
// OpenMPI makes its session directory, so that probes started together (and other
// mpiruns of this machine) do not race on a shared one ("A call to mkdir was unable to
// create the desired directory"). A probe costs about what an mpirun start costs (a
// fraction of a second on a live host).
#ifndef PARALLAX_LIB_LAUNCH_HOST_PROBE_H_
#define PARALLAX_LIB_LAUNCH_HOST_PROBE_H_

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/mpirun.h"

namespace parallax {

// How long a host has to answer a probe.
inline constexpr std::chrono::seconds kHostProbeTimeout{15};
// The pause before a failed probe's second try.
inline constexpr std::chrono::seconds kHostProbeRetryPause{1};

struct HostProbe {
  std::string host;
  bool answered = false;
  bool timed_out = false;  // no answer within the timeout (not tried again)
  std::string problem;     // when not answered: the probe's first line, or the timeout
};

// The probe's argv: mpirun -np 1 --host HOST [-x ...] [--allow-run-as-root]
// [extra mpirun args] PARALLAX --version.
std::vector<std::string> ProbeArgv(std::string_view host, const MpirunOptions& options);

// Probes `hosts` at once (see the file comment); results in the order of `hosts`.
// Errors: no process or output file could be made for a probe, or the launcher cannot
// run at all ("cannot run 'mpirun': No such file or directory": no host's fault).
StatusOr<std::vector<HostProbe>> ProbeHosts(const std::vector<std::string>& hosts,
                                            const MpirunOptions& options,
                                            std::chrono::milliseconds timeout);

}  // namespace parallax

#endif  // PARALLAX_LIB_LAUNCH_HOST_PROBE_H_
