#!/bin/sh
# plugin_test.sh TEST: one check of the zap UCX plugin against the UCX and Open
# MPI on this machine. Prints what it ran and its output, ends with
# "PASS plugin.TEST" or "FAIL plugin.TEST: why", exit status 0 only on PASS.
#
# Environment (set by ctest, or by gpu_check.sh on the GPU machine):
#   ZAP_TEST_PLUGIN_LIB        libzap_ucx.so
#   ZAP_TEST_UCP_CHECK         ucp_check (plugin-agnostic UCP driver)
#   ZAP_TEST_UCP_CHECK_LINKED  ucp_check linked to the plugin (explicit registration)
#   ZAP_TEST_MPI_CHECK         mpi_check
#   ZAP_TEST_MPIEXEC           mpirun
#   ZAP_TEST_UCX_INFO          ucx_info (absent on the GPU machine: those tests skip)
# Every command runs under `timeout`. A run that registers the plugin must
# print no zap warning or error and no UCX error; a run that declines must
# print exactly one decline line per process.
set -u
name=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
T=${ZAP_TEST_TIMEOUT:-240}

# A sanitizer build (ZAP_SANITIZE) links the plugin to libasan/libtsan, whose
# runtime must come first in a process it is preloaded into (ucx_info, mpirun's
# ranks). Leak reports are left to the in-process GoogleTest suite: UCX and
# Open MPI keep memory until exit by design.
san=$(ldd "$ZAP_TEST_PLUGIN_LIB" 2>/dev/null | awk '/lib[at]san\.so/ {print $3; exit}')
PRELOAD="${san:+$san:}$ZAP_TEST_PLUGIN_LIB"
if [ -n "$san" ]; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
fi

fail() {
    echo "FAIL plugin.$name: $*"
    exit 1
}
pass() {
    echo "PASS plugin.$name"
    exit 0
}
skip() {
    # ctest has no skip status for plain commands; say why and pass.
    echo "SKIP plugin.$name: $*"
    exit 0
}

# run [VAR=value...] CMD...: runs it under env (so LD_PRELOAD reaches only the
# command, not `timeout`), output in $tmp/out and $tmp/err, echoes both.
run() {
    echo "+ $*"
    timeout "$T" env "$@" >"$tmp/out" 2>"$tmp/err"
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

out_has() { grep -q -- "$1" "$tmp/out"; }
err_count() { grep -c -- "$1" "$tmp/err"; }
no_fail_lines() { ! grep -q '^FAIL' "$tmp/out"; }

# A clean registered run: exit 0, no FAIL line, no zap warning/error, no UCX error.
expect_clean() {
    [ "$1" -eq 0 ] || fail "exit status $1"
    no_fail_lines || fail "a check failed (FAIL line above)"
    if grep -E -q 'zap (warn|error)|UCX +ERROR' "$tmp/err"; then
        fail "unexpected warning or error on stderr"
    fi
}

# A declined run: exit 0, no FAIL line, exactly $2 decline lines, nothing else from zap.
expect_declined() {
    [ "$1" -eq 0 ] || fail "exit status $1"
    no_fail_lines || fail "a check failed (FAIL line above)"
    n=$(err_count 'zap warn: ucx plugin: declined')
    [ "$n" -eq "$2" ] || fail "expected $2 decline line(s), saw $n"
    other=$(grep -E 'zap (warn|error)|UCX +ERROR' "$tmp/err" | grep -v -c 'ucx plugin: declined')
    [ "$other" -eq 0 ] || fail "unexpected warning or error besides the decline line"
}

mpirun_plugin() {
    # Open MPI 4.1 pml ucx on a host without InfiniBand needs pml_ucx_tls/devices any.
    run OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$ZAP_TEST_MPIEXEC" -np 2 \
        --oversubscribe --bind-to none --mca pml ucx --mca pml_ucx_tls any \
        --mca pml_ucx_devices any --mca btl self,vader --mca osc ^ucx \
        -x LD_PRELOAD="$PRELOAD" "$@"
}

case "$name" in
ucx_info_lists_component)
    # ucx_info -d shows the memory domain, its component and the transport/device.
    [ -n "${ZAP_TEST_UCX_INFO:-}" ] || skip "no ucx_info on this machine"
    run LD_PRELOAD="$PRELOAD" "$ZAP_TEST_UCX_INFO" -d
    expect_clean $?
    out_has '# Memory domain: zap' || fail "no memory domain zap"
    out_has '#     Component: zap' || fail "no component zap"
    out_has '#      Transport: zap' || fail "no transport zap"
    out_has '#         Device: pool' || fail "no device pool"
    pass
    ;;
ucx_info_shows_settings)
    # The plugin's settings live in UCX's config system (ucx_info -c) and reach
    # the pool: UCX_ZAP_BUDGET=1g shows as the memory domain's allocation limit.
    [ -n "${ZAP_TEST_UCX_INFO:-}" ] || skip "no ucx_info on this machine"
    run UCX_ZAP_CHUNK_SIZE=4m LD_PRELOAD="$PRELOAD" "$ZAP_TEST_UCX_INFO" -c
    expect_clean $?
    for v in UCX_ZAP_CHUNK_SIZE=4M UCX_ZAP_BUDGET=auto UCX_ZAP_BACKEND=auto; do
        out_has "^$v\$" || fail "ucx_info -c lacks $v"
    done
    run UCX_ZAP_BUDGET=1g LD_PRELOAD="$PRELOAD" "$ZAP_TEST_UCX_INFO" -d
    expect_clean $?
    grep -A2 '# Memory domain: zap' "$tmp/out" | grep -q 'allocate: <= 1G' ||
        fail "UCX_ZAP_BUDGET=1g did not reach the memory domain"
    pass
    ;;
