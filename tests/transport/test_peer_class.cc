// Host identities and the per-class send counters (zap_transport_host,
// zap_transport_traffic) over the in-process transport, with its ranks on
// this host and on emulated hosts (zap_inproc_world_set_hosts), and through
// the checksum decorator.
#include <gtest/gtest.h>
#include <cstring>
#include <vector>
#include "rank_threads.h"
extern "C" {
#include "zap/inproc.h"
#include "transport/checksum.h"
#include "transport/peer_class.h"
}

namespace {
struct World {
    zap_inproc_world_t *w = nullptr;
    std::vector<zap_transport_t *> t;
    explicit World(int n)
    {
        EXPECT_EQ(zap_inproc_world_create(n, nullptr, &w), ZAP_OK);
        t.resize(n);
        for (int r = 0; r < n; r++)
            EXPECT_EQ(zap_inproc_transport(w, r, &t[r]), ZAP_OK);
    }
    ~World() { zap_inproc_world_destroy(w); }
};

zap_transport_traffic_t traffic(zap_transport_t *t)
{
    zap_transport_traffic_t c;
    memset(&c, 0xff, sizeof(c));
    EXPECT_EQ(zap_transport_traffic(t, &c), ZAP_OK);
    return c;
}

// Sends len bytes from rank `from` to rank `to` and receives them.
void exchange(World &w, int from, int to, size_t len)
{
    std::vector<uint8_t> out(len, 0x5a), in(len + 1, 0);
    zap_request_t *rq = nullptr, *sq = nullptr;
    ASSERT_EQ(zap_transport_irecv(w.t[to], from, 3, in.data(), in.size(), &rq), ZAP_OK);
    ASSERT_EQ(zap_transport_isend(w.t[from], to, 3, out.data(), len, &sq), ZAP_OK);
    EXPECT_EQ(zap_request_wait(sq), ZAP_OK);
    EXPECT_EQ(zap_request_wait(rq), ZAP_OK);
    zap_request_free(sq);
    zap_request_free(rq);
}
} // namespace

TEST(PeerClass, HostIdentityIsStableAndNeverZero)
{
    uint64_t a = zap_host_id(), b = zap_host_id();
    EXPECT_NE(a, 0u);
    EXPECT_EQ(a, b);
}

TEST(PeerClass, InprocRanksShareThisProcessHost)
{
    World w(3);
    for (int r = 0; r < 3; r++) {
        uint64_t h = 0;
        ASSERT_EQ(zap_transport_host(w.t[0], r, &h), ZAP_OK);
        EXPECT_EQ(h, zap_host_id()) << "rank " << r;
    }
}

TEST(PeerClass, CountersStartAtZero)
{
    World w(2);
    zap_transport_traffic_t c = traffic(w.t[1]);
    for (int k = 0; k < ZAP_PEER_CLASSES; k++) {
        EXPECT_EQ(c.bytes[k], 0u);
        EXPECT_EQ(c.messages[k], 0u);
    }
}

TEST(PeerClass, SendsAreCountedByTheReceiverClassOnTheSenderOnly)
{
    World w(4);
    const uint64_t hosts[4] = {11, 11, 22, 22};
    ASSERT_EQ(zap_inproc_world_set_hosts(w.w, hosts), ZAP_OK);
    exchange(w, 0, 0, 7);     // self
    exchange(w, 0, 1, 100);   // same host
    exchange(w, 0, 2, 50);    // other host
    exchange(w, 0, 3, 1000);  // other host
    exchange(w, 0, 3, 0);     // a zero-byte message is still a message
    zap_transport_traffic_t c = traffic(w.t[0]);
    EXPECT_EQ(c.bytes[ZAP_PEER_SELF], 7u);
    EXPECT_EQ(c.messages[ZAP_PEER_SELF], 1u);
    EXPECT_EQ(c.bytes[ZAP_PEER_SAME_HOST], 100u);
    EXPECT_EQ(c.messages[ZAP_PEER_SAME_HOST], 1u);
    EXPECT_EQ(c.bytes[ZAP_PEER_OTHER_HOST], 1050u);
    EXPECT_EQ(c.messages[ZAP_PEER_OTHER_HOST], 3u);
    for (int r = 1; r < 4; r++) {
        zap_transport_traffic_t o = traffic(w.t[r]);
        EXPECT_EQ(o.messages[ZAP_PEER_SELF] + o.messages[ZAP_PEER_SAME_HOST] + o.messages[ZAP_PEER_OTHER_HOST], 0u)
            << "rank " << r << " only received";
    }
}

