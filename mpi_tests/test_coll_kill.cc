// A rank SIGKILLed between collectives (mpi_tests/CMakeLists.txt: 3 ranks,
// shared memory and tcp, no ZAP_TIMEOUT): every survivor's next collective
// fails within 1 s of the kill, with an error that names the killed rank,
// and none returns success on that operation (docs/faults.md, "Collective
// failure"). The ranks agree on a warm-up allreduce, meet in an MPI barrier,
// then rank 2 kills itself while ranks 0 and 1 enter the allreduce that
// follows. Each survivor prints "PASSED" or "FAILED: why" and leaves with
// _exit (its peer is gone: no close, no MPI_Finalize); mpirun's own exit
// status reports the kill, so ctest judges by those lines.
#include <signal.h>
#include "survivor.h"

using survivor::leave;

int main(int argc, char **argv)
{
    int rank = 0;
    zap_transport_t *t = nullptr;
    zap_comm_t *c = nullptr;
    survivor::start(&argc, &argv, 3, &rank, &t, &c);
    int64_t x = rank + 1, y = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = zap_clock_now();
    if (rank == 2)
        kill(getpid(), SIGKILL);
    // Large enough to run over the transport as well as small in the slots.
    static int64_t big[1 << 16], out[1 << 16];
    zap_status_t st = zap_allreduce(c, &x, &y, 1, ZAP_DT_INT64, ZAP_OP_SUM);
    if (st == ZAP_OK)
        st = zap_allreduce(c, big, out, 1 << 16, ZAP_DT_INT64, ZAP_OP_SUM);
    double took = zap_clock_now() - t0;
    std::string log = logsink::captured();
    printf("[rank %d] after the kill: %s in %.3f s; log:\n%s", rank, zap_status_string(st), took, log.c_str());
    if (st == ZAP_OK)
        leave(rank, false, "a collective returned success after rank 2 was killed");
    if (took > 1.0)
        leave(rank, false, "the error came more than 1 s after the kill");
    if (log.find("peer rank 2") == std::string::npos && log.find("transport rank 2 ") == std::string::npos)
        leave(rank, false, "the error does not name rank 2");
    leave(rank, true, std::string("failed with ") + zap_status_string(st) + " naming rank 2");
}
