#!/bin/sh
# OpenMPI's remote shell for the namespace test cluster (netns_cluster.sh): mpirun runs
# `netns_rsh_agent.sh HOST COMMAND...` (--mca plm_rsh_agent) where it would run
# `ssh HOST COMMAND...`. HOST is a cluster address; the agent runs COMMAND (the daemon's
# shell command line) in that host's network namespace, in a UTS namespace of its own
# whose hostname is the namespace's name. The map from addresses to namespaces is
# NETNS_CLUSTER_HOSTS ("ADDR=NAMESPACE ..."), set by netns_cluster_up and inherited
# through mpirun. Exits 255 (ssh's failure status) for a host not in the cluster.
host=$1
shift
ns=""
for entry in $NETNS_CLUSTER_HOSTS; do
  if [ "${entry%%=*}" = "$host" ]; then ns=${entry#*=}; fi
done
if [ -z "$ns" ]; then
  echo "netns_rsh_agent.sh: '$host' is not a host of the namespace cluster" \
    "(hosts: $NETNS_CLUSTER_HOSTS)" >&2
  exit 255
fi
# As ssh does, the remote side's shell reads the words of COMMAND as one command line.
exec ip netns exec "$ns" unshare --uts sh -c \
  'echo "$0" > /proc/sys/kernel/hostname && eval "$1"' "$ns" "$*"
