#!/bin/sh
# coll_zap_test.sh TEST [NP]: one check of the zap Open MPI coll component
# against the Open MPI on this machine. Prints what it ran and its output and
# ends with "PASS ompi.TEST" or "FAIL ompi.TEST: why" (exit 0 only on PASS;
# 77 with "SKIP ..." when the check cannot run here).
#
# Environment (set by ctest; by hand on another machine, docs/mpi.md):
#   ZAP_TEST_COMPONENT_DIR  directory holding mca_coll_zap.so
#   ZAP_TEST_CHECK          coll_zap_check (C)
#   ZAP_TEST_FORTRAN        coll_zap_fortran, or empty when not built
#   ZAP_TEST_MPIEXEC        mpirun
#   ZAP_TEST_OMPI_INFO      ompi_info
#   ZAP_TEST_INSTALL_DIR    an installed component directory (install test only)
#
# The component is loaded with --mca mca_base_component_path
# DIR:<Open MPI's own component directory> and enabled with coll_zap_priority;
# a run "without" it gets neither. Runs compare the programs' digest files
# (one checksum per case and rank) between the two. UCX_TLS is left unset:
# zap's transport then uses shared memory between ranks of one host.
set -u
name=$1
np=${2:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
T=${ZAP_TEST_TIMEOUT:-240}

fail() {
    echo "FAIL ompi.$name: $*"
    exit 1
}
pass() {
    echo "PASS ompi.$name"
    exit 0
}
skip() {
    echo "SKIP ompi.$name: $*"
    exit 77
}

pkglibdir=$("$ZAP_TEST_OMPI_INFO" --path pkglibdir --parsable | sed 's/^path:pkglibdir://')
[ -d "$pkglibdir" ] || fail "ompi_info gave no component directory"
comp_dir=${ZAP_TEST_COMPONENT_DIR}
LOAD="--mca mca_base_component_path $comp_dir:$pkglibdir"
ON="$LOAD --mca coll_zap_priority 40 --mca coll_zap_stats 1"
# Every window open and every switch on: every call the component can take
# goes to zap (the routing checks; the defaults decline small calls).
OPEN="--mca coll_zap_allreduce_min_bytes 0 --mca coll_zap_bcast_min_bytes 0 --mca coll_zap_allgather_min_bytes 0
      --mca coll_zap_allgatherv_min_bytes 0 --mca coll_zap_scatter_min_bytes 0 --mca coll_zap_scatterv 1
      --mca coll_zap_reduce_min_bytes 0 --mca coll_zap_reduce_max_bytes 0 --mca coll_zap_gather_min_bytes 0
      --mca coll_zap_alltoall_min_bytes 0 --mca coll_zap_scan_min_bytes 0 --mca coll_zap_exscan_min_bytes 0
      --mca coll_zap_barrier 1"
# Open MPI's own traffic as the project's MPI tests run it.
BASE="--oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none"

# run CMD...: output in $tmp/out and $tmp/err, both echoed; returns CMD's status.
run() {
    echo "+ $*"
    timeout "$T" env -u UCX_TLS OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    cat "$tmp/out"
    if [ -s "$tmp/err" ]; then
        echo "--- stderr"
        cat "$tmp/err"
        echo "---"
    fi
    [ $rc -ne 124 ] || fail "timed out after $T s: $*"
    return $rc
}

err_count() { grep -c -- "$1" "$tmp/err"; }

# The with/without digests of every rank must be identical.
same_digests() {
    for r in $(seq 0 $((np - 1))); do
        [ -s "$tmp/$1.$r" ] || fail "no digest from rank $r ($1)"
        if ! cmp -s "$tmp/$1.$r" "$tmp/$2.$r"; then
            diff "$tmp/$1.$r" "$tmp/$2.$r" | head -20
            fail "rank $r: results with the component differ from Open MPI's own"
        fi
    done
    echo "digests equal: $(wc -l <"$tmp/$1.0") cases on rank 0, $np ranks"
}

# zap_count COLL: the smallest count of calls zap ran for COLL over the ranks
# (its stats line; 0 when a rank has none).
zap_count() {
    min=-1
    for r in $(seq 0 $((np - 1))); do
        c=$(grep "coll:zap: stats rank $r: $1 " "$tmp/err" | sed -n 's/.* zap \([0-9]*\) .*/\1/p')
        c=${c:-0}
        if [ "$min" -lt 0 ] || [ "$c" -lt "$min" ]; then min=$c; fi
    done
    echo "$min"
}
why_count() { # why_count COLL WHY on rank 0
    c=$(grep "coll:zap: stats rank 0: $1 " "$tmp/err" | sed -n "s/.* $2 \\([0-9]*\\).*/\\1/p")
    echo "${c:-0}"
}

no_zap_output() {
    if grep -q 'coll:zap' "$tmp/err"; then
        fail "the component printed something though it was not asked for"
    fi
}

case "$name" in
ompi_info_lists_params)
    # Loadable from its directory; every parameter listed with its help.
    OMPI_MCA_mca_base_component_path="$comp_dir:$pkglibdir" run "$ZAP_TEST_OMPI_INFO" --param coll zap --level 9
    [ $rc -eq 0 ] || fail "ompi_info exit status $rc"
    grep -q 'MCA coll: zap' "$tmp/out" || OMPI_MCA_mca_base_component_path="$comp_dir:$pkglibdir" \
        "$ZAP_TEST_OMPI_INFO" | grep -q 'MCA coll: zap' || fail "ompi_info does not list the component"
    for p in priority verbose stats nonblocking min_comm_size built_for zap_version \
             allreduce allreduce_min_bytes allreduce_max_bytes bcast bcast_min_bytes bcast_max_bytes \
             allgather allgather_min_bytes allgatherv allgatherv_min_bytes scatter scatter_min_bytes scatterv \
             barrier reduce reduce_min_bytes reduce_scatter reduce_scatter_block gather gatherv alltoall alltoallv \
             scan exscan; do
        grep -q -E "(parameter|informational) \"coll_zap_$p\"" "$tmp/out" || fail "parameter coll_zap_$p not listed"
    done
    pass
    ;;
