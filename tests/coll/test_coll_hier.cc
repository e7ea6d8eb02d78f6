// Collectives across hosts: in-process ranks placed on emulated hosts
// (zap_inproc_world_set_hosts), so the hosts' hierarchy (coll/hier) runs as
// it does between processes on several machines. Layouts 2x2, 2x3, 3x2,
// uneven 1+3 and 2+2+3, and ranks dealt to hosts in turn; every datatype and
// op, every root, small and large (pipelined, sliced) sizes, against a
// reference computed here, with identical bytes on every rank; the bytes
// that cross hosts against their lower bounds (zap_transport_traffic).
// Reduce and reduce_scatter are also checked in their documented order with
// an op that is associative but not commutative (affine maps) passed as
// commutative: only the documented order gives the reference's bytes.
#include "coll_harness.h"
#include "log_capture.h"
#include "ref_ops.h"
#include <algorithm>
#include <atomic>
#include <numeric>
#include <string>
extern "C" {
#include "zap/config.h"
#include "coll/coll_test.h"
#include "coll/hier/topo.h"
}

using namespace colltest;

namespace {

// A layout: the host of each rank.
struct Layout {
    const char *name;
    std::vector<uint64_t> hosts;
    int nhosts() const
    {
        uint64_t m = 0;
        for (uint64_t h : hosts)
            m = h > m ? h : m;
        return (int)m; // hosts are numbered 1..H
    }
};

// Hosts numbered from 1 (the identity 0 is as good as any, but 1.. reads
// better in failures). "2+3" fills host 1 first; cyclic deals in turn.
Layout block(const char *name, std::vector<int> per)
{
    Layout l{name, {}};
    for (size_t h = 0; h < per.size(); h++)
        for (int i = 0; i < per[h]; i++)
            l.hosts.push_back(h + 1);
    return l;
}
Layout cyclic(const char *name, std::vector<int> per)
{
    Layout l{name, {}};
    for (bool more = true; more;) {
        more = false;
        for (size_t h = 0; h < per.size(); h++)
            if (per[h] > 0) {
                per[h]--;
                l.hosts.push_back(h + 1);
                more = true;
            }
    }
    return l;
}

std::vector<Layout> layouts()
{
    return {block("2x2", {2, 2}),         block("2x3", {3, 3}),     block("3x2", {2, 2, 2}),
            block("1+3", {1, 3}),         block("2+2+3", {2, 2, 3}), cyclic("3x2-cyclic", {2, 2, 2}),
            cyclic("2+2+3-cyclic", {2, 2, 3})};
}

// Ranks on emulated hosts, each with a communicator made after the hosts
// were set.
struct HostWorld : RankWorld {
    explicit HostWorld(const Layout &l, const zap_comm_params_t *params = nullptr)
        : RankWorld((int)l.hosts.size(), false)
    {
        EXPECT_EQ(zap_inproc_world_set_hosts(w, l.hosts.data()), ZAP_OK);
        run([&](int r) { EXPECT_EQ(zap_comm_create_ex(t[r], params, &c[r]), ZAP_OK); });
    }
    uint64_t xhost(int r) const
    {
        zap_transport_traffic_t tr;
        EXPECT_EQ(zap_transport_traffic(t[r], &tr), ZAP_OK);
        return tr.bytes[ZAP_PEER_OTHER_HOST];
    }
    std::vector<uint64_t> xhost_all() const
    {
        std::vector<uint64_t> v(n);
        for (int r = 0; r < n; r++)
            v[r] = xhost(r);
        return v;
    }
};

// Bytes each host sent to other hosts between two snapshots.
std::vector<uint64_t> per_host(const Layout &l, const std::vector<uint64_t> &before, const std::vector<uint64_t> &after)
{
    std::vector<uint64_t> v(l.nhosts() + 1, 0);
    for (size_t r = 0; r < l.hosts.size(); r++)
        v[l.hosts[r]] += after[r] - before[r];
    return v;
}

const zap_dtype_t kTypes[] = {ZAP_DT_INT8,  ZAP_DT_INT16,  ZAP_DT_INT32,   ZAP_DT_INT64,    ZAP_DT_UINT8,   ZAP_DT_UINT16,
                              ZAP_DT_UINT32, ZAP_DT_UINT64, ZAP_DT_FLOAT16, ZAP_DT_BFLOAT16, ZAP_DT_FLOAT32, ZAP_DT_FLOAT64};
const zap_op_t kOps[] = {ZAP_OP_SUM, ZAP_OP_PROD, ZAP_OP_MIN, ZAP_OP_MAX, ZAP_OP_BAND, ZAP_OP_BOR, ZAP_OP_BXOR};

// One allreduce on every rank, checked against the reference and for
// identical bytes everywhere.
void check_allreduce(RankWorld &w, zap_dtype_t dt, zap_op_t op, size_t count, uint64_t seed, bool in_place,
                     const char *what)
{
    size_t es = dsize(dt);
    std::vector<std::vector<uint8_t>> in(w.n, std::vector<uint8_t>(count * es + 1));
    std::vector<std::vector<uint8_t>> out(w.n, std::vector<uint8_t>(count * es + 1, 0xA5));
    for (int r = 0; r < w.n; r++)
        fill_input(dt, op, r, seed, in[r].data(), count);
    if (in_place)
        for (int r = 0; r < w.n; r++)
            out[r] = in[r];
    auto st = w.each([&](int r) {
        return zap_allreduce(w.c[r], in_place ? ZAP_IN_PLACE : in[r].data(), out[r].data(), count, dt, op);
    });
    for (int r = 0; r < w.n; r++)
        ASSERT_EQ(st[r], ZAP_OK) << what << " rank " << r << " " << zap_status_string(st[r]);
    std::vector<uint8_t> ref(8);
    for (size_t i = 0; i < count; i++) {
        reference(dt, op, in, i, ref.data());
        if (std::memcmp(ref.data(), out[0].data() + i * es, es) != 0) {
            ADD_FAILURE() << what << ": " << zap_dtype_name(dt) << " " << zap_op_name(op) << " count " << count
                          << " element " << i << " differs from the reference";
            return;
        }
    }
    for (int r = 1; r < w.n; r++)
        if (out[r] != out[0]) {
            ADD_FAILURE() << what << ": rank " << r << " holds other bytes than rank 0 (" << zap_dtype_name(dt) << " "
                          << zap_op_name(op) << " count " << count << ")";
            return;
        }
    for (int r = 0; r < w.n; r++)
        EXPECT_EQ(out[r][count * es], in_place ? in[r][count * es] : 0xA5) << what << ": overflow on rank " << r;
}

const char *algorithm(zap_comm_t *c, size_t bytes, bool bcast)
{
    zap_comm_attr_t a{};
    a.field_mask = ZAP_COMM_ATTR_ALGORITHMS;
    a.bytes = bytes;
    EXPECT_EQ(zap_comm_query(c, &a), ZAP_OK);
    return bcast ? a.bcast_algorithm : a.allreduce_algorithm;
}

} // namespace

// --- the topology -------------------------------------------------------------

TEST(HierTopo, HostsAreNumberedByTheirLowestRankAndLocalRanksFollowRankOrder)
{
    const uint64_t ids[] = {70, 30, 70, 50, 30, 70};
    zap_coll_topo_t *t = nullptr;
    ASSERT_EQ(zap_coll_topo_build(ids, 6, &t), ZAP_OK);
    EXPECT_EQ(t->nhosts, 3);
    const int host[] = {0, 1, 0, 2, 1, 0}, local[] = {0, 0, 1, 0, 1, 2};
    for (int r = 0; r < 6; r++) {
        EXPECT_EQ(t->host[r], host[r]) << "rank " << r;
        EXPECT_EQ(t->local[r], local[r]) << "rank " << r;
    }
    EXPECT_EQ(t->min_host_size, 1);
    EXPECT_EQ(t->max_host_size, 3);
    EXPECT_EQ(zap_coll_topo_rank(t, 0, 2), 5);
    EXPECT_EQ(zap_coll_topo_rank(t, 1, 1), 4);
    EXPECT_EQ(zap_coll_topo_rank(t, 2, 1), -1);
    EXPECT_TRUE(zap_coll_topo_layered(t));
    zap_coll_topo_free(t);
}

TEST(HierTopo, OneHostOrOneRankPerHostIsNotLayered)
{
    const uint64_t same[] = {4, 4, 4}, apart[] = {1, 2, 3};
    zap_coll_topo_t *t = nullptr;
    ASSERT_EQ(zap_coll_topo_build(same, 3, &t), ZAP_OK);
    EXPECT_EQ(t->nhosts, 1);
    EXPECT_FALSE(zap_coll_topo_layered(t));
    zap_coll_topo_free(t);
    ASSERT_EQ(zap_coll_topo_build(apart, 3, &t), ZAP_OK);
    EXPECT_EQ(t->nhosts, 3);
    EXPECT_FALSE(zap_coll_topo_layered(t));
    zap_coll_topo_free(t);
    EXPECT_EQ(zap_coll_topo_build(same, 0, &t), ZAP_ERR_INVALID_PARAM);
}

