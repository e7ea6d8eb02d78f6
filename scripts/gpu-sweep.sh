#!/usr/bin/env bash
# GPU-machine sweep: the whole ctest suite (GPU tests run instead of skipping),
# compute-sanitizer on the GPU kernels, and the benchmarks whose figures go in
# docs/performance.md. Run from the repository root with a build tree made on
# the development machine: scripts/gpu-sweep.sh BUILD_DIR OUT_DIR [tests|bench|all]
set -uo pipefail
build=${1:?build dir}; out=${2:?output dir}; what=${3:-all}
mkdir -p "$out"
. scripts/gpu-build-env.sh
log() { echo "== $* ($(date +%T))"; }
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
{
  log machine; nvidia-smi -L; nproc; uname -r
  "$build/tools/zap-info/zap-info" | head -12
} > "$out/machine.txt" 2>&1

if [ "$what" != bench ] && [ -z "${ZAP_SWEEP_SKIP_TESTS:-}" ]; then
log ctest
(cd "$bt" && timeout 300 ctest -j 8 --timeout 240 -LE "long|plugin" ${ZAP_CTEST_REGEX:+-R "$ZAP_CTEST_REGEX"} --output-on-failure) > "$out/ctest.txt" 2>&1
tail -40 "$out/ctest.txt"

log compute-sanitizer
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -n "$cs" ]; then
  for t in tests/ed25519/test_ed25519_gpu tests/pool/test_pool; do
    [ -x "$bt/$t" ] || continue
    ZAP_ED25519_GPU_LARGE_N=4096 timeout 120 "$cs" --tool memcheck --error-exitcode 9 "$bt/$t" \
      --gtest_filter='-*Million*' > "$out/cs_$(basename $t).txt" 2>&1
    echo "compute-sanitizer $t: rc=$?"; tail -3 "$out/cs_$(basename $t).txt"
  done
else
  echo "compute-sanitizer: not found"
fi

fi
log zap-verify
# One batch, generated once, then verified on 1 and 2 GPUs with each pool
# backing (managed: receive buffers fault in on first touch; pinned: no faults).
zv="$bt/tools/zap-verify/zap-verify"; batch=/tmp/zap-sweep.svb
timeout 150 "$zv" gen --items 4194304 --keys 65536 --threads "$(nproc)" --out $batch --expect $batch.bits \
  > "$out/verify.txt" 2>&1; echo "gen rc=$?"; tail -3 "$out/verify.txt"
for backend in ${ZAP_SWEEP_BACKENDS:-managed pinned}; do
  for np in 1 $( [ "$ngpu" -ge 2 ] && echo 2 ); do
    echo "== verify np $np backend $backend" >> "$out/verify.txt"
    ZAP_POOL_BACKEND=$backend timeout 100 mpirun -np $np -x ZAP_POOL_BACKEND ${ZAP_SWEEP_UCX_TLS:+-x UCX_TLS=$ZAP_SWEEP_UCX_TLS} "$zv" run --batch $batch \
      --expect $batch.bits --verifier gpu >> "$out/verify.txt" 2>&1; echo "np $np $backend rc=$?"
  done
done
grep -E "^==|items/s|result|verify  |distribute" "$out/verify.txt"
if [ "$what" != tests ]; then
log pool-bench
[ -n "${ZAP_SWEEP_NO_POOL:-}" ] || timeout 60 "$bt/tools/zap-pool-bench/zap-pool-bench" > "$out/pool_bench.txt" 2>&1; tail -12 "$out/pool_bench.txt"

if [ "$what" != final ]; then
log p2p managed
timeout 120 mpirun -np 2 -x UCX_TLS=self,sm,cma "$bt/tools/zap-perf/zap-perf" p2p --mem host,pool,managed \
  --staging prefetch --max 64M --csv "$out/p2p_prefetch.csv" > "$out/p2p_prefetch.txt" 2>&1; tail -25 "$out/p2p_prefetch.txt"
timeout 70 mpirun -np 2 -x UCX_TLS=self,sm,cma "$bt/tools/zap-perf/zap-perf" p2p --mem managed --no-raw \
  --staging none --min 4K --max 64M --csv "$out/p2p_fault.csv" > "$out/p2p_fault.txt" 2>&1; tail -12 "$out/p2p_fault.txt"

fi
perf_modes=$("$bt/tools/zap-perf/zap-perf" --help 2>&1 || true)
if grep -q '^  coll' <<<"$perf_modes"; then
  log coll 2 ranks
  timeout 120 mpirun -np 2 -x UCX_TLS=self,sm,cma "$bt/tools/zap-perf/zap-perf" coll --mem managed \
    --max ${ZAP_SWEEP_COLL_MAX:-256M} --csv "$out/coll2.csv" > "$out/coll2.txt" 2>&1; tail -40 "$out/coll2.txt"
  log coll 8 ranks host
  timeout 70 mpirun -np 8 -x UCX_TLS=self,sm,cma "$bt/tools/zap-perf/zap-perf" coll --mem host \
    --max 64M --csv "$out/coll8.csv" > "$out/coll8.txt" 2>&1; tail -30 "$out/coll8.txt"
fi

fi