c_matches_open_mpi)
    # Every routed collective, every predefined type and op (logical ops,
    # MINLOC/MAXLOC on the pair types, complex, C user ops included), in
    # place, every root, uneven v-counts with negative displacements, derived
    # layouts, dup/split/create_group/split_type, non-blocking with
    # point-to-point: results with the component equal Open MPI's own, and
    # zap ran every routed collective (the statistics), while the types it
    # lacks (long double, Fortran's LOGICAL) went below.
    run "$ZAP_TEST_MPIEXEC" $BASE -np "$np" "$ZAP_TEST_CHECK" all "$tmp/without"
    [ $rc -eq 0 ] || fail "the program failed without the component (status $rc)"
    no_zap_output
    run "$ZAP_TEST_MPIEXEC" $BASE $ON $OPEN -np "$np" -x CHECK_ZAP_ORDER=1 "$ZAP_TEST_CHECK" all "$tmp/with"
    [ $rc -eq 0 ] || fail "the program failed with the component (status $rc)"
    same_digests without with
    for c in allreduce iallreduce bcast ibcast allgather iallgather allgatherv scatter scatterv barrier ibarrier \
             reduce ireduce reduce_scatter reduce_scatter_block gather gatherv alltoall ialltoall alltoallv \
             scan iscan exscan; do
        n=$(zap_count "$c")
        [ "$n" -gt 0 ] || fail "zap ran no $c on some rank (statistics)"
    done
    n=$(why_count allreduce type_op)
    [ "$n" -gt 0 ] || fail "no allreduce went below for its type or op"
    if grep -q -E '^zap\[rank [0-9]+\] (error|warn)|coll:zap: .*(failed|declined)' "$tmp/err"; then
        fail "unexpected zap warning or error"
    fi
    pass
    ;;
