#!/bin/bash
# MPICH's collective tests (test/mpi/coll of an MPICH source tree), built
# against this machine's Open MPI and run through zap's Open MPI component
# with every window open, so that zap takes every call it can:
#
#   scripts/mpich-coll-suite.sh MPICH_SRC [BUILD [NPMAX]]
#
# MPICH_SRC: an MPICH checkout (only test/mpi is read). BUILD: zap's build
# tree (default build), whose plugin/ompi holds mca_coll_zap.so. NPMAX: the
# most ranks a test runs with (default 10, every listed count; a count above
# it is cut to it, and tests that need more then fail saying so). Tests that need MPICH's dtpools or that do not build against
# Open MPI are left out and listed. One line per failing entry of
# coll/testlist.in, then a summary; exit 0 when none failed. Run as root on
# dev, with OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1. MPI
# functions removed in MPI-3 are renamed in a copy of the sources; nothing is
# written into MPICH_SRC. docs/mpi.md, "Tests", has the last result.
set -u
SRC=${1:?usage: mpich-coll-suite.sh MPICH_SRC [BUILD [NPMAX]]}
BUILD=$(cd "${2:-build}" && pwd) NPMAX=${3:-10}
[ -d "$SRC/test/mpi/coll" ] || { echo "no test/mpi/coll under $SRC" >&2; exit 2; }
PKG=$(ompi_info --path pkglibdir --parsable | cut -d: -f3)
W=$(mktemp -d /tmp/mpich-coll.XXXXXX)
trap 'rm -rf "$W"' EXIT
cp -r "$SRC/test/mpi/coll" "$SRC/test/mpi/util" "$SRC/test/mpi/include" "$W/"
# What MPICH's configure would write for a Linux host and Open MPI.
printf '#define %s 1\n' HAVE_STDARG_H HAVE_STRING_H HAVE_UNISTD_H HAVE_SYS_TIME_H HAVE_SYS_RESOURCE_H \
    HAVE_GETRUSAGE HAVE_MPI_WIN_CREATE HAVE_MPI_INIT_THREAD HAVE_LONG_DOUBLE HAVE_LONG_LONG HAVE_STDINT_H \
    HAVE_STDLIB_H > "$W/include/mpitestconf.h"
echo '#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX' >> "$W/include/mpitestconf.h"
: > "$W/include/mtest_mpix.h"
mkdir -p "$W/bin"
for f in mtest mtest_common dtypes mtest_thread run_mpitests; do
    mpicc -c -O1 -w -I"$W/include" "$W/util/$f.c" -o "$W/bin/$f.o" || exit 2
done
cd "$W/coll" || exit 2
sed -i 's/MPI_Errhandler_set\b/MPI_Comm_set_errhandler/g; s/MPI_Type_struct\b/MPI_Type_create_struct/g; s/MPI_Address\b/MPI_Get_address/g' ./*.c
left=""
for f in *.c; do
    n=${f%.c}
    case $n in *_gpu | p_*) continue ;; esac # GPU builds; MPI-4 persistent collectives
    if grep -q mtest_dtp.h "$f"; then left="$left $n"; continue; fi
    main=$W/bin/run_mpitests.o
    grep -q "int main" "$f" && main=""
    mpicc -O1 -w -I"$W/include" "$f" "$W"/bin/{mtest,mtest_common,dtypes,mtest_thread}.o $main -o "$W/bin/$n" -lm \
        -lpthread 2>/dev/null || left="$left $n"
done
echo "not built:$left"
mca=(--mca mca_base_component_path "$BUILD/plugin/ompi:$PKG" --mca coll_zap_priority 40 --mca coll_zap_min_comm_size 2
     --mca coll_zap_barrier 1 --mca coll_zap_scatterv 1)
for c in allgather allgatherv allreduce alltoall bcast exscan gather reduce reduce_scatter reduce_scatter_block scan scatter; do
    mca+=(--mca "coll_zap_${c}_min_bytes" 0)
done
pass=0 fail=0
while read -r name np rest; do
    case $name in '' | '#'*) continue ;; esac
    [ -x "$W/bin/$name" ] || continue
    args=$(echo "$rest" | grep -o 'arg=[^ ]*' | sed 's/arg=//' | tr '\n' ' ')
    [ "$np" -gt "$NPMAX" ] && np=$NPMAX
    # shellcheck disable=SC2086
    out=$(timeout 120 mpirun --oversubscribe -np "$np" "${mca[@]}" "$W/bin/$name" $args < /dev/null 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && echo "$out" | grep -q "No Errors"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL $name np=$np $args(rc $rc): $(echo "$out" | grep -v '^\s*$' | head -3 | tr '\n' '|' | cut -c1-300)"
    fi
done < "$W/coll/testlist.in"
echo "summary: $pass passed, $fail failed (at most $NPMAX ranks, every window open)"
[ $fail -eq 0 ]
