#!/usr/bin/env bash
# The 8-rank host-memory allreduce figures of docs/performance.md ("Single-copy
# allreduce"): zap-perf coll under mpirun, Open MPI in the same processes,
# ROUNDS rounds of the automatic choice and the ring alternated (machines are
# noisy: quote medians), then the chunk size and binding variants, then the
# mpi_coll suite on 8 ranks. Everything lands in OUT/sweep.tgz.
#   scripts/allreduce-sweep.sh BUILD OUT [ROUNDS]
# Run from the repository root on the GPU machine with a Release build made on
# the development machine (BUILD/devlibs holds libsodium for hosts without it).
set -uo pipefail
build=${1:?build dir}; out=${2:?output dir}; rounds=${3:-5}
w=/tmp/zap-sweep; rm -rf "$w"; mkdir -p "$w" "$out"
. scripts/gpu-build-env.sh
perf="$bt/tools/zap-perf/zap-perf"
np=${NP:-8}
{ date -u; nproc; lscpu | grep -E "Model name|Socket|NUMA|L2|L3"; git log -1 --format='commit %h %s' 2>/dev/null; } > "$w/machine.txt" 2>&1
cat "$w/machine.txt"
row() { grep -E "^ *allreduce" "$1" | awk -v t="$2" '{printf "%-16s %9s %-5s zap %9s mpi %9s x %5s\n", t, $2, $4, $6, $11, $16}'; }
run() { # name, extra mpirun args..., -- zap-perf args
  local name=$1; shift; local margs=(); while [ "$1" != "--" ]; do margs+=("$1"); shift; done; shift
  timeout 90 mpirun -np $np "${margs[@]}" -x UCX_TLS=self,sm,cma -x LD_LIBRARY_PATH "$perf" coll --op allreduce \
    --mem host --reps 3 "$@" --csv "$w/$name.csv" > "$w/$name.txt" 2>&1
  echo "rc=$?"; row "$w/$name.txt" "$name"
}
for r in $(seq 1 $rounds); do
  run auto_$r -- --min 256K --max 16M
  run ring_$r -- --min 256K --max 16M --alg ring
done
for c in 32K 256K; do run chunk_$c -x ZAP_COLL_GPU_PATH=off -x ZAP_COLL_PIPELINE_BYTES=$c -- --min 256K --max 16M --alg cma; done
run bind_core --bind-to core -- --min 256K --max 16M
# The suite at 8 ranks, as ctest runs it at 2 and 4 (mpi_tests/CMakeLists.txt).
timeout 150 mpirun -np $np --mca pml ob1 --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none \
  --mca op ^avx -x UCX_TLS=self,sm -x ZAP_TIMEOUT=20 -x ZAP_LOG_LEVEL=warn -x LD_LIBRARY_PATH \
  "$bt/mpi_tests/coll/mpi_coll" > "$w/mpi_coll_np$np.txt" 2>&1
echo "mpi_coll np$np rc=$?"; grep -E "PASSED|FAILED" "$w/mpi_coll_np$np.txt" | tail -12
tar czf "$out/sweep.tgz" -C /tmp zap-sweep
