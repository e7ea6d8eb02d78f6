#!/usr/bin/env bash
# Packs what run.sh's gpucoll section needs (the GPU-resident collectives'
# suites, compute-sanitizer targets and the sweep against NCCL; issue 21) into
# one small folder: run.sh, the test programs of the path, zap-perf, the Open
# MPI coll component and the program that checks it on device pointers. A
# dozen MiB, well inside what a device call carries (the whole GPU package of
# scripts/gpu-package.sh is larger).
#
#   scripts/gpu/pack-gpucoll.sh [--build DIR] [--out DIR] [--no-build]
#
#   --build DIR   CUDA build tree (default build-gpu; configured and built here
#                 unless --no-build)
#   --out DIR     the folder (default .dev/gpucoll; replaced)
#
# Then, on a machine with two or more GPUs, from the repository root:
#   bash DIR/run.sh info gpucoll                      (everything, < 10 min)
# or in two calls: --gpucoll-parts "tests sanitize", then --gpucoll-parts sweep.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=build-gpu; out=.dev/gpucoll; nobuild=""
while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    --no-build) nobuild=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed 's/^# \{0,1\}//;$d'; exit 0 ;;
    *) echo "pack-gpucoll.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
cd "$repo"
if [ -z "$nobuild" ]; then
  [ -x /usr/local/cuda/bin/nvcc ] || { echo "pack-gpucoll.sh: no /usr/local/cuda/bin/nvcc" >&2; exit 1; }
  cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON -DZAP_CUDA=ON >/dev/null
  cmake --build "$build" -j "$(nproc)" --target test_coll_gpu test_coll_gpu_protocol mpi_coll_gpu zap-perf \
    $(grep -q '^ZAP_OMPI_INTERNAL_INCLUDE:PATH=/' "$build/CMakeCache.txt" && echo mca_coll_zap gpu_component_check)
fi
build=$(cd "$build" && pwd)
rm -rf "$out"; mkdir -p "$out/tree" "$out/src/mpi_tests/coll"
out=$(cd "$out" && pwd)
for f in tests/coll/test_coll_gpu tests/coll/test_coll_gpu_protocol mpi_tests/coll/mpi_coll_gpu \
         mpi_tests/coll/gpu_component_check tools/zap-perf/zap-perf plugin/ompi/mca_coll_zap.so; do
  [ -e "$build/$f" ] || { echo "pack-gpucoll.sh: note: no $f in $build"; continue; }
  mkdir -p "$out/tree/$(dirname "$f")"
  cp "$build/$f" "$out/tree/$f"
  strip --strip-debug "$out/tree/$f"
done
mkdir -p "$out/tree/devlibs"
cp scripts/gpu/run.sh "$out/"
cp mpi_tests/coll/gpu_component_check.sh "$out/src/mpi_tests/coll/"
{
  echo "commit $(git log -1 --format='%h %s' 2>/dev/null || echo unknown)"
  [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && echo "(with uncommitted changes)"
  echo "built in $build, packed $(date -u +%FT%TZ) for run.sh gpucoll"
} > "$out/MANIFEST"
echo "pack-gpucoll.sh: $out, $(du -sm "$out" | cut -f1) MiB"