c_matches_open_mpi_thread_multiple)
    # The same program under MPI_THREAD_MULTIPLE, where a blocking call is
    # posted and waited for in the component (the lock is not held across
    # zap's wait): results equal Open MPI's, and the statistics say so.
    run "$ZAP_TEST_MPIEXEC" $BASE -np "$np" -x CHECK_ZAP_THREADS=multiple "$ZAP_TEST_CHECK" all "$tmp/without"
    [ $rc -ne 77 ] || skip "$(grep SKIP "$tmp/out" | head -1)"
    [ $rc -eq 0 ] || fail "the program failed without the component (status $rc)"
    run "$ZAP_TEST_MPIEXEC" $BASE $ON $OPEN -np "$np" -x CHECK_ZAP_THREADS=multiple -x CHECK_ZAP_ORDER=1 \
        "$ZAP_TEST_CHECK" all "$tmp/with"
    [ $rc -eq 0 ] || fail "the program failed with the component (status $rc)"
    same_digests without with
    [ "$(zap_count allreduce)" -gt 0 ] || fail "zap ran no allreduce"
    [ "$(grep -c 'blocking calls posted and waited in the component' "$tmp/err")" -eq "$np" ] ||
        fail "the component did not take MPI_THREAD_MULTIPLE's path on every rank"
    pass
    ;;
c_matches_open_mpi_pml_ucx)
    # The same with Open MPI's point-to-point on its own UCX context (pml
    # ucx) beside zap's.
    UCXPML="--oversubscribe --bind-to none --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca btl self,vader --mca osc ^ucx"
    run "$ZAP_TEST_MPIEXEC" $UCXPML -np "$np" "$ZAP_TEST_CHECK" all "$tmp/without"
    [ $rc -eq 0 ] || fail "the program failed without the component (status $rc)"
    run "$ZAP_TEST_MPIEXEC" $UCXPML $ON $OPEN -np "$np" -x CHECK_ZAP_ORDER=1 "$ZAP_TEST_CHECK" all "$tmp/with"
    [ $rc -eq 0 ] || fail "the program failed with the component (status $rc)"
    same_digests without with
    [ "$(zap_count allreduce)" -gt 0 ] || fail "zap ran no allreduce"
    pass
    ;;
defaults_route_by_size)
    # The default windows and switches: results still equal Open MPI's; large
    # allreduces go to zap, small broadcasts, barriers and scatterv below.
    run "$ZAP_TEST_MPIEXEC" $BASE -np "$np" "$ZAP_TEST_CHECK" all "$tmp/without"
    [ $rc -eq 0 ] || fail "the program failed without the component (status $rc)"
    run "$ZAP_TEST_MPIEXEC" $BASE $ON -np "$np" "$ZAP_TEST_CHECK" all "$tmp/with"
    [ $rc -eq 0 ] || fail "the program failed with the component (status $rc)"
    same_digests without with
    [ "$(zap_count allreduce)" -gt 0 ] || fail "zap ran no allreduce"
    [ "$(why_count allreduce size)" -gt 0 ] || fail "no small allreduce went below"
    [ "$(why_count bcast size)" -gt 0 ] || fail "no small bcast went below"
    [ "$(why_count barrier off)" -gt 0 ] || fail "barriers did not go below (coll_zap_barrier defaults to 0)"
    [ "$(why_count scatterv off)" -gt 0 ] || fail "scatterv did not go below (coll_zap_scatterv defaults to 0)"
    pass
    ;;
