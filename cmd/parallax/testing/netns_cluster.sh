# Test hosts on one machine: a cluster of Linux network namespaces that OpenMPI treats as
# separate hosts, so multi-host jobs run for real (TCP between hosts, shared memory inside
# one). Sourced by tests (cmd/parallax/multihost_test.sh); needs root, `ip` (iproute2) and
# `unshare` (util-linux). docs/building.md#multi-host-tests describes it for users.
#
# Terms:
#  - host I (0-based) is the network namespace ${NETNS_PREFIX}-hI with its own UTS
#    namespace whose hostname is that name too (OpenMPI 4.1 segfaults while making
#    communicators, in MPI_Comm_dup or MPI_Comm_split_type, when hosts share a hostname),
#    and the address NETNS_ADDRS[I] (10.213.0.I+1/24) on its interface eth0 (NETNS_IF);
#  - the switch: a further namespace ${NETNS_PREFIX}-sw holding a bridge that joins the
#    other ends of the hosts' veth pairs. Nothing is added to the machine's own namespace,
#    so its addresses, routes and firewall never see the cluster's traffic, and the
#    counters of each host's eth0 are exactly the bytes that cross its link;
#  - NETNS_PREFIX is pxnet-<pid of the shell>-<random>: unique per run, so tests in
#    parallel do not collide; `netns_cluster_up` also removes clusters whose shell died
#    without removing them (killed by a signal that cannot be trapped).
#
# Functions:
#  netns_cluster_up COUNT   make COUNT hosts; on failure (not root, no `ip`, namespaces
#                           not allowed) removes what it made, sets NETNS_SKIP_REASON and
#                           returns 1. Sets NETNS_PREFIX, NETNS_NAMES, NETNS_ADDRS,
#                           NETNS_SUBNET, NETNS_IF and NETNS_MPIRUN_FLAGS (mpirun flags that
#                           start OpenMPI's daemons in the hosts through
#                           netns_rsh_agent.sh instead of ssh, over the cluster's subnet).
#  netns_cluster_down       kill every process in the cluster, remove its namespaces; call
#                           it from an EXIT trap set before netns_cluster_up.
#  netns_run I CMD...       run CMD on host I (mpirun runs on host 0 so that every address
#                           it uses is inside the cluster).
#  netns_link_counters I    print host I's link counters: tx_bytes rx_bytes tx_packets
#                           rx_packets.
#  netns_kill_host I        SIGKILL every process on host I (a host that dies).
#  netns_remove_host I      netns_kill_host, then remove host I's namespace (its link goes
#                           with it): a host that is down; the rsh agent can no longer
#                           enter it, as ssh cannot reach a dead machine.

