#!/bin/bash
# Link faults between namespace hosts (netns.sh), with tc netem on each
# host's veth: results must be correct or the run must end with a clear error
# (timed out / peer failed); a wrong result or a hang fails.
#
#   netem.sh      three scenarios on 3 hosts:
#     delay+loss  10 ms delay and 1% loss on every link: collectives and
#                 zap-verify
#     link-down   host 1's link down for 2 s in the middle of a 150-iteration
#                 collective loop (ZAP_TIMEOUT 10: TCP retransmission should carry it)
#     link-down-short-timeout   the same with ZAP_TIMEOUT 1: a timeout
#                 naming a peer is the expected outcome, and it must come
#                 within the bound
# Exit 0 when every scenario held, 1 otherwise, 77 (skip) without
# namespaces or tc. Where the kernel has no sch_netem (CONFIG_NET_SCH_NETEM)
# the loss comes from an nftables rule (numgen random mod 100 < 1 drop) and
# the 10 ms delay from zap-nfq-delay (FAULTS_NFQ_DELAY, nfq_delay.c): an
# iptables NFQUEUE rule on each host's output holds every packet in the
# kernel's queue until that program lets it go 10 ms later. Without iptables
# or the program the delay is skipped, with a SKIP line.
set -u
NETNS_LIB=1 source "$(dirname "${BASH_SOURCE[0]}")/netns.sh"
trap ns_cleanup EXIT
: "${FAULT_RANK:?FAULT_RANK must name the zap-fault-rank binary}"
command -v tc >/dev/null || { echo "SKIP: tc not found (iproute2)"; exit 77; }
ns_setup 3 || exit $?
NS_RUN_TIMEOUT=240
fail=0

# judge NAME LOG: correct (all ok) or clear errors; never wrong, never hung.
judge() {
    local name=$1 log=$2 rc=$3 np=$4 ok err wrong
    ok=$(grep -c "^RESULT rank [0-9]* ok" "$log")
    err=$(grep -c "^RESULT rank [0-9]* error" "$log")
    wrong=$(grep -c "^RESULT rank [0-9]* wrong" "$log")
    if [ "$rc" -eq 137 ]; then
        echo "FAIL: $name: hung (killed after ${NS_RUN_TIMEOUT}s)"; fail=1
    elif [ "$wrong" -ne 0 ]; then
        echo "FAIL: $name: wrong result"; grep "wrong" "$log"; fail=1
    elif [ $((ok + err)) -lt "$np" ] && [ "$err" -eq 0 ]; then
        echo "FAIL: $name: $ok of $np ranks reported"; tail -20 "$log"; fail=1
    else
        local secs
        secs=$(grep "^RESULT rank [0-9]* ok" "$log" | sed 's/.* seconds \([0-9.]*\).*/\1/' | sort -n | tail -1)
        echo "ok: $name: $ok ranks correct${secs:+ (longest ${secs}s)}, $err ranks ended with an error ($(grep -o "status [a-z ]* at" "$log" | sort | uniq -c | tr -s ' ' | tr '\n' ';'))"
    fi
}

set_netem() { # set_netem "<netem args>" | set_netem off
    local i
    for ((i = 0; i < NS_HOSTS; i++)); do
        ip netns exec "$(ns_name $i)" tc qdisc del dev $NS_IF root 2>/dev/null
        [ "$1" = off ] || ip netns exec "$(ns_name $i)" tc qdisc add dev $NS_IF root netem $1 || return 1
    done
}

# Loss without netem: nftables drops 1% of the packets leaving each host.
set_nft_loss() { # set_nft_loss on|off
    local i
    for ((i = 0; i < NS_HOSTS; i++)); do
        ip netns exec "$(ns_name $i)" nft delete table inet zf 2>/dev/null
        [ "$1" = off ] && continue
        ip netns exec "$(ns_name $i)" nft add table inet zf &&
        ip netns exec "$(ns_name $i)" nft add chain inet zf out '{ type filter hook output priority 0 ; }' &&
        ip netns exec "$(ns_name $i)" nft add rule inet zf out oifname $NS_IF numgen random mod 100 '<' 1 drop || return 1
    done
}

