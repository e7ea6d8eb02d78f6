// Host identities and per-class send counters of the UCX transport between
// processes (zap_transport_host, zap_transport_traffic). Under ctest every
// rank runs on this machine, so every peer is on this host; the
// network-namespace runs (tests/faults/cluster_check.sh) cover other hosts.
#include <gtest/gtest.h>
#include <cstring>
#include <vector>
#include "mpi_harness.h"
extern "C" {
#include "zap/ucp.h"
#include "transport/peer_class.h"
}

namespace {
class UcpTraffic : public testing::Test {
  protected:
    zap_transport_t *t = nullptr;
    void SetUp() override { ASSERT_EQ(zap_ucp_transport_create(MPI_COMM_WORLD, nullptr, &t), ZAP_OK); }
    void TearDown() override { zap_transport_close(t); }
    zap_transport_traffic_t traffic()
    {
        zap_transport_traffic_t c;
        EXPECT_EQ(zap_transport_traffic(t, &c), ZAP_OK);
        return c;
    }
};
} // namespace

TEST_F(UcpTraffic, EveryRankAgreesOnEveryHostIdentity)
{
    int n = MpiSize();
    uint64_t mine = zap_host_id();
    std::vector<uint64_t> all(n);
    MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
    for (int r = 0; r < n; r++) {
        uint64_t h = 0;
        ASSERT_EQ(zap_transport_host(t, r, &h), ZAP_OK);
        EXPECT_EQ(h, all[r]) << "rank " << r;
        EXPECT_EQ(h, mine) << "every rank of this run is on this machine";
    }
}

TEST_F(UcpTraffic, NonBlockingAndBlockingSendsAreCountedByClass)
{
    int me = MpiRank(), n = MpiSize(), next = (me + 1) % n, prev = (me + n - 1) % n;
    zap_transport_traffic_t before = traffic();
    std::vector<uint8_t> out(70000, 0x11), in(70000, 0);
    // A non-blocking ring exchange (rendezvous size), a blocking one (eager
    // size) and a message to this rank itself.
    zap_request_t *rq = nullptr, *sq = nullptr;
    ASSERT_EQ(zap_transport_irecv(t, prev, 21, in.data(), in.size(), &rq), ZAP_OK);
    ASSERT_EQ(zap_transport_isend(t, next, 21, out.data(), 70000, &sq), ZAP_OK);
    EXPECT_EQ(zap_request_wait(sq), ZAP_OK);
    EXPECT_EQ(zap_request_wait(rq), ZAP_OK);
    zap_request_free(sq);
    zap_request_free(rq);
    ASSERT_EQ(zap_transport_irecv(t, prev, 22, in.data(), in.size(), &rq), ZAP_OK);
    ASSERT_EQ(zap_transport_send(t, next, 22, out.data(), 300), ZAP_OK);
    EXPECT_EQ(zap_request_wait(rq), ZAP_OK);
    zap_request_free(rq);
    ASSERT_EQ(zap_transport_irecv(t, me, 23, in.data(), in.size(), &rq), ZAP_OK);
    ASSERT_EQ(zap_transport_send(t, me, 23, out.data(), 5), ZAP_OK);
    EXPECT_EQ(zap_request_wait(rq), ZAP_OK);
    zap_request_free(rq);
    zap_transport_traffic_t after = traffic();
    EXPECT_EQ(after.bytes[ZAP_PEER_SAME_HOST] - before.bytes[ZAP_PEER_SAME_HOST], 70300u);
    EXPECT_EQ(after.messages[ZAP_PEER_SAME_HOST] - before.messages[ZAP_PEER_SAME_HOST], 2u);
    EXPECT_EQ(after.bytes[ZAP_PEER_SELF] - before.bytes[ZAP_PEER_SELF], 5u);
    EXPECT_EQ(after.bytes[ZAP_PEER_OTHER_HOST], 0u);
    MPI_Barrier(MPI_COMM_WORLD);
}