unserved_types_fall_back)
    # Only calls zap cannot take (a user op on a derived type, long double,
    # long double complex, MINLOC on Fortran's MPI_2DOUBLE_PRECISION and
    # MPI_2REAL):
    # nothing for zap; each goes to the component below and gives the right
    # result.
    run "$ZAP_TEST_MPIEXEC" $BASE $ON $OPEN -np "$np" "$ZAP_TEST_CHECK" fallback "$tmp/with"
    [ $rc -eq 0 ] || fail "the program failed (status $rc)"
    for r in $(seq 0 $((np - 1))); do
        line=$(grep "coll:zap: stats rank $r: allreduce " "$tmp/err")
        echo "rank $r: $line"
        echo "$line" | grep -q ' zap 0 ' || fail "rank $r: zap ran an allreduce it cannot take"
        echo "$line" | grep -q ' type_op 5 ' || fail "rank $r: expected 5 allreduces below for their type or op"
    done
    pass
    ;;
fortran_matches_open_mpi)
    [ -n "${ZAP_TEST_FORTRAN:-}" ] || skip "no Fortran compiler with Open MPI's Fortran bindings at configure time (gfortran)"
    run "$ZAP_TEST_MPIEXEC" $BASE -np "$np" "$ZAP_TEST_FORTRAN" "$tmp/without"
    [ $rc -eq 0 ] || fail "the program failed without the component (status $rc)"
    no_zap_output
    run "$ZAP_TEST_MPIEXEC" $BASE $ON $OPEN -np "$np" "$ZAP_TEST_FORTRAN" "$tmp/with"
    [ $rc -eq 0 ] || fail "the program failed with the component (status $rc)"
    same_digests without with
    for c in allreduce iallreduce bcast allgather scatter barrier; do
        [ "$(zap_count "$c")" -gt 0 ] || fail "zap ran no $c from Fortran on some rank"
    done
    [ "$(why_count allreduce type_op)" -gt 0 ] || fail "the LOGICAL allreduce did not go below"
    pass
    ;;
not_used_without_priority)
    # Loadable but not asked for: it creates nothing and says nothing.
    run "$ZAP_TEST_MPIEXEC" $BASE $LOAD --mca coll_zap_stats 1 --mca coll_zap_verbose 2 -np "$np" \
        "$ZAP_TEST_CHECK" fallback "$tmp/with"
    [ $rc -eq 0 ] || fail "the program failed (status $rc)"
    no_zap_output
    pass
    ;;
gate_version_declines | gate_layout_declines)
    # An untested Open MPI (forced): one line, and Open MPI's collectives.
    what=version
    [ "$name" = gate_layout_declines ] && what=layout
    run "$ZAP_TEST_MPIEXEC" $BASE $ON -np "$np" -x ZAP_TEST_OMPI_FORCE_MISMATCH=$what "$ZAP_TEST_CHECK" fallback \
        "$tmp/with"
    [ $rc -eq 0 ] || fail "the program failed (status $rc)"
    n=$(err_count "coll:zap: rank 0: declined: Open MPI")
    [ "$n" -eq 1 ] || fail "expected one decline line, saw $n"
    other=$(grep 'coll:zap' "$tmp/err" | grep -v -c 'declined: Open MPI')
    [ "$other" -eq 0 ] || fail "the component did more than decline"
    pass
    ;;
params_differ_declines)
    # Ranks started with different routing parameters would route one call
    # two ways: the component must decline on every rank.
    run "$ZAP_TEST_MPIEXEC" $BASE $ON -np 1 -x OMPI_MCA_coll_zap_allreduce_min_bytes=0 "$ZAP_TEST_CHECK" fallback \
        "$tmp/with" : $BASE -np 1 -x OMPI_MCA_coll_zap_allreduce_min_bytes=64 "$ZAP_TEST_CHECK" fallback "$tmp/with"
    [ $rc -eq 0 ] || fail "the program failed (status $rc)"
    n=$(err_count "declined: the ranks differ in their coll_zap_")
    [ "$n" -eq 1 ] || fail "expected one decline line, saw $n"
    grep -q 'stats rank' "$tmp/err" && fail "zap ran although the parameters differ"
    pass
    ;;
