#!/usr/bin/env bash
# One GPU-machine call that checks a release: the whole ctest suite (GPU tests
# run instead of skipping), compute-sanitizer on every GPU kernel test, and the
# benchmarks behind docs/performance.md. Everything lands in one archive
# (the device returns at most 8 files).
#   scripts/gpu-final.sh BUILD OUT [tests] [p2p] [coll] [verify]
# Run from the repository root with a Release build made on the development
# machine (BUILD/devlibs holds libsodium for hosts without it).
set -uo pipefail
build=${1:?build dir}; out=${2:?output dir}; shift 2
phases=" ${*:-tests p2p coll verify} "
w=/tmp/zap-final; rm -rf "$w"; mkdir -p "$w" "$out"
. scripts/gpu-build-env.sh
log() { echo "== $* ($(date +%T))"; }
perf="$bt/tools/zap-perf/zap-perf"
{ date -u; nvidia-smi -L; nproc; uname -r; git log -1 --format='commit %h %s' 2>/dev/null; } > "$w/machine.txt" 2>&1

if [[ $phases == *" tests "* ]]; then
  log ctest
  (cd "$bt" && timeout 280 ctest -j 12 --timeout 200 -LE "long|plugin" --output-on-failure) > "$w/ctest.txt" 2>&1
  grep -E "tests passed|tests failed|Not Run|\*\*\*Failed|Failed  |Timeout" "$w/ctest.txt" | tail -25
  log compute-sanitizer
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  for t in tests/ed25519/test_ed25519_gpu tests/coll/test_coll_gpu tests/pool/test_pool; do
    [ -x "$bt/$t" ] || { echo "missing $t"; continue; }
    ZAP_ED25519_GPU_LARGE_N=4096 timeout 150 "$cs" --tool memcheck --error-exitcode 9 "$bt/$t" \
      --gtest_filter='-*Million*' > "$w/cs_$(basename $t).txt" 2>&1
    echo "compute-sanitizer $t: rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED|SKIPPED" "$w/cs_$(basename $t).txt" | tail -4
  done
fi
if [[ $phases == *" p2p "* ]]; then
  log p2p latency, 5 runs
  for i in 1 2 3 4 5; do
    timeout 40 mpirun -np 2 -x UCX_TLS=self,sm,cma -x LD_LIBRARY_PATH "$perf" p2p --mem host --max 64 --reps 61 \
      > "$w/p2p_lat_$i.txt" 2>&1; echo "rc=$?"; grep -E "^ *(host|8|16|64) " "$w/p2p_lat_$i.txt" | head -8
  done
  log p2p bandwidth
  timeout 100 mpirun -np 2 -x UCX_TLS=self,sm,cma -x LD_LIBRARY_PATH "$perf" p2p --mem host,pool --max 64M \
    --csv "$w/p2p.csv" > "$w/p2p.txt" 2>&1; echo "rc=$?"; tail -30 "$w/p2p.txt"
fi
if [[ $phases == *" coll "* ]]; then
  log coll 2 ranks managed
  timeout 120 mpirun -np 2 -x UCX_TLS=self,sm,cma -x LD_LIBRARY_PATH "$perf" coll --mem managed --max 256M \
    --csv "$w/coll2.csv" > "$w/coll2.txt" 2>&1; echo "rc=$?"; tail -30 "$w/coll2.txt"
  log coll 8 ranks host
  timeout 120 mpirun -np 8 -x UCX_TLS=self,sm,cma -x LD_LIBRARY_PATH "$perf" coll --mem host --max 64M \
    --reps 3 --csv "$w/coll8.csv" > "$w/coll8.txt" 2>&1; echo "rc=$?"; tail -30 "$w/coll8.txt"
  # auto takes the shared-memory allreduce (ranks on one host) up to 4032 B;
  # rd is the transport algorithm it replaced there. Open MPI in the same processes.
  log allreduce small, auto against rd, 8 ranks, 5 runs each
  for run in 1 2 3 4 5; do for alg in auto rd; do
    a=; [ $alg = auto ] || a="--alg $alg"
    timeout 40 mpirun -np 8 -x UCX_TLS=self,sm,cma -x ZAP_COLL_GPU_PATH=off -x LD_LIBRARY_PATH "$perf" coll \
      --op allreduce --mem host --min 8 --max 64K --reps 5 $a --csv "$w/ar_${alg}_$run.csv" \
      > "$w/ar_${alg}_$run.txt" 2>&1
  done; done
  grep -H -E "^ *allreduce +(8|512|4096) " "$w"/ar_*.txt
  log bcast algorithms 8 ranks
  for a in binomial chain scatter_allgather; do
    timeout 40 mpirun -np 8 -x UCX_TLS=self,sm,cma -x LD_LIBRARY_PATH "$perf" coll --op bcast --mem host \
      --alg $a --min 256K --max 16M --csv "$w/bc_$a.csv" > "$w/bc_$a.txt" 2>&1
  done
fi
if [[ $phases == *" verify "* ]]; then
  log zap-verify scaling
  timeout 200 tools/zap-verify/gpu-scaling.sh "$bt" "$w/scaling" 5 pinned:none managed:none 2>&1 | tail -12
fi
tar czf "$out/final.tgz" -C /tmp zap-final
log done
