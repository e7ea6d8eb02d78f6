#!/bin/bash
# SIGKILL trials across network-namespace hosts (netns.sh): in each trial one
# rank is killed at a seeded random point during an allreduce loop, a
# broadcast loop or a zap-verify job. Every trial must end (bounded by
# `timeout`), and every surviving rank must report an error that names the
# killed rank within ZAP_TIMEOUT + 1 s of the kill, or finish correctly when
# the kill came after its last collective; a wrong result fails the trial.
# A survivor whose error names not the killed rank but another survivor that
# already left (what the transport's failure notices prevent) fails the
# trial; STRICT=0 only counts and reports it (docs/faults.md).
#
#   kill_trials.sh [TRIALS [SEED [LAYOUT]]]   default 6 trials, seed 1;
#                                             LAYOUT as KILL_LAYOUT below
#
# Trials cycle allreduce, bcast, zap-verify (KINDS overrides), on 3 or 4 hosts; the kill
# point comes from SEED + trial. One line per trial, then a summary with the
# worst detection latency. Exit 0 when every trial passed, 1 otherwise, 77
# (skip) without namespaces.
#
# VERIFY_ITEMS (default 60000) sets the zap-verify batch: a larger one (say
# 400000) keeps the root generating through the whole kill window, so every
# kill lands in the load phase. A verify trial's line says "during load" when
# a rank reported the failure while the root was still loading the batch.
# KILL_WINDOW (default "1.0 3.0") is the seconds after the ranks exist
# within which a zap-verify victim is killed: with a large batch and a late
# window (say VERIFY_ITEMS=400000 KILL_WINDOW="9 12") the kill lands while
# the ranks verify; the line then says "during verification" when a rank
# stopped its verifier for it (the job's peer watch, core/verify/watch.c).
#
# KINDS=scan runs scans (zap-fault-rank --op scan) of 200000 int64 where the
# hosts share /dev/shm (the large area's forms; the chain wraps around it),
# 4 or 4096 elsewhere; SCAN_ALGS (default "auto") is a list of ZAP_SCAN_ALG
# values the trials cycle through.
#
# Every trial also checks what docs/faults.md guarantees of the survivors:
# they differ on the failed collective only, never past it (their errors are
# at most one call apart, and one that finished every call sits only beside
# errors in the last).
#
# ALLREDUCE_ALG sets ZAP_ALLREDUCE_ALG for the allreduce trials: with
# ALLREDUCE_ALG=cma the trials whose hosts share /dev/shm run the single-copy
# allreduce (the others have no segment and take recursive doubling), and
# their lines say "single-copy".
#
# KILL_LAYOUT (netns.sh's ns_place: 2x2, 2x3, 1+3, ...) puts several ranks on
# each host, each host with its own /dev/shm, so the collectives run through
# the hosts' hierarchy (docs/collectives.md, "Across hosts"): every trial
# then uses that layout, the victim is a host's leader (its local rank 0) or
# not, as its line says, and allreduce and bcast trials alternate a small
# count (the hierarchical agreement) with a large one (the pipelined stages
# on the node's and the leaders' communicators).
#
# zap-fault-rank prints each survivor's error time itself; zap-verify does
# not, so its output is time-stamped line by line as it arrives (bash's
# EPOCHREALTIME, no fork per line) and a survivor's error time is that of its
# first "zap[rank R] error:" line. The job's end (MPI_Abort, mpirun's
# teardown) is reported but bounded only by the hang limit.
set -u
TRIALS=${1:-6}
SEED=${2:-1}
[ -n "${3:-}" ] && KILL_LAYOUT=$3
export ZAP_TIMEOUT=${ZAP_TIMEOUT:-5}
NETNS_LIB=1 source "$(dirname "${BASH_SOURCE[0]}")/netns.sh"
trap ns_cleanup EXIT
: "${FAULT_RANK:?FAULT_RANK must name the zap-fault-rank binary}"
RECOVERY=(--enable-recovery --mca orte_allowed_exit_without_sync 1)
WRAP=()
if [ -n "${KILL_LAYOUT:-}" ]; then
    ns_place "$KILL_LAYOUT" || exit 2
    ns_setup $NS_NHOSTS || exit $?
    export NS_UCX_TLS=self,sm,tcp NS_BTL=self,vader,tcp
    # With several ranks under one Open MPI daemon, a rank killed there and
    # the others exiting with an error afterwards leave mpirun 4.1 waiting
    # forever under --enable-recovery, unless a non-zero exit is not a
    # reason to abort the job (it is not one here: every survivor reports),
    # and the killed process is not the one the daemon started: each rank
    # runs under a shell that waits for it (WRAP) and then exits with its
    # status, as a normal exit. (mpirun 4.1 still hung now and then when a
    # rank the daemon started itself was killed.)
    RECOVERY+=(--mca orte_abort_on_non_zero_status 0)
    WRAP=(sh -c '"$@"; exit $?' sh)