# Delay without netem: every packet leaving a host goes to netfilter queue 0
# of that host, where zap-nfq-delay holds it 10 ms. --queue-bypass: packets
# pass undelayed (never dropped) if the program is not bound.
IPT=$(command -v iptables-legacy || command -v iptables || true)
NFQ_PIDS=()
set_nfq_delay() { # set_nfq_delay MS | set_nfq_delay off
    local i
    if [ "$1" = off ]; then
        for ((i = 0; i < NS_HOSTS; i++)); do
            ip netns exec "$(ns_name $i)" "$IPT" -D OUTPUT -o $NS_IF -j NFQUEUE --queue-num 0 --queue-bypass 2>/dev/null
        done
        for i in "${NFQ_PIDS[@]}"; do kill -TERM "$i" 2>/dev/null; wait "$i" 2>/dev/null; done
        NFQ_PIDS=()
        for ((i = 0; i < NS_HOSTS; i++)); do
            [ -f "$NS_TMP/nfq$i.log" ] && echo "    host $i: $(tail -1 "$NS_TMP/nfq$i.log")"
        done
        return 0
    fi
    [ -n "$IPT" ] && [ -x "${FAULTS_NFQ_DELAY:-}" ] || return 1
    local rt=""
    chrt -f 10 true 2>/dev/null && rt="chrt -f 10"
    for ((i = 0; i < NS_HOSTS; i++)); do
        # ip netns exec execs the program: $! is its pid.
        # Real-time priority where allowed: a descheduled delayer holds
        # packets longer than asked.
        ip netns exec "$(ns_name $i)" $rt "$FAULTS_NFQ_DELAY" 0 "$1" > "$NS_TMP/nfq$i.log" 2>&1 &
        NFQ_PIDS+=($!)
    done
    for ((i = 0; i < NS_HOSTS; i++)); do
        for ((w = 0; w < 50; w++)); do grep -q ready "$NS_TMP/nfq$i.log" 2>/dev/null && break; sleep 0.1; done
        grep -q ready "$NS_TMP/nfq$i.log" || { cat "$NS_TMP/nfq$i.log"; return 1; }
        ip netns exec "$(ns_name $i)" "$IPT" -A OUTPUT -o $NS_IF -j NFQUEUE --queue-num 0 --queue-bypass || return 1
    done
}

# Round trip between host 0 and host 1 over TCP (no ping here), in ms: the
# check that the delay is really on the path.
rtt_ms() {
    local out
    ip netns exec "$(ns_name 1)" python3 -c '
import socket
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1); s.bind(("0.0.0.0",5999)); s.listen(1)
c,_=s.accept(); c.setsockopt(socket.IPPROTO_TCP,socket.TCP_NODELAY,1)
while True:
    d=c.recv(64)
    if not d: break
    c.sendall(d)' &
    local srv=$!
    sleep 0.3
    out=$(ip netns exec "$(ns_name 0)" python3 -c '
import socket,time,statistics
c=socket.create_connection(("'"$(ns_addr 1)"'",5999)); c.setsockopt(socket.IPPROTO_TCP,socket.TCP_NODELAY,1)
r=[]
for i in range(20):
    t=time.perf_counter(); c.sendall(b"x"); c.recv(64); r.append((time.perf_counter()-t)*1e3); time.sleep(0.01)
c.close(); print("%.2f" % statistics.median(r))' 2>/dev/null)
    wait $srv 2>/dev/null
    echo "${out:-?}"
}

# 1. delay and loss. The kernel may lack sch_netem (CONFIG_NET_SCH_NETEM):
# then the loss comes from nftables and the delay from netfilter queues.
if set_netem "delay 10ms loss 1%" 2>/dev/null; then
    what="netem delay 10ms + loss 1%"
elif command -v nft >/dev/null && command -v python3 >/dev/null && base=$(rtt_ms) && set_nfq_delay 10 && set_nft_loss on; then
    set_netem off
    what="delay 10ms (netfilter queue: no sch_netem in this kernel) + loss 1% (nftables)"
    echo "note: tc netem is not available in this kernel; 10 ms delay from zap-nfq-delay, loss from nftables"
    echo "    round trip host 0 - host 1: ${base} ms without the delay, $(rtt_ms) ms with it (loss on)"
