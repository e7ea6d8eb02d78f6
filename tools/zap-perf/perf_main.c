/* zap-perf: benchmarks of zap against the stack beneath it, one mode per file.
 *
 *   mpirun -np 2 zap-perf p2p [options]     point-to-point (perf_p2p.c)
 *   mpirun -np N zap-perf coll [options]    collectives (perf_coll.c, when built)
 *   mpirun -np N zap-perf comm [--reps R]   communicator creation (perf_comm.c, when built)
 *   mpirun -np N zap-perf mpi [options]     MPI collectives through MPI, Open MPI against the
 *                                           zap coll component (perf_mpi.c)
 *   mpirun -np N zap-perf first [options]   each of the first calls of one MPI collective (perf_first.c)
 *   zap-perf copy [options]                 zap_copy against memcpy (perf_copy.c)
 *
 * The first argument picks the mode; the mode parses the rest. MPI is
 * initialised here, once, for every mode. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "perf_common.h"

int perf_mpi_main(int argc, char **argv);
int perf_copy_main(int argc, char **argv);
int perf_first_main(int argc, char **argv);

typedef struct {
    const char *name;
    perf_mode_fn fn;
    const char *help;
} perf_mode_t;

static const perf_mode_t modes[] = {
    {"p2p", perf_p2p_main, "UCX point-to-point latency and bandwidth, zap against raw UCP"},
#ifdef ZAP_PERF_HAVE_COLL
    {"coll", perf_coll_main, "collectives"},
    {"comm", perf_comm_main, "communicator creation, shared-memory segment on and off"},
#endif
    {"mpi", perf_mpi_main, "MPI collectives through MPI: Open MPI's choice against the zap coll component"},
    {"first", perf_first_main, "each of a process's first calls of one MPI collective, with page faults"},
    {"copy", perf_copy_main, "the collectives' byte copy against memcpy (one process)"},
};

static void usage(void)
{
    fprintf(stderr, "usage: mpirun -np N zap-perf <mode> [options]   (<mode> --help for its options)\nmodes:\n");
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        fprintf(stderr, "  %-6s %s\n", modes[i].name, modes[i].help);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, rc = 2;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const perf_mode_t *m = NULL;
    for (size_t i = 0; argc > 1 && i < sizeof(modes) / sizeof(modes[0]); i++)
        if (strcmp(argv[1], modes[i].name) == 0)
            m = &modes[i];
    if (m == NULL) {
        if (rank == 0)
            usage();
    } else {
        rc = m->fn(argc - 1, argv + 1);
    }
    MPI_Finalize();
    return rc;
}
