/* zap's MPI bootstrap goes through the profiling interface (PMPI_*) only, so
 * a layer that interposes MPI calls (a PMPI tool, or an interception library
 * that routes MPI collectives to zap) never re-enters itself from inside
 * zap. This program is such a layer: it defines the MPI functions zap's
 * bootstrap needs (and a few more), each counting the calls made while the
 * program is inside a zap call, then forwarding to PMPI. Definitions in the
 * executable win over libmpi's for every caller linked into it, zap's static
 * layers included. Inside zap: the UCX transport's create (MPI and
 * out-of-band forms share the worker code), a communicator, collectives, the
 * close, and zap_comm_create_mpi with its destroy. Any interposed call made
 * from inside zap fails the test, naming the function. Exit 0: none. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "zap/coll.h"
#include "zap/coll_mpi.h"
#include "zap/ucp.h"

static int g_inside;
static int g_calls;
static const char *g_first;

static void seen(const char *name)
{
    if (!g_inside)
        return;
    if (g_calls++ == 0)
        g_first = name;
}

int MPI_Allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm c)
{
    seen("MPI_Allgather");
    return PMPI_Allgather(sb, sc, st, rb, rc, rt, c);
}

int MPI_Allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc[], const int d[], MPI_Datatype rt,
                   MPI_Comm c)
{
    seen("MPI_Allgatherv");
    return PMPI_Allgatherv(sb, sc, st, rb, rc, d, rt, c);
}

int MPI_Allreduce(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    seen("MPI_Allreduce");
    return PMPI_Allreduce(sb, rb, n, t, op, c);
}

int MPI_Barrier(MPI_Comm c)
{
    seen("MPI_Barrier");
    return PMPI_Barrier(c);
}

int MPI_Ibarrier(MPI_Comm c, MPI_Request *r)
{
    seen("MPI_Ibarrier");
    return PMPI_Ibarrier(c, r);
}

int MPI_Test(MPI_Request *r, int *flag, MPI_Status *s)
{
    seen("MPI_Test");
    return PMPI_Test(r, flag, s);
}

int MPI_Comm_dup(MPI_Comm c, MPI_Comm *out)
{
    seen("MPI_Comm_dup");
    return PMPI_Comm_dup(c, out);
}

int MPI_Comm_free(MPI_Comm *c)
{
    seen("MPI_Comm_free");
    return PMPI_Comm_free(c);
}

int MPI_Comm_rank(MPI_Comm c, int *r)
{
    seen("MPI_Comm_rank");
    return PMPI_Comm_rank(c, r);
}

int MPI_Comm_size(MPI_Comm c, int *s)
{
    seen("MPI_Comm_size");
    return PMPI_Comm_size(c, s);
}

int MPI_Initialized(int *flag)
{
    seen("MPI_Initialized");
    return PMPI_Initialized(flag);
}

int MPI_Finalized(int *flag)
{
    seen("MPI_Finalized");
    return PMPI_Finalized(flag);
}

int MPI_Get_processor_name(char *name, int *len)
{
    seen("MPI_Get_processor_name");
    return PMPI_Get_processor_name(name, len);
}

static int check(int rank, const char *what, zap_status_t st)
{
    if (st == ZAP_OK)
        return 0;
    fprintf(stderr, "[rank %d] FAILED: %s: %s\n", rank, what, zap_status_string(st));
    return 1;
}

int main(int argc, char **argv)
{
    PMPI_Init(&argc, &argv);
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int bad = 0;
    uint64_t one = 1, sum = 0;

    g_inside = 1;
    zap_transport_t *t = NULL;
    zap_comm_t *comm = NULL, *mpicomm = NULL;
    bad |= check(rank, "zap_ucp_transport_create", zap_ucp_transport_create(MPI_COMM_WORLD, NULL, &t));
    if (!bad)
        bad |= check(rank, "zap_comm_create", zap_comm_create(t, &comm));
    if (!bad)
        bad |= check(rank, "zap_allreduce", zap_allreduce(comm, &one, &sum, 1, ZAP_DT_UINT64, ZAP_OP_SUM));
    if (!bad)
        bad |= check(rank, "zap_barrier", zap_barrier(comm));
    zap_comm_destroy(comm);
    zap_transport_close(t);
    if (!bad)
        bad |= check(rank, "zap_comm_create_mpi", zap_comm_create_mpi(MPI_COMM_WORLD, NULL, &mpicomm));
    if (!bad)
        bad |= check(rank, "zap_bcast", zap_bcast(mpicomm, &one, 1, ZAP_DT_UINT64, 0));
    zap_comm_destroy(mpicomm);
    g_inside = 0;

    int calls = g_calls, all_calls = 0, all_bad = 0;
    PMPI_Allreduce(&calls, &all_calls, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    PMPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (calls > 0)
        fprintf(stderr, "[rank %d] FAILED: zap made %d calls through interposed MPI functions, the first %s\n", rank,
                calls, g_first);
    else if (rank == 0 && !all_bad && all_calls == 0)
        printf("PASSED: zap's bootstrap called no interposed MPI function\n");
    PMPI_Finalize();
    return all_calls > 0 || all_bad ? 1 : 0;
}
