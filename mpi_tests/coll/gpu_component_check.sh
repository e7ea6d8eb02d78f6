#!/bin/sh
# gpu_component_check.sh COMPONENT_DIR PROGRAM [NP]: MPI_Allreduce and
# MPI_Bcast on CUDA device pointers through the Open MPI coll component
# (gpu_component_check.c says what the program checks). Passes when the
# program's results are right, the component took the calls (its statistics)
# and zap ran them on its GPU path (its log says the path is ready). Exit 77
# (skip) without a CUDA device. The test machine's Open MPI must be the one
# the component was built for (plugin/ompi/tests say how that is checked).
set -u
dir=$1
prog=$2
np=${3:-2}
mpirun=${ZAP_TEST_MPIEXEC:-mpirun}
info=${ZAP_TEST_OMPI_INFO:-ompi_info}
[ -f "$dir/mca_coll_zap.so" ] || { echo "FAIL: no mca_coll_zap.so in $dir"; exit 1; }
pkglibdir=$("$info" --path pkglibdir --parsable | sed 's/^path:pkglibdir://')
out=$(mktemp)
trap 'rm -f "$out"' EXIT
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout "${ZAP_TEST_TIMEOUT:-240}" env -u UCX_TLS \
    ZAP_LOG_LEVEL=info NCCL_NVLS_ENABLE=0 "$mpirun" --oversubscribe --bind-to none -np "$np" \
    --mca pml ob1 --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none \
    --mca mca_base_component_path "$dir:$pkglibdir" --mca coll_zap_priority 40 --mca coll_zap_stats 1 \
    "$prog" >"$out" 2>&1
rc=$?
grep -vE "^zap info: ucp|^zap info: coll: rank [0-9]+: (allreduce|bcast)" "$out" | head -40
[ $rc -eq 77 ] && { echo "SKIP: no CUDA device"; exit 77; }
[ $rc -eq 0 ] || { echo "FAIL: the program ended with $rc"; exit 1; }
grep -q "GPU path ready" "$out" || { echo "FAIL: zap's GPU path never became ready"; exit 1; }
grep -qE "coll:zap: stats rank 0: allreduce .*zap [1-9]" "$out" ||
    { echo "FAIL: the component's statistics show no allreduce taken by zap"; exit 1; }
echo "PASS"
