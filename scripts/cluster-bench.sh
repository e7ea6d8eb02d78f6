#!/bin/bash
# Collectives across emulated hosts: network-namespace "hosts" on one machine
# (tests/faults/netns.sh), several ranks per host, each host with its own
# /dev/shm, every host's link rate-limited with tc in both directions. For
# each cluster and rate:
#   link     zap-perf p2p between two hosts, one rank each: what one
#            transfer reaches of the limit;
#   zap+mpi  zap-perf coll: zap (its automatic choice: the hosts'
#            hierarchy) and Open MPI's default in the same processes, with
#            zap's bytes to other hosts per call;
#   flat     zap with ZAP_COLL_HIER=off (every rank alike: the algorithms
#            zap had before the hierarchy), zap only, unless --no-flat;
#   han      Open MPI with --mca coll_han_priority 100 (a run of its own,
#            MPI only), where the han component loads;
#   verify   zap-verify run --gen N on clusters of 2 hosts: the time until
#            the other host's ranks had their shards, against the bytes that
#            crossed the link (interface counters) and the rate.
# Then a summary: times, Open MPI / zap, and zap's inter-host bytes against
# the lower bounds (allreduce: every host sends 2(H-1)/H of the vector;
# broadcast: (H-1) vectors cross in all, each host receiving its share once).
#
#   scripts/cluster-bench.sh [--bin DIR] [--clusters 2x4,4x2] [--rates 1gbit,5gbit]
#       [--ops allreduce,bcast] [--sizes 8,64,...,64M] [--max-slow SIZE] [--reps N]
#       [--max-iters N] [--verify N] [--no-flat] [--no-han] [--pin|--no-pin]
#       [--deadline SECONDS] [--out DIR] [--summarize] [--zap-env VAR=VALUE]...
#
# --bin: the folder holding zap-perf and zap-verify (default: this tree's
# build/tools/...); a lib/ beside them goes on LD_LIBRARY_PATH (libsodium for
# hosts without it) and a tools/ beside them, holding ip and tc, on PATH when
# the machine has none (scripts/cluster-bench-bundle.sh makes such a folder).
# --max-slow: the largest size at rates below 2 Gbit/s (default 16M: a 64 MiB
# allreduce at 1 Gbit/s takes about a second per call). --deadline: no run
# starts that could not end before SECONDS after the start (default 450); what
# that leaves out is listed as skipped. --pin gives each host its own share of
# the cores (default when the machine has at least as many cores as the
# largest cluster has ranks; otherwise ranks are oversubscribed, and the
# summary says so).
#
# --zap-env exports a zap setting (ZAP_COLL_PIPELINE_BYTES=65536, ...) to
# every rank of the zap runs (repeatable), to compare settings on one cluster.
#
# Needs root (namespaces, tc), iproute2, util-linux (unshare, taskset), Open
# MPI's mpirun. Prints a SKIP line for everything it cannot do and why.
# Exit 0 when it measured something, 77 when it could not start at all.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
T0=$(date +%s)

bin="" clusters="2x4" rates="1gbit,5gbit" ops="allreduce,bcast"
sizes="8,64,512,4K,32K,256K,1M,4M,16M,64M" max_slow="16M" reps=3 max_iters=""
verify_items=400000 flat=1 han=1 pin="" deadline=450 out="" summary_only=0
zenv=()
while [ $# -gt 0 ]; do
    case "$1" in
    --bin) bin=$2; shift ;;
    --clusters) clusters=$2; shift ;;
    --rates) rates=$2; shift ;;
    --ops) ops=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --max-slow) max_slow=$2; shift ;;
    --reps) reps=$2; shift ;;
    --max-iters) max_iters=$2; shift ;;
    --verify) verify_items=$2; shift ;;
    --zap-env) export "${2?}"; zenv+=(-x "${2%%=*}"); shift ;;
    --no-flat) flat=0 ;;
    --no-han) han=0 ;;
    --pin) pin=1 ;;
    --no-pin) pin=0 ;;
    --deadline) deadline=$2; shift ;;
    --out) out=$2; shift ;;
    --summarize) summary_only=1 ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//; /^set -u/d'; exit 0 ;;
    *) echo "cluster-bench: unknown option $1 (--help)" >&2; exit 2 ;;
    esac
    shift
done

out=${out:-/tmp/zap-cluster-bench.$$}
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
LOG=$out/summary.txt
[ $summary_only = 1 ] && LOG=/dev/null
[ $summary_only = 1 ] || : > "$LOG"
say() { echo "$*" | tee -a "$LOG"; }
skip() { say "SKIP: $*"; }
left() { echo $((deadline - ($(date +%s) - T0))); }