// --- selection ------------------------------------------------------------------

TEST(Hier, CommunicatorsAcrossHostsChooseTheHierarchyAtEverySize)
{
    for (const Layout &l : layouts()) {
        HostWorld w(l);
        for (size_t bytes : {(size_t)8, (size_t)100000, (size_t)64 << 20}) {
            EXPECT_STREQ(algorithm(w.c[0], bytes, false), "hier") << l.name << " " << bytes;
        }
    }
}

TEST(Hier, OffOrOneHostOrOneRankPerHostStaysFlat)
{
    Params off;
    off.hier = ZAP_COMM_SWITCH_OFF;
    HostWorld flat(block("2x2", {2, 2}), &off);
    EXPECT_STRNE(algorithm(flat.c[0], 8, false), "hier");
    HostWorld apart(block("1+1+1", {1, 1, 1}));
    EXPECT_STRNE(algorithm(apart.c[0], 8, false), "hier");
    World one(4);
    EXPECT_STRNE(algorithm(one.c[0], 8, false), "hier");
}

// --- allreduce -------------------------------------------------------------------

TEST(HierAllreduce, EveryDatatypeAndOpMatchesTheReferenceOnEveryLayout)
{
    for (const Layout &l : layouts()) {
        HostWorld w(l);
        for (zap_dtype_t dt : kTypes)
            for (zap_op_t op : kOps) {
                if (!zap_op_supported(dt, op))
                    continue;
                for (size_t count : {(size_t)0, (size_t)1, (size_t)3, (size_t)257})
                    check_allreduce(w, dt, op, count, count * 31 + dt, count == 3, l.name);
            }
    }
}

TEST(HierAllreduce, LargeVectorsInChunksAndSlicesMatchTheReference)
{
    // 64 KiB segments: many chunks, one slice; 256 KiB: slices where every
    // host has two ranks or more.
    for (uint64_t seg : {(uint64_t)64 << 10, (uint64_t)256 << 10})
        for (const Layout &l : layouts()) {
            Params p;
            p.pipeline(seg);
            HostWorld w(l, &p);
            std::string what = std::string(l.name) + " segment " + std::to_string(seg);
            check_allreduce(w, ZAP_DT_INT32, ZAP_OP_SUM, 300007, 5, false, what.c_str());
            check_allreduce(w, ZAP_DT_FLOAT32, ZAP_OP_SUM, 262144 + 13, 6, true, what.c_str());
            check_allreduce(w, ZAP_DT_FLOAT16, ZAP_OP_MAX, 40001, 7, false, what.c_str());
        }
}

TEST(HierAllreduce, DefaultChunkingOfAFewMegabytesMatchesTheReference)
{
    HostWorld w(block("2x3", {3, 3}));
    check_allreduce(w, ZAP_DT_FLOAT64, ZAP_OP_SUM, (size_t)1 << 20, 8, false, "2x3 8 MiB");
    check_allreduce(w, ZAP_DT_UINT8, ZAP_OP_BXOR, (size_t)3 << 20, 9, true, "2x3 3 MiB");
    // 64 KiB chunks, the last one short.
    check_allreduce(w, ZAP_DT_INT32, ZAP_OP_SUM, (300 << 10) / 4 + 3, 10, false, "2x3 300 KiB");
    check_allreduce(w, ZAP_DT_FLOAT32, ZAP_OP_SUM, (512 << 10) / 4, 11, true, "2x3 512 KiB");
}

TEST(HierAllreduce, InterHostBytesStayWithinFivePercentOfTheLowerBound)
{
    // Each host must send 2(H-1)/H of the vector to the others (a reduce-
    // scatter and an allgather between hosts); flat algorithms send more
    // where a host's ranks are not neighbours.
    for (const Layout &l : {block("2x3", {3, 3}), block("3x2", {2, 2, 2}), cyclic("2x2-cyclic", {2, 2}),
                            block("2+2+3", {2, 2, 3})}) {
        HostWorld w(l);
        size_t count = (size_t)1 << 20; // 4 MiB of int32
        std::vector<int32_t> in(count, 1);
        std::vector<std::vector<int32_t>> out(w.n, std::vector<int32_t>(count));
        auto before = w.xhost_all();
        auto st = w.each([&](int r) { return zap_allreduce(w.c[r], in.data(), out[r].data(), count, ZAP_DT_INT32, ZAP_OP_SUM); });
        for (int r = 0; r < w.n; r++)
            ASSERT_EQ(st[r], ZAP_OK);
        auto host = per_host(l, before, w.xhost_all());
        int H = l.nhosts();
        double bound = 2.0 * (H - 1) / H * (double)(count * 4);
        for (int h = 1; h <= H; h++) {
            EXPECT_LE((double)host[h], 1.05 * bound) << l.name << " host " << h;
            EXPECT_GE((double)host[h], 0.95 * bound) << l.name << " host " << h;
        }
        EXPECT_EQ(out[w.n - 1][count - 1], w.n);
    }
}

TEST(HierAllreduce, OnlyLeadersTalkToOtherHostsInSmallCalls)
{
    Layout l = block("2x3", {3, 3});
    HostWorld w(l);
    auto before = w.xhost_all();
    int64_t x = 1, y = 0;
    auto st = w.each([&](int r) {
        int64_t mine = x, res = y;
        return zap_allreduce(w.c[r], &mine, &res, 1, ZAP_DT_INT64, ZAP_OP_SUM);
    });
    auto after = w.xhost_all();
    for (int r = 0; r < w.n; r++) {
        ASSERT_EQ(st[r], ZAP_OK);
        bool leader = r == 0 || r == 3;
        if (leader)
            EXPECT_GT(after[r], before[r]) << "rank " << r;
        else
            EXPECT_EQ(after[r], before[r]) << "rank " << r << " is not its host's leader";
    }
}

TEST(HierAllreduce, ArgumentsThatDifferAreAMismatchOnEveryRankNotAHang)
{
    for (const Layout &l : {block("2x3", {3, 3}), block("2+2+3", {2, 2, 3}), block("1+3", {1, 3})}) {
        HostWorld w(l);
        for (int odd : {0, w.n - 1, 1}) {
            // One rank's count differs: small and across the small/large bound.
            for (size_t base : {(size_t)4, (size_t)2048, (size_t)100000}) {
                LogCapture cap;
                std::vector<std::vector<int32_t>> buf(w.n, std::vector<int32_t>(base + 1, 1));
                auto st = w.each([&](int r) {
                    size_t n = r == odd ? base + 1 : base;
                    return zap_allreduce(w.c[r], ZAP_IN_PLACE, buf[r].data(), n, ZAP_DT_INT32, ZAP_OP_SUM);
                });
                for (int r = 0; r < w.n; r++)
                    EXPECT_EQ(st[r], ZAP_ERR_MISMATCH) << l.name << " odd rank " << odd << " rank " << r;
                EXPECT_TRUE(cap.contains("differ") || cap.contains("wrong size")) << cap.all();
            }
            // An unsupported op on one rank only.
            std::vector<std::vector<float>> fb(w.n, std::vector<float>(8, 1));
            LogCapture cap;
            auto st = w.each([&](int r) {
                return zap_allreduce(w.c[r], ZAP_IN_PLACE, fb[r].data(), 8, ZAP_DT_FLOAT32,
                                     r == odd ? ZAP_OP_BXOR : ZAP_OP_SUM);
            });
            for (int r = 0; r < w.n; r++)
                EXPECT_EQ(st[r], r == odd ? ZAP_ERR_UNSUPPORTED : ZAP_ERR_MISMATCH) << l.name << " rank " << r;
        }
        // The communicator still works afterwards.
        check_allreduce(w, ZAP_DT_INT64, ZAP_OP_SUM, 5, 1, false, l.name);
    }
}

TEST(HierAllreduce, GroupCommunicatorsAcrossHostsUseTheHierarchyToo)
{
    Layout l = block("2x3", {3, 3});
    HostWorld w(l);
    // Ranks 1, 2, 4, 5: two per host.
    const int members[] = {1, 2, 4, 5};
    std::vector<zap_comm_t *> g(w.n, nullptr);
    w.run([&](int r) {
        if (r != 0 && r != 3) {
            EXPECT_EQ(zap_comm_create_group(w.t[r], members, 4, 77, nullptr, &g[r]), ZAP_OK);
        }
    });
    std::vector<int64_t> out(w.n, 0);
    size_t big = 100000;
    std::vector<std::vector<int32_t>> vb(w.n, std::vector<int32_t>(big, 2));
    auto st = w.each([&](int r) {
        if (g[r] == nullptr)
            return ZAP_OK;
        int64_t one = r;
        zap_status_t s = zap_allreduce(g[r], &one, &out[r], 1, ZAP_DT_INT64, ZAP_OP_SUM);
        if (s == ZAP_OK)
            s = zap_allreduce(g[r], ZAP_IN_PLACE, vb[r].data(), big, ZAP_DT_INT32, ZAP_OP_SUM);
        return s;
    });
    for (int r : members) {
        EXPECT_EQ(st[r], ZAP_OK) << "rank " << r;
        EXPECT_EQ(out[r], 1 + 2 + 4 + 5);
        EXPECT_EQ(vb[r][big - 1], 8);
        EXPECT_STREQ(algorithm(g[r], big * 4, false), "hier");
    }
    for (auto *x : g)
        zap_comm_destroy(x);
}

