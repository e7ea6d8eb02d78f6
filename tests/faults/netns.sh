#!/bin/bash
# Multi-host on one machine: N network namespaces ("hosts" 10.231.0.1..N on a
# private /24, never routed anywhere else), each with a veth link to a bridge
# that lives in its own namespace, and mpirun across them through Open MPI's
# rsh launcher with ns-agent.sh as the agent. UCX carries zap's traffic over
# TCP between the distinct addresses (UCX_TLS=self,tcp, UCX_NET_DEVICES=the
# veth); Open MPI's own traffic and its daemons use the same interface.
#
#   netns.sh                 the check: 2 and 4 hosts, collectives with
#                            content checks and zap-verify across the hosts
#   source netns.sh          (with NETNS_LIB=1) for the functions, as
#                            kill_trials.sh and netem.sh do
#
# Needs root, ip (iproute2), unshare, mpirun; exits 77 (ctest skip) with a
# message when namespaces cannot be created. Namespaces are always removed
# (trap). Binaries: FAULT_RANK (zap-fault-rank), FAULTS_VERIFY_BIN (zap-verify).
set -u
NETNS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FAULTS_NS_PREFIX=${FAULTS_NS_PREFIX:-zf$$-}
export FAULTS_NS_PREFIX
NS_IF=zfeth0
NS_HOSTS=0
NS_TMP=$(mktemp -d /tmp/zap-netns.XXXXXX)

ns_name() { echo "${FAULTS_NS_PREFIX}$1"; }
ns_bridge() { echo "${FAULTS_NS_PREFIX}br"; }
ns_addr() { echo "10.231.0.$(($1 + 1))"; }

ns_cleanup() {
    local i ns pids
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${FAULTS_NS_PREFIX}"); do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null
        ip netns del "$ns" 2>/dev/null
    done
    rm -rf "$NS_TMP"
}

# ns_setup N: creates N hosts and the bridge; returns 77 without root.
ns_setup() {
    local n=$1 i ns br
    for cmd in ip unshare mpirun; do
        command -v $cmd >/dev/null || { echo "SKIP: $cmd not found (scripts/setup-deps.sh installs iproute2)"; return 77; }
    done
    br=$(ns_bridge)
    if ! ip netns add "$br" 2>"$NS_TMP/err"; then
        echo "SKIP: cannot create network namespaces (needs root): $(cat "$NS_TMP/err")"
        return 77
    fi
    ip -n "$br" link add zfbr type bridge || return 1
    ip -n "$br" link set zfbr up || return 1
    for ((i = 0; i < n; i++)); do
        ns=$(ns_name $i)
        ip netns add "$ns" || return 1
        ip link add "zfv${$}h$i" type veth peer name "zfv${$}b$i" || return 1
        ip link set "zfv${$}h$i" netns "$ns" name $NS_IF || return 1
        ip link set "zfv${$}b$i" netns "$br" name "zfb$i" || return 1
        ip -n "$br" link set "zfb$i" master zfbr up || return 1
        ip -n "$ns" addr add "$(ns_addr $i)/24" dev $NS_IF || return 1
        ip -n "$ns" link set lo up || return 1
        ip -n "$ns" link set $NS_IF up || return 1
    done
    NS_HOSTS=$n
    # Check (bounded) that host 0 reaches every other host.
    for ((i = 1; i < n; i++)); do
        # A refused TCP connection proves the address answers (no ping here).
        local err
        err=$(ip netns exec "$(ns_name 0)" timeout 5 bash -c "echo > /dev/tcp/$(ns_addr $i)/9" 2>&1)
        case "$err" in *refused*) ;; *) echo "netns: host 0 cannot reach $(ns_addr $i): $err"; return 1 ;; esac
    done
    return 0
}

