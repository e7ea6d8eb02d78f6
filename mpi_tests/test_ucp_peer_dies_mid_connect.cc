// The connection to a TCP peer is made while the transport is created
// (ZAP_UCP_PRECONNECT=auto), not at the first message: a peer that dies or
// leaves later is then never met halfway through a connection, the moment
// where UCX's TCP transport can abort the connecting process
// (core/transport/ucp_connect.h). And a peer killed after that is reported
// as PEER_FAILED naming it.
//
// Two ranks on one host over TCP. After the barrier rank 1 starts a killer
// process and stops itself (SIGSTOP): its kernel still takes TCP handshakes
// and bytes, but its UCX answers nothing. Rank 0's first message to it must
// complete at once, over the connection made at creation (made now, the send
// would wait for rank 1's UCX until the kill). Then the killer SIGKILLs rank
// 1, and rank 0's receive from it must end with PEER_FAILED naming rank 1,
// well before ZAP_TIMEOUT. Exit status 0 of rank 0 means the behaviour held.
#include <signal.h>
#include <sys/types.h>
#include <string>
#include "early_exit.h"

using earlyexit::leave;

int main(int argc, char **argv)
{
    zap_transport_t *t = nullptr;
    int rank = earlyexit::start(&argc, &argv, 2, ZAP_LOG_ERROR, &t);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        pid_t self = getpid();
        if (fork() == 0) {
            usleep(1500000);
            kill(self, SIGKILL);
            _exit(0);
        }
        raise(SIGSTOP);
        leave(rank, 1, "woke up after SIGSTOP");
    }
    // Rank 1 stops within a few milliseconds of the barrier.
    usleep(300000);
    uint64_t v = 42, got = 0;
    double t0 = zap_clock_now();
    zap_status_t st = zap_transport_send(t, 1, 1, &v, sizeof v);
    double sent = zap_clock_now() - t0;
    printf("[rank 0] first send to the stopped rank 1: %s after %.2f s\n", zap_status_string(st), sent);
    if (st != ZAP_OK || sent > 0.5)
        leave(rank, 1, "the first send to the stopped rank 1 did not complete at once: no connection was made at "
                       "creation");
    st = zap_transport_recv(t, 1, 2, &got, sizeof got, nullptr);
    double took = zap_clock_now() - t0;
    printf("[rank 0] receive from rank 1 (stopped, then killed) ended after %.2f s: %s\n", took,
           zap_status_string(st));
    if (st != ZAP_ERR_PEER_FAILED)
        leave(rank, 1, "the receive from the killed rank 1 did not end with PEER_FAILED");
    if (logsink::captured().find("rank 1") == std::string::npos)
        leave(rank, 1, "the log does not name rank 1");
    if (took > zap_transport_timeout(t) / 2)
        leave(rank, 1, "PEER_FAILED took half of ZAP_TIMEOUT or longer");
    leave(rank, 0, "PASSED");
}
