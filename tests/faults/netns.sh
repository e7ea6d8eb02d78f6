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
#                            kill_trials.sh, netem.sh and scripts/cluster-bench.sh do
#
# Several ranks per host: ns_place SPEC (2x3, 1+3, 2+2+3, ...; below) places
# the ranks of the next ns_mpirun explicitly (Open MPI's seq mapper), and
# ns_limit RATE rate-limits every host's link in both directions with tc
# (htb, or tbf with NS_QDISC=tbf), like a NIC into a switch.
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
# NS_SHM_SIZE (default 512m) sizes each host's /dev/shm; NS_PIN=1 runs each
# host on its own share of the machine's CPUs (ns_cpusets).
# NS_SHARED_SHM=1 keeps the machine's /dev/shm shared, so the hosts' ranks
# use the segment (kill_trials.sh does that on some trials).
# With NS_PLACE set (ns_place), rank r runs on host ${NS_PLACE[r]}: the
# hostfile then gives each host as many slots as it has ranks, and Open MPI
# fills them host by host (--map-by slot) or deals them in turn (--map-by
# node), as ns_place chose. (Open MPI's sequential mapper would follow any
# list, but with --enable-recovery, which the kill trials need, mpirun 4.1
# never ends once a rank has died: PMIx event errors, then a hang.)
# NS_UCX_TLS (default self,tcp) and NS_BTL (default self,tcp) choose UCX's and
# Open MPI's transports: with several ranks per host, self,sm,tcp and
# self,vader,tcp keep a host's own traffic in its shared memory. UCX retries a
# refused TCP connection NS_UCX_TCP_RETRIES times (default 255, UCX's own 25):
# every rank of a cluster connects at once on a 2-core machine, and a CI run
# once failed its 3x2 layout on "tcp_ep ... UNKNOWN" after UCX's 25. The rsh
# launcher is named: a machine whose environment picks another one
# (OMPI_MCA_plm=isolated on the GPU host) would start every rank in host 0.
ns_mpirun() {
    local np=$1 i
    shift
    local -a map=(--map-by node)
    : > "$NS_TMP/hosts"
    if [ ${#NS_PLACE[@]} -gt 0 ]; then
        [ "$np" -le ${#NS_PLACE[@]} ] || { echo "ns_mpirun: $np ranks but NS_PLACE places ${#NS_PLACE[@]}" >&2; return 2; }
        local -a slots=()
        for ((i = 0; i < np; i++)); do slots[${NS_PLACE[$i]}]=$((${slots[${NS_PLACE[$i]}]:-0} + 1)); done
        for ((i = 0; i < ${#slots[@]}; i++)); do echo "$(ns_addr $i) slots=${slots[$i]:-0}"; done >> "$NS_TMP/hosts"
        # No binding: each host's daemon would bind its ranks to the
        # machine's first cores, the same ones on every host. NS_PIN=1 gives
        # each host its own cores instead (ns-agent.sh).
        map=(--map-by "$NS_MAPPING" --bind-to none)
    else
        for ((i = 0; i < NS_HOSTS; i++)); do echo "$(ns_addr $i) slots=4" >> "$NS_TMP/hosts"; done
    fi
    local -a pre=() pin=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do pre+=("$1"); shift; done
    [ "${1:-}" = "--" ] && shift
    local cpusets=
    if [ "${NS_PIN:-0}" = 1 ]; then
        cpusets=$(ns_cpusets)
        pin=(taskset -c "${cpusets%% *}")
    fi
    # Host 0's own IPC and PID namespaces too (ns-agent.sh says why), except
    # where hosts share /dev/shm on purpose.
    local -a own=(--ipc --pid --kill-child --mount-proc)
    [ "${NS_SHARED_SHM:-0}" = 1 ] && own=()
    timeout -s KILL "${NS_RUN_TIMEOUT:-120}" ip netns exec "$(ns_name 0)" "${pin[@]}" unshare --uts --mount "${own[@]}" \
        env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NS_CPUSETS="$cpusets" NS_SHM_SIZE="${NS_SHM_SIZE:-512m}" \
        UCX_TLS="${NS_UCX_TLS:-self,tcp}" UCX_NET_DEVICES=$NS_IF UCX_WARN_UNUSED_ENV_VARS=n \
        UCX_TCP_MAX_CONN_RETRIES="${NS_UCX_TCP_RETRIES:-255}" \
        ZAP_TIMEOUT="${ZAP_TIMEOUT:-10}" ZAP_LOG_LEVEL="${ZAP_LOG_LEVEL:-warn}" NS_SHARED_SHM="${NS_SHARED_SHM:-0}" \
        sh -c '[ "$NS_SHARED_SHM" = 1 ] || mount -t tmpfs -o size=$NS_SHM_SIZE zapshm /dev/shm || exit 97
               hostname zaphost0; exec "$@"' sh \
        mpirun -np "$np" --hostfile "$NS_TMP/hosts" "${map[@]}" --oversubscribe \
        --mca plm rsh --mca plm_rsh_agent "$NETNS_DIR/ns-agent.sh" --mca plm_rsh_no_tree_spawn 1 \
        --mca pml ob1 --mca btl "${NS_BTL:-self,tcp}" --mca btl_tcp_if_include $NS_IF --mca oob_tcp_if_include $NS_IF \
        -x UCX_TLS -x UCX_NET_DEVICES -x UCX_WARN_UNUSED_ENV_VARS -x UCX_TCP_MAX_CONN_RETRIES -x ZAP_TIMEOUT -x ZAP_LOG_LEVEL \
        -x FAULTS_NS_PREFIX "${pre[@]}" "$@"
}

# ns_cpusets: the machine's online CPUs split into one contiguous list per
# host in use (NS_NHOSTS of ns_place, else NS_HOSTS), for NS_PIN=1; a host
# gets at least one CPU (hosts share CPUs when there are fewer CPUs than hosts).
ns_cpusets() {
    local n h=${NS_NHOSTS:-0} i lo hi out=
    [ "$h" -gt 0 ] || h=$NS_HOSTS
    n=$(nproc)
    for ((i = 0; i < h; i++)); do
        lo=$((i * n / h)) hi=$(((i + 1) * n / h - 1))
        [ $hi -lt $lo ] && hi=$lo
        [ $lo -ge $n ] && lo=$((n - 1)) hi=$((n - 1))
        out="$out $lo-$hi"
    done
    echo ${out# }
}

# ns_place SPEC: where the ranks of the next ns_mpirun run. SPEC is HxR (H
# hosts of R ranks), or counts per host joined by + (1+3, 2+2+3); ranks fill
# host 0 first, then host 1, ... (block placement, Open MPI's --map-by
# slot), or with a ":cyclic" suffix are dealt one per host in turn over the
# hosts that still have room (--map-by node). Sets NS_PLACE (the host of each
# rank), NS_NP (the rank count), NS_NHOSTS (the host count) and NS_MAPPING;
# ns_place "" goes back to one rank per host. Returns 2 for a SPEC it cannot
# read.
NS_PLACE=()
NS_NP=0
NS_NHOSTS=0
NS_MAPPING=slot
ns_place() {
    local spec=${1%%:*} mode= i h r
    [ "$1" != "$spec" ] && mode=${1#*:}
    NS_PLACE=() NS_NP=0 NS_NHOSTS=0 NS_MAPPING=slot
    [ -z "$spec" ] && return 0
    local -a per=()
    if [[ $spec =~ ^([0-9]+)x([0-9]+)$ ]]; then
        for ((h = 0; h < BASH_REMATCH[1]; h++)); do per+=("${BASH_REMATCH[2]}"); done
    elif [[ $spec =~ ^[0-9]+(\+[0-9]+)*$ ]]; then
        IFS=+ read -r -a per <<< "$spec"
    else
        echo "ns_place: cannot read '$1' (HxR, a+b+c, optional :cyclic)" >&2; return 2
    fi
    for h in "${per[@]}"; do [ "$h" -ge 1 ] || { echo "ns_place: a host with no rank in '$1'" >&2; return 2; }; done
    NS_NHOSTS=${#per[@]}
    case "$mode" in
    "" | block)
        for ((h = 0; h < NS_NHOSTS; h++)); do
            for ((r = 0; r < per[h]; r++)); do NS_PLACE+=("$h"); done
        done
        NS_MAPPING=slot ;;
    cyclic)
        local -a left=("${per[@]}")
        local more=1
        while [ $more = 1 ]; do
            more=0
            for ((h = 0; h < NS_NHOSTS; h++)); do
                if [ "${left[$h]}" -gt 0 ]; then NS_PLACE+=("$h"); left[$h]=$((left[h] - 1)); more=1; fi
            done
        done
        NS_MAPPING=node ;;
    *) echo "ns_place: unknown placement '$mode' (block, cyclic)" >&2; return 2 ;;
    esac
    NS_NP=${#NS_PLACE[@]}
    return 0
}

# ns_limit RATE: every host's link carries at most RATE (tc's units: 1gbit,
# 5gbit, 500mbit) each way: a qdisc on the host's veth end limits what the
# host sends, one on the bridge's port what it receives, as a NIC's line rate
# into a switch would. NS_QDISC=htb (default: one class of rate = ceil = RATE)
# or tbf; the bucket holds 1 ms at RATE, at least 128 KiB, so the kernel's
# 64 KiB segments (veth keeps GSO) always fit. ns_limit off removes them.
# Returns 77 with a SKIP line when tc or the qdisc is missing.
ns_limit() {
    local rate=$1 q=${NS_QDISC:-htb} i ns dev side burst
    command -v tc >/dev/null || { echo "SKIP: tc not found (iproute2)"; return 77; }
    if [ "$rate" != off ]; then
        local bits
        bits=$(awk -v r="$rate" 'BEGIN{ r = tolower(r); n = r + 0; u = substr(r, length(n "") + 1);
            m = (u ~ /^g/) ? 1e9 : (u ~ /^m/) ? 1e6 : (u ~ /^k/) ? 1e3 : 1; printf "%.0f", n * m }')
        [ "${bits:-0}" -gt 0 ] || { echo "ns_limit: cannot read rate '$rate'" >&2; return 2; }
        burst=$((bits / 8 / 1000 * ${NS_BURST_MS:-1}))
        [ $burst -lt 131072 ] && burst=131072
    fi
    for ((i = 0; i < NS_HOSTS; i++)); do
        for side in host bridge; do
            if [ $side = host ]; then ns=$(ns_name $i) dev=$NS_IF; else ns=$(ns_bridge) dev=zfb$i; fi
            ip netns exec "$ns" tc qdisc del dev $dev root 2>/dev/null
            [ "$rate" = off ] && continue
            case $q in
            htb)
                ip netns exec "$ns" tc qdisc add dev $dev root handle 1: htb default 1 2>"$NS_TMP/err" &&
                ip netns exec "$ns" tc class add dev $dev parent 1: classid 1:1 htb rate "$rate" ceil "$rate" \
                    burst $burst cburst $burst quantum 65536 2>>"$NS_TMP/err" ;;
            tbf)
                ip netns exec "$ns" tc qdisc add dev $dev root tbf rate "$rate" burst $burst latency 100ms 2>"$NS_TMP/err" ;;
            *) echo "ns_limit: NS_QDISC must be htb or tbf" >&2; return 2 ;;
            esac
            if [ $? -ne 0 ]; then
                echo "SKIP: tc $q on $dev failed: $(head -c 300 "$NS_TMP/err")"; return 77
            fi
        done
    done
    NS_RATE=$rate
    return 0
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