if [ -z "$bin" ]; then
    perf=$ROOT/build/tools/zap-perf/zap-perf verify_bin=$ROOT/build/tools/zap-verify/zap-verify
else
    bin=$(cd "$bin" && pwd)
    perf=$bin/zap-perf verify_bin=$bin/zap-verify
    [ -d "$bin/lib" ] && export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    if [ -d "$bin/tools" ]; then
        for t in ip tc; do command -v $t >/dev/null || PATH="$bin/tools:$PATH"; done
        export PATH
    fi
fi
[ -x "$perf" ] || { skip "zap-perf not found at $perf (--bin)"; exit 77; }
[ -x "$verify_bin" ] || { verify_bin=""; }

say "# cluster-bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $(nproc) cores, kernel $(uname -r)"
say "# $(mpirun --version 2>/dev/null | head -1); UCX $(ucx_info -v 2>/dev/null | sed -n 's/^# Version //p' | head -1)"
say "# load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -r "$ROOT/.git/HEAD" ] || git -C "$ROOT" rev-parse HEAD >/dev/null 2>&1; then
    say "# tree: $(git -C "$ROOT" log -1 --format='%h %s' 2>/dev/null | cut -c1-100)"
fi

NETNS_LIB=1 source "$ROOT/tests/faults/netns.sh"
trap ns_cleanup EXIT

han_loads() {
    ompi_info 2>/dev/null | grep -q "MCA coll: han"
}

