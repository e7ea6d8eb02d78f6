// Collectives across hosts: in-process ranks placed on emulated hosts
// (zap_inproc_world_set_hosts), so the hosts' hierarchy (coll/hier) runs as
// it does between processes on several machines. Layouts 2x2, 2x3, 3x2,
// uneven 1+3 and 2+2+3, and ranks dealt to hosts in turn; every datatype and
// op, every root, small and large (pipelined, sliced) sizes, against a
// reference computed here, with identical bytes on every rank; the bytes
// that cross hosts against their lower bounds (zap_transport_traffic).
#include "coll_harness.h"
#include "log_capture.h"
#include <atomic>
#include <numeric>
#include <string>
extern "C" {
#include "zap/config.h"
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

TEST(HierBcast, ARootOutOfRangeOnOneRankIsReportedEverywhere)
{
    HostWorld w(block("2x3", {3, 3}));
    for (size_t bytes : {(size_t)16, (size_t)100000}) {
        LogCapture cap;
        std::vector<std::vector<uint8_t>> buf(w.n, std::vector<uint8_t>(bytes, 1));
        auto st = w.each([&](int r) { return zap_bcast(w.c[r], buf[r].data(), bytes, ZAP_DT_UINT8, r == 4 ? 2 : 1); });
        for (int r = 0; r < w.n; r++)
            EXPECT_EQ(st[r], ZAP_ERR_MISMATCH) << "rank " << r;
    }
    check_bcast(w, 77, 5, "after the mismatch");
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
} // namespace

TEST(HierScatterv, EveryRootAndUnevenCountsArriveIntact)
{
    for (const Layout &l : layouts()) {
        HostWorld w(l);
        for (size_t k : {(size_t)1, (size_t)3000}) {
            auto counts = uneven_counts(w.n, k, (int)k);
            auto displs = displs_of(counts, 2);
            size_t span = displs[0] + counts[0] + 2;
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
                        ASSERT_EQ(out[r][i], src[displs[r] + i]) << l.name << " root " << root << " rank " << r;
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
