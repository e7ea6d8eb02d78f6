#!/bin/sh
# gpu_check.sh DIR [LOG_DIR] [NP...]: the coll component's checks on another
# machine (the GPU host: Ubuntu 24.04, Open MPI 4.1.6) with the files built on
# the Debian machine, all in DIR: mca_coll_zap.so, coll_zap_check,
# coll_zap_test.sh (plugin/ompi/tests) and, optionally, zap-perf. Prints one
# PASS/FAIL/SKIP line per check and a summary; logs go to LOG_DIR (default
# DIR/ompi-logs). NP: the rank counts to check (default 2 8).
#
# What it proves there: the component built against 4.1.4 loads into the
# running Open MPI (ompi_info lists it; the gate accepts the version and the
# layout, coll_zap_verbose 1 says so), gives Open MPI's results bit for bit
# on every routed collective, hands user ops below, and declines cleanly
# when the gate is forced to refuse. With zap-perf in DIR it also runs the
# side-by-side sweep with every window open (the "suggest" lines give the
# thresholds for the defaults); ZAP_PERF_OPS, ZAP_PERF_MAX and ZAP_PERF_REPS
# narrow it (a full sweep of 7 operations to 64 MiB takes minutes per rank
# count); ZAP_PERF=0 leaves it out.
set -u
dir=$(cd "${1:?usage: gpu_check.sh DIR [LOG_DIR] [NP...]}" && pwd)
logs=${2:-$dir/ompi-logs}
shift
[ $# -gt 0 ] && shift
nps=${*:-2 8}
mkdir -p "$logs"
export ZAP_TEST_COMPONENT_DIR="$dir" ZAP_TEST_CHECK="$dir/coll_zap_check" ZAP_TEST_FORTRAN=""
export ZAP_TEST_MPIEXEC="${ZAP_TEST_MPIEXEC:-$(command -v mpirun || echo mpirun)}"
export ZAP_TEST_OMPI_INFO="${ZAP_TEST_OMPI_INFO:-$(command -v ompi_info || echo ompi_info)}"
export ZAP_TEST_TIMEOUT="${ZAP_TEST_TIMEOUT:-120}"
# Built on the Debian machine: the CUDA runtime it links may sit elsewhere.
export LD_LIBRARY_PATH="$dir:/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
pass=0
failed=0
check() { # check NAME [NP]
    label=$1${2:+.np$2}
    if sh "$dir/coll_zap_test.sh" "$@" >"$logs/$label.log" 2>&1; then
        echo "PASS $label"
        pass=$((pass + 1))
    else
        echo "FAIL $label (log: $logs/$label.log)"
        tail -5 "$logs/$label.log"
        failed=$((failed + 1))
    fi
}

echo "== ldd"
ldd "$dir/mca_coll_zap.so" | grep -E 'not found|mpi|pal|ucp|cudart' | sed 's/^/  /'
check ompi_info_lists_params
pkg=$("$ZAP_TEST_OMPI_INFO" --path pkglibdir --parsable | sed 's/^path:pkglibdir://')
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 60 "$ZAP_TEST_MPIEXEC" -np 2 \
    --mca mca_base_component_path "$dir:$pkg" --mca coll_zap_priority 40 --mca coll_zap_verbose 1 \
    "$dir/coll_zap_check" fallback "$logs/verbose" >"$logs/verbose.log" 2>&1
echo "== gate and transport (coll_zap_verbose 1)"
grep 'coll:zap: rank 0' "$logs/verbose.log" | sed 's/^/  /'
for np in $nps; do
    check c_matches_open_mpi "$np"
    check user_op_falls_back "$np"
done
check gate_version_declines 2
check gate_layout_declines 2
check errors_reach_the_communicator_handler 2
check peer_exit_errors 3
if [ -x "$dir/zap-perf" ] && [ "${ZAP_PERF:-1}" != 0 ]; then
    open="--mca coll_zap_allreduce_min_bytes 0 --mca coll_zap_bcast_min_bytes 0 --mca coll_zap_allgather_min_bytes 0
          --mca coll_zap_scatter_min_bytes 0 --mca coll_zap_reduce_min_bytes 0 --mca coll_zap_reduce_max_bytes 0
          --mca coll_zap_alltoall_min_bytes 0 --mca coll_zap_barrier 1"
    for np in $nps; do
        echo "== zap-perf mpi, $np ranks, windows open (log: $logs/perf.np$np.txt)"
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 600 "$ZAP_TEST_MPIEXEC" -np "$np" \
            --mca mca_base_component_path "$dir:$pkg" --mca coll_zap_priority 40 $open \
            "$dir/zap-perf" mpi --op "${ZAP_PERF_OPS:-allreduce,bcast,reduce,allgather,alltoall,scatter,barrier}" \
            --max "${ZAP_PERF_MAX:-64M}" --reps "${ZAP_PERF_REPS:-5}" \
            --csv "$logs/perf.np$np.csv" >"$logs/perf.np$np.txt" 2>&1
        grep -E '^# suggest|^allreduce +(262144|1048576|16777216|67108864) ' "$logs/perf.np$np.txt" | sed 's/^/  /'
    done
fi
echo "== $pass passed, $failed failed"
[ "$failed" -eq 0 ]