TEST(PeerClass, EmulatedHostsAreWhatHostReports)
{
    World w(3);
    const uint64_t hosts[3] = {5, 9, 5};
    ASSERT_EQ(zap_inproc_world_set_hosts(w.w, hosts), ZAP_OK);
    for (int r = 0; r < 3; r++) {
        uint64_t h = 0;
        ASSERT_EQ(zap_transport_host(w.t[2], r, &h), ZAP_OK);
        EXPECT_EQ(h, hosts[r]);
    }
    ASSERT_EQ(zap_inproc_world_set_hosts(w.w, nullptr), ZAP_OK);
    uint64_t h = 0;
    ASSERT_EQ(zap_transport_host(w.t[0], 1, &h), ZAP_OK);
    EXPECT_EQ(h, zap_host_id()) << "NULL puts every rank back on this host";
}

TEST(PeerClass, BadArgumentsAreRefusedAndNothingIsWritten)
{
    World w(2);
    uint64_t h = 77;
    EXPECT_EQ(zap_transport_host(nullptr, 0, &h), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_transport_host(w.t[0], 0, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_transport_host(w.t[0], 2, &h), ZAP_ERR_NOT_FOUND);
    EXPECT_EQ(zap_transport_host(w.t[0], -1, &h), ZAP_ERR_NOT_FOUND);
    EXPECT_EQ(h, 77u);
    zap_transport_traffic_t c;
    EXPECT_EQ(zap_transport_traffic(nullptr, &c), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_transport_traffic(w.t[0], nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_inproc_world_set_hosts(nullptr, nullptr), ZAP_ERR_INVALID_PARAM);
}

TEST(PeerClass, ClosedTransportStillReportsItsCountsButNoHost)
{
    World w(2);
    exchange(w, 1, 0, 9);
    zap_transport_close(w.t[1]);
    EXPECT_EQ(traffic(w.t[1]).bytes[ZAP_PEER_SAME_HOST], 9u);
    uint64_t h = 0;
    EXPECT_EQ(zap_transport_host(w.t[1], 0, &h), ZAP_ERR_CLOSED);
}

TEST(PeerClass, ChecksumWrapperReportsTheInnerTransport)
{
    // The wrapper sends each payload and then its 4-byte checksum through
    // the inner transport: both are on the wire, both are counted.
    World w(2);
    const uint64_t hosts[2] = {1, 2};
    ASSERT_EQ(zap_inproc_world_set_hosts(w.w, hosts), ZAP_OK);
    zap_transport_t *c0 = nullptr, *c1 = nullptr;
    ASSERT_EQ(zap_transport_checksum_wrap(w.t[0], &c0), ZAP_OK);
    ASSERT_EQ(zap_transport_checksum_wrap(w.t[1], &c1), ZAP_OK);
    std::vector<uint8_t> out(40, 1), in(40, 0);
    zap_request_t *rq = nullptr;
    ASSERT_EQ(zap_transport_irecv(c1, 0, 8, in.data(), in.size(), &rq), ZAP_OK);
    ASSERT_EQ(zap_transport_send(c0, 1, 8, out.data(), out.size()), ZAP_OK);
    EXPECT_EQ(zap_request_wait(rq), ZAP_OK);
    zap_request_free(rq);
    zap_transport_traffic_t c = traffic(c0);
    EXPECT_EQ(c.bytes[ZAP_PEER_OTHER_HOST], 44u);
    EXPECT_EQ(c.messages[ZAP_PEER_OTHER_HOST], 2u);
    uint64_t h = 0;
    ASSERT_EQ(zap_transport_host(c0, 1, &h), ZAP_OK);
    EXPECT_EQ(h, 2u);
    zap_transport_close(c0);
    zap_transport_close(c1);
}