// --- broadcast ---------------------------------------------------------------------

namespace {
void check_bcast(RankWorld &w, size_t bytes, int root, const char *what)
{
    std::vector<std::vector<uint8_t>> buf(w.n, std::vector<uint8_t>(bytes + 1, 0xEE));
    auto data = test_pattern(bytes, (uint32_t)(bytes * 7 + root));
    if (bytes > 0)
        std::memcpy(buf[root].data(), data.data(), bytes);
    auto st = w.each([&](int r) { return zap_bcast(w.c[r], buf[r].data(), bytes, ZAP_DT_UINT8, root); });
    for (int r = 0; r < w.n; r++) {
        ASSERT_EQ(st[r], ZAP_OK) << what << " root " << root << " rank " << r << " " << zap_status_string(st[r]);
        if (bytes > 0) {
            ASSERT_EQ(0, std::memcmp(buf[r].data(), data.data(), bytes))
                << what << ": " << bytes << " bytes from root " << root << " differ on rank " << r;
        }
        ASSERT_EQ(buf[r][bytes], 0xEE) << what << ": overflow on rank " << r;
    }
}
} // namespace

TEST(HierBcast, EveryRootAndSizeArrivesIntactOnEveryLayout)
{
    for (const Layout &l : layouts()) {
        HostWorld w(l);
        for (int root = 0; root < w.n; root++)
            for (size_t bytes : {(size_t)0, (size_t)1, (size_t)4099, (size_t)8193, (size_t)100003})
                check_bcast(w, bytes, root, l.name);
    }
}

TEST(HierBcast, LargeMessagesInChunksArriveIntact)
{
    for (const Layout &l : {block("2x3", {3, 3}), block("1+3", {1, 3}), block("2+2+3", {2, 2, 3}),
                            cyclic("3x2-cyclic", {2, 2, 2})}) {
        Params p;
        p.pipeline(64 << 10);
        HostWorld w(l, &p);
        for (int root : {0, 1, w.n - 1})
            check_bcast(w, (size_t)1 << 20 | 5, root, l.name);
    }
    HostWorld w(block("2x2", {2, 2}));
    check_bcast(w, (size_t)9 << 20, 3, "2x2 default chunks");
}

TEST(HierBcast, EveryHostReceivesTheDataOnce)
{
    // (H-1) messages' worth cross hosts in all, whatever the root.
    for (const Layout &l : {block("2x3", {3, 3}), block("3x2", {2, 2, 2}), block("2+2+3", {2, 2, 3}),
                            cyclic("2x2-cyclic", {2, 2})}) {
        HostWorld w(l);
        size_t bytes = (size_t)2 << 20;
        for (int root : {0, w.n - 1}) {
            auto before = w.xhost_all();
            check_bcast(w, bytes, root, l.name);
            auto host = per_host(l, before, w.xhost_all());
            uint64_t total = std::accumulate(host.begin(), host.end(), (uint64_t)0);
            double bound = (double)(l.nhosts() - 1) * (double)bytes;
            EXPECT_LE((double)total, 1.05 * bound) << l.name << " root " << root;
            EXPECT_GE((double)total, bound) << l.name << " root " << root;
        }
    }
}

// Across hosts a broadcast agrees one way, down the tree (agree_tree.c): a
// rank whose root differs from its sender's sees the mismatch and revokes
// the communicator; every other rank fails that call or its next one, never
// returning success from the next; a new communicator works. Small calls
// (the data in the tree's message) and large ones (the header first).
TEST(HierBcast, ARootThatDiffersOnOneRankFailsThereAndRevokesTheCommunicator)
{
    for (size_t bytes : {(size_t)16, (size_t)100000}) {
        HostWorld w(block("2x3", {3, 3}));
        LogCapture cap;
        std::vector<std::vector<uint8_t>> buf(w.n, std::vector<uint8_t>(bytes, 1));
        auto st = w.each([&](int r) { return zap_bcast(w.c[r], buf[r].data(), bytes, ZAP_DT_UINT8, r == 4 ? 2 : 1); });
        EXPECT_EQ(st[4], ZAP_ERR_MISMATCH) << bytes;
        for (int r = 0; r < w.n; r++) {
            if (r != 4) {
                EXPECT_TRUE(st[r] == ZAP_OK || st[r] == ZAP_ERR_REVOKED) << "rank " << r << ": " << st[r];
            }
        }
        EXPECT_TRUE(cap.contains("differ")) << cap.all();
        auto next = w.each([&](int r) { return zap_bcast(w.c[r], buf[r].data(), bytes, ZAP_DT_UINT8, 0); });
        for (int r = 0; r < w.n; r++)
            EXPECT_NE(next[r], ZAP_OK) << "rank " << r << " after the revocation";
    }
    HostWorld fresh(block("2x3", {3, 3}));
    check_bcast(fresh, 77, 5, "on a new communicator");
}

// A rank whose own arguments are wrong fails with its own error and never
// leaves the others waiting: with a root out of range it has no place in the
// tree and revokes at once; as a sender (a host's leader) with no buffer it
// sends its children a bad header. The others fail that call or the next.
TEST(HierBcast, ARanksOwnBadArgumentsFailItAndNoRankWaits)
{
    for (int bad : {1, 3}) {
        HostWorld w(block("2x3", {3, 3}));
        std::vector<std::vector<uint8_t>> buf(w.n, std::vector<uint8_t>(64, 1));
        LogCapture cap;
        auto st = w.each([&](int r) {
            if (r != bad)
                return zap_bcast(w.c[r], buf[r].data(), 64, ZAP_DT_UINT8, 0);
            return bad == 1 ? zap_bcast(w.c[r], buf[r].data(), 64, ZAP_DT_UINT8, 99)
                            : zap_bcast(w.c[r], nullptr, 64, ZAP_DT_UINT8, 0);
        });
        EXPECT_EQ(st[bad], ZAP_ERR_INVALID_PARAM) << "bad rank " << bad;
        auto next = w.each([&](int r) { return zap_bcast(w.c[r], buf[r].data(), 64, ZAP_DT_UINT8, 0); });
        for (int r = 0; r < w.n; r++)
            EXPECT_TRUE(st[r] != ZAP_OK || next[r] != ZAP_OK) << "bad rank " << bad << ", rank " << r;
    }
}

// A stream of small broadcasts across hosts needs no round trip per call:
// the root completes every one of them before any other rank has entered
// the first (the messages wait at the receivers), then the others receive
// them all, in order.
TEST(HierBcast, TheRootOfSmallBroadcastsDoesNotWaitForItsReceivers)
{
    zap_comm_params_t p{};
    p.timeout_s = 10; // a root that waited for its receivers would fail here instead of hanging
    HostWorld w(block("2x3", {3, 3}), &p);
    const int calls = 20;
    std::vector<std::vector<int64_t>> buf(w.n, std::vector<int64_t>(calls * 4, -1));
    for (int i = 0; i < calls; i++)
        for (int j = 0; j < 4; j++)
            buf[2][i * 4 + j] = i * 1000 + j;
    for (int i = 0; i < calls; i++)
        ASSERT_EQ(zap_bcast(w.c[2], &buf[2][i * 4], 4, ZAP_DT_INT64, 2), ZAP_OK) << "call " << i;
    auto st = w.each([&](int r) {
        if (r == 2)
            return ZAP_OK;
        for (int i = 0; i < calls; i++) {
            zap_status_t s = zap_bcast(w.c[r], &buf[r][i * 4], 4, ZAP_DT_INT64, 2);
            if (s != ZAP_OK)
                return s;
        }
        return ZAP_OK;
    });
    for (int r = 0; r < w.n; r++) {
        EXPECT_EQ(st[r], ZAP_OK) << "rank " << r;
        EXPECT_EQ(buf[r], buf[2]) << "rank " << r;
    }
}

// --- barrier -----------------------------------------------------------------------

TEST(HierBarrier, NoRankLeavesBeforeEveryRankEntered)
{
    for (const Layout &l : layouts()) {
        HostWorld w(l);
        std::atomic<int> entered{0};
        std::vector<int> seen(w.n, -1);
        auto st = w.each([&](int r) {
            entered++;
            zap_status_t s = zap_barrier(w.c[r]);
            seen[r] = entered.load();
            return s;
        });
        for (int r = 0; r < w.n; r++) {
            EXPECT_EQ(st[r], ZAP_OK);
            EXPECT_EQ(seen[r], w.n) << l.name << " rank " << r << " left the barrier early";
        }
    }
}

// --- scatter(v) and allgather(v) ----------------------------------------------------

