// The start and the end of the MPI programs over the UCX transport whose
// ranks leave without MPI_Finalize, since a peer exits or dies on purpose
// (peer-exit, failure-notice and first-contact tests).
#pragma once
#include <mpi.h>
#include <unistd.h>
#include <cstdio>
extern "C" {
#include "zap/ucp.h"
}
#include "log_sink.h"

namespace earlyexit {

// Prints what (on stdout for code 0, as FAILED on stderr otherwise) and ends
// the process at once, with code: no finalize, the peers may be gone.
[[noreturn]] inline void leave(int rank, int code, const char *what)
{
    if (code != 0)
        fprintf(stderr, "[rank %d] FAILED: %s\n", rank, what);
    else
        printf("[rank %d] %s\n", rank, what);
    fflush(stdout);
    fflush(stderr);
    _exit(code);
}

// MPI_Init; exit status 2 unless the world has nranks ranks; zap's log lines
// at level and above kept (log_sink.h); a UCX transport over MPI_COMM_WORLD in
// *t (MPI_Abort when it cannot be made). Returns this rank.
inline int start(int *argc, char ***argv, int nranks, zap_log_level_t level, zap_transport_t **t)
{
    MPI_Init(argc, argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != nranks) {
        if (rank == 0)
            fprintf(stderr, "run with %d ranks\n", nranks);
        MPI_Finalize();
        _exit(2);
    }
    logsink::capture(level);
    *t = nullptr;
    if (zap_ucp_transport_create(MPI_COMM_WORLD, nullptr, t) != ZAP_OK) {
        fprintf(stderr, "[rank %d] FAILED: transport create\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return rank;
}

} // namespace earlyexit