ucp_alloc_served_by_pool)
    # ucp_mem_map(ALLOCATE) with UCX_ALLOC_PRIO=md:zap is served by the pool and
    # UCT mem_query/detect recognise pool pointers and refuse malloc ones.
    run UCX_ALLOC_PRIO=md:zap LD_PRELOAD="$PRELOAD" "$ZAP_TEST_UCP_CHECK" alloc pool
    expect_clean $?
    pass
    ;;
ucp_tag_8B_to_8MiB_pool_memory)
    # Two workers exchange tag messages 8 B..8 MiB between pool buffers.
    run UCX_ALLOC_PRIO=md:zap LD_PRELOAD="$PRELOAD" "$ZAP_TEST_UCP_CHECK" tag pool
    expect_clean $?
    pass
    ;;
ucp_tag_default_alloc_prio)
    # With UCX's default allocation order the plugin changes nothing visible:
    # sysv/posix serve ucp_mem_map first and messages still flow.
    run LD_PRELOAD="$PRELOAD" "$ZAP_TEST_UCP_CHECK" tag notpool
    expect_clean $?
    pass
    ;;
ucp_tls_with_zap_keeps_md)
    # A restricted UCX_TLS that lists "zap" keeps the memory domain.
    run UCX_TLS=sm,self,zap UCX_ALLOC_PRIO=md:zap LD_PRELOAD="$PRELOAD" \
        "$ZAP_TEST_UCP_CHECK" tag pool
    expect_clean $?
    pass
    ;;
ucp_tls_without_zap_drops_md)
    # UCX_TLS without "zap": UCP closes the memory domain (no transport), so
    # md:zap cannot serve and the next method (heap) does. Documented limit.
    run UCX_TLS=sm,self UCX_ALLOC_PRIO=md:zap,heap LD_PRELOAD="$PRELOAD" \
        "$ZAP_TEST_UCP_CHECK" alloc notpool
    expect_clean $?
    pass
    ;;
explicit_register)
    # Linked, constructor registration off, an explicit zap_ucx_plugin_register()
    # before ucp_init registers it.
    run ZAP_UCX_PLUGIN_AUTO=0 UCX_ALLOC_PRIO=md:zap "$ZAP_TEST_UCP_CHECK_LINKED" tag pool
    expect_clean $?
    out_has '^before zap_ucx_plugin_register: state 0$' || fail "the constructor registered already"
    pass
    ;;
mismatch_layout_declines)
    # A layout mismatch (forced: the other release's layout is checked) declines
    # with one line and UCX works as without the plugin.
    run ZAP_UCX_PLUGIN_FORCE_MISMATCH=layout LD_PRELOAD="$PRELOAD" \
        "$ZAP_TEST_UCP_CHECK" tag declined
    expect_declined $? 1
    grep -q 'layout self-check failed' "$tmp/err" || fail "the decline line does not name the layout"
    run ZAP_UCX_PLUGIN_FORCE_MISMATCH=layout LD_PRELOAD="$PRELOAD" \
        "$ZAP_TEST_UCP_CHECK" alloc declined
    expect_declined $? 1
    if [ -n "${ZAP_TEST_UCX_INFO:-}" ]; then
        run ZAP_UCX_PLUGIN_FORCE_MISMATCH=layout LD_PRELOAD="$PRELOAD" "$ZAP_TEST_UCX_INFO" -d
        expect_declined $? 1
        ! out_has 'Component: zap' || fail "ucx_info still lists the component"
        out_has 'Component: tcp' || fail "ucx_info lost its own components"
    fi
    pass
    ;;
mismatch_version_declines)
    run ZAP_UCX_PLUGIN_FORCE_MISMATCH=version LD_PRELOAD="$PRELOAD" \
        "$ZAP_TEST_UCP_CHECK" tag declined
    expect_declined $? 1
    grep -q 'version treated as unsupported' "$tmp/err" || fail "the decline line does not name the version"
    pass
    ;;
mpi_sendrecv_allreduce)
    # Open MPI pml ucx, 2 ranks, plugin on both: send/recv and allreduce 8 B..8 MiB.
    mpirun_plugin "$ZAP_TEST_MPI_CHECK" pool
    expect_clean $?
    [ "$(grep -c '^PASS' "$tmp/out")" -ge 44 ] || fail "fewer PASS lines than checks"
    pass
    ;;
mpi_sendrecv_allreduce_pool_buffers)
    # Same, with every MPI buffer taken from the pool (ucp_mem_map ALLOCATE with
    # md:zap first), so pml ucx sends, receives and reduces pool memory.
    mpirun_plugin -x UCX_ALLOC_PRIO=md:zap,md:sysv,md:posix,thp,mmap,heap \
        "$ZAP_TEST_MPI_CHECK" poolbufs
    expect_clean $?
    [ "$(grep -c '^PASS' "$tmp/out")" -ge 45 ] || fail "fewer PASS lines than checks"
    pass
    ;;
mpi_mismatch_declines)
    # Forced mismatch on both ranks: one decline line each, MPI unaffected.
    mpirun_plugin -x ZAP_UCX_PLUGIN_FORCE_MISMATCH=layout "$ZAP_TEST_MPI_CHECK" declined
    expect_declined $? 2
    pass
    ;;
*)
    fail "unknown test"
    ;;
esac