namespace {
// Counts with zeros and uneven sizes: rank r gets (r * 37 + seed) % 5 * k elements.
std::vector<size_t> uneven_counts(int n, size_t k, int seed)
{
    std::vector<size_t> c(n);
    for (int r = 0; r < n; r++)
        c[r] = (size_t)((r * 37 + seed) % 5) * k;
    return c;
}
std::vector<ptrdiff_t> displs_of(const std::vector<size_t> &counts, size_t gap)
{
    std::vector<ptrdiff_t> d(counts.size());
    size_t at = 0;
    for (size_t r = counts.size(); r-- > 0;) { // reversed order, with gaps: displacements need not follow ranks
        d[r] = (ptrdiff_t)at;
        at += counts[r] + gap;
    }
    return d;
}
// Back to back in rank order: on block layouts each host's parts form one run
// of the root's buffer (sent from there), on cyclic ones they do not (packed).
std::vector<ptrdiff_t> displs_in_order(const std::vector<size_t> &counts)
{
    std::vector<ptrdiff_t> d(counts.size());
    size_t at = 0;
    for (size_t r = 0; r < counts.size(); r++) {
        d[r] = (ptrdiff_t)at;
        at += counts[r];
    }
    return d;
}
} // namespace

TEST(HierScatterv, EveryRootAndUnevenCountsArriveIntact)
{
    for (const Layout &l : layouts()) {
        HostWorld w(l);
        for (int form = 0; form < 4; form++) {
            size_t k = form % 2 ? 3000 : 1;
            bool in_order = form >= 2;
            auto counts = uneven_counts(w.n, k, (int)k);
            auto displs = in_order ? displs_in_order(counts) : displs_of(counts, 2);
            size_t span = in_order ? std::accumulate(counts.begin(), counts.end(), (size_t)0) : displs[0] + counts[0] + 2;
            std::vector<int32_t> src(span);
            for (size_t i = 0; i < span; i++)
                src[i] = (int32_t)(i * 2654435761u);
            for (int root = 0; root < w.n; root++) {
                std::vector<std::vector<int32_t>> out(w.n, std::vector<int32_t>(5 * k + 1, -7));
                auto st = w.each([&](int r) {
                    return zap_scatterv(w.c[r], r == root ? src.data() : nullptr, r == root ? counts.data() : nullptr,
                                        r == root ? displs.data() : nullptr, out[r].data(), 5 * k, ZAP_DT_INT32, root);
                });
                for (int r = 0; r < w.n; r++) {
                    ASSERT_EQ(st[r], ZAP_OK) << l.name << " root " << root << " rank " << r;
                    for (size_t i = 0; i < counts[r]; i++)
                        ASSERT_EQ(out[r][i], src[displs[r] + i])
                            << l.name << (in_order ? ", in order" : ", reversed") << " root " << root << " rank " << r;
                    ASSERT_EQ(out[r][counts[r]], -7) << "overflow";
                }
            }
        }
    }
}

TEST(HierScatterv, EachHostReceivesItsShareOnce)
{
    Layout l = block("2+2+3", {2, 2, 3});
    HostWorld w(l);
    size_t k = 10000;
    std::vector<int64_t> src(k * w.n, 5);
    std::vector<std::vector<int64_t>> out(w.n, std::vector<int64_t>(k));
    for (int root : {0, 6}) {
        auto before = w.xhost_all();
        auto st = w.each([&](int r) { return zap_scatter(w.c[r], src.data(), out[r].data(), k, ZAP_DT_INT64, root); });
        for (int r = 0; r < w.n; r++)
            ASSERT_EQ(st[r], ZAP_OK);
        auto host = per_host(l, before, w.xhost_all());
        uint64_t total = std::accumulate(host.begin(), host.end(), (uint64_t)0);
        int root_host = (int)l.hosts[root];
        int others = 0;
        for (uint64_t hh : l.hosts)
            others += (int)hh != root_host;
        double bound = (double)others * (double)(k * 8);
        EXPECT_GE((double)total, bound);
        EXPECT_LE((double)total, 1.01 * bound + 4096) << "root " << root;
    }
}

TEST(HierScatterv, ACapacityTooSmallIsReportedOnEveryHost)
{
    HostWorld w(block("2x3", {3, 3}));
    std::vector<size_t> counts(w.n, 4);
    counts[4] = 9; // rank 4 has room for 4
    std::vector<ptrdiff_t> displs(w.n);
    for (int r = 0; r < w.n; r++)
        displs[r] = (ptrdiff_t)r * 10;
    std::vector<int32_t> src(10 * w.n, 1);
    std::vector<std::vector<int32_t>> out(w.n, std::vector<int32_t>(9));
    LogCapture cap;
    auto st = w.each([&](int r) {
        return zap_scatterv(w.c[r], src.data(), counts.data(), displs.data(), out[r].data(), 4, ZAP_DT_INT32, 1);
    });
    for (int r = 0; r < w.n; r++)
        EXPECT_EQ(st[r], r == 4 ? ZAP_ERR_INVALID_PARAM : ZAP_ERR_MISMATCH) << "rank " << r;
}

TEST(HierAllgatherv, UnevenCountsAndInPlaceLandEverywhere)
{
    for (const Layout &l : layouts()) {
        HostWorld w(l);
        for (size_t k : {(size_t)1, (size_t)2500}) {
            auto counts = uneven_counts(w.n, k, 3);
            auto displs = displs_of(counts, 1);
            size_t span = displs[0] + counts[0] + 1;
            for (bool in_place : {false, true}) {
                std::vector<std::vector<uint16_t>> mine(w.n), out(w.n, std::vector<uint16_t>(span, 0xBEEF));
                for (int r = 0; r < w.n; r++) {
                    mine[r].resize(counts[r]);
                    for (size_t i = 0; i < counts[r]; i++)
                        mine[r][i] = (uint16_t)(r * 1000 + i);
                    if (in_place)
                        std::copy(mine[r].begin(), mine[r].end(), out[r].begin() + displs[r]);
                }
                auto st = w.each([&](int r) {
                    return zap_allgatherv(w.c[r], in_place ? ZAP_IN_PLACE : mine[r].data(), counts[r], out[r].data(),
                                          counts.data(), displs.data(), ZAP_DT_UINT16);
                });
                for (int r = 0; r < w.n; r++) {
                    ASSERT_EQ(st[r], ZAP_OK) << l.name << " rank " << r;
                    for (int q = 0; q < w.n; q++)
                        for (size_t i = 0; i < counts[q]; i++)
                            ASSERT_EQ(out[r][displs[q] + i], (uint16_t)(q * 1000 + i))
                                << l.name << " rank " << r << " block " << q << " in place " << in_place;
                }
            }
        }
    }
}

TEST(HierAllgatherv, EachHostReceivesTheOthersBlocksOnce)
{
    for (const Layout &l : {block("2x3", {3, 3}), block("3x2", {2, 2, 2}), cyclic("2+2+3-cyclic", {2, 2, 3})}) {
        HostWorld w(l);
        size_t k = 20000;
        std::vector<std::vector<int32_t>> out(w.n, std::vector<int32_t>(k * w.n));
        std::vector<int32_t> mine(k, 3);
        auto before = w.xhost_all();
        auto st = w.each([&](int r) { return zap_allgather(w.c[r], mine.data(), k, out[r].data(), ZAP_DT_INT32); });
        for (int r = 0; r < w.n; r++)
            ASSERT_EQ(st[r], ZAP_OK);
        auto host = per_host(l, before, w.xhost_all());
        uint64_t total = std::accumulate(host.begin(), host.end(), (uint64_t)0);
        double bound = (double)(l.nhosts() - 1) * (double)(k * 4 * w.n);
        EXPECT_GE((double)total, bound) << l.name;
        EXPECT_LE((double)total, 1.01 * bound + 8192) << l.name;
    }
}

// --- several operations at once ------------------------------------------------------

TEST(Hier, OutstandingOperationsOfEveryKindCompleteWaitedInReverse)
{
    // Large calls post on the node's and the leaders' communicators; ranks
    // whose operations progress in different orders must still post there
    // in the same order.
    for (const Layout &l : {block("2x3", {3, 3}), block("2+2+3", {2, 2, 3}), cyclic("3x2-cyclic", {2, 2, 2})}) {
        HostWorld w(l);
        const int nops = 8;
        size_t count = 70000;
        std::vector<std::vector<std::vector<int32_t>>> buf(w.n, std::vector<std::vector<int32_t>>(nops));
        auto st = w.each([&](int r) {
            std::vector<zap_request_t *> req(nops, nullptr);
            for (int i = 0; i < nops; i++) {
                size_t n = i % 3 == 2 ? 3 : count;
                buf[r][i].assign(n, r + i);
                zap_status_t s = i % 2 == 0 ? zap_iallreduce(w.c[r], ZAP_IN_PLACE, buf[r][i].data(), n, ZAP_DT_INT32,
                                                             ZAP_OP_SUM, &req[i])
                                            : zap_ibcast(w.c[r], buf[r][i].data(), n, ZAP_DT_INT32, i % w.n, &req[i]);
                if (s != ZAP_OK)
                    return s;
            }
            zap_status_t worst = ZAP_OK;
            for (int i = nops - 1; i >= 0; i--) {
                zap_status_t s = zap_request_wait(req[i]);
                zap_request_free(req[i]);
                worst = s != ZAP_OK ? s : worst;
            }
            return worst;
        });
        for (int r = 0; r < w.n; r++) {
            ASSERT_EQ(st[r], ZAP_OK) << l.name << " rank " << r;
            for (int i = 0; i < nops; i++) {
                int32_t want = i % 2 == 0 ? w.n * (w.n - 1) / 2 + w.n * i : i % w.n + i;
                ASSERT_EQ(buf[r][i].back(), want) << l.name << " rank " << r << " operation " << i;
            }
        }
    }
}