elif command -v nft >/dev/null && set_nft_loss on; then
    set_netem off
    set_nfq_delay off
    what="loss 1% (nftables; no 10 ms delay: no sch_netem, and no iptables or zap-nfq-delay)"
    echo "SKIP part: tc netem is not available in this kernel and the NFQUEUE fallback is not either; 10 ms delay not tested, loss via nftables"
else
    set_netem off
    what=""
    echo "SKIP part: neither tc netem nor nft: no delay/loss scenario"
fi
if [ -n "$what" ]; then
ZAP_TIMEOUT=20 ns_mpirun 3 -- "$FAULT_RANK" --op mixed --iters 20 --count 16384 > "$NS_TMP/a.log" 2>&1
judge "$what: 20 collectives of 128 KiB" "$NS_TMP/a.log" $? 3
if [ -n "${FAULTS_VERIFY_BIN:-}" ]; then
    ZAP_TIMEOUT=20 ns_mpirun 3 -- "$FAULTS_VERIFY_BIN" run --gen 4000 --invalid-fraction 0.1 --seed 4 --quiet > "$NS_TMP/v.log" 2>&1
    rc=$?
    case $rc in
    0) echo "ok: $what: zap-verify verdicts match" ;;
    3) echo "ok: $what: zap-verify ended with an error: $(grep -m1 "job failed" "$NS_TMP/v.log")" ;;
    *) echo "FAIL: $what: zap-verify exit $rc (1 = verdict mismatch)"; tail -20 "$NS_TMP/v.log"; fail=1 ;;
    esac
fi
fi
set_netem off
set_nft_loss off
[ ${#NFQ_PIDS[@]} -gt 0 ] && set_nfq_delay off

# 2. and 3. link down for 2 s during a collective loop
for timeout in 10 1; do
    ZAP_TIMEOUT=$timeout ns_mpirun 3 -- "$FAULT_RANK" --op mixed --iters 150 --count 4096 \
        --ready-file "$NS_TMP/ready$timeout" > "$NS_TMP/d$timeout.log" 2>&1 &
    job=$!
    # Down once every rank's transport and communicator are up (a link down
    # during MPI_Init would hang Open MPI's own wire-up, which has no timeout
    # and is not what this scenario tests).
    for ((w = 0; w < 600; w++)); do
        [ -f "$NS_TMP/ready$timeout" ] && [ "$(wc -l < "$NS_TMP/ready$timeout")" -ge 3 ] && break
        sleep 0.1
    done
    sleep 0.3
    t_down=$(date +%s.%N)
    ip netns exec "$(ns_name 1)" ip link set $NS_IF down
    sleep 2
    ip netns exec "$(ns_name 1)" ip link set $NS_IF up
    t_up=$(date +%s.%N)
    wait $job
    rc=$?
    t_end=$(date +%s.%N)
    # The loop must still have been running when the link came back, or the
    # scenario tested nothing (it is then reported, not failed).
    if awk "BEGIN{exit !($t_end < $t_up)}"; then
        echo "note: link down, ZAP_TIMEOUT $timeout: the job ended before the link came back (inconclusive)"
    fi
    judge "link of host 1 down 2 s, ZAP_TIMEOUT $timeout" "$NS_TMP/d$timeout.log" $rc 3
    # Errors must come within ZAP_TIMEOUT + 1 s of the link going down... or of
    # the link coming back (a wait that started during the outage).
    for et in $(grep "^RESULT rank [0-9]* error" "$NS_TMP/d$timeout.log" | sed 's/.* at \([0-9.]*\) .*/\1/'); do
        lat=$(awk "BEGIN{printf \"%.2f\", $et - $t_down}")
        if awk "BEGIN{exit !($lat > $timeout + 1 + 2)}"; then
            echo "FAIL: link down, ZAP_TIMEOUT $timeout: an error came ${lat}s after the link went down"; fail=1
        else
            echo "    error ${lat}s after the link went down (bound $timeout + 1 s after it came back)"
        fi
    done
done
exit $fail
