#!/bin/bash
# Packs what scripts/cluster-bench.sh needs on a machine that cannot build
# zap (the GPU host: Ubuntu 24.04, Open MPI 4.1.6, UCX 1.16, perhaps no
# iproute2) into one folder: the scripts at their places in the tree
# (scripts/, tests/faults/), bin/zap-perf and bin/zap-verify from a build
# made here, bin/lib/libsodium, and bin/tools/ip and bin/tools/tc, each a
# wrapper that runs this machine's binary with its own libraries through the
# loader's --library-path (for those two processes only: what they start,
# and everything else, keeps the host's libraries).
#
#   scripts/cluster-bench-bundle.sh [--build DIR] [--out DIR]
#
# --build: a configured and built tree (default build: zap-perf and
# zap-verify must be in it); --out: the folder (default .dev/h6; replaced).
# Then, on the GPU host, from the repository root, in one call:
#   bash OUT/scripts/cluster-bench.sh --bin OUT/bin --clusters 2x8,4x4 \
#        --rates 1gbit,5gbit --max-iters 40 --out $OUT
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=build out=.dev/h6
while (($#)); do
    case $1 in
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed 's/^# \{0,1\}//;$d'; exit 0 ;;
    *) echo "cluster-bench-bundle.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
cd "$repo"
for f in tools/zap-perf/zap-perf tools/zap-verify/zap-verify; do
    [ -x "$build/$f" ] || { echo "cluster-bench-bundle.sh: $build/$f not built" >&2; exit 1; }
done
rm -rf "$out"
mkdir -p "$out/scripts" "$out/tests/faults" "$out/bin/lib" "$out/bin/tools/lib"
cp scripts/cluster-bench.sh "$out/scripts/"
cp tests/faults/netns.sh tests/faults/ns-agent.sh "$out/tests/faults/"
for f in tools/zap-perf/zap-perf tools/zap-verify/zap-verify; do
    strip --strip-debug -o "$out/bin/$(basename $f)" "$build/$f"
done
# libsodium (the GPU host has none); the rest of zap's libraries are there.
cp -L "$(ldd "$build/tools/zap-verify/zap-verify" | awk '/libsodium/ {print $3}')" "$out/bin/lib/"
# ip and tc with the libraries they need beyond libc, behind wrappers.
for t in ip tc; do
    bin=$(command -v $t)
    cp -L "$bin" "$out/bin/tools/lib/$t.bin"
    ldd "$bin" | awk '$3 ~ /^\// && $1 !~ /^(libc|libm|libdl|libpthread|librt)\.so/ {print $3}' |
        while read -r l; do cp -L "$l" "$out/bin/tools/lib/"; done
    # The loader's --library-path holds for this process only: what ip
    # runs (ip netns exec ...) keeps the host's libraries.
    cat > "$out/bin/tools/$t" <<EOF
#!/bin/sh
here=\$(cd "\$(dirname "\$0")" && pwd)
exec /lib64/ld-linux-x86-64.so.2 --library-path "\$here/lib" "\$here/lib/$t.bin" "\$@"
EOF
    chmod +x "$out/bin/tools/$t"
done
du -sh "$out"