// --- reduce, reduce_scatter(_block), gather(v) -------------------------------------

namespace {
// Each host's ranks in local-rank order, hosts numbered by their lowest rank
// (zap's numbering, whatever the identities' values).
std::vector<std::vector<int>> host_ranks(const Layout &l)
{
    std::vector<std::vector<int>> g;
    std::vector<uint64_t> ids;
    for (size_t r = 0; r < l.hosts.size(); r++) {
        size_t i = (size_t)(std::find(ids.begin(), ids.end(), l.hosts[r]) - ids.begin());
        if (i == ids.size()) {
            ids.push_back(l.hosts[r]);
            g.emplace_back();
        }
        g[i].push_back((int)r);
    }
    return g;
}

// Affine maps (8 bytes each) from in[order[0]], in[order[1]], ... combined
// left to right, elements [from, from + count).
std::vector<uint8_t> fold_in_order(const std::vector<std::vector<uint8_t>> &in, const std::vector<int> &order,
                                   size_t from, size_t count)
{
    std::vector<uint8_t> acc(in[order[0]].begin() + from * 8, in[order[0]].begin() + (from + count) * 8);
    for (size_t k = 1; k < order.size(); k++)
        for (size_t i = 0; i < count; i++)
            affine_ref(acc.data(), in[order[k]].data() + from * 8, i);
    return acc;
}

// The hosts' sums: each host's inputs in local-rank order (whole vectors).
std::vector<std::vector<uint8_t>> host_sums(const Layout &l, const std::vector<std::vector<uint8_t>> &in, size_t count)
{
    std::vector<std::vector<uint8_t>> sums;
    for (const auto &ranks : host_ranks(l))
        sums.push_back(fold_in_order(in, ranks, 0, count));
    return sums;
}

std::vector<int> upto(int n)
{
    std::vector<int> v(n);
    std::iota(v.begin(), v.end(), 0);
    return v;
}

void check_reduce(HostWorld &w, zap_dtype_t dt, zap_op_t op, size_t count, int root, uint64_t seed, bool in_place,
                  const std::string &what)
{
    size_t es = dsize(dt);
    std::vector<std::vector<uint8_t>> in(w.n, std::vector<uint8_t>(count * es + 1));
    for (int r = 0; r < w.n; r++)
        fill_input(dt, op, r, seed, in[r].data(), count);
    std::vector<uint8_t> out(count * es + 1, 0xA5);
    if (in_place)
        std::copy(in[root].begin(), in[root].begin() + count * es, out.begin());
    auto st = w.each([&](int r) {
        const void *src = r == root && in_place ? ZAP_IN_PLACE : in[r].data();
        return zap_reduce(w.c[r], src, r == root ? out.data() : nullptr, count, dt, op, root);
    });
    for (int r = 0; r < w.n; r++)
        ASSERT_EQ(st[r], ZAP_OK) << what << " root " << root << " rank " << r << " " << zap_status_string(st[r]);
    std::vector<uint8_t> ref(8);
    for (size_t i = 0; i < count; i++) {
        reference(dt, op, in, i, ref.data());
        ASSERT_EQ(0, std::memcmp(ref.data(), out.data() + i * es, es))
            << what << ": " << zap_dtype_name(dt) << " " << zap_op_name(op) << " count " << count << " root " << root
            << " element " << i << " differs from the reference";
    }
    ASSERT_EQ(out[count * es], 0xA5) << what << ": overflow at the root";
}

// counts (block: counts[0] for every rank) against the reference, each
// rank's part only; recvbuf beyond the part untouched (not in place).
void check_reduce_scatter(HostWorld &w, zap_dtype_t dt, zap_op_t op, const std::vector<size_t> &counts, bool block,
                          bool in_place, uint64_t seed, const std::string &what)
{
    size_t es = dsize(dt), total = std::accumulate(counts.begin(), counts.end(), (size_t)0);
    std::vector<std::vector<uint8_t>> in(w.n, std::vector<uint8_t>(total * es + 1)), out(w.n);
    for (int r = 0; r < w.n; r++) {
        fill_input(dt, op, r, seed, in[r].data(), total);
        out[r] = in_place ? in[r] : std::vector<uint8_t>(counts[r] * es + 1, 0xA5);
    }
    auto st = w.each([&](int r) {
        const void *src = in_place ? ZAP_IN_PLACE : in[r].data();
        return block ? zap_reduce_scatter_block(w.c[r], src, out[r].data(), counts[0], dt, op)
                     : zap_reduce_scatter(w.c[r], src, out[r].data(), counts.data(), dt, op);
    });
    std::vector<uint8_t> ref(8);
    size_t off = 0;
    for (int r = 0; r < w.n; r++) {
        ASSERT_EQ(st[r], ZAP_OK) << what << " rank " << r << " " << zap_status_string(st[r]);
        for (size_t i = 0; i < counts[r]; i++) {
            reference(dt, op, in, off + i, ref.data());
            ASSERT_EQ(0, std::memcmp(ref.data(), out[r].data() + i * es, es))
                << what << ": " << zap_dtype_name(dt) << " " << zap_op_name(op) << " rank " << r << " element " << i;
        }
        if (!in_place) {
            ASSERT_EQ(out[r][counts[r] * es], 0xA5) << what << ": overflow on rank " << r;
        }
        off += counts[r];
    }
}

// gatherv (gather when v is false: counts all alike, displacements r * count)
// of uint16 blocks; the root's recvbuf outside the blocks untouched.
void check_gatherv(HostWorld &w, const std::vector<size_t> &counts, const std::vector<ptrdiff_t> &displs, int root,
                   bool v, bool in_place, const std::string &what)
{
    size_t span = 0;
    for (int r = 0; r < w.n; r++)
        span = std::max(span, (size_t)displs[r] + counts[r]);
    std::vector<std::vector<uint16_t>> mine(w.n);
    for (int r = 0; r < w.n; r++)
        for (size_t i = 0; i < counts[r]; i++)
            mine[r].push_back((uint16_t)(r * 4099 + i * 7 + root));
    std::vector<uint16_t> out(span + 1, 0xBEEF);
    if (in_place)
        std::copy(mine[root].begin(), mine[root].end(), out.begin() + displs[root]);
    auto st = w.each([&](int r) {
        const void *src = r == root && in_place ? ZAP_IN_PLACE : (const void *)mine[r].data();
        void *recv = r == root ? out.data() : nullptr;
        return v ? zap_gatherv(w.c[r], src, counts[r], recv, r == root ? counts.data() : nullptr,
                               r == root ? displs.data() : nullptr, ZAP_DT_UINT16, root)
                 : zap_gather(w.c[r], src, counts[r], recv, ZAP_DT_UINT16, root);
    });
    std::vector<uint16_t> want(span + 1, 0xBEEF);
    for (int r = 0; r < w.n; r++) {
        ASSERT_EQ(st[r], ZAP_OK) << what << " root " << root << " rank " << r << " " << zap_status_string(st[r]);
        std::copy(mine[r].begin(), mine[r].end(), want.begin() + displs[r]);
    }
    for (size_t i = 0; i <= span; i++)
        ASSERT_EQ(out[i], want[i]) << what << " root " << root << " element " << i;
}

const char *first_choice(const char *collective)
{
    std::vector<zap_coll_selection_row_t> rows(zap_coll_selection_table(nullptr, 0));
    zap_coll_selection_table(rows.data(), rows.size());
    for (const auto &r : rows)
        if (std::string(r.collective) == collective)
            return r.algorithm;
    return "";
}
} // namespace

TEST(Hier, ReduceReduceScatterAndGatherListTheHierarchyFirst)
{
    EXPECT_STREQ(first_choice("reduce"), "hier");
    EXPECT_STREQ(first_choice("reduce_scatter"), "hier");
    EXPECT_STREQ(first_choice("gather"), "hier");
}

TEST(HierReduce, EveryDatatypeOpAndRootMatchesTheReferenceOnEveryLayout)
{
    // 1, 3 and 257 elements ride the agreement; 3000 are past 8 KiB (the
    // staged form) from 4-byte types on.
    for (const Layout &l : layouts()) {
        HostWorld w(l);
        for (zap_dtype_t dt : kTypes)
            for (zap_op_t op : kOps) {
                if (!zap_op_supported(dt, op))
                    continue;
                bool every_root = (dt == ZAP_DT_INT32 && op == ZAP_OP_SUM) ||
                                  (dt == ZAP_DT_FLOAT64 && op == ZAP_OP_MAX) || (dt == ZAP_DT_UINT8 && op == ZAP_OP_BXOR);
                for (size_t count : {(size_t)0, (size_t)1, (size_t)3, (size_t)257, (size_t)3000})
                    for (int root = 0; root < w.n; root++) {
                        if (!every_root && root != (int)(count + dt + op) % w.n)
                            continue;
                        check_reduce(w, dt, op, count, root, count * 31 + dt + root, count == 3 || root == 1, l.name);
                    }
            }
    }
}