else
    ns_setup 4 || exit $?
fi
ITERS=40 # collectives per zap-fault-rank trial
NS_RUN_TIMEOUT=$(awk "BEGIN{print int($ZAP_TIMEOUT) + 40}")
LIMIT=$(awk "BEGIN{print $ZAP_TIMEOUT + 1}")

fails=0 passed=0 late=0 worst=0 worst_end=0 finished_first=0 named=0 unnamed=0
now() { date +%s.%N; }
fmax() { awk "BEGIN{a=$1; b=$2; print (a > b) ? a : b}"; }
fgt() { awk "BEGIN{exit !($1 > $2)}"; }

# The pid of rank $1 of a zap-verify job of this run (found by its environment).
rank_pid() {
    local p
    for p in $(pgrep -x zap-verify); do
        if tr '\0' '\n' 2>/dev/null < /proc/$p/environ | grep -qx "OMPI_COMM_WORLD_RANK=$1" &&
           tr '\0' '\n' 2>/dev/null < /proc/$p/environ | grep -qx "FAULTS_NS_PREFIX=$FAULTS_NS_PREFIX"; then
            echo $p; return 0
        fi
    done
    return 1
}

for ((t = 0; t < TRIALS; t++)); do
    s=$((SEED + t))
    np=$((3 + s % 2))
    [ -n "${KILL_LAYOUT:-}" ] && np=$NS_NP
    victim=$((s * 7919 % np))
    kinds=(${KINDS:-allreduce bcast verify})
    kind=${kinds[$((t % ${#kinds[@]}))]}
    log=$NS_TMP/trial$t.log kf=$NS_TMP/kill$t
    rm -f "$kf"
    start=$(now)
    # Every other pair of seeds the hosts share /dev/shm (NS_SHARED_SHM,
    # netns.sh), so zap's collectives go through the shared-memory segment
    # and a death is seen there; otherwise every message crosses the links.
    export NS_SHARED_SHM=$(((s / 2) % 2))
    [ -n "${KILL_LAYOUT:-}" ] && NS_SHARED_SHM=0
    if [ $kind = verify ]; then
        : "${FAULTS_VERIFY_BIN:?FAULTS_VERIFY_BIN must name zap-verify}"
        (set -o pipefail
         ns_mpirun $np "${RECOVERY[@]}" -x ZAP_VERIFY_THREADS=1 -- \
            "${WRAP[@]}" "$FAULTS_VERIFY_BIN" run --gen "${VERIFY_ITEMS:-60000}" --invalid-fraction 0.05 --seed $s --quiet --rank-status 2>&1 |
            while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done > "$log") &
        job=$!
        # Kill at a seeded point of KILL_WINDOW (1.0 to 3.0 s) after the ranks exist.
        read -r kw_lo kw_hi <<< "${KILL_WINDOW:-1.0 3.0}"
        delay=$(awk "BEGIN{srand($s); printf \"%.3f\", $kw_lo + ($kw_hi - $kw_lo) * rand()}")
        pid=""
        for ((w = 0; w < 200; w++)); do pid=$(rank_pid $victim) && break; sleep 0.05; done
        sleep "$delay"
        if [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; then now > "$kf"; fi
        wait $job; rc=$?
    else
        # Odd seeds: 4 elements, which the shared-memory allreduce carries in
        # a slot; even: 4096 (32 KiB), which goes through the segment's large
        # area (both only where the hosts share /dev/shm; elsewhere over the
        # links).
        count=$((s % 2 ? 4 : 4096))
        [ -n "${KILL_LAYOUT:-}" ] && count=$((s % 2 ? 4 : 200000))
        [ $kind = scan ] && [ "$NS_SHARED_SHM" = 1 ] && count=200000
        alg=()
        [ $kind = allreduce ] && [ -n "${ALLREDUCE_ALG:-}" ] && alg=(-x ZAP_ALLREDUCE_ALG="$ALLREDUCE_ALG")
        if [ $kind = scan ]; then
            scan_algs=(${SCAN_ALGS:-auto})
            alg=(-x ZAP_SCAN_ALG="${scan_algs[$((t % ${#scan_algs[@]}))]}")
        fi
        ns_mpirun $np "${RECOVERY[@]}" "${alg[@]}" -- \
            "${WRAP[@]}" "$FAULT_RANK" --op $kind --iters $ITERS --count $count --kill-rank $victim --seed $s --kill-file "$kf" > "$log" 2>&1
        rc=$?
    fi
    end=$(now)
    verdict=pass why=""
    if [ $rc -eq 137 ] || fgt "$(awk "BEGIN{print $end - $start}")" $((NS_RUN_TIMEOUT - 1)); then
        verdict=FAIL why="hung: killed by timeout after ${NS_RUN_TIMEOUT}s"
    elif grep -q "^RESULT rank [0-9]* wrong" "$log" || grep -q "verdict mismatch\|MISMATCH" "$log"; then
        verdict=FAIL why="wrong result"
    fi
    if [ ! -s "$kf" ]; then
        finished_first=$((finished_first + 1))
        detail="no kill (the job ended first), rc $rc"
        if [ $verdict = pass ] && [ $rc -ne 0 ]; then verdict=FAIL why="no kill but job failed"; fi
    else
        kt=$(cat "$kf")
        jobend=$(awk "BEGIN{printf \"%.2f\", $end - $kt}")
        detail="killed rank $victim of $np; job ended ${jobend}s after the kill"
        if [ -n "${KILL_LAYOUT:-}" ]; then
            vh=${NS_PLACE[$victim]} role=leader
            for ((q = 0; q < victim; q++)); do [ "${NS_PLACE[$q]}" = "$vh" ] && role=non-leader; done
            detail="$detail; $KILL_LAYOUT, the victim a $role on host $vh"
            [ $kind = verify ] || detail="$detail, count $count"
        fi
        tworst=0
        if [ $kind = verify ] && grep -q "while the root loaded the batch\|to load the batch:" "$log"; then
            detail="$detail; during load"
        fi
        if [ $kind = verify ] && grep -q "stopped verifying: a peer failed" "$log"; then
            detail="$detail; during verification"
        fi
        [ "$NS_SHARED_SHM" = 1 ] && detail="$detail; hosts share /dev/shm"
        [ "$NS_SHARED_SHM" = 1 ] && [ $kind = allreduce ] && [ "${ALLREDUCE_ALG:-}" = cma ] && detail="$detail; single-copy"
        [ $kind = scan ] && detail="$detail; ${alg[1]}, count $count"
        if grep -q "its process is gone" "$log"; then
            detail="$detail; seen in shared memory"
        fi
        for ((r = 0; r < np; r++)); do
            [ $r -eq $victim ] && continue
            if [ $kind = verify ]; then
                # zap-verify: the survivor's error log lines must name the
                # victim, the first within the limit.
                et=$(grep -m1 "zap\[rank $r\] error:" "$log" | awk '{print $1}')
                if [ -n "$et" ]; then
                    lat=$(awk "BEGIN{printf \"%.3f\", $et - $kt}")
                    worst=$(fmax $worst $lat) tworst=$(fmax $tworst $lat)
                    if fgt $lat $LIMIT; then verdict=FAIL late=$((late + 1)) why="$why rank $r: error ${lat}s after the kill;"; fi
                fi
                if grep -q "zap\[rank $r\] error:.*rank $victim\b" "$log"; then
                    named=$((named + 1))
                elif [ -z "$et" ] && grep -q "zap-verify: rank $r: job ended, exit status 0" "$log"; then
                    : # the victim died after its last collective: this rank finished correctly
                elif [ -n "$et" ]; then
                    unnamed=$((unnamed + 1))
                    [ "${STRICT:-1}" = 1 ] && verdict=FAIL why="$why rank $r: error does not name rank $victim;"
                else
                    verdict=FAIL why="$why rank $r: no error at all;"
                fi
            else
                line=$(grep "^RESULT rank $r " "$log" | head -1)
                case "$line" in
                *" ok "*) ;;
                *" error "*)
                    et=$(echo "$line" | sed 's/.* at \([0-9.]*\) .*/\1/')
                    lat=$(awk "BEGIN{printf \"%.3f\", $et - $kt}")
                    worst=$(fmax $worst $lat) tworst=$(fmax $tworst $lat)
                    if fgt $lat $LIMIT; then verdict=FAIL late=$((late + 1)) why="$why rank $r: error ${lat}s after the kill;"; fi
                    case "$line" in
                    *"named-failed-rank yes"*) named=$((named + 1)) ;;
                    *) unnamed=$((unnamed + 1))
                       [ "${STRICT:-1}" = 1 ] && verdict=FAIL why="$why rank $r: error does not name rank $victim;" ;;
                    esac
                    ;;
                *) verdict=FAIL why="$why rank $r: no result line;" ;;
                esac
            fi
        done
        worst_end=$(fmax $worst_end $jobend)
        detail="$detail; last survivor error ${tworst}s after it"
        if [ $kind != verify ]; then
            iters=$(grep "^RESULT rank [0-9]* error " "$log" | sed 's/.* iter \([0-9]*\) .*/\1/' | sort -n | tr '\n' ' ')
            oks=$(grep -c "^RESULT rank [0-9]* ok " "$log")
            if [ -n "$iters" ]; then
                failed=($iters)
                lo=${failed[0]} hi=${failed[-1]}
                if [ $((hi - lo)) -gt 1 ] || { [ "$oks" -gt 0 ] && [ $lo -ne $((ITERS - 1)) ]; }; then
                    verdict=FAIL why="$why survivors went past the failed call: errors at calls $iters, $oks finished;"
                fi
            fi
        fi
    fi
    echo "trial $t seed $s $kind: $verdict: $detail $why"
    if [ $verdict = pass ]; then
        passed=$((passed + 1))
    else
        # A crash's signal and the top of its backtrace come first: the
        # log's tail alone shows only the bottom frames.
        fails=$((fails + 1))
        grep -m 30 -E 'Signal|Failing at|\] \[ ?[0-9]+\] |Assertion|UCX +(ERROR|FATAL)' "$log" | sed 's/^/    ! /'
        sed 's/^/    | /' "$log" | tail -15
    fi
done
echo "summary: $TRIALS trials, $passed passed, $fails failed, $finished_first ended before the kill; worst error after the kill ${worst}s (limit ${LIMIT}s, ZAP_TIMEOUT $ZAP_TIMEOUT); worst job end after the kill ${worst_end}s; survivor errors naming the killed rank: $named, naming another rank (a survivor that left first): $unnamed"
[ $fails -eq 0 ]
