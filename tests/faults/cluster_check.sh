#!/bin/bash
# Collectives across emulated hosts with several ranks each (netns.sh:
# network-namespace hosts, each with its own host name and /dev/shm): the
# multi-process suite mpi_tests/coll/test_coll_hier_mpi.cc (every
# collective, datatype, op and root against a reference computed on every
# rank, identical bytes everywhere, the hierarchy chosen, inter-host bytes
# near the bound) in the layouts 2x2, 2x3, 3x2, 1+3 and 2+2+3; then a
# zap-verify job on 2x2 (FAULTS_VERIFY_BIN) with verdicts checked against the
# generator's.
#
#   cluster_check.sh [LAYOUT...]     default: 2x2 2x3 3x2 1+3 2+2+3
#
# Needs root; exits 77 (ctest skip) with a SKIP line without namespaces.
# Binaries: MPI_COLL_HIER (the suite), FAULTS_VERIFY_BIN (zap-verify).
set -u
NETNS_LIB=1 source "$(dirname "${BASH_SOURCE[0]}")/netns.sh"
trap ns_cleanup EXIT
: "${MPI_COLL_HIER:?MPI_COLL_HIER must name the mpi_coll_hier binary}"
layouts=("$@")
[ ${#layouts[@]} -eq 0 ] && layouts=(2x2 2x3 3x2 1+3 2+2+3)
ns_setup 3 || exit $?
export NS_UCX_TLS=self,sm,tcp NS_BTL=self,vader,tcp ZAP_TIMEOUT=${ZAP_TIMEOUT:-30}
NS_RUN_TIMEOUT=${NS_RUN_TIMEOUT:-150}
fail=0
for l in "${layouts[@]}"; do
    ns_place "$l" || exit 2
    t0=$(date +%s)
    out=$(ns_mpirun $NS_NP --mca op ^avx -- "$MPI_COLL_HIER" 2>&1)
    rc=$?
    if [ $rc -ne 0 ] || ! echo "$out" | grep -q "PASSED"; then
        echo "FAIL: $l (ranks on hosts ${NS_PLACE[*]}): exit $rc"
        echo "$out" | grep -v "^\[zaphost" | tail -25
        fail=1
    else
        echo "ok: $l (ranks on hosts ${NS_PLACE[*]}): $(echo "$out" | grep -c "^\[       OK ]") tests passed in $(( $(date +%s) - t0 )) s"
    fi
done
if [ -n "${FAULTS_VERIFY_BIN:-}" ]; then
    ns_place 2x2
    out=$(ns_mpirun $NS_NP -- "$FAULTS_VERIFY_BIN" run --gen 20000 --invalid-fraction 0.1 --seed 4 --quiet 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "FAIL: 2x2: zap-verify run exit $rc"; echo "$out" | grep -v "^\[zaphost" | tail -20; fail=1
    else
        echo "ok: 2x2: zap-verify run --gen 20000 (10% invalid): verdicts match the generator's"
    fi
fi
exit $fail