TEST(HierReduce, LargeVectorsFromEveryRootMatchTheReference)
{
    for (const Layout &l : layouts()) {
        HostWorld w(l);
        for (int root = 0; root < w.n; root++) {
            check_reduce(w, ZAP_DT_INT64, ZAP_OP_SUM, 100003, root, 11, root % 2 == 0, l.name);
            check_reduce(w, ZAP_DT_FLOAT32, ZAP_OP_SUM, 65536 + 7, root, 12, root % 2 == 1, l.name);
        }
    }
}

TEST(HierReduce, CombinesInLocalRankOrderThenHostOrder)
{
    // Affine maps compose associatively but not commutatively: passed as a
    // commutative op they take the hierarchy, whose documented order (each
    // host in local-rank order, then the hosts in host order) alone gives
    // these bytes; on cyclic layouts that is not rank order.
    UserOp op(affine_compose, 1);
    for (const Layout &l : layouts()) {
        HostWorld w(l);
        for (size_t count : {(size_t)100, (size_t)5000}) { // in the agreement; staged
            std::vector<std::vector<uint8_t>> in(w.n, std::vector<uint8_t>(count * 8));
            for (int r = 0; r < w.n; r++)
                fill_affine(r, count, in[r].data(), count);
            auto sums = host_sums(l, in, count);
            auto want = fold_in_order(sums, upto((int)sums.size()), 0, count);
            for (int root : {0, w.n - 1, 1}) {
                std::vector<uint8_t> out(count * 8, 0);
                auto st = w.each([&](int r) {
                    return zap_reduce(w.c[r], in[r].data(), r == root ? out.data() : nullptr, count, ZAP_DT_2INT, op.op,
                                      root);
                });
                for (int r = 0; r < w.n; r++)
                    ASSERT_EQ(st[r], ZAP_OK) << l.name << " rank " << r;
                ASSERT_TRUE(out == want) << l.name << " count " << count << " root " << root
                                         << ": not (hosts in local-rank order) in host order";
            }
        }
    }
}

TEST(HierReduce, ANonCommutativeOpKeepsRankOrder)
{
    UserOp op(affine_compose, 0);
    for (const Layout &l : {cyclic("3x2-cyclic", {2, 2, 2}), cyclic("2+2+3-cyclic", {2, 2, 3}), block("1+3", {1, 3})}) {
        HostWorld w(l);
        for (size_t count : {(size_t)100, (size_t)5000}) {
            std::vector<std::vector<uint8_t>> in(w.n, std::vector<uint8_t>(count * 8));
            for (int r = 0; r < w.n; r++)
                fill_affine(r, count + 1, in[r].data(), count);
            auto want = fold_in_order(in, upto(w.n), 0, count);
            for (int root : {0, w.n - 1}) {
                std::vector<uint8_t> out(count * 8, 0);
                auto st = w.each([&](int r) {
                    return zap_reduce(w.c[r], in[r].data(), r == root ? out.data() : nullptr, count, ZAP_DT_2INT, op.op,
                                      root);
                });
                for (int r = 0; r < w.n; r++)
                    ASSERT_EQ(st[r], ZAP_OK) << l.name << " rank " << r;
                ASSERT_TRUE(out == want) << l.name << " count " << count << " root " << root << ": not rank order";
            }
        }
    }
}

TEST(HierReduce, OnlyLeadersSendAcrossHostsAndEachHostAtMostTwiceItsShare)
{
    // Leaders' Rabenseifner among H hosts (H a power of two here): each host
    // sends (H-1)/H of the vector in the halving and at most that again in
    // the gather, where a flat tree sends whole vectors across for every
    // edge that crosses hosts.
    for (const Layout &l : {block("2x3", {3, 3}), cyclic("2x2-cyclic", {2, 2}), block("4x2", {2, 2, 2, 2}),
                            cyclic("1+3-cyclic", {1, 3})}) {
        HostWorld w(l);
        size_t count = (size_t)1 << 20; // 4 MiB of int32
        std::vector<int32_t> in(count, 1), out(count);
        int H = l.nhosts();
        double bound = 2.0 * (H - 1) / H * (double)(count * 4);
        for (int root : {0, w.n - 1}) {
            auto before = w.xhost_all();
            auto st = w.each([&](int r) {
                return zap_reduce(w.c[r], in.data(), r == root ? out.data() : nullptr, count, ZAP_DT_INT32, ZAP_OP_SUM,
                                  root);
            });
            auto after = w.xhost_all();
            for (int r = 0; r < w.n; r++)
                ASSERT_EQ(st[r], ZAP_OK);
            ASSERT_EQ(out[count - 1], w.n);
            auto host = per_host(l, before, after);
            uint64_t total = std::accumulate(host.begin(), host.end(), (uint64_t)0);
            for (int h = 1; h <= H; h++)
                EXPECT_LE((double)host[h], 1.01 * bound + 4096) << l.name << " host " << h << " root " << root;
            // In all: the halving's (H-1) n and the gather's log2(H)/2 n
            // (it retraces the halving: each of its log2 H levels moves half
            // the vector), whatever the ranks per host.
            double all = ((H - 1) + std::log2((double)H) / 2) * (double)(count * 4);
            EXPECT_GE((double)total, all) << l.name << " root " << root;
            EXPECT_LE((double)total, 1.01 * all + 4096) << l.name << " root " << root;
            auto groups = host_ranks(l);
            for (const auto &g : groups)
                for (size_t k = 1; k < g.size(); k++)
                    EXPECT_EQ(after[g[k]], before[g[k]]) << l.name << " rank " << g[k] << " is not its host's leader";
        }
    }
}

TEST(HierReduceScatter, EveryDatatypeAndOpMatchesTheReferenceInEveryForm)
{
    for (const Layout &l : layouts()) {
        HostWorld w(l);
        for (zap_dtype_t dt : kTypes)
            for (zap_op_t op : kOps) {
                if (!zap_op_supported(dt, op))
                    continue;
                uint64_t seed = dt * 7 + op;
                // Small (in the agreement) and staged; block and v-form with
                // zeros; in place.
                for (size_t k : {(size_t)1, (size_t)700}) {
                    check_reduce_scatter(w, dt, op, std::vector<size_t>(w.n, k), true, k == 1, seed, l.name);
                    check_reduce_scatter(w, dt, op, uneven_counts(w.n, k, (int)seed), false, k == 700, seed + 1,
                                         l.name);
                }
            }
    }
}

TEST(HierReduceScatter, LargeUnevenPartsAndZeroCountsMatchTheReference)
{
    for (const Layout &l : layouts()) {
        HostWorld w(l);
        std::string what = l.name;
        check_reduce_scatter(w, ZAP_DT_INT32, ZAP_OP_SUM, uneven_counts(w.n, 20011, 1), false, false, 3, what);
        check_reduce_scatter(w, ZAP_DT_FLOAT64, ZAP_OP_SUM, uneven_counts(w.n, 9001, 2), false, true, 4, what);
        check_reduce_scatter(w, ZAP_DT_UINT16, ZAP_OP_BXOR, std::vector<size_t>(w.n, 30000), true, true, 5, what);
        std::vector<size_t> one_part(w.n, 0); // the whole vector to one rank
        one_part[w.n - 1] = 50000;
        check_reduce_scatter(w, ZAP_DT_INT64, ZAP_OP_MAX, one_part, false, false, 6, what);
        check_reduce_scatter(w, ZAP_DT_INT32, ZAP_OP_SUM, std::vector<size_t>(w.n, 0), true, false, 7, what);
    }
}

TEST(HierReduceScatter, CombinesInLocalRankOrderThenAlongTheHostsRing)
{
    // Small: each host in local-rank order, then the hosts in host order;
    // staged: each host in local-rank order, then host g's parts along the
    // leaders' ring, ((S[g+1] op S[g+2]) op ...) op S[g].
    UserOp op(affine_compose, 1);
    for (const Layout &l : layouts()) {
        HostWorld w(l);
        auto groups = host_ranks(l);
        int H = (int)groups.size();
        for (size_t k : {(size_t)20, (size_t)1000}) {
            std::vector<size_t> counts = uneven_counts(w.n, k, 4);
            size_t total = std::accumulate(counts.begin(), counts.end(), (size_t)0);
            bool small = total * 8 <= 8192;
            std::vector<std::vector<uint8_t>> in(w.n, std::vector<uint8_t>(total * 8));
            for (int r = 0; r < w.n; r++)
                fill_affine(r, k + 9, in[r].data(), total);
            auto sums = host_sums(l, in, total);
            std::vector<std::vector<uint8_t>> out(w.n);
            for (int r = 0; r < w.n; r++)
                out[r].assign(counts[r] * 8 + 8, 0);
            auto st = w.each([&](int r) {
                return zap_reduce_scatter(w.c[r], in[r].data(), out[r].data(), counts.data(), ZAP_DT_2INT, op.op);
            });
            size_t off = 0;
            for (int r = 0; r < w.n; r++) {
                ASSERT_EQ(st[r], ZAP_OK) << l.name << " rank " << r;
                int g = 0;
                while (std::find(groups[g].begin(), groups[g].end(), r) == groups[g].end())
                    g++;
                std::vector<int> order = upto(H);
                if (!small)
                    for (int j = 0; j < H; j++)
                        order[j] = (g + 1 + j) % H;
                auto want = fold_in_order(sums, order, off, counts[r]);
                ASSERT_EQ(0, std::memcmp(want.data(), out[r].data(), counts[r] * 8))
                    << l.name << " k " << k << " rank " << r << ": not the documented order";
                off += counts[r];
            }
        }
    }
}

