#!/bin/bash
# Sanitizer runs (docs/faults.md, "Sanitizers"): builds zap twice more and runs
#   address  ASan+UBSan (gcc, ZAP_SANITIZE=address): every ctest test of the
#            tree (single-process suites, tools' smoke tests, fuzz corpus
#            replay, the multi-rank suites under mpirun) except the faults.*
#            scripts and the 4-rank mpirun runs (too slow under ASan here)
#   thread   TSan (ZAP_SANITIZE=thread): the pool and transport suites, and
#            the UCX transport's small mpirun suites (threads sharing one
#            transport, a peer that exits, failure notices)
#   valgrind memcheck on a 2-rank zap-fault-rank run over UCX (tcp), with
#            tests/faults/valgrind.supp for Open MPI / UCX / libc noise
#
#   sanitize.sh [address] [thread] [valgrind]     (default: all three)
#
# Build trees: build-san-address, build-san-thread (gitignored, beside
# build/). CUDA, the plugin and the GPU kernel are left out (no device here;
# compute-sanitizer is for the GPU machine). Exit 0 when every run was clean.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
modes=("$@")
[ ${#modes[@]} -eq 0 ] && modes=(address thread valgrind)
. scripts/mpirun-env.sh
fail=0
JOBS=${ZAP_BUILD_JOBS:-2}

configure() { # configure <dir> <sanitize>
    mkdir -p "$1"
    cmake -G Ninja -S "$ROOT" -B "$1" -DZAP_SANITIZE="$2" -DZAP_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug \
        -DZAP_SKIP="plugin;ed25519;examples" > "$1/sanitize-configure.log" 2>&1 ||
        { echo "FAIL: configure $1 (see $1/sanitize-configure.log)"; return 1; }
}

# LeakSanitizer reports for libraries zap does not own (UCX, Open MPI, PMIx)
# are suppressed; zap's own leaks are not.
LSAN_SUPP=$ROOT/tests/faults/lsan.supp

for mode in "${modes[@]}"; do
case $mode in
address)
    B=build-san-address
    configure $B address || { fail=1; continue; }
    # Everything the tree builds (tools included: their smoke tests run too).
    cmake --build $B -j $JOBS > $B/sanitize-build.log 2>&1 || { echo "FAIL: build $B (see $B/sanitize-build.log)"; fail=1; continue; }
    # fast_unwind_on_malloc=0: Open MPI and UCX are built without frame
    # pointers, so the fast unwinder stops at their first frame and the
    # suppressions could not match; the slow unwinder sees the whole stack.
    export ASAN_OPTIONS=abort_on_error=0:detect_leaks=1:halt_on_error=1:fast_unwind_on_malloc=0
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    export LSAN_OPTIONS=suppressions=$LSAN_SUPP:print_suppressions=0
    # Keep MPI and PMIx components loaded at exit, so LSan can name (and the
    # suppressions match) the frames of their allocations.
    export OMPI_MCA_mca_base_component_disable_dlclose=1 PMIX_MCA_mca_base_component_disable_dlclose=1
    (cd $B && ctest --output-on-failure -j $JOBS -E "faults\.|^mpi\..*np4" --timeout 600 > sanitize-ctest.log 2>&1)
    rc=$?
    tail -3 $B/sanitize-ctest.log
    [ $rc -eq 0 ] && echo "ok: ASan+UBSan: $(grep -oE '[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' $B/sanitize-ctest.log | head -1)" || { echo "FAIL: ASan+UBSan (see $B/sanitize-ctest.log)"; fail=1; }
    unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS OMPI_MCA_mca_base_component_disable_dlclose PMIX_MCA_mca_base_component_disable_dlclose
    ;;
thread)
    B=build-san-thread
    configure $B thread || { fail=1; continue; }
    cmake --build $B --target test_pool test_transport test_checksum test_badinput mpi_ucp_p2p mpi_ucp_peer_exit mpi_ucp_failure_notice \
        -j $JOBS > $B/sanitize-build.log 2>&1 ||
        { echo "FAIL: build $B (see $B/sanitize-build.log)"; fail=1; continue; }
    export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
    # UCX's memory hooks (libucm) intercept the madvise glibc makes on a
    # thread's stack as the thread exits, after TSan has dropped that
    # thread's state: TSan then crashes inside its own rwlock interceptor.
    # Without the hooks (zap registers its pool memory itself) that is gone.
    export UCX_MEM_EVENTS=no UCX_MEM_MMAP_HOOK_MODE=none
    (cd $B && ctest --output-on-failure -j $JOBS -R "^(Pool|Inproc|Bad|Checksum|Crc32c)|^mpi\.mpi_ucp_(p2p\.np2|peer_exit\.np2|failure_notice)" \
        --timeout 900 > sanitize-ctest.log 2>&1)
    rc=$?
    tail -3 $B/sanitize-ctest.log
    [ $rc -eq 0 ] && echo "ok: TSan: $(grep -oE '[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' $B/sanitize-ctest.log | head -1)" || { echo "FAIL: TSan (see $B/sanitize-ctest.log)"; fail=1; }
    unset TSAN_OPTIONS UCX_MEM_EVENTS UCX_MEM_MMAP_HOOK_MODE
    ;;
valgrind)
    B=${ZAP_BUILD_DIR:-build-faults}
    [ -x $B/tests/faults/zap-fault-rank ] || { echo "FAIL: valgrind: build zap-fault-rank in $B first"; fail=1; continue; }
    VG=$B/valgrind
    rm -rf $VG && mkdir -p $VG
    UCX_TLS=self,tcp ZAP_TIMEOUT=60 PMIX_MCA_mca_base_component_disable_dlclose=1 timeout 600 \
        mpirun -np 2 --mca pml ob1 --mca btl self,tcp --mca mca_base_component_disable_dlclose 1 \
        valgrind --tool=memcheck --num-callers=40 --track-origins=yes --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite \
        --show-leak-kinds=definite --suppressions=$ROOT/tests/faults/valgrind.supp --log-file=$VG/vg.%q{OMPI_COMM_WORLD_RANK}.log \
        $B/tests/faults/zap-fault-rank --op mixed --iters 20 --count 4096 > $VG/out.log 2>&1
    rc=$?
    errs=$(grep -h "ERROR SUMMARY" $VG/vg.*.log)
    echo "valgrind: mpirun exit $rc; $errs" | tr '\n' ' '; echo
    if [ $rc -ne 0 ]; then fail=1; echo "FAIL: valgrind (see $VG)"; else echo "ok: valgrind memcheck clean on 2 ranks"; fi
    ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac
done
exit $fail
