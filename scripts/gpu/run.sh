#!/usr/bin/env bash
# The GPU machine's half of a GPU run: everything a package made by
# scripts/gpu-package.sh holds, run on a host that has a GPU but cannot build
# zap (no UCX headers, no libsodium, perhaps no cmake). One call runs the
# sections asked for and prints a line for everything it skipped and why.
#
#   bash PKG/run.sh [options] [SECTION...]
#
# Sections (default: info tests sanitize p2p coll verify pool):
#   info      the machine, the GPU, MPI and UCX versions, the package's manifest
#   tests     the package's test list (runtests.py: ctest's rules, no cmake needed);
#             labels long, plugin and build are left out
#   sanitize  compute-sanitizer memcheck on every packaged program with device
#             code, and on test_pool (managed memory through the runtime API):
#             each as its tests run it, gtest suites whole
#   p2p       zap-perf p2p, host memory, 2 ranks, UCX_TLS=self,sm,cma: 8-64 B
#             latency against raw UCP, --p2p-runs runs, then (--p2p-bw) 8 B-64 MiB
#   coll      zap-perf coll at each of --ranks, each --coll-mem, --coll-runs runs
#   verify    zap-verify: one generated batch verified on 1 (and 2) GPUs per backend
#   pool      zap-pool-bench
#   suites    the MPI test suites (mpi_coll, mpi_ucp_p2p, mpi_verify, ...) at
#             --suite-ranks ranks over shared memory, as ctest runs them at 2 and 4
#   scaling   tools/zap-verify/gpu-scaling.sh (zap-verify on 1 and 2 GPUs, medians)
#   gpucoll   the GPU-resident collectives against NCCL (issue 21), not in the
#             default list; parts (--gpucoll-parts): tests: the GPU link map,
#             test_coll_gpu, the protocol suite, mpi_coll_gpu at
#             --gpucoll-ranks, MPI calls on device pointers through the Open
#             MPI component; sanitize: compute-sanitizer memcheck on both suites
#             (mpi_coll_gpu under mpirun), racecheck and synccheck on the
#             kernels' cases; sweep: zap-perf coll --mem device and --mem
#             managed at 2 ranks (one GPU each), allreduce and broadcast, 8 B to
#             --gpucoll-max with NCCL in the same run, and gpucoll.md, the table
#             of busbw and latency ratios to NCCL with the acceptance verdicts
#             (busbw >= 0.9x NCCL from 16 MiB, latency <= 0.5x NCCL's to
#             256 KiB, wrong = 0). scripts/gpu/pack-gpucoll.sh packs just this
#
# Options:
#   --out DIR            where results.tgz (every file written) and run.log go
#                        (default: $OUT, else /tmp/zap-gpu-out); working files
#                        are in /tmp/zap-gpu-run
#   --baseline PKG       a second package (e.g. the commit before): p2p, coll and
#                        verify run it too, alternating run by run, and print new/base
#   -j N                 parallel tests (default: cores)
#   --gpu-only           tests: only those whose name or program says gpu, cuda,
#                        managed, pinned or device
#   --tests-regex R      tests: only names matching R;  --tests-exclude R: not these
#   --labels-exclude L   tests: labels to leave out (default long,plugin,build)
#   --sanitize-regex R   sanitize: only programs whose path matches R
#   --sanitize-timeout S per program (default 300)
#   --p2p-runs N         (default 8)      --p2p-max SIZE (default 64)
#   --p2p-bw             also 8 B-64 MiB bandwidth, memory kinds --p2p-mem (default
#                        host,pool; managed too where a GPU is), --p2p-staging
#                        none|prefetch for managed
#   --ranks "2 8"        coll rank counts (default "2 8")
#   --coll-mem LIST      host,managed (default host)
#   --coll-ops LIST      allreduce,bcast (default: zap-perf's)
#   --coll-min SIZE --coll-max SIZE (default 8 and 64M)  --coll-reps N (default 3)
#   --coll-runs N        (default 1)      --coll-args "..."  more zap-perf coll options
#   --coll-algs "auto rd"  one pass per algorithm (--alg), auto = the selection
#   --mpirun-args "..."  more mpirun options for p2p and coll (e.g. "--bind-to core")
#   --suite-ranks "8"    suites: rank counts (default 8)
#   --scaling-reps N     scaling: repetitions (default 3)
#   --verify-items N     (default 1048576) --verify-backends "managed pinned"
#   --env VAR=VALUE      exported to every section (repeatable)
#   --gpucoll-ranks "2 4"  mpi_coll_gpu rank counts (default 2)
#   --gpucoll-max SIZE   the sweep's largest message (default 1G)
#   --gpucoll-reps N     streaming passes per size (default 3)
#   --gpucoll-quick      gpucoll: a short sweep (to 4M), for a machine of one GPU
#                        (NCCL refuses two ranks on one GPU; both ranks time-slice it)
#   --gpucoll-parts "tests sanitize sweep"  the parts of gpucoll to run (default all)
set -uo pipefail
pkg=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${OUT:-/tmp/zap-gpu-out}
base=""; jobs=$(nproc); gpu_only=""; tregex=""; texclude=""; tlabels="long,plugin,build"
sregex=""; stimeout=300; p2p_runs=8; p2p_max=64; p2p_bw=""; p2p_mem=host,pool; p2p_staging=""; ranks="2 8"
coll_mem=host; coll_ops=""; coll_min=8; coll_max=64M; coll_reps=3; coll_runs=1; coll_args=""; coll_algs=auto
margs=""; suite_ranks=8; scaling_reps=3; v_items=1048576; v_backends="managed pinned"
gc_ranks=2; gc_max=1G; gc_reps=3; gc_quick=""; gc_parts="tests sanitize sweep"
sections=()
while (($#)); do
  case $1 in
    --out) out=$2; shift ;;
    --baseline) base=$(cd "$2" && pwd) || { echo "no baseline package at $2"; exit 2; }; shift ;;
    -j) jobs=$2; shift ;;
    --gpu-only) gpu_only=--gpu-only ;;
    --tests-regex) tregex=$2; shift ;;
    --tests-exclude) texclude=$2; shift ;;
    --labels-exclude) tlabels=$2; shift ;;
    --sanitize-regex) sregex=$2; shift ;;
    --sanitize-timeout) stimeout=$2; shift ;;
    --p2p-runs) p2p_runs=$2; shift ;;
    --p2p-max) p2p_max=$2; shift ;;
    --p2p-bw) p2p_bw=1 ;;
    --p2p-mem) p2p_mem=$2; shift ;;
    --p2p-staging) p2p_staging=$2; shift ;;
    --coll-algs) coll_algs=$2; shift ;;
    --mpirun-args) margs=$2; shift ;;
    --suite-ranks) suite_ranks=$2; shift ;;
    --scaling-reps) scaling_reps=$2; shift ;;
    --ranks) ranks=$2; shift ;;
    --coll-mem) coll_mem=$2; shift ;;
    --coll-ops) coll_ops=$2; shift ;;
    --coll-min) coll_min=$2; shift ;;
    --coll-max) coll_max=$2; shift ;;
    --coll-reps) coll_reps=$2; shift ;;
    --coll-runs) coll_runs=$2; shift ;;
    --coll-args) coll_args=$2; shift ;;
    --verify-items) v_items=$2; shift ;;
    --verify-backends) v_backends=$2; shift ;;
    --env) export "${2?}"; shift ;;
    --gpucoll-ranks) gc_ranks=$2; shift ;;
    --gpucoll-max) gc_max=$2; shift ;;
    --gpucoll-reps) gc_reps=$2; shift ;;
    --gpucoll-quick) gc_quick=1 ;;
    --gpucoll-parts) gc_parts=$2; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//;$d'; exit 0 ;;
    -*) echo "run.sh: unknown option $1"; exit 2 ;;
    *) sections+=("$1") ;;
  esac
  shift
