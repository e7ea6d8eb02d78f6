// A peer that is already dead when a rank first posts to it (no endpoint
// yet): the post ends with PEER_FAILED naming it, over tcp (connection
// refused) and over shared memory (its FIFO segment is gone), not with a
// transport error. And that refusal must not be read as "these transports
// cannot detect a dead peer": an endpoint created afterwards to a live peer
// still has error handling, so when that peer dies too the rank waiting on it
// gets PEER_FAILED, not a timeout.
//
// Three ranks. Rank 0 exits after the barrier (no close, no finalize, as a
// crash would). Rank 2 sends to rank 0 (first contact) and must get
// PEER_FAILED; then ranks 1 and 2 exchange their first message, rank 1
// exits, and rank 2's receive from it must end with PEER_FAILED well before
// ZAP_TIMEOUT. Exit status 0 means the behaviour held. Run with
// ZAP_UCP_PRECONNECT=off: otherwise the transport connects to TCP peers at
// create, and there is no first contact over TCP (a send to a peer dead on
// an established connection may complete, its bytes with the kernel;
// mpi_ucp_peer_dies_mid_connect covers that path).
#include <string>
#include "early_exit.h"

using earlyexit::leave;

int main(int argc, char **argv)
{
    zap_transport_t *t = nullptr;
    int rank = earlyexit::start(&argc, &argv, 3, ZAP_LOG_ERROR, &t);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        _exit(0);
    // Rank 0's worker must be gone before rank 2 reaches for it; its exit
    // is bounded well below this.
    usleep(500000);

    uint64_t v = 42, got = 0;
    if (rank == 2) {
        zap_status_t st = zap_transport_send(t, 0, 1, &v, sizeof v);
        printf("[rank 2] first send to the dead rank 0: %s\n", zap_status_string(st));
        if (st != ZAP_ERR_PEER_FAILED)
            leave(rank, 1, "the first send to the dead rank 0 did not end with PEER_FAILED");
        if (logsink::captured().find("rank 0") == std::string::npos)
            leave(rank, 1, "the log does not name rank 0");
        // Rank 1 waits for this before exiting; rank 1's endpoint to rank 2
        // is created now, after rank 0's refusal.
        if (zap_transport_send(t, 1, 2, &v, sizeof v) != ZAP_OK)
            leave(rank, 1, "the first send to the live rank 1");
        double t0 = zap_clock_now();
        st = zap_transport_recv(t, 1, 3, &got, sizeof got, nullptr);
        double took = zap_clock_now() - t0;
        printf("[rank 2] receive from rank 1 (which exited) ended after %.2f s: %s\n", took, zap_status_string(st));
        if (st != ZAP_ERR_PEER_FAILED)
            leave(rank, 1, "the receive from rank 1, which exited, did not end with PEER_FAILED (did the refusal "
                           "by the dead rank 0 turn peer failure detection off?)");
        if (took > zap_transport_timeout(t) / 2)
            leave(rank, 1, "the receive from rank 1 took half of ZAP_TIMEOUT or longer");
        leave(rank, 0, "PASSED");
    }
    if (zap_transport_recv(t, 2, 2, &got, sizeof got, nullptr) != ZAP_OK || got != 42)
        leave(rank, 1, "the first message from rank 2");
    leave(rank, 0, "exiting, as a crash would");
}