# ns_mpirun NP [mpirun args...] -- program args...: mpirun inside host 0 over
# hosts 0..NS_HOSTS-1 (ranks placed round-robin), bounded by NS_RUN_TIMEOUT.
# Each host gets its own /dev/shm (a private tmpfs in its own mount
# namespace), as distinct machines have: zap's shared-memory collectives then
# find no segment across hosts and everything crosses the veth links.
# NS_SHARED_SHM=1 keeps the machine's /dev/shm shared, so the hosts' ranks
# use the segment (kill_trials.sh does that on some trials).
ns_mpirun() {
    local np=$1 i
    shift
    : > "$NS_TMP/hosts"
    for ((i = 0; i < NS_HOSTS; i++)); do echo "$(ns_addr $i) slots=4" >> "$NS_TMP/hosts"; done
    local -a pre=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do pre+=("$1"); shift; done
    [ "${1:-}" = "--" ] && shift
    timeout -s KILL "${NS_RUN_TIMEOUT:-120}" ip netns exec "$(ns_name 0)" unshare --uts --mount \
        env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        UCX_TLS=self,tcp UCX_NET_DEVICES=$NS_IF UCX_WARN_UNUSED_ENV_VARS=n \
        ZAP_TIMEOUT="${ZAP_TIMEOUT:-10}" ZAP_LOG_LEVEL="${ZAP_LOG_LEVEL:-warn}" NS_SHARED_SHM="${NS_SHARED_SHM:-0}" \
        sh -c '[ "$NS_SHARED_SHM" = 1 ] || mount -t tmpfs -o size=512m zapshm /dev/shm || exit 97
               hostname zaphost0; exec "$@"' sh \
        mpirun -np "$np" --hostfile "$NS_TMP/hosts" --map-by node --oversubscribe \
        --mca plm_rsh_agent "$NETNS_DIR/ns-agent.sh" --mca plm_rsh_no_tree_spawn 1 \
        --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include $NS_IF --mca oob_tcp_if_include $NS_IF \
        -x UCX_TLS -x UCX_NET_DEVICES -x UCX_WARN_UNUSED_ENV_VARS -x ZAP_TIMEOUT -x ZAP_LOG_LEVEL \
        -x FAULTS_NS_PREFIX "${pre[@]}" "$@"
}

# The check: collectives with content checks, then zap-verify, on 2 and 4 hosts.
ns_check() {
    local fail=0 n out
    : "${FAULT_RANK:?FAULT_RANK must name the zap-fault-rank binary}"
    for n in 2 4; do
        ns_cleanup; NS_TMP=$(mktemp -d /tmp/zap-netns.XXXXXX)
        ns_setup $n || return $?
        out=$(ns_mpirun $n -- "$FAULT_RANK" --op mixed --iters 20 --count 4096 2>&1)
        local ok
        ok=$(echo "$out" | grep -c "^RESULT rank [0-9]* ok")
        if [ "$ok" -ne $n ]; then
            echo "FAIL: $n hosts: collectives: $ok of $n ranks ok"; echo "$out" | tail -20; fail=1
        elif [ "$(echo "$out" | grep "^RESULT rank [0-9]* ok" | sed 's/.* host \([^ ]*\).*/\1/' | sort -u | wc -l)" -ne $n ]; then
            echo "FAIL: $n hosts: the ranks did not run on $n distinct hosts"; echo "$out" | grep RESULT; fail=1
        else
            echo "ok: $n hosts: 20 collectives (allreduce, bcast) with content checks, one rank per host"
        fi
        # Distinct hosts: each rank's UCX worker is on its own address.
        if [ -n "${FAULTS_VERIFY_BIN:-}" ]; then
            out=$(ns_mpirun $n -- "$FAULTS_VERIFY_BIN" run --gen 3000 --invalid-fraction 0.1 --seed 9 --quiet 2>&1)
            local rc=$?
            if [ $rc -ne 0 ]; then
                echo "FAIL: $n hosts: zap-verify run exit $rc"; echo "$out" | tail -20; fail=1
            else
                echo "ok: $n hosts: zap-verify run --gen 3000 (10% invalid): verdicts match"
            fi
        fi
    done
    return $fail
}

if [ -z "${NETNS_LIB:-}" ]; then
    trap ns_cleanup EXIT
    ns_check
    exit $?
fi