done
((${#sections[@]})) || sections=(info tests sanitize p2p coll verify pool)
read -r -a margs <<<"$margs"
final=$out; out=/tmp/zap-gpu-run
rm -rf "$out"; mkdir -p "$out" "$final"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Paths compiled into the programs (test data found through the source tree)
# lead to the package's folders when this host has nothing there.
link_paths() {
  [ -f "$1/paths" ] || return 0
  local k v
  while IFS='=' read -r k v; do
    local to="$1/src"; [ "$k" = build ] && to="$1/tree"
    if [ ! -e "$v" ]; then
      mkdir -p "$(dirname "$v")" && ln -s "$to" "$v" && echo "linked $v -> $to (paths compiled into the programs)"
    elif [ "$(readlink -f "$v")" != "$(readlink -f "$to")" ]; then
      echo "note: $v exists here and is not the package's $k folder; programs that read it see this host's"
    fi
  done < "$1/paths"
}
link_paths "$pkg"; [ -n "$base" ] && link_paths "$base"
trees=(new); [ -n "$base" ] && trees+=(base)
tree() { [ "$1" = base ] && echo "$base/tree" || echo "$pkg/tree"; }
libs() { echo "$(tree "$1")/devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; }
log() { echo "== $* ($(date -u +%T))"; }
skip() { echo "SKIP $1: $2"; }
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
mpirun_() { timeout "$1" mpirun "${@:2}"; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2); else print "nan"}'; }

sec_info() {
  log info
  { date -u; nvidia-smi -L 2>&1; echo "cores $(nproc)"; uname -r
    mpirun --version 2>&1 | head -1; ucx_info -v 2>/dev/null | head -1 || echo "ucx_info: not found"
    command -v compute-sanitizer /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1
    python3 -c 'import cmake; print("cmake (Python package)", cmake.__version__)' 2>/dev/null || command -v cmake || echo "cmake: none"
    echo "-- package"; cat "$pkg/MANIFEST"; [ -n "$base" ] && { echo "-- baseline"; cat "$base/MANIFEST"; }
  } 2>&1 | tee "$out/info.txt"
}

sec_tests() {
  log tests
  [ -f "$pkg/tests.json" ] || { skip tests "the package holds no test list (--tools-only)"; return; }
  python3 "$pkg/runtests.py" "$pkg" "$out" -j "$jobs" $gpu_only --labels-exclude "$tlabels" \
    ${tregex:+--regex "$tregex"} ${texclude:+--exclude "$texclude"}
  echo "tests rc=$?"
}

# compute-sanitizer on program P as its tests run it: a gtest suite whole
# (without the million-item cases), anything else with its first test's command.
sec_sanitize() {
  log sanitize
  local cs; cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  [ -n "$cs" ] || { skip sanitize "no compute-sanitizer on this host"; return; }
  [ -f "$pkg/sanitize.json" ] || { skip sanitize "the package has no program list (--tools-only)"; return; }
  python3 - "$pkg" "$cs" "$out" "$stimeout" "$sregex" <<'PY'
import json, os, re, subprocess, sys, time
pkg, cs, out, limit, rx = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]
progs = json.load(open(os.path.join(pkg, 'sanitize.json')))['programs']
sub = lambda s: s.replace('@BUILD@', os.path.join(pkg, 'tree')).replace('@SRC@', os.path.join(pkg, 'src'))
env = dict(os.environ, ZAP_ED25519_GPU_LARGE_N='4096')
env['LD_LIBRARY_PATH'] = os.path.join(pkg, 'tree', 'devlibs') + ':' + env.get('LD_LIBRARY_PATH', '')
log = open(os.path.join(out, 'sanitize.log'), 'w')
bad = 0
for p in progs:
    path = sub(p['program'])
    if rx and not re.search(rx, path):
        continue
    if p.get('skip'):
        print(f'SKIP sanitize {os.path.basename(path)}: {p["skip"]}', flush=True)
        continue
    e = dict(env)
    for kv in p.get('environment', []):
        k, _, v = sub(kv).partition('=')
        e[k] = v
    cmd = [sub(x) for x in p['command']]
    i = cmd.index(path)
    cmd[i:i] = [cs, '--tool', 'memcheck', '--error-exitcode', '9']
    t0 = time.time()
    try:
        r = subprocess.run(cmd, env=e, cwd=sub(p.get('working_directory', '@BUILD@')), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=limit, start_new_session=True)
        txt, rc = r.stdout.decode(errors='replace'), r.returncode
    except subprocess.TimeoutExpired as x:
        txt, rc = (x.stdout or b'').decode(errors='replace'), 'timeout'
    log.write(f'==== {path} rc={rc}\n$ {" ".join(cmd)}\n{txt}\n')
    # compute-sanitizer's own exit when the program ended without a CUDA
    # call (a host-only path, such as a fuzz replay that never reaches the
    # GPU): nothing for memcheck to check. The program's own status, which
    # that hides, comes from a run without the sanitizer.
    if rc == 255 and 'terminated before first instrumented API call' in txt:
        plain = cmd[:i] + cmd[i + 5:]  # the five sanitizer words inserted above
        try:
            own = subprocess.run(plain, env=e, cwd=sub(p.get('working_directory', '@BUILD@')), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, timeout=limit, start_new_session=True).returncode
        except subprocess.TimeoutExpired:
            own = 'timeout'
        if own == 0:
            print(f'SKIP sanitize {os.path.basename(path)}: it made no CUDA call (nothing for memcheck); '
                  f'without the sanitizer it passes', flush=True)
            continue
        txt += f'\n(without the sanitizer: rc={own})\n'
        rc = own
    errs = re.findall(r'ERROR SUMMARY: (\d+) error', txt)
    nerr = sum(int(x) for x in errs)
    ok = rc == 0 and nerr == 0
    bad += not ok
    print(f'sanitize {"ok  " if ok else "FAIL"} {os.path.basename(path)}: rc={rc}, {nerr} errors '
          f'({len(errs)} summaries), {time.time() - t0:.0f} s', flush=True)
print(f'sanitize: {bad} program(s) with errors or failures')
PY
}

# One zap-perf p2p latency run of tree $1: prints "zap raw ratio" of the 8 B row.
p2p_once() {
  mpirun_ 90 "${margs[@]}" -np 2 -x UCX_TLS=self,sm,cma -x LD_LIBRARY_PATH="$(libs "$1")" "$(tree "$1")/tools/zap-perf/zap-perf" \
    p2p --mem host --max "$p2p_max" --reps 61 > "$out/p2p_$1_$2.txt" 2>&1
  awk '$1 == "host" && $2 == 8 {print $4, $5, $6}' "$out/p2p_$1_$2.txt"
}

sec_p2p() {
  log "p2p: 8 B latency, zap against raw UCP, $p2p_runs runs${base:+, new and baseline alternating}"
  [ -x "$(tree new)/tools/zap-perf/zap-perf" ] || { skip p2p "no zap-perf in the package"; return; }
  for t in "${trees[@]}"; do : > "$out/p2p_ratios_$t.txt"; done
  for r in $(seq 1 "$p2p_runs"); do
    local order=("${trees[@]}"); ((r % 2 == 0)) && [ -n "$base" ] && order=(base new)
    for t in "${order[@]}"; do
      read -r z w x <<<"$(p2p_once "$t" "$r")"
      [ -n "${x:-}" ] || { echo "p2p run $r $t: no 8 B row (see p2p_${t}_$r.txt)"; tail -3 "$out/p2p_${t}_$r.txt"; continue; }
      echo "$x" >> "$out/p2p_ratios_$t.txt"
      echo "p2p run $r $t: 8 B zap ${z} us raw ${w} us ratio $x"
    done
  done
  for t in "${trees[@]}"; do
    echo "p2p $t: median ratio $(median < "$out/p2p_ratios_$t.txt") over $(wc -l < "$out/p2p_ratios_$t.txt") runs;" \
      "above 1.05: $(awk '$1 > 1.05' "$out/p2p_ratios_$t.txt" | wc -l); above 1.1: $(awk '$1 > 1.1' "$out/p2p_ratios_$t.txt" | wc -l)"
  done
  if [ -n "$p2p_bw" ]; then
    for t in "${trees[@]}"; do
      log "p2p bandwidth $t"
      mpirun_ 280 "${margs[@]}" -np 2 -x UCX_TLS=self,sm,cma -x LD_LIBRARY_PATH="$(libs "$t")" \
        "$(tree "$t")/tools/zap-perf/zap-perf" p2p --mem "$p2p_mem" ${p2p_staging:+--staging "$p2p_staging"} --max 64M \
        --csv "$out/p2p_bw_$t.csv" > "$out/p2p_bw_$t.txt" 2>&1; echo "rc=$?"
      grep -E "^(host|pool|managed)" "$out/p2p_bw_$t.txt" | awk 'NR % 3 == 1'
    done
  fi
}

sec_coll() {
  [ -x "$(tree new)/tools/zap-perf/zap-perf" ] || { skip coll "no zap-perf in the package"; return; }
  for np in $ranks; do
    for mem in ${coll_mem//,/ }; do
      if [ "$mem" != host ] && [ "$ngpu" -lt 1 ]; then skip "coll $mem" "no GPU"; continue; fi
      for r in $(seq 1 "$coll_runs"); do
        for alg in $coll_algs; do
          for t in "${trees[@]}"; do
            log "coll $t: $np ranks, $mem, alg $alg, run $r"
            local f="$out/coll_${t}_np${np}_${mem}_${alg}_$r" a=()
            [ "$alg" = auto ] || a=(--alg "$alg")
            mpirun_ 280 "${margs[@]}" -np "$np" -x UCX_TLS=self,sm,cma -x LD_LIBRARY_PATH="$(libs "$t")" \
              "$(tree "$t")/tools/zap-perf/zap-perf" coll ${coll_ops:+--op "$coll_ops"} --mem "$mem" --min "$coll_min" \
              --max "$coll_max" --reps "$coll_reps" "${a[@]}" $coll_args --csv "$f.csv" > "$f.txt" 2>&1
            echo "rc=$?"; grep -vE "^#" "$f.txt" | cut -c1-140 | head -40
          done
        done
      done
    done
  done
}

sec_verify() {
  [ "$ngpu" -ge 1 ] || { skip verify "no GPU"; return; }
  local zv0; zv0="$(tree new)/tools/zap-verify/zap-verify"
  [ -x "$zv0" ] || { skip verify "no zap-verify in the package"; return; }
  local batch=/tmp/zap-gpu-run-$v_items.svb
  log "verify: generating $v_items items"
  LD_LIBRARY_PATH="$(libs new)" timeout 200 "$zv0" gen --items "$v_items" --keys 65536 --threads "$(nproc)" \
    --out "$batch" --expect "$batch.bits" > "$out/verify_gen.txt" 2>&1 || { echo "gen failed"; tail -3 "$out/verify_gen.txt"; return; }
  for backend in $v_backends; do
    for np in 1 $( [ "$ngpu" -ge 2 ] && echo 2 ); do
      for t in "${trees[@]}"; do
        log "verify $t: $np rank(s), $backend"
        mpirun_ 200 -np "$np" -x ZAP_POOL_BACKEND="$backend" -x LD_LIBRARY_PATH="$(libs "$t")" \
          "$(tree "$t")/tools/zap-verify/zap-verify" run --batch "$batch" --expect "$batch.bits" --verifier gpu \
          > "$out/verify_${t}_${backend}_np$np.txt" 2>&1; echo "rc=$?"
        grep -E "items/s|result|verify  |distribute" "$out/verify_${t}_${backend}_np$np.txt" | head -6
      done
    done
  done
  [ "$ngpu" -ge 2 ] || skip "verify on 2 GPUs" "this host has $ngpu"
}

sec_pool() {
  for t in "${trees[@]}"; do
    local b; b="$(tree "$t")/tools/zap-pool-bench/zap-pool-bench"
    [ -x "$b" ] || { skip "pool $t" "no zap-pool-bench in the package"; continue; }
    log "pool bench $t"
    LD_LIBRARY_PATH="$(libs "$t")" timeout 120 "$b" > "$out/pool_$t.txt" 2>&1; echo "rc=$?"; tail -12 "$out/pool_$t.txt"
  done
}

# The packaged MPI suites at more ranks than ctest uses: each test named
# mpi.<suite>.np2.shm, its command with -np N.
sec_suites() {
  [ -f "$pkg/tests.json" ] || { skip suites "the package holds no test list (--tools-only)"; return; }
  for np in $suite_ranks; do
    python3 - "$pkg" "$np" <<'PY' | while IFS=$'\t' read -r name envs cmd; do
import json, os, sys
pkg, np = sys.argv[1], sys.argv[2]
for t in json.load(open(os.path.join(pkg, 'tests.json')))['tests']:
    n = t['name']
    if n.startswith('mpi.') and n.endswith('.np2.shm') and 'long' not in t['labels']:
        c = list(t['command']); c[c.index('-np') + 1] = np
        sub = lambda x: x.replace('@BUILD@', os.path.join(pkg, 'tree')).replace('@SRC@', os.path.join(pkg, 'src'))
        print(n.replace('.np2.', f'.np{np}.'), ' '.join(sub(e) for e in t['environment']), ' '.join(sub(x) for x in c), sep='\t')
PY
      log "suite $name"
      env $envs LD_LIBRARY_PATH="$(libs new)" timeout 300 $cmd > "$out/$name.txt" 2>&1
      echo "$name rc=$?"; grep -E "PASSED|FAILED|SKIPPED" "$out/$name.txt" | tail -6
    done
  done
}

sec_scaling() {
  [ "$ngpu" -ge 1 ] || { skip scaling "no GPU"; return; }
  local s="$pkg/src/tools/zap-verify/gpu-scaling.sh"
  [ -f "$s" ] || { skip scaling "no gpu-scaling.sh in the package"; return; }
  [ -f scripts/mpirun-env.sh ] || { skip scaling "run from the repository root (the script sources scripts/mpirun-env.sh)"; return; }
  log "zap-verify scaling"
  timeout 500 bash "$s" "$pkg/tree" "$out/scaling" "$scaling_reps" 2>&1 | tail -15
}

# Issue 21's measurement: everything the GPU-resident collectives need in one
# section (see the header), in parts that fit one device call together
# (scripts/gpu/pack-gpucoll.sh makes a package holding just these). NVLink
# multicast stays off (KINDS.md): NCCL runs with NCCL_NVLS_ENABLE=0 and zap
# never calls cuMulticastCreate.
sec_gpucoll() {
  [ "$ngpu" -ge 1 ] || { skip gpucoll "no GPU"; return; }
  export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
  local tr; tr=$(tree new)
  local L; L=$(libs new)
  if ! ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2'; then
    local nd; nd=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
    [ -n "$nd" ] && [ -e "$nd/libnccl.so.2" ] && L="$L:$nd" && echo "NCCL from $nd"
  fi
  local cs; cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  local tg="$tr/tests/coll/test_coll_gpu" tp="$tr/tests/coll/test_coll_gpu_protocol" tm="$tr/mpi_tests/coll/mpi_coll_gpu"
  local menv=(--mca pml ob1 --mca btl self,vader -x UCX_TLS=self,sm -x ZAP_TIMEOUT=60 -x LD_LIBRARY_PATH="$L"
              -x NCCL_NVLS_ENABLE=0)
  local sum='^\[ +(OK|FAILED|SKIPPED) +\]|^\[  (PASSED|FAILED) |Failure|reallocations'
  if [[ " $gc_parts " == *" tests "* ]]; then
    log "gpucoll: the GPUs and their links"
    { nvidia-smi -L; nvidia-smi topo -m; } 2>&1 | tee "$out/gpucoll_topo.txt"
    log "gpucoll: test_coll_gpu (thread ranks of one process on its GPU)"
    LD_LIBRARY_PATH="$L" timeout 120 "$tg" > "$out/gpucoll_test_coll_gpu.txt" 2>&1; echo "test_coll_gpu rc=$?"
    grep -E "$sum" "$out/gpucoll_test_coll_gpu.txt" | head -30
    LD_LIBRARY_PATH="$L" timeout 120 "$tp" > "$out/gpucoll_protocol.txt" 2>&1; echo "test_coll_gpu_protocol rc=$?"
    grep -E '^\[  (PASSED|FAILED) ' "$out/gpucoll_protocol.txt"
    for np in $gc_ranks; do
      log "gpucoll: mpi_coll_gpu, $np ranks (one GPU each, as far as there are GPUs)"
      mpirun_ 150 "${margs[@]}" -np "$np" "${menv[@]}" "$tm" > "$out/gpucoll_mpi_np$np.txt" 2>&1
      echo "mpi_coll_gpu np$np rc=$?"; grep -E "$sum" "$out/gpucoll_mpi_np$np.txt" | head -20
    done
    if [ -x "$tr/mpi_tests/coll/gpu_component_check" ] && [ -e "$tr/plugin/ompi/mca_coll_zap.so" ]; then
      log "gpucoll: MPI_Allreduce / MPI_Bcast on device pointers through the Open MPI component"
      LD_LIBRARY_PATH="$L" ZAP_TEST_MPIEXEC=mpirun ZAP_TEST_OMPI_INFO=ompi_info ZAP_TEST_TIMEOUT=120 \
        sh "$pkg/src/mpi_tests/coll/gpu_component_check.sh" "$tr/plugin/ompi" "$tr/mpi_tests/coll/gpu_component_check" 2 \
        > "$out/gpucoll_component.txt" 2>&1; echo "component rc=$?"
      grep -E "^(PASS|FAIL|SKIP)|stats rank 0: (allreduce|bcast)|GPU path ready" "$out/gpucoll_component.txt" | head -8
    else
      skip "gpucoll component" "no Open MPI component or check program in the package"
    fi
  fi
  if [[ " $gc_parts " == *" sanitize "* ]]; then
    if [ -n "$cs" ]; then
      log "gpucoll: compute-sanitizer (memcheck; racecheck and synccheck on the kernels' cases)"
      local f='CudaReduce.*:GpuStage.AllreduceEveryType*:GpuStage.BcastFromEveryRoot:GpuStage.SeveralOutstanding*'
      LD_LIBRARY_PATH="$L" ZAP_TIMEOUT=60 timeout 200 "$cs" --tool memcheck --error-exitcode 9 "$tg" --gtest_filter="$f" \
        > "$out/gpucoll_memcheck.txt" 2>&1
      echo "memcheck test_coll_gpu rc=$? $(grep -m1 'ERROR SUMMARY' "$out/gpucoll_memcheck.txt")"
      mpirun_ 150 "${margs[@]}" -np 2 "${menv[@]}" "$cs" --tool memcheck --error-exitcode 9 "$tm" \
        --gtest_filter='*SizesEightBytes*:*BufferReuse*:*Bcast*:*Managed*' > "$out/gpucoll_memcheck_mpi.txt" 2>&1
      echo "memcheck mpi_coll_gpu np2 rc=$? $(grep 'ERROR SUMMARY' "$out/gpucoll_memcheck_mpi.txt" | sort | uniq -c | tr '\n' ' ')"
      for tool in racecheck synccheck; do
        LD_LIBRARY_PATH="$L" ZAP_TIMEOUT=60 timeout 100 "$cs" --tool "$tool" --error-exitcode 9 "$tg" \
          --gtest_filter='GpuStage.AllreduceRankCountsSizesAndBuffers:GpuStage.BcastFromEveryRoot' \
          > "$out/gpucoll_$tool.txt" 2>&1
        echo "$tool test_coll_gpu rc=$? $(grep -m1 'ERROR SUMMARY' "$out/gpucoll_$tool.txt")"
      done
    else
      skip "gpucoll sanitizer" "no compute-sanitizer on this host"
    fi
  fi
  [[ " $gc_parts " == *" sweep "* ]] || return 0
  local max=$gc_max; [ -n "$gc_quick" ] && max=4M
  for mem in device managed; do
    log "gpucoll: zap-perf coll --mem $mem, 2 ranks, against NCCL"
    mpirun_ 280 "${margs[@]}" -np 2 -x UCX_TLS=self,sm,cma -x LD_LIBRARY_PATH="$L" -x NCCL_NVLS_ENABLE=0 \
      "$tr/tools/zap-perf/zap-perf" coll --mem "$mem" --op allreduce,bcast --min 8 --max "$max" --reps "$gc_reps" \
      --no-mpi --csv "$out/gpucoll_$mem.csv" > "$out/gpucoll_$mem.txt" 2>&1; echo "zap-perf $mem rc=$?"
    grep -E "NCCL|rank" "$out/gpucoll_$mem.txt" | head -3
  done
  python3 - "$out" <<'PY' | tee "$out/gpucoll.md"
import csv, os, sys
out = sys.argv[1]
rows = []
for mem in ('device', 'managed'):
    p = os.path.join(out, f'gpucoll_{mem}.csv')
    if os.path.exists(p):
        rows += list(csv.DictReader(open(p)))
print('| op | mem | bytes | alg | zap busbw | NCCL busbw | busbw x | zap lat us | NCCL lat us | lat x | wrong | verdict |')
print('|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|')
bad = checked = 0
for r in rows:
    b = int(r['bytes']); bx = float(r.get('busbw_x_nccl') or 0); lx = float(r.get('lat_x_nccl') or 0)
    wrong = int(r['zap_wrong']); v = []
    if wrong: v.append('WRONG')
    if float(r.get('nccl_busbw') or 0) <= 0: v.append('no NCCL')
    elif (16 << 20) <= b <= (1 << 30): v.append('bw ok' if bx >= 0.9 else 'BW LOW'); checked += 1
    if 'no NCCL' not in v and b <= (256 << 10): v.append('lat ok' if 0 < lx <= 0.5 else 'LAT HIGH'); checked += 1
    bad += sum(x in ('WRONG', 'BW LOW', 'LAT HIGH') for x in v)
    print(f"| {r['op']} | {r['mem']} | {b} | {r['alg']} | {float(r['zap_busbw']):.1f} | {float(r['nccl_busbw']):.1f} | "
          f"{bx:.2f} | {float(r['zap_lat_avg']):.2f} | {float(r.get('nccl_lat_us') or 0):.2f} | {lx:.2f} | {wrong} | "
          f"{', '.join(v)} |")
print(f'\nacceptance: {checked} checks, {bad} not met' + ('' if rows else ' (no sweep results)'))
PY
}

for s in "${sections[@]}"; do
  case $s in
    info|tests|sanitize|p2p|coll|verify|pool|suites|scaling|gpucoll) "sec_$s" 2>&1 | tee -a "$out/run.log" ;;
    *) echo "run.sh: unknown section $s (info tests sanitize p2p coll verify pool suites scaling gpucoll)" | tee -a "$out/run.log" ;;
  esac
done
tar czf "$final/results.tgz" -C "$out" . 2>/dev/null
cp "$out/run.log" "$final/run.log"
log "done: $final/results.tgz, $final/run.log"