# `ip` lives in sbin on some systems, which a test's PATH may lack.
PATH=$PATH:/usr/sbin:/sbin
NETNS_SUBNET=10.213.0.0/24
NETNS_IF=eth0
NETNS_PREFIX=""
NETNS_NAMES=()
NETNS_ADDRS=()
NETNS_MPIRUN_FLAGS=()
NETNS_SKIP_REASON=""
_netns_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Removes the namespaces named PREFIX-*: their processes first (a namespace with processes
# left in it lives on after `ip netns del`).
_netns_remove_prefix() {
  local prefix=$1 ns pids
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$prefix-"); do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    if [[ -n $pids ]]; then kill -9 $pids 2>/dev/null; fi
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$prefix-"); do
    ip netns del "$ns" 2>/dev/null
  done
}

# Removes clusters left by shells that no longer run (their pid is in the name).
_netns_remove_stale() {
  local pid
  for pid in $(ip netns list 2>/dev/null | sed -n 's/^pxnet-\([0-9]*\)-.*/\1/p' | sort -u); do
    if ! kill -0 "$pid" 2>/dev/null; then _netns_remove_prefix "pxnet-$pid"; fi
  done
}

_netns_fail() {  # REASON: undo a partial cluster, say why
  NETNS_SKIP_REASON=$1
  netns_cluster_down
  return 1
}

netns_cluster_up() {
  local count=$1 i ns sw out tool
  if [[ $(id -u) -ne 0 ]]; then
    NETNS_SKIP_REASON="network namespaces need root (running as uid $(id -u))"
    return 1
  fi
  for tool in ip unshare mpirun; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      NETNS_SKIP_REASON="'$tool' is not installed"
      return 1
    fi
  done
  if [[ ! -x $_netns_dir/netns_rsh_agent.sh ]]; then
    NETNS_SKIP_REASON="$_netns_dir/netns_rsh_agent.sh is not executable"
    return 1
  fi
  _netns_remove_stale
  NETNS_PREFIX="pxnet-$$-$RANDOM"
  NETNS_NAMES=()
  NETNS_ADDRS=()
  sw=$NETNS_PREFIX-sw
  if ! out=$(ip netns add "$sw" 2>&1); then
    _netns_fail "cannot make a network namespace: ip netns add: $out"
    return 1
  fi
  if ! out=$( { ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set br0 up; } 2>&1); then
    _netns_fail "cannot make a bridge in a network namespace: $out"
    return 1
  fi
  for ((i = 0; i < count; i++)); do
    ns=$NETNS_PREFIX-h$i
    NETNS_NAMES+=("$ns")
    NETNS_ADDRS+=("10.213.0.$((i + 1))")
    # No IPv6 on the hosts: its neighbour discovery would add packets to the counters.
    if ! out=$( { ip netns add "$ns" &&
                  ip netns exec "$ns" sh -c \
                    'for f in /proc/sys/net/ipv6/conf/*/disable_ipv6; do
                       [ -e "$f" ] && echo 1 > "$f"; done; true' &&
                  ip -n "$sw" link add "h$i" type veth peer name "$NETNS_IF" netns "$ns" &&
                  ip -n "$sw" link set "h$i" master br0 up &&
                  ip -n "$ns" addr add "${NETNS_ADDRS[i]}/24" dev "$NETNS_IF" &&
                  ip -n "$ns" link set "$NETNS_IF" up &&
                  ip -n "$ns" link set lo up; } 2>&1); then
      _netns_fail "cannot make host $i ($ns): $out"
      return 1
    fi
  done
  # The agent finds a host's namespace by its address.
  NETNS_CLUSTER_HOSTS=""
  for ((i = 0; i < count; i++)); do
    NETNS_CLUSTER_HOSTS+="${NETNS_ADDRS[i]}=${NETNS_NAMES[i]} "
  done
  export NETNS_CLUSTER_HOSTS
  NETNS_MPIRUN_FLAGS=(
    --mca plm_rsh_agent "$_netns_dir/netns_rsh_agent.sh"
    --mca plm_rsh_no_tree_spawn 1            # every daemon started by mpirun's agent
    --mca btl tcp,vader,self                 # TCP between hosts, shared memory inside one
    --mca btl_tcp_if_include "$NETNS_SUBNET"
    --mca oob_tcp_if_include "$NETNS_SUBNET"
    # The hosts share this machine's cores: each host sees its slots free, so OpenMPI
    # would busy-poll; waiting ranks must yield instead (10x faster steps on 2 cores).
    --mca mpi_yield_when_idle 1
  )
  return 0
}

netns_cluster_down() {
  if [[ -n $NETNS_PREFIX ]]; then _netns_remove_prefix "$NETNS_PREFIX"; fi
  NETNS_PREFIX=""
  NETNS_NAMES=()
  NETNS_ADDRS=()
}

netns_run() {
  local ns=${NETNS_NAMES[$1]}
  shift
  ip netns exec "$ns" unshare --uts sh -c \
    'echo "$0" > /proc/sys/kernel/hostname && exec "$@"' "$ns" "$@"
}

netns_link_counters() {
  local stats=/sys/class/net/$NETNS_IF/statistics
  ip netns exec "${NETNS_NAMES[$1]}" sh -c \
    "echo \$(cat $stats/tx_bytes $stats/rx_bytes $stats/tx_packets $stats/rx_packets)"
}

netns_kill_host() {
  local pids
  pids=$(ip netns pids "${NETNS_NAMES[$1]}")
  if [[ -n $pids ]]; then kill -9 $pids; fi
}

netns_remove_host() {
  netns_kill_host "$1"
  ip netns del "${NETNS_NAMES[$1]}" 2>/dev/null
}
