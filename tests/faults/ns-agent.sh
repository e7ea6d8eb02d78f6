#!/bin/bash
# Open MPI's rsh launch agent for the namespace "hosts" of netns.sh: called
# as `ns-agent.sh <host> <command...>` (like ssh), it runs the command inside
# the network namespace that owns <host>'s address, in a fresh UTS namespace
# named after it, so every "host" has its own address and hostname, and in
# a fresh mount namespace with its own /dev/shm (NS_SHM_SIZE, default 512m),
# IPC namespace and PID namespace, unless NS_SHARED_SHM=1 (netns.sh's
# ns_mpirun explains why).
# FAULTS_NS_PREFIX (exported by netns.sh) names the namespaces: the host
# 10.231.0.<i+1> is namespace ${FAULTS_NS_PREFIX}<i>.
set -u
host=$1
shift
case "$host" in
10.231.0.*) idx=$(( ${host##*.} - 1 )) ;;
*) echo "ns-agent.sh: $host is not a netns.sh test host (10.231.0.x)" >&2; exit 255 ;;
esac
ns=${FAULTS_NS_PREFIX:?FAULTS_NS_PREFIX is not set}$idx
# NS_CPUSETS (netns.sh with NS_PIN=1): one CPU list per host, so each host's
# processes run on cores of their own, as on distinct machines.
pin=()
if [ -n "${NS_CPUSETS:-}" ]; then
    read -r -a sets <<< "$NS_CPUSETS"
    [ -n "${sets[$idx]:-}" ] && pin=(taskset -c "${sets[$idx]}")
fi
if [ "${NS_SHARED_SHM:-0}" = 1 ]; then
    exec ip netns exec "$ns" "${pin[@]}" unshare --uts sh -c "hostname zaphost$idx; $*"
fi
# A host of its own: besides the network, the host name and /dev/shm, its
# own System V IPC and process ids (a fresh /proc), so UCX, which takes every
# process of one kernel (boot id) in one IPC and PID namespace for a
# neighbour, carries nothing between hosts through shared memory or
# process_vm_readv: all of it crosses the host's link.
# The shell is the namespace's first process: it stays until every other
# one has gone (orted --daemonize leaves it at once), or the namespace would
# end with it.
exec ip netns exec "$ns" "${pin[@]}" unshare --uts --ipc --pid --kill-child --mount-proc \
    sh -c "mount -t tmpfs -o size=${NS_SHM_SIZE:-512m} zapshm /dev/shm || exit 97; hostname zaphost$idx; $*
           rc=\$?; while kill -0 -1 2>/dev/null; do sleep 0.1; done; exit \$rc"