TEST(HierReduceScatter, EachHostSendsTheOtherHostsPartsOfItsSumOnce)
{
    // Host g sends n - n_g elements (n_g its own ranks' parts): (H-1)/H of
    // the vector where the hosts' parts are equal, and nothing else.
    for (const Layout &l : {block("2x3", {3, 3}), block("3x2", {2, 2, 2}), block("1+3", {1, 3}),
                            cyclic("2+2+3-cyclic", {2, 2, 3})}) {
        HostWorld w(l);
        for (bool block_form : {true, false}) {
            std::vector<size_t> counts = block_form ? std::vector<size_t>(w.n, 100000) : uneven_counts(w.n, 40000, 2);
            size_t total = std::accumulate(counts.begin(), counts.end(), (size_t)0);
            std::vector<int32_t> in(total, 1);
            std::vector<std::vector<int32_t>> out(w.n, std::vector<int32_t>(total));
            auto before = w.xhost_all();
            auto st = w.each([&](int r) {
                return block_form ? zap_reduce_scatter_block(w.c[r], in.data(), out[r].data(), counts[0], ZAP_DT_INT32,
                                                             ZAP_OP_SUM)
                                  : zap_reduce_scatter(w.c[r], in.data(), out[r].data(), counts.data(), ZAP_DT_INT32,
                                                       ZAP_OP_SUM);
            });
            for (int r = 0; r < w.n; r++)
                ASSERT_EQ(st[r], ZAP_OK);
            auto host = per_host(l, before, w.xhost_all());
            auto groups = host_ranks(l);
            for (size_t g = 0; g < groups.size(); g++) {
                size_t own = 0;
                for (int r : groups[g])
                    own += counts[r];
                double bound = (double)((total - own) * 4);
                uint64_t sent = host[l.hosts[groups[g][0]]];
                EXPECT_GE((double)sent, bound) << l.name << " host " << g;
                EXPECT_LE((double)sent, 1.01 * bound + 4096) << l.name << " host " << g << " block " << block_form;
            }
        }
    }
}

TEST(HierGather, EveryRootUnevenCountsAndInPlaceLandInPlace)
{
    for (const Layout &l : layouts()) {
        HostWorld w(l);
        for (size_t k : {(size_t)1, (size_t)3000}) {
            auto counts = uneven_counts(w.n, k, (int)k); // zeros among them
            auto displs = displs_of(counts, 3);          // reversed, with gaps
            std::vector<size_t> even(w.n, k);
            std::vector<ptrdiff_t> packed(w.n);
            for (int r = 0; r < w.n; r++)
                packed[r] = (ptrdiff_t)(r * k);
            for (int root = 0; root < w.n; root++) {
                std::string what = std::string(l.name) + " k " + std::to_string(k);
                check_gatherv(w, counts, displs, root, true, root % 2 == 1, what + " gatherv");
                check_gatherv(w, even, packed, root, false, root % 2 == 0, what + " gather");
            }
        }
    }
}

TEST(HierGather, AllZeroCountsAndEmptyHostsComplete)
{
    for (const Layout &l : {block("1+3", {1, 3}), block("2+2+3", {2, 2, 3})}) {
        HostWorld w(l);
        std::vector<size_t> zero(w.n, 0), some(w.n, 0);
        std::vector<ptrdiff_t> at(w.n, 0);
        for (int root : {0, w.n - 1})
            check_gatherv(w, zero, at, root, true, false, std::string(l.name) + " all zero");
        // Only the last host's ranks send anything.
        auto groups = host_ranks(l);
        for (int r : groups.back())
            some[r] = 5;
        for (int r = 0; r < w.n; r++)
            at[r] = (ptrdiff_t)(r * 5);
        for (int root : {0, w.n - 1})
            check_gatherv(w, some, at, root, true, false, std::string(l.name) + " one host");
    }
}

TEST(HierGather, EachHostsBlocksCrossOnceInOneMessageFromItsLeader)
{
    for (const Layout &l : {block("2+2+3", {2, 2, 3}), cyclic("3x2-cyclic", {2, 2, 2}), block("1+3", {1, 3})}) {
        HostWorld w(l);
        size_t k = 20000;
        auto counts = uneven_counts(w.n, k, 1);
        std::vector<ptrdiff_t> displs(w.n);
        size_t total = 0;
        for (int r = 0; r < w.n; r++) {
            displs[r] = (ptrdiff_t)total;
            total += counts[r];
        }
        std::vector<int64_t> mine(5 * k, 9), out(total);
        auto groups = host_ranks(l);
        for (int root : {0, w.n - 1}) {
            auto before = w.xhost_all();
            auto st = w.each([&](int r) {
                return zap_gatherv(w.c[r], mine.data(), counts[r], r == root ? out.data() : nullptr, counts.data(),
                                   displs.data(), ZAP_DT_INT64, root);
            });
            auto after = w.xhost_all();
            for (int r = 0; r < w.n; r++)
                ASSERT_EQ(st[r], ZAP_OK);
            int root_host = (int)(std::find_if(groups.begin(), groups.end(),
                                               [&](const std::vector<int> &g) {
                                                   return std::find(g.begin(), g.end(), root) != g.end();
                                               }) -
                                  groups.begin());
            for (int g = 0; g < (int)groups.size(); g++) {
                uint64_t data = 0;
                for (int r : groups[g])
                    data += counts[r] * 8;
                int leader = groups[g][0];
                uint64_t sent = after[leader] - before[leader];
                if (g != root_host) {
                    EXPECT_GE(sent, data) << l.name << " host " << g;
                    EXPECT_LE((double)sent, 1.01 * (double)data + 2048) << l.name << " host " << g;
                }
                for (size_t i = 1; i < groups[g].size(); i++)
                    EXPECT_EQ(after[groups[g][i]], before[groups[g][i]])
                        << l.name << " rank " << groups[g][i] << " is not its host's leader";
            }
        }
    }
}

TEST(HierGather, ACountOtherThanTheRootsIsReportedOnEveryHost)
{
    for (const Layout &l : {block("2x3", {3, 3}), cyclic("3x2-cyclic", {2, 2, 2})}) {
        HostWorld w(l);
        // One rank sends one element more, on the root's host and off it
        // (root 0); two ranks of one host off it send one more and one fewer,
        // so that only the counts in the host's message tell.
        for (std::pair<int, int> odd : {std::pair<int, int>{1, -1}, {4, -1}, {4, 5}}) {
            std::vector<size_t> counts(w.n, 4);
            std::vector<ptrdiff_t> displs(w.n);
            for (int r = 0; r < w.n; r++)
                displs[r] = (ptrdiff_t)r * 8;
            std::vector<int32_t> mine(8, 1), out(8 * w.n);
            LogCapture cap;
            auto st = w.each([&](int r) {
                size_t n = r == odd.first ? 5 : r == odd.second ? 3 : 4;
                return zap_gatherv(w.c[r], mine.data(), n, r == 0 ? out.data() : nullptr, counts.data(), displs.data(),
                                   ZAP_DT_INT32, 0);
            });
            for (int r = 0; r < w.n; r++)
                EXPECT_EQ(st[r], r == 0 ? ZAP_ERR_INVALID_PARAM : ZAP_ERR_MISMATCH)
                    << l.name << " odd rank " << odd.first << " rank " << r;
            EXPECT_TRUE(cap.contains("sent")) << cap.all();
        }
        check_gatherv(w, std::vector<size_t>(w.n, 2), std::vector<ptrdiff_t>{0, 2, 4, 6, 8, 10}, 3, true, false,
                      "after the mismatch");
    }
}

