#!/usr/bin/env bash
# Job time of `zap-verify run --verifier gpu` on 1 and 2 GPUs of one host
# (issue 7's scaling goal: 2 GPUs at least 1.8x one), measured in one call:
# one batch generated once, then REPS runs of each configuration, medians.
#
#   tools/zap-verify/gpu-scaling.sh BUILD_DIR OUT_DIR [REPS] [CONFIG...]
#
# A CONFIG is backend:binding[:segment-bytes], e.g. pinned:none, managed:core
# or pinned:none:all (binding: none = mpirun --bind-to none, core = Open MPI's
# default for two ranks, one core each). Default: pinned:none managed:none
# pinned:core. Run from the repository root; BUILD_DIR/devlibs (libsodium for
# hosts without it) is put on LD_LIBRARY_PATH. ZAP_SCALING_ITEMS (default
# 2^22) sets the batch size.
set -uo pipefail
build=${1:?build dir}; out=${2:?output dir}; reps=${3:-3}; shift $(($# < 3 ? $# : 3))
configs=("$@"); ((${#configs[@]})) || configs=(pinned:none managed:none pinned:core)
mkdir -p "$out"
. scripts/mpirun-env.sh
bt=$(cd "$build" && pwd)
[ -d "$bt/devlibs" ] && export LD_LIBRARY_PATH="$bt/devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
zv="$bt/tools/zap-verify/zap-verify"
items=${ZAP_SCALING_ITEMS:-4194304}
batch=/tmp/zap-scaling-$items.svb
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
{ date -u; nvidia-smi -L; nproc; git log -1 --format='commit %h %s' 2>/dev/null; } > "$out/machine.txt"
if [ ! -s "$batch" ]; then
  timeout 150 "$zv" gen --items "$items" --keys 65536 --threads "$(nproc)" --out "$batch" --expect "$batch.bits" \
    > "$out/gen.txt" 2>&1 || { echo "gen failed"; tail "$out/gen.txt"; exit 1; }
fi
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2); else print "nan"}'; }
printf '%-24s %3s %9s %9s %9s %8s %s\n' config gpus distribute verify job speedup "rank in-place s | items verified | verifier call s (medians)"
for cfg in "${configs[@]}"; do
  IFS=: read -r backend bind seg <<<"$cfg"
  opts=(); [ -n "${seg:-}" ] && opts=(--segment-bytes "$seg")
  bflag=(); [ "$bind" = none ] && bflag=(--bind-to none)
  base=""
  for np in 1 2; do
    [ "$np" -le "$ngpu" ] || continue
    name="${cfg//:/_}.np$np"; tsv="$out/$name.tsv"; f="$out/$name.run"
    : > "$tsv"
    for i in $(seq "$reps"); do
      ZAP_POOL_BACKEND=$backend timeout 60 mpirun -np "$np" "${bflag[@]}" -x ZAP_POOL_BACKEND -x LD_LIBRARY_PATH \
        "$zv" run --batch "$batch" --expect "$batch.bits" --verifier gpu "${opts[@]}" > "$f" 2>&1
      rc=$?
      cat "$f" >> "$out/$name.log"
      grep -q "result: OK" "$f" || { echo "$cfg np $np run $i: rc=$rc, not OK"; tail -5 "$f"; continue; }
      awk -v np="$np" '$1=="distribute"{d=$2} $1=="verify"{v=$2} $1=="job"{j=$2}
           $1 ~ /^[0-9]+$/ && $4 ~ /gpu|cpu/ {ip[$1]=$7; it[$1]=$3; vs[$1]=$5}
           END {printf "%s %s %s", d, v, j; for (r = 0; r < np; r++) printf " %s", ip[r];
                for (r = 0; r < np; r++) printf " %s", it[r];
                for (r = 0; r < np; r++) printf " %s", vs[r]; print ""}' "$f" \
        >> "$tsv"
    done
    rm -f "$f"
    d=$(cut -d' ' -f1 "$tsv" | median); v=$(cut -d' ' -f2 "$tsv" | median); j=$(cut -d' ' -f3 "$tsv" | median)
    ip=$(for r in $(seq 0 $((np - 1))); do cut -d' ' -f$((4 + r)) "$tsv" | median; done | tr '\n' ' ')
    it=$(for r in $(seq 0 $((np - 1))); do cut -d' ' -f$((4 + np + r)) "$tsv" | median; done | tr '\n' ' ')
    vs=$(for r in $(seq 0 $((np - 1))); do cut -d' ' -f$((4 + 2 * np + r)) "$tsv" | median; done | tr '\n' ' ')
    [ "$np" = 1 ] && base=$j
    sp=$(awk -v a="$base" -v b="$j" 'BEGIN {if (a > 0 && b > 0) printf "%.2fx", a / b; else print "-"}')
    printf '%-24s %3s %9s %9s %9s %8s %s| %s| %s\n' "$cfg" "$np" "$d" "$v" "$j" "$sp" "$ip" "$it" "$vs"
  done
done | tee "$out/summary.txt"
echo "each run (distribute verify job, in-place s, items and verifier-call s per rank): $out/*.tsv; outputs: $out/*.log"
