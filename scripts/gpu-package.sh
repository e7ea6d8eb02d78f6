#!/usr/bin/env bash
# Builds zap here and packs what a GPU host that cannot build it needs into
# one folder (a few tens of MiB): the test programs with their test list
# (tests.json: no cmake needed there), the tools, libzap, libsodium, the
# source files tests read, and the runner, scripts/gpu/run.sh. On the GPU host
# `bash PKG/run.sh [SECTION...]` runs the GPU tests, compute-sanitizer and the
# benchmarks (run.sh --help).
#
#   scripts/gpu-package.sh [--build DIR] [--out DIR] [--build-type TYPE]
#                          [--no-build] [--tools-only]
#
#   --build DIR       build tree (default build-gpu); configured and built here
#                     unless --no-build (then any existing tree, e.g. one of an
#                     older commit for a baseline: its own source is used)
#   --out DIR         the package (default .dev/gpu-pkg; replaced)
#   --build-type T    CMAKE_BUILD_TYPE of a new tree (default RelWithDebInfo)
#   --tools-only      only the tools and libraries (a small baseline for
#                     run.sh --baseline: p2p, coll, verify and pool)
#
# From a fresh clone: scripts/gpu-package.sh --out /work/main/.dev/NAME/pkg
# installs what is missing (scripts/setup-deps.sh), configures with CUDA,
# builds and packs. Programs are stripped of debug sections (device code stays).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=build-gpu; out=.dev/gpu-pkg; btype=RelWithDebInfo; nobuild=""; toolsonly=""
while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    --build-type) btype=$2; shift ;;
    --no-build) nobuild=1 ;;
    --tools-only) toolsonly=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed 's/^# \{0,1\}//;$d'; exit 0 ;;
    *) echo "gpu-package.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
cd "$repo"
if [ -z "$nobuild" ]; then
  scripts/setup-deps.sh
  [ -x /usr/local/cuda/bin/nvcc ] || { echo "gpu-package.sh: no /usr/local/cuda/bin/nvcc: a GPU package needs CUDA" >&2; exit 1; }
  cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE="$btype" -DBUILD_TESTING=ON -DZAP_CUDA=ON >/dev/null
  cmake --build "$build" -j "$(nproc)"
fi
build=$(cd "$build" && pwd)
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
[ -d "$src" ] || { echo "gpu-package.sh: the source of $build ($src) is gone" >&2; exit 1; }
grep -q 'ZAP_HAVE_CUDA_BUILD 1' "$build/generated/zap_build_info.h" 2>/dev/null ||
  echo "gpu-package.sh: warning: $build was configured without CUDA" >&2
rm -rf "$out"; mkdir -p "$out/tree/devlibs" "$out/src"
out=$(cd "$out" && pwd)

# The files: the tests' programs and what they name, the tools, the libraries.
if [ -z "$toolsonly" ]; then
  python3 "$repo/scripts/gpu/mktests.py" "$build" "$src" "$out"
  mv "$out/files.txt" "$out/.files"
else
  (cd "$build" && ls tools/*/zap-* cuda/ed25519/zap-ed25519-bench tests/faults/zap-fault-rank 2>/dev/null) > "$out/.files"
fi
(cd "$build" && ls tools/*/zap-* cuda/ed25519/zap-ed25519-bench libzap.so* plugin/ompi/mca_coll_zap.so \
  plugin/ompi/tests/coll_zap_check plugin/ompi/tests/coll_zap_fortran 2>/dev/null) >> "$out/.files"
sort -u "$out/.files" | while read -r f; do
  [ -e "$build/$f" ] || continue
  mkdir -p "$out/tree/$(dirname "$f")"
  cp -a "$build/$f" "$out/tree/$f"
  [ -L "$out/tree/$f" ] || ! file -b "$out/tree/$f" | grep -q ELF || strip --strip-debug "$out/tree/$f"
done
rm -f "$out/.files"
# Libraries the GPU host lacks: libsodium (the CPU verifier).
sodium=$(ldd "$build/tools/zap-verify/zap-verify" 2>/dev/null | awk '/libsodium/ {print $3}')
[ -n "$sodium" ] && cp -L "$sodium" "$out/tree/devlibs/"
# Source files tests read, and the runner itself (this checkout's, so an old
# tree packed as a baseline runs with the current one).
if [ -z "$toolsonly" ]; then
  (cd "$src" && tar cf - tests docs scripts tools/zap-verify/*.cmake tools/zap-verify/*.sh mpi_tests/*/*.sh \
    plugin/ompi/tests/*.sh 2>/dev/null) |
    tar xf - -C "$out/src"
fi
cp "$repo/scripts/gpu/run.sh" "$repo/scripts/gpu/runtests.py" "$out/"
# Test programs have the source and build paths compiled in (test data,
# vectors): run.sh links them to the package's folders on the GPU host.
printf 'src=%s\nbuild=%s\n' "$src" "$build" > "$out/paths"
{
  echo "commit $(git -C "$src" log -1 --format='%h %s' 2>/dev/null || echo unknown)"
  [ -n "$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null)" ] && echo "(with uncommitted changes)"
  echo "built in $build ($(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt")), packed $(date -u +%FT%TZ)"
  [ -n "$toolsonly" ] && echo "tools only"
  echo "devlibs: $(ls "$out/tree/devlibs" | tr '\n' ' ')"
} > "$out/MANIFEST"
size=$(du -sm "$out" | cut -f1)
echo "gpu-package.sh: $out, ${size} MiB"
((size <= 60)) || echo "gpu-package.sh: warning: over 60 MiB; the device call carries at most 64 MiB with the repository" >&2