TEST(Hier, OutstandingReducesGathersAndReduceScattersCompleteWaitedInReverse)
{
    for (const Layout &l : {block("2+2+3", {2, 2, 3}), cyclic("3x2-cyclic", {2, 2, 2})}) {
        HostWorld w(l);
        const int nops = 9;
        size_t count = 7000; // staged: past the agreement's 8 KiB
        std::vector<std::vector<std::vector<int32_t>>> in(w.n, std::vector<std::vector<int32_t>>(nops)),
            out(w.n, std::vector<std::vector<int32_t>>(nops));
        auto st = w.each([&](int r) {
            std::vector<zap_request_t *> req(nops, nullptr);
            for (int i = 0; i < nops; i++) {
                in[r][i].assign(count * w.n, r + i);
                out[r][i].assign(count * w.n, -1);
                int root = i % w.n;
                zap_status_t s = i % 3 == 0 ? zap_ireduce(w.c[r], in[r][i].data(), out[r][i].data(), count * w.n,
                                                          ZAP_DT_INT32, ZAP_OP_SUM, root, &req[i])
                                 : i % 3 == 1 ? zap_igather(w.c[r], in[r][i].data(), count, out[r][i].data(),
                                                            ZAP_DT_INT32, root, &req[i])
                                              : zap_ireduce_scatter_block(w.c[r], in[r][i].data(), out[r][i].data(),
                                                                          count, ZAP_DT_INT32, ZAP_OP_SUM, &req[i]);
                if (s != ZAP_OK)
                    return s;
            }
            zap_status_t worst = ZAP_OK;
            for (int i = nops - 1; i >= 0; i--) {
                zap_status_t s = zap_request_wait(req[i]);
                zap_request_free(req[i]);
                worst = s != ZAP_OK ? s : worst;
            }
            return worst;
        });
        int32_t sum_r = w.n * (w.n - 1) / 2;
        for (int r = 0; r < w.n; r++) {
            ASSERT_EQ(st[r], ZAP_OK) << l.name << " rank " << r;
            for (int i = 0; i < nops; i++) {
                int root = i % w.n;
                if (i % 3 == 0 && r == root) {
                    ASSERT_EQ(out[r][i].back(), sum_r + w.n * i) << l.name << " operation " << i;
                }
                if (i % 3 == 1 && r == root) {
                    for (int q = 0; q < w.n; q++)
                        ASSERT_EQ(out[r][i][q * count], q + i) << l.name << " operation " << i << " block " << q;
                }
                if (i % 3 == 2) {
                    ASSERT_EQ(out[r][i][count - 1], sum_r + w.n * i) << l.name << " operation " << i;
                }
            }
        }
    }
}

namespace {
// The rank that leaves in the middle of req, as a crash would: once its
// agreement is done, after `tests` more progress calls and delay_us, it
// closes its transport and drops the request. Returns its own verdict.
zap_status_t leave_mid_call(zap_request_t *req, zap_transport_t *t, int tests, useconds_t delay_us)
{
    int done = 0;
    zap_status_t s = ZAP_OK;
    while (zap_coll_test_agreeing(req) && s == ZAP_OK && !done)
        s = zap_request_test(req, &done);
    for (int i = 0; i < tests && s == ZAP_OK && !done; i++)
        s = zap_request_test(req, &done);
    if (delay_us > 0)
        usleep(delay_us);
    zap_transport_close(t);
    zap_request_free(req);
    return ZAP_ERR_PEER_FAILED;
}
} // namespace

TEST(Hier, ALeaderGoneAfterTheAgreementFailsTheStagesNamingItNotAHang)
{
    // Rank 3, host 2's leader, leaves once its agreement is done, so the
    // others meet its absence in the node's and the leaders' stages: every
    // rank returns within the timeout, every rank that needed rank 3's data
    // (the root; its host; all, for reduce_scatter) with an error, and the
    // log names rank 3. The root's host's other ranks may finish their part
    // (reduce, gather) before anything fails. Late: rank 3 leaves 100 ms
    // after its agreement, once the others have posted what waits for it,
    // so their requests fail (silently, on this transport) rather than
    // their posts: the error must still name rank 3.
    for (int run = 0; run < 6; run++) {
        int kind = run % 3;
        bool late = run >= 3;
        Params p;
        p.timeout(5);
        HostWorld w(block("2x3", {3, 3}), &p);
        LogCapture cap;
        size_t count = 30000; // staged: past the agreement
        std::vector<std::vector<int32_t>> in(w.n, std::vector<int32_t>(count * w.n, 1)),
            out(w.n, std::vector<int32_t>(count * w.n));
        auto st = w.each([&](int r) {
            zap_request_t *req = nullptr;
            zap_status_t s = kind == 0 ? zap_ireduce(w.c[r], in[r].data(), out[r].data(), count, ZAP_DT_INT32,
                                                     ZAP_OP_SUM, 0, &req)
                             : kind == 1 ? zap_igather(w.c[r], in[r].data(), count, out[r].data(), ZAP_DT_INT32, 0, &req)
                                         : zap_ireduce_scatter_block(w.c[r], in[r].data(), out[r].data(), count,
                                                                     ZAP_DT_INT32, ZAP_OP_SUM, &req);
            if (s != ZAP_OK)
                return s;
            if (r == 3)
                return leave_mid_call(req, w.t[3], 0, late ? 100000 : 0);
            s = zap_request_wait(req);
            zap_request_free(req);
            return s;
        });
        for (int r = 0; r < w.n; r++) {
            bool may_finish = kind != 2 && (r == 1 || r == 2);
            EXPECT_TRUE(st[r] == ZAP_ERR_PEER_FAILED || st[r] == ZAP_ERR_REVOKED || (may_finish && st[r] == ZAP_OK))
                << "kind " << kind << (late ? " late" : "") << " rank " << r << " " << zap_status_string(st[r]);
        }
        EXPECT_TRUE(cap.contains("rank 3")) << "kind " << kind << (late ? " late" : "") << "\n" << cap.all();
    }
}

TEST(Hier, EverySurvivorOfALeaderLostInAPipelinedAllreduceFailsForTheDeadPeer)
{
    // Rank 0, host 0's leader, leaves in the middle of a 4 MiB allreduce,
    // whose chunks have several stages outstanding on the node's and the
    // leaders' communicators. A survivor may learn of it from another
    // survivor's revocation of the parent or of a stage, in any order: each
    // must carry the dead peer (ZAP_ERR_PEER_FAILED), never a bare
    // cancellation (ZAP_ERR_REVOKED, "cancelled there") of a stage that a
    // survivor gave up when its parent failed, and every revocation's log
    // line names the dead peer (a parent failed by its stage takes the
    // stage's culprit).
    for (int run = 0; run < 8; run++) {
        Params p;
        p.timeout(5);
        HostWorld w(block("2x3", {3, 3}), &p);
        LogCapture cap;
        size_t count = (size_t)1 << 20;
        std::vector<std::vector<int32_t>> in(w.n, std::vector<int32_t>(count, 1)), out(w.n, std::vector<int32_t>(count));
        auto st = w.each([&](int r) {
            zap_request_t *req = nullptr;
            zap_status_t s = zap_iallreduce(w.c[r], in[r].data(), out[r].data(), count, ZAP_DT_INT32, ZAP_OP_SUM, &req);
            if (s != ZAP_OK)
                return s;
            if (r == 0)
                return leave_mid_call(req, w.t[0], 20 * (run % 4), 0); /* a few stages in */
            s = zap_request_wait(req);
            zap_request_free(req);
            return s;
        });
        for (int r = 1; r < w.n; r++)
            EXPECT_EQ(st[r], ZAP_ERR_PEER_FAILED) << "run " << run << " rank " << r << " " << zap_status_string(st[r]);
        EXPECT_FALSE(cap.contains("cancelled there")) << "run " << run << "\n" << cap.all();
        EXPECT_FALSE(cap.contains("that operation (peer failed)")) << "a revocation without its dead peer, run " << run
                                                                    << "\n" << cap.all();
    }
}

TEST(Hier, ADeadRankFailsReduceGatherAndReduceScatterNamingItNotAHang)
{
    // Rank 4 (not a leader, not on the root's host) is gone before the call:
    // every other rank returns an error within the timeout, and the log
    // names rank 4.
    for (int kind = 0; kind < 3; kind++) {
        Params p;
        p.timeout(5);
        HostWorld w(block("2x3", {3, 3}), &p);
        LogCapture cap;
        zap_transport_close(w.t[4]);
        size_t count = 30000; // staged: past the agreement
        std::vector<std::vector<int32_t>> in(w.n, std::vector<int32_t>(count * w.n, 1)),
            out(w.n, std::vector<int32_t>(count * w.n));
        auto st = w.each([&](int r) {
            if (r == 4)
                return ZAP_OK;
            return kind == 0   ? zap_reduce(w.c[r], in[r].data(), out[r].data(), count, ZAP_DT_INT32, ZAP_OP_SUM, 0)
                   : kind == 1 ? zap_gather(w.c[r], in[r].data(), count, out[r].data(), ZAP_DT_INT32, 0)
                               : zap_reduce_scatter_block(w.c[r], in[r].data(), out[r].data(), count, ZAP_DT_INT32,
                                                          ZAP_OP_SUM);
        });
        for (int r = 0; r < w.n; r++) {
            if (r != 4) {
                EXPECT_NE(st[r], ZAP_OK) << "kind " << kind << " rank " << r;
            }
        }
        EXPECT_TRUE(cap.contains("rank 4")) << cap.all();
    }
}
