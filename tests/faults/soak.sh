#!/bin/bash
# The UCX soak (label soak, long): 4 ranks under mpirun over UCX run
# zap-fault-rank --op soak: every iteration each rank sends 16 messages of
# seeded sizes around the ring (content-checked on receipt), then one
# allreduce and one broadcast (checked against closed forms). The default
# 15625 iterations make 10^6 messages (16 x 4 ranks x 15625) and 31250
# collectives. The inproc soak (10^6 messages, 10^5 collectives) is the
# ctest faults.soak.inproc.
#
#   soak.sh [ITERS [TLS]]      TLS: self,sm (default) or self,tcp
set -u
ITERS=${1:-15625}
TLS=${2:-self,sm}
: "${FAULT_RANK:?FAULT_RANK must name the zap-fault-rank binary}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
start=$(date +%s)
out=$(UCX_TLS=$TLS ZAP_TIMEOUT=${ZAP_TIMEOUT:-60} timeout -s KILL $((ITERS / 2 + 600)) \
    mpirun -np 4 --oversubscribe --mca pml ob1 --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none \
    "$FAULT_RANK" --op soak --iters "$ITERS" --count 256 2>&1)
rc=$?
end=$(date +%s)
echo "$out" | grep "^RESULT"
ok=$(echo "$out" | grep -c "^RESULT rank [0-9]* ok")
msgs=$(echo "$out" | grep "^RESULT rank [0-9]* ok" | sed 's/.* messages \([0-9]*\).*/\1/' | awk '{s+=$1} END{print s+0}')
colls=$(echo "$out" | grep "^RESULT rank 0 ok" | sed 's/.* collectives \([0-9]*\).*/\1/')
echo "soak over UCX ($TLS): $ITERS iterations, 4 ranks, exit $rc, $ok ranks ok, $msgs messages checked, ${colls:-0} collectives, $((end - start)) s"
[ $rc -eq 0 ] && [ "$ok" -eq 4 ]
