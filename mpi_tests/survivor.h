// What the kill tests (test_coll_kill.cc, test_coll_blame.cc) share: each
// is its own main under mpirun, a rank dies on purpose, and each survivor
// prints "[rank R] PASSED: ..." or "[rank R] FAILED: ..." and leaves with
// _exit (a peer is gone: no close, no MPI_Finalize), which ctest's regular
// expressions judge, since mpirun's exit status reports the death.
#ifndef ZAP_MPI_TESTS_SURVIVOR_H
#define ZAP_MPI_TESTS_SURVIVOR_H
#include <mpi.h>
#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <string>
extern "C" {
#include "zap/coll.h"
#include "zap/ucp.h"
}
#include "log_sink.h"

namespace survivor {
[[noreturn]] inline void leave(int rank, bool ok, const std::string &what)
{
    printf("[rank %d] %s: %s\n", rank, ok ? "PASSED" : "FAILED", what.c_str());
    fflush(stdout);
    _exit(ok ? 0 : 1);
}

// MPI_Init on exactly want ranks, errors captured from here on, a UCX
// transport and a communicator over MPI_COMM_WORLD, and one allreduce that
// every rank must pass. Leaves (FAILED) on any of those going wrong.
inline void start(int *argc, char ***argv, int want, int *rank_p, zap_transport_t **t_p, zap_comm_t **c_p)
{
    MPI_Init(argc, argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != want)
        leave(rank, false, "run with " + std::to_string(want) + " ranks");
    logsink::capture(ZAP_LOG_ERROR);
    if (zap_ucp_transport_create(MPI_COMM_WORLD, nullptr, t_p) != ZAP_OK || zap_comm_create(*t_p, c_p) != ZAP_OK)
        leave(rank, false, "transport or communicator create");
    int64_t x = rank + 1, y = 0;
    if (zap_allreduce(*c_p, &x, &y, 1, ZAP_DT_INT64, ZAP_OP_SUM) != ZAP_OK || y != (int64_t)want * (want + 1) / 2)
        leave(rank, false, "warm-up allreduce");
    *rank_p = rank;
}
} // namespace survivor
#endif
