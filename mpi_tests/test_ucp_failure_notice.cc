// The UCX transport's failure notices (core/transport/ucp_notice.h): a rank
// that sees a survivor leave names the rank that failed first, not the
// survivor. Three ranks, over tcp and over shared memory (whose keepalive
// notices a dead peer). Rank 0 exchanges a message with ranks 1 and 2, rank 1 talks
// only to rank 0. Then rank 2 dies (_exit, as a crash would); rank 0, waiting
// on a receive from it, gets PEER_FAILED and leaves as a survivor would
// (_exit). Rank 1, blocked in a receive from rank 0, must end with
// PEER_FAILED within ZAP_TIMEOUT plus a margin and its log must say that
// rank 2 failed (failure notice, or "went away ... after peer rank 2 failed
// first"): without the notice it could only name rank 0. A later post to
// rank 2 is refused with PEER_FAILED. No rank calls MPI_Finalize (its peers
// are gone); mpirun runs with orte_allowed_exit_without_sync. Exit status 0
// means the behaviour held.
#include <string>
#include "early_exit.h"

using earlyexit::leave;

int main(int argc, char **argv)
{
    zap_transport_t *t = nullptr;
    int rank = earlyexit::start(&argc, &argv, 3, ZAP_LOG_ERROR, &t);
    // Warm-up: endpoints 0-1 and 0-2 exist; 1-2 never talk.
    uint64_t v = 42, got = 0;
    bool ok = true;
    if (rank == 0) {
        for (int p = 1; p < 3; p++)
            ok = ok && zap_transport_send(t, p, 1, &v, sizeof v) == ZAP_OK &&
                 zap_transport_recv(t, p, 1, &got, sizeof got, nullptr) == ZAP_OK && got == 42;
    } else {
        ok = zap_transport_recv(t, 0, 1, &got, sizeof got, nullptr) == ZAP_OK && got == 42 &&
             zap_transport_send(t, 0, 1, &v, sizeof v) == ZAP_OK;
    }
    if (!ok) {
        fprintf(stderr, "[rank %d] FAILED: warm-up exchange\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    zap_request_t *r = nullptr;
    if (rank == 0 && zap_transport_irecv(t, 2, 2, &got, sizeof got, &r) != ZAP_OK)
        leave(rank, 1, "posting the receive from rank 2");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 2)
        _exit(0); // no close, no finalize: as a crash would

    if (rank == 0) {
        zap_status_t st = zap_request_wait(r);
        if (st != ZAP_ERR_PEER_FAILED)
            leave(rank, 1, "the receive from the dead rank 2 did not end with PEER_FAILED");
        // Its notices are out before the error came back: leave now, as a
        // survivor of a failed job does.
        leave(rank, 0, "rank 2 failed; leaving");
    }

    double t0 = zap_clock_now();
    zap_status_t st = zap_transport_recv(t, 0, 3, &got, sizeof got, nullptr);
    double took = zap_clock_now() - t0;
    printf("[rank 1] receive from rank 0 ended after %.2f s: %s\n", took, zap_status_string(st));
    std::string log = logsink::captured();
    printf("[rank 1] log:\n%s", log.c_str());
    if (st != ZAP_ERR_PEER_FAILED)
        leave(rank, 1, "the receive from rank 0 (which left) did not end with PEER_FAILED");
    if (took > zap_transport_timeout(t) + 5.0)
        leave(rank, 1, "the receive took longer than ZAP_TIMEOUT + 5 s");
    if (log.find("peer rank 2 failed") == std::string::npos)
        leave(rank, 1, "the log does not say that rank 2 failed first (the failure notice was lost)");
    zap_request_t *s = nullptr;
    if (zap_transport_isend(t, 2, 4, &v, sizeof v, &s) != ZAP_ERR_PEER_FAILED)
        leave(rank, 1, "a send to rank 2 (named failed by the notice) was not refused with PEER_FAILED");
    leave(rank, 0, "PASSED: rank 2 named as the failed rank");
}
