#!/bin/sh
# gpu_check.sh BUILD_DIR [LOG_DIR]: the plugin checks on the GPU machine
# (Ubuntu 24.04, UCX 1.16.0 libraries without ucx_info or headers, Open MPI
# 4.1.6, H200), run from a build directory made on the Debian machine and
# carried over. Prints one "PASS name" / "FAIL name" / "SKIP name" line per
# check and a summary; logs of every check go to LOG_DIR (default BUILD_DIR/gpu-logs).
#
# The pool uses CUDA managed memory (UCX_ZAP_BACKEND=managed, checked through
# zap_ucx_plugin_info); a second round repeats the UCP and MPI checks without
# cma (UCX_TLS=posix,sysv,self,zap) and with UCX's older protocols
# (UCX_PROTO_ENABLE=n), and one round uses a host-memory pool.
set -u
build=$(cd "${1:?usage: gpu_check.sh BUILD_DIR [LOG_DIR]}" && pwd)
logs=${2:-$build/gpu-logs}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$logs"

export ZAP_TEST_PLUGIN_LIB="$build/plugin/ucx/libzap_ucx.so"
export ZAP_TEST_UCP_CHECK="$build/plugin/ucx/tests/ucp_check"
export ZAP_TEST_UCP_CHECK_LINKED="$build/plugin/ucx/tests/ucp_check_linked"
export ZAP_TEST_MPI_CHECK="$build/plugin/ucx/tests/mpi_check"
export ZAP_TEST_MPIEXEC="${ZAP_TEST_MPIEXEC:-$(command -v mpirun || echo mpirun)}"
export ZAP_TEST_UCX_INFO="$(command -v ucx_info || true)"
# Built on the Debian machine: the plugin's own directory and CUDA's runtime
# must be found wherever the build directory now lies.
export LD_LIBRARY_PATH="$build/plugin/ucx:/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# Short per-command deadline: the whole script must fit a few minutes of device
# time, and a hang must cost one check, not the run.
export ZAP_TEST_TIMEOUT="${ZAP_TEST_TIMEOUT:-45}"
: >"$logs/summary.txt"
say() { echo "$*" | tee -a "$logs/summary.txt"; }

npass=0
nfail=0
check() { # check NAME [VAR=value...] -- TEST
    name=$1
    shift
    vars=""
    while [ "$1" != "--" ]; do
        vars="$vars $1"
        shift
    done
    shift
    # shellcheck disable=SC2086
    if env $vars sh "$here/plugin_test.sh" "$1" >"$logs/$name.log" 2>&1; then
        if grep -q '^SKIP' "$logs/$name.log"; then
            say "SKIP $name: $(grep '^SKIP' "$logs/$name.log")"
        else
            say "PASS $name"
            npass=$((npass + 1))
        fi
    else
        say "FAIL $name: $(tail -n 1 "$logs/$name.log")"
        nfail=$((nfail + 1))
    fi
}

{
    echo "== machine"
    uname -a
    cat /etc/os-release 2>/dev/null | head -n 4
    nvidia-smi -L 2>&1 | head -n 8
    echo "== ucx libraries"
    ldconfig -p | grep -E 'lib(ucp|uct|ucs|ucm)\.so' 
    ls /usr/lib/x86_64-linux-gnu/ucx 2>&1
    echo "== symbols the plugin relies on"
    uct=$(ldconfig -p | awk '/libuct\.so\.0 /{print $NF; exit}')
    ucs=$(ldconfig -p | awk '/libucs\.so\.0 /{print $NF; exit}')
    for s in uct_component_register uct_tl_register uct_tcp_component uct_tcp_tl uct_components_list \
        uct_md_query_single_md_resource uct_base_rkey_compare uct_base_iface_estimate_perf \
        uct_iface_config_table uct_md_config_table uct_base_iface_internal_ops; do
        printf '%s: %s\n' "$s" "$(nm -D --defined-only "$uct" 2>/dev/null | grep -w "$s" || echo absent)"
    done
    for s in ucs_malloc ucs_empty_function ucs_config_global_list ucs_config_sscanf_memunits; do
        printf '%s: %s\n' "$s" "$(nm -D --defined-only "$ucs" 2>/dev/null | grep -w "$s" || echo absent)"
    done
    echo "== mpirun"
    "$ZAP_TEST_MPIEXEC" --version 2>&1 | head -n 2
    echo "== ldd plugin"
    ldd "$ZAP_TEST_PLUGIN_LIB"
} >"$logs/environment.log" 2>&1

# What UCP sees with the plugin preloaded (the GPU machine has no ucx_info).
timeout "$ZAP_TEST_TIMEOUT" env LD_PRELOAD="$ZAP_TEST_PLUGIN_LIB" UCX_ZAP_BACKEND=managed \
    ZAP_LOG_LEVEL=info "$ZAP_TEST_UCP_CHECK" info >"$logs/ucp_context_info.log" 2>&1
if grep -q 'state 1 abi 116' "$logs/ucp_context_info.log" &&
    grep -q 'zap/pool' "$logs/ucp_context_info.log"; then
    say "PASS ucp_context_print_info lists md zap and resource zap/pool (1.16 layout)"
    npass=$((npass + 1))
else
    say "FAIL ucp_context_print_info: see $logs/ucp_context_info.log"
    nfail=$((nfail + 1))
fi

M="UCX_ZAP_BACKEND=managed ZAP_TEST_EXPECT_BACKEND=managed ZAP_TEST_EXPECT_ABI=116"
for t in ucp_alloc_served_by_pool ucp_tag_8B_to_8MiB_pool_memory ucp_tag_default_alloc_prio \
    ucp_tls_with_zap_keeps_md ucp_tls_without_zap_drops_md explicit_register \
    mismatch_layout_declines mismatch_version_declines mpi_sendrecv_allreduce \
    mpi_sendrecv_allreduce_pool_buffers mpi_mismatch_declines; do
    # shellcheck disable=SC2086
    check "managed.$t" $M -- "$t"
done
for t in ucp_tag_8B_to_8MiB_pool_memory mpi_sendrecv_allreduce_pool_buffers; do
    # shellcheck disable=SC2086
    check "managed.no_cma.$t" $M UCX_TLS=posix,sysv,self,zap -- "$t"
    # shellcheck disable=SC2086
    check "managed.proto_v1.$t" $M UCX_PROTO_ENABLE=n -- "$t"
done
for t in ucp_alloc_served_by_pool ucp_tag_8B_to_8MiB_pool_memory mpi_sendrecv_allreduce_pool_buffers; do
    check "host.$t" UCX_ZAP_BACKEND=host ZAP_TEST_EXPECT_BACKEND=host ZAP_TEST_EXPECT_ABI=116 -- "$t"
done

say "SUMMARY pass $npass fail $nfail (logs in $logs)"
[ "$nfail" -eq 0 ]
