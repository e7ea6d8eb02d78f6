// A peer that exits early gives a clear error, never a hang. Two ranks: after
// one message each way (so both endpoints exist), rank 1 calls _exit while
// rank 0 waits in a receive from it, a blocking one (zap_transport_recv) and
// then one posted before the exit. Each must fail with ZAP_ERR_PEER_FAILED
// (UCX noticed: TCP's reset, shared memory's keepalive) before ZAP_TIMEOUT
// passes, and the log must name rank 1. Rank 0 then exits without
// MPI_Finalize (its peer is gone); mpirun runs with
// orte_allowed_exit_without_sync so that the early exit itself is not an
// abort. Exit status 0 means the behaviour held; anything else is printed.
#include <mpi.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "early_exit.h"

namespace {
int fail(const char *what)
{
    fprintf(stderr, "[rank 0] FAILED: %s\n", what);
    fflush(stderr);
    _exit(1);
}
} // namespace

int main(int argc, char **argv)
{
    zap_transport_t *t = nullptr;
    int rank = earlyexit::start(&argc, &argv, 2, ZAP_LOG_TRACE, &t);
    int peer = 1 - rank;
    uint64_t v = 42, got = 0;
    if (zap_transport_send(t, peer, 1, &v, sizeof v) != ZAP_OK ||
        zap_transport_recv(t, peer, 1, &got, sizeof got, nullptr) != ZAP_OK || got != 42) {
        fprintf(stderr, "[rank %d] FAILED: warm-up exchange\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    zap_request_t *r = nullptr;
    if (rank == 0 && zap_transport_irecv(t, 1, 2, &got, sizeof got, &r) != ZAP_OK)
        fail("posting the receive");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1)
        _exit(0); // no close, no finalize: as a crash would

    // The blocking receive (its own path in the UCX transport) first, then
    // the request posted before the exit.
    double t0 = zap_clock_now();
    zap_status_t bst = zap_transport_recv(t, 1, 3, &got, sizeof got, nullptr);
    double btook = zap_clock_now() - t0;
    printf("[rank 0] blocking receive from the exited rank ended after %.2f s: %s\n", btook,
           zap_status_string(bst));
    if (bst != ZAP_ERR_PEER_FAILED)
        fail("blocking receive: status is not PEER_FAILED");
    if (btook >= zap_transport_timeout(t))
        fail("blocking receive: took ZAP_TIMEOUT or longer");
    t0 = zap_clock_now();
    zap_status_t st = zap_request_wait(r);
    double took = zap_clock_now() - t0;
    printf("[rank 0] receive from the exited rank ended after %.2f s: %s\n", took, zap_status_string(st));
    std::string log = logsink::captured();
    printf("[rank 0] log:\n%s", log.c_str());
    fflush(stdout);
    if (st != ZAP_ERR_PEER_FAILED)
        fail("status is not PEER_FAILED");
    if (took >= zap_transport_timeout(t))
        fail("took ZAP_TIMEOUT or longer");
    if (log.find("rank 1") == std::string::npos)
        fail("the log does not name rank 1");
    // Once known dead, new posts fail at once.
    zap_request_t *r2 = nullptr;
    if (zap_transport_isend(t, 1, 3, &v, sizeof v, &r2) != ZAP_ERR_PEER_FAILED)
        fail("a send to the dead rank was not refused with PEER_FAILED");
    if (zap_transport_send(t, 1, 3, &v, sizeof v) != ZAP_ERR_PEER_FAILED)
        fail("a blocking send to the dead rank was not refused with PEER_FAILED");
    zap_request_free(r);
    printf("[rank 0] PASSED\n");
    fflush(stdout);
    _exit(0);
}