# The largest cluster decides whether hosts get cores of their own.
maxnp=0
for c in ${clusters//,/ }; do
    ns_place "$c" || exit 2
    [ $NS_NP -gt $maxnp ] && maxnp=$NS_NP
done
ns_place ""
if [ -z "$pin" ]; then
    if [ "$(nproc)" -ge $maxnp ]; then pin=1; else pin=0; fi
fi
[ "$pin" = 1 ] || say "# ranks share all $(nproc) cores (no pinning); clusters above $(nproc) ranks are oversubscribed"

# Sizes at a rate: the list, without those above --max-slow below 2 Gbit/s.
sizes_at() {
    local rate=$1 bits keep= s b lim
    bits=$(awk -v r="$rate" 'BEGIN{ r = tolower(r); n = r + 0; u = substr(r, length(n "") + 1);
        m = (u ~ /^g/) ? 1e9 : (u ~ /^m/) ? 1e6 : (u ~ /^k/) ? 1e3 : 1; printf "%.0f", n * m }')
    lim=$(to_bytes "$max_slow")
    for s in ${sizes//,/ }; do
        b=$(to_bytes "$s")
        if [ "$bits" -lt 2000000000 ] && [ "$b" -gt "$lim" ]; then continue; fi
        keep="$keep,$s"
    done
    echo "${keep#,}"
}
to_bytes() {
    awk -v s="$1" 'BEGIN{ n = s + 0; u = toupper(substr(s, length(n "") + 1, 1));
        m = (u == "K") ? 1024 : (u == "M") ? 1048576 : (u == "G") ? 1073741824 : 1; printf "%.0f", n * m }'
}

# Interface counters of a host (bytes it sent / received on its link).
tx_bytes() { ip netns exec "$(ns_name $1)" cat /sys/class/net/$NS_IF/statistics/tx_bytes; }

# Runs zap-perf coll with the given label; CSV to $out/<label>.csv, log beside.
coll_run() {
    local label=$1 np=$2 budget=$3
    shift 3
    local rc
    NS_RUN_TIMEOUT=$budget ns_mpirun "$np" "$@" > "$out/$label.log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        say "  $label: exit $rc$([ $rc = 137 ] && echo " (killed after ${budget}s)"); last lines:"
        grep -v "^\[zaphost" "$out/$label.log" | tail -5 | sed 's/^/    | /' | tee -a "$LOG"
    fi
    return $rc
}

# The summary: one line per cluster, rate, op and size.
summarize() {
say ""
say "## summary (times: median streaming pass, us per call; x = Open MPI time / zap time, above 1: zap faster;"
say "##  xB/host: zap's largest bytes to other hosts per host per call; bound: the lower bound of that figure;"
say "##  allreduce: 2(H-1)/H n per host; bcast: the total against (H-1) n)"
printf "%-14s %-9s %10s %-13s %10s %10s %10s %6s %6s %12s %12s %6s\n" cluster op bytes zap_alg zap_us mpi_us han_us "x mpi" "x han" xB/host bound "xB/bd" | tee -a "$LOG"
for cluster in ${clusters//,/ }; do
    ns_place "$cluster"
    H=$NS_NHOSTS
    for rate in ${rates//,/ }; do
        tag="${cluster}_${rate}"
        [ -s "$out/coll_$tag.csv" ] || continue
        awk -F, -v H=$H -v tag="$tag" -v hanf="$out/han_$tag.csv" -v flatf="$out/flat_$tag.csv" '
            BEGIN { while ((getline l < hanf) > 0) { split(l, f, ","); if (f[1] != "op") han[f[1] "," f[4]] = f[12] }
                    while ((getline l < flatf) > 0) { m = split(l, f, ",");
                        if (f[1] == "op") { for (i = 1; i <= m; i++) fc[f[i]] = i; continue }
                        flat[f[1] "," f[4]] = f[8];
                        flatx[f[1] "," f[4]] = f[fc[(f[1] == "allreduce") ? "zap_xhost_host_max" : "zap_xhost_total"]] } }
            NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
            {
                op = $1; n = $4; key = op "," n
                zap = $8; mpi = $12; h = (key in han) ? han[key] : 0
                if (op == "allreduce") { bound = 2 * (H - 1) / H * n; got = $(c["zap_xhost_host_max"]) }
                else { bound = (H - 1) * n; got = $(c["zap_xhost_total"]) }
                printf "%-14s %-9s %10d %-13s %10.1f %10.1f %10.1f %6.2f %6s %12.0f %12.0f %6.3f%s%s\n", tag, op, n, $7, zap, mpi, h,
                    (zap > 0 ? mpi / zap : 0), (h > 0 ? sprintf("%.2f", h / zap) : "-"), got, bound,
                    (bound > 0 ? got / bound : 0),
                    ((key in flat) ? sprintf("  flat %.1f us %.0f B (%.2f)", flat[key], flatx[key],
                        (bound > 0 ? flatx[key] / bound : 0)) : ""),
                    (($11 + $15 > 0) ? sprintf("  WRONG %d zap, %d mpi", $11, $15) : "")
            }' "$out/coll_$tag.csv" | tee -a "$LOG"
    done
done
say "# bcast's xB/host column is the total over all hosts (the bound is on the total)"
}

if [ $summary_only = 1 ]; then
    summarize
    exit 0
fi

measured=0
verify_done=0
for cluster in ${clusters//,/ }; do
    ns_place "$cluster"
    np=$NS_NP H=$NS_NHOSTS
    placement=$(echo "${NS_PLACE[*]}" | tr -d ' ')
    if [ $((maxnp)) -gt "$(nproc)" ] && [ "$pin" = 0 ]; then over=" (oversubscribed: $np ranks on $(nproc) cores)"; else over=""; fi
    ns_cleanup
    NS_TMP=$(mktemp -d /tmp/zap-netns.XXXXXX)
    ns_place "$cluster"
    ns_setup "$H" > "$out/setup.log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        skip "cluster $cluster: the namespace hosts could not be made: $(tail -1 "$out/setup.log")"
        [ $rc = 77 ] && [ $measured = 0 ] && exit 77
        continue
    fi
    export NS_PIN=$pin NS_UCX_TLS=self,sm,tcp NS_BTL=self,vader,tcp NS_SHM_SIZE=2g ZAP_TIMEOUT=60
    say ""
    say "## cluster $cluster: $H hosts, $np ranks, rank -> host $placement$over"
    [ "$pin" = 1 ] && say "#  host cores: $(ns_cpusets)"
    for rate in ${rates//,/ }; do
        if ! ns_limit "$rate" > "$out/limit.log" 2>&1; then
            skip "cluster $cluster at $rate: $(tail -1 "$out/limit.log")"
            continue
        fi
        tag="${cluster}_${rate}"
        say "### $cluster at $rate"
        # The limit, checked: one 16 MiB transfer each way between two hosts.
        if [ "$(left)" -gt 30 ]; then
            (ns_place "1+1"; NS_UCX_TLS=self,tcp NS_RUN_TIMEOUT=30 ns_mpirun 2 -- "$perf" p2p --mem host --min 16M --max 16M \
                --iters 2 --reps 3 --no-raw) > "$out/link_$tag.log" 2>&1
            mbs=$(awk '$1 == "host" && $2 == 16777216 {print $7}' "$out/link_$tag.log" | tail -1)
            if [ -n "$mbs" ]; then
                pct=$(awk -v m="$mbs" -v rate="$rate" 'BEGIN{
                    s = tolower(rate); n = s + 0; u = substr(s, length(n "") + 1);
                    b = n * ((u ~ /^g/) ? 1e9 : (u ~ /^m/) ? 1e6 : 1); printf "%.0f", 100 * m * 8e6 / b }')
                say "  link: zap p2p 16 MiB between two hosts: $mbs MB/s, $pct% of $rate"
                # Faster than the limit: the ranks did not talk through the
                # limited links (e.g. a launcher that placed every rank in one
                # namespace); nothing measured here would be what it says.
                if [ "$pct" -gt 150 ]; then
                    skip "cluster $cluster at $rate: the link check ran at $pct% of the limit, so the hosts are not separated by the limited links; nothing measured"
                    continue
                fi
            else
                skip "link check at $rate: no result ($(grep -v '^\[zaphost' "$out/link_$tag.log" | tail -1))"
            fi
        else
            skip "link check at $rate: past the deadline"
        fi
        sz=$(sizes_at "$rate")
        iters=()
        [ -n "$max_iters" ] && iters=(--max-iters "$max_iters")
        if [ "$(left)" -gt 60 ]; then
            coll_run "coll_$tag" "$np" "$(($(left) - 20))" "${zenv[@]}" -- "$perf" coll --op "$ops" --sizes "$sz" --reps "$reps" \
                "${iters[@]}" --csv "$out/coll_$tag.csv" && measured=1
        else
            skip "zap and Open MPI default on $cluster at $rate: past the deadline"
        fi
        if [ "$flat" = 1 ]; then
            if [ "$(left)" -gt 60 ]; then
                coll_run "flat_$tag" "$np" "$(($(left) - 20))" -x ZAP_COLL_HIER=off -- \
                    "$perf" coll --op "$ops" --sizes "$sz" --reps "$reps" "${iters[@]}" --no-mpi --csv "$out/flat_$tag.csv"
            else
                skip "zap flat (ZAP_COLL_HIER=off) on $cluster at $rate: past the deadline"
            fi
        fi
        if [ $han = 1 ]; then
            if ! han_loads; then
                skip "han: Open MPI has no coll han component (ompi_info)"
            elif [ "$(left)" -gt 60 ]; then
                coll_run "han_$tag" "$np" "$(($(left) - 20))" --mca coll_han_priority 100 -- \
                    "$perf" coll --op "$ops" --sizes "$sz" --reps "$reps" "${iters[@]}" --no-zap --csv "$out/han_$tag.csv"
            else
                skip "Open MPI han on $cluster at $rate: past the deadline"
            fi
        fi
        if [ "$H" = 2 ] && [ "$verify_items" -gt 0 ]; then
            if [ -z "$verify_bin" ]; then
                skip "verify on $cluster at $rate: zap-verify not found"
            elif [ "$(left)" -gt 60 ]; then
                b0=$(tx_bytes 0)
                NS_RUN_TIMEOUT=$(($(left) - 20)) ns_mpirun "$np" -x ZAP_VERIFY_THREADS=1 -- "$verify_bin" run \
                    --gen "$verify_items" --invalid-fraction 0.01 --seed 5 > "$out/verify_$tag.log" 2>&1
                vrc=$?
                b1=$(tx_bytes 0)
                # The other host's ranks (host 1): when their shards were in place.
                first1=-1
                for ((r = 0; r < np; r++)); do [ "${NS_PLACE[$r]}" = 1 ] && { first1=$r; break; }; done
                inplace=$(awk -v f=$first1 '$1 ~ /^[0-9]+$/ && $1 >= f && NF >= 8 && $4 ~ /cpu|gpu/ {
                    if ($7 > m) m = $7 } END { print m + 0 }' "$out/verify_$tag.log")
                dist=$(awk '$1 == "distribute" {print $2}' "$out/verify_$tag.log")
                crossed=$((b1 - b0))
                say "  verify: zap-verify run --gen $verify_items: exit $vrc; host 0 sent $crossed bytes on its link;" \
                    "host 1's ranks had their shards $inplace s after the job began (distribute phase ${dist:-?} s):" \
                    "$(awk -v b=$crossed -v t="$inplace" -v rate="$rate" 'BEGIN{ s = tolower(rate); n = s + 0;
                        u = substr(s, length(n "") + 1); r = n * ((u ~ /^g/) ? 1e9 : (u ~ /^m/) ? 1e6 : 1);
                        if (t > 0) printf "%.0f MB/s, %.0f%% of the link", b / t / 1e6, 100 * b * 8 / t / r; else print "no time" }')"
                verify_done=1
            else
                skip "verify on $cluster at $rate: past the deadline"
            fi
        fi
    done
done
ns_cleanup
summarize
say "# end: $(date -u +%H:%M:%S) UTC, $(( $(date +%s) - T0 )) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
tar czf "$out/cluster-bench.tgz" -C "$out" --exclude cluster-bench.tgz . 2>/dev/null
[ $measured = 1 ] && exit 0
exit 77