errors_reach_the_communicator_handler)
    # Mismatched counts (erroneous MPI): MPI_ERR_ARG on every rank, through
    # the communicator's handler (MPI_ERRORS_RETURN on it, fatal on the
    # world), blocking and non-blocking; the communicator stays usable.
    run "$ZAP_TEST_MPIEXEC" $BASE $ON $OPEN -np "$np" "$ZAP_TEST_CHECK" errors "$tmp/with"
    [ $rc -eq 0 ] || fail "status $rc"
    n=$(grep -c 'mismatched .*allreduce: error (class' "$tmp/out")
    [ "$n" -eq $((2 * np)) ] || fail "expected $((2 * np)) error lines, saw $n"
    pass
    ;;
peer_exit_errors)
    # The last rank leaves (no MPI_Finalize) before an allreduce: every other
    # rank returns an error instead of hanging.
    run "$ZAP_TEST_MPIEXEC" $BASE $ON $OPEN --mca orte_allowed_exit_without_sync 1 -np "$np" -x ZAP_TIMEOUT=10 \
        "$ZAP_TEST_CHECK" peer-exit "$tmp/with"
    [ $rc -eq 0 ] || fail "status $rc"
    n=$(grep -c 'allreduce with a departed rank: error' "$tmp/out")
    [ "$n" -eq $((np - 1)) ] || fail "expected $((np - 1)) ranks with an error, saw $n"
    pass
    ;;
sends_leave_while_open_mpi_waits)
    # A broadcast zap takes, then the root waits in Open MPI's MPI_Recv for
    # every receiver: over TCP, with segments holding a whole chunk and small
    # socket buffers, part of each sender's last chunk stays in its process
    # after the call returns, and must leave through Open MPI's progress
    # (coll_zap_progress drives the transport with nothing pending).
    run "$ZAP_TEST_MPIEXEC" $BASE $ON $OPEN -np "$np" -x UCX_TLS=tcp,self -x UCX_TCP_TX_SEG_SIZE=4m \
        -x UCX_TCP_RX_SEG_SIZE=4m -x UCX_RNDV_THRESH=8m -x UCX_TCP_SNDBUF=64k -x UCX_TCP_RCVBUF=64k \
        -x ZAP_BCAST_ALG=chain -x ZAP_COLL_PIPELINE_BYTES=65536 -x ZAP_COLL_SHM=off -x ZAP_COLL_CMA=off \
        -x ZAP_TIMEOUT=20 "$ZAP_TEST_CHECK" linger "$tmp/with"
    [ $rc -eq 0 ] || fail "status $rc"
    grep -q 'broadcast then point-to-point: 0 wrong bytes' "$tmp/out" || fail "no clean verdict from rank 0"
    [ "$(zap_count bcast)" -gt 0 ] || fail "zap ran no broadcast"
    pass
    ;;
installed_component_loads)
    # `cmake --install` puts the component where ZAP_OMPI_COMPONENT_DIR
    # says; Open MPI loads it from there.
    [ -n "${ZAP_TEST_INSTALL_DIR:-}" ] || fail "ZAP_TEST_INSTALL_DIR not set"
    [ -f "$ZAP_TEST_INSTALL_DIR/mca_coll_zap.so" ] || fail "no installed mca_coll_zap.so in $ZAP_TEST_INSTALL_DIR"
    run "$ZAP_TEST_MPIEXEC" $BASE --mca mca_base_component_path "$ZAP_TEST_INSTALL_DIR:$pkglibdir" \
        --mca coll_zap_priority 40 --mca coll_zap_stats 1 -np "$np" "$ZAP_TEST_CHECK" fallback "$tmp/with"
    [ $rc -eq 0 ] || fail "status $rc"
    grep -q 'coll:zap: stats rank 0: allreduce' "$tmp/err" || fail "the installed component did not run"
    pass
    ;;
*)
    fail "unknown test"
    ;;
esac
