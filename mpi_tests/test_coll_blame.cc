// A survivor that leaves after a peer died is not blamed for it
// (mpi_tests/CMakeLists.txt: 3 ranks, shared memory, no ZAP_TIMEOUT).
// Rank 1 is SIGKILLed; rank 2's transport learns it (a receive from rank 1
// fails); rank 0 then leaves at once, as the verification job's ranks do
// after an error. When rank 2 next enters a collective, the shared-memory
// exchange finds both processes gone and would name the lower rank, 0: the
// error must name rank 1, the rank that failed first, and so must the
// revocation it sends. Rank 2 prints "PASSED" or "FAILED: why" and leaves
// with _exit; ctest judges by that line.
#include <signal.h>
#include <cerrno>
#include <vector>
#include "survivor.h"

using survivor::leave;

namespace {
bool gone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

// Polls until pid is gone or limit seconds pass.
bool wait_gone(pid_t pid, double limit)
{
    double until = zap_clock_now() + limit;
    while (!gone(pid))
        if (zap_clock_now() > until)
            return false;
        else
            usleep(1000);
    return true;
}
} // namespace

int main(int argc, char **argv)
{
    int rank = 0;
    zap_transport_t *t = nullptr;
    zap_comm_t *c = nullptr;
    survivor::start(&argc, &argv, 3, &rank, &t, &c);
    int me = (int)getpid();
    std::vector<int> pids(3);
    MPI_Allgather(&me, 1, MPI_INT, pids.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int64_t x = rank + 1, y = 0;
    // Endpoints between rank 2 and the others, so that UCX watches them.
    const uint64_t tag = 0x5151;
    char b = 'w';
    if (rank == 2) {
        for (int p : {0, 1})
            if (zap_transport_send(t, p, tag, &b, 1) != ZAP_OK)
                leave(rank, false, "warm-up send");
    } else if (zap_transport_recv(t, 2, tag, &b, 1, nullptr) != ZAP_OK) {
        leave(rank, false, "warm-up receive");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1)
        kill(getpid(), SIGKILL);
    if (rank == 0) {
        // Leaves once rank 2 says its transport knows rank 1 failed.
        if (zap_transport_recv(t, 2, tag + 1, &b, 1, nullptr) != ZAP_OK)
            leave(rank, false, "the word from rank 2");
        fflush(stdout);
        _exit(0);
    }
    // Rank 2.
    zap_status_t st = zap_transport_recv(t, 1, tag + 2, &b, 1, nullptr);
    if (st != ZAP_ERR_PEER_FAILED)
        leave(rank, false, std::string("the receive from the killed rank 1 gave ") + zap_status_string(st));
    if (zap_transport_send(t, 0, tag + 1, &b, 1) != ZAP_OK)
        leave(rank, false, "the word to rank 0");
    if (!wait_gone(pids[0], 10.0))
        leave(rank, false, "rank 0 did not leave");
    st = zap_allreduce(c, &x, &y, 1, ZAP_DT_INT64, ZAP_OP_SUM);
    std::string log = logsink::captured();
    printf("[rank 2] collective after both left: %s; log:\n%s", zap_status_string(st), log.c_str());
    if (st == ZAP_OK)
        leave(rank, false, "the collective returned success");
    if (log.find("failed on communicator") == std::string::npos)
        leave(rank, false, "no line says which collective failed");
    size_t at = log.find("failed on communicator");
    std::string line = log.substr(at, log.find('\n', at) - at);
    if (line.find("peer rank 1 failed") == std::string::npos)
        leave(rank, false, "the collective's failure does not name rank 1, which failed first: " + line);
    leave(rank, true, "the collective's failure names rank 1: " + line);
}
