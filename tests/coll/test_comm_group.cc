// Group communicators (zap_comm_create_group, zap_comm_create_subgroup) over
// the in-process transport: made by their members only, with ids the caller
// gives, destroyed locally in any order, many of them one after another with
// flat memory, and several at once with their collectives interleaved.
#include "coll_harness.h"
#include "log_capture.h"
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <unistd.h>

using namespace colltest;

namespace {

// This rank's value in an allreduce on communicator number k.
int64_t value(int k, int rank) { return 1000 * (int64_t)k + rank + 1; }

// The sum an allreduce of value(k, .) over the transport ranks in members gives.
int64_t expected_sum(int k, const std::vector<int> &members)
{
    int64_t s = 0;
    for (int r : members)
        s += value(k, r);
    return s;
}

zap_comm_attr_t query(const zap_comm_t *c, uint64_t mask)
{
    zap_comm_attr_t a{};
    a.field_mask = mask;
    EXPECT_EQ(zap_comm_query(c, &a), ZAP_OK);
    return a;
}

// Resident memory of this process in KiB.
long rss_kib()
{
    long pages = 0, resident = 0;
    FILE *f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr)
        return 0;
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2)
        resident = 0;
    std::fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

TEST(CommGroup, MembersAloneMakeAndUseItWhileOthersDoSomethingElse)
{
    RankWorld w(5, false);
    const std::vector<int> odd = {3, 1}, even = {0, 2, 4}; // any order: rank i of the group is ranks[i]
    std::vector<int64_t> sum(5, -1), bc(5, -1);
    w.run([&](int r) {
        const std::vector<int> &mine = r % 2 ? odd : even;
        zap_comm_t *c = nullptr;
        ASSERT_EQ(zap_comm_create_group(w.t[r], mine.data(), (int)mine.size(), r % 2 ? 7 : 8, nullptr, &c), ZAP_OK);
        zap_comm_attr_t a = query(c, ZAP_COMM_ATTR_RANK | ZAP_COMM_ATTR_SIZE | ZAP_COMM_ATTR_CONTEXT);
        EXPECT_EQ(a.size, (int)mine.size());
        EXPECT_EQ(mine[a.rank], r);
        EXPECT_EQ(a.context_id, r % 2 ? 7u : 8u);
        EXPECT_EQ(a.context_by_zap, 0);
        int64_t x = value(r % 2, r);
        EXPECT_EQ(zap_allreduce(c, &x, &sum[r], 1, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
        bc[r] = a.rank == 0 ? 77 + r : 0;
        EXPECT_EQ(zap_bcast(c, &bc[r], 1, ZAP_DT_INT64, 0), ZAP_OK);
        zap_comm_destroy(c);
    });
    for (int r = 0; r < 5; r++) {
        EXPECT_EQ(sum[r], expected_sum(r % 2, r % 2 ? odd : even)) << "rank " << r;
        EXPECT_EQ(bc[r], 77 + (r % 2 ? odd[0] : even[0])) << "rank " << r;
    }
}

// Creating one sends nothing: a member makes it and destroys it while the
// other members are busy elsewhere (here: not even started), and no message
// is left behind for them.
TEST(CommGroup, CreationAndDestroyAreLocal)
{
    RankWorld w(3, false);
    const int all[3] = {0, 1, 2};
    zap_comm_t *c = nullptr;
    ASSERT_EQ(zap_comm_create_group(w.t[1], all, 3, 5, nullptr, &c), ZAP_OK);
    EXPECT_EQ(query(c, ZAP_COMM_ATTR_SET_UP).set_up, 0) << "the setup waits for the first allreduce or broadcast";
    zap_comm_destroy(c);
    // The same id again, now on every rank, works as if it was never used.
    int64_t sum[3];
    w.run([&](int r) {
        zap_comm_t *g = nullptr;
        ASSERT_EQ(zap_comm_create_group(w.t[r], all, 3, 5, nullptr, &g), ZAP_OK);
        int64_t x = value(0, r);
        EXPECT_EQ(zap_allreduce(g, &x, &sum[r], 1, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
        EXPECT_EQ(query(g, ZAP_COMM_ATTR_SET_UP).set_up, 1);
        zap_comm_destroy(g);
    });
    for (int r = 0; r < 3; r++)
        EXPECT_EQ(sum[r], expected_sum(0, {0, 1, 2}));
}

// A caller's id equal to an id zap gave another communicator on the same
// transport never meets it: the two live in different parts of the tag.
TEST(CommGroup, CallerIdsNeverCollideWithZapIds)
{
    World w(3);
    zap_comm_attr_t a = query(w.c[0], ZAP_COMM_ATTR_CONTEXT);
    EXPECT_EQ(a.context_by_zap, 1);
    const int all[3] = {0, 1, 2};
    std::vector<int64_t> s1(3), s2(3);
    w.run([&](int r) {
        zap_comm_t *g = nullptr;
        ASSERT_EQ(zap_comm_create_group(w.t[r], all, 3, a.context_id, nullptr, &g), ZAP_OK);
        EXPECT_EQ(query(g, ZAP_COMM_ATTR_CONTEXT).context_id, a.context_id);
        // Interleaved, non-blocking on both, waited in the other order.
        int64_t x1 = value(1, r), x2 = value(2, r);
        zap_request_t *q1 = nullptr, *q2 = nullptr;
        ASSERT_EQ(zap_iallreduce(g, &x1, &s1[r], 1, ZAP_DT_INT64, ZAP_OP_SUM, &q1), ZAP_OK);
        ASSERT_EQ(zap_iallreduce(w.c[r], &x2, &s2[r], 1, ZAP_DT_INT64, ZAP_OP_SUM, &q2), ZAP_OK);
        EXPECT_EQ(zap_request_wait(q2), ZAP_OK);
        EXPECT_EQ(zap_request_wait(q1), ZAP_OK);
        zap_request_free(q1);
        zap_request_free(q2);
        zap_comm_destroy(g);
    });
    for (int r = 0; r < 3; r++) {
        EXPECT_EQ(s1[r], expected_sum(1, {0, 1, 2}));
        EXPECT_EQ(s2[r], expected_sum(2, {0, 1, 2}));
    }
}

TEST(CommGroup, BadListsAndIdsAreInvalidParam)
{
    LogCapture log;
    RankWorld w(4, false);
    zap_comm_t *c = nullptr;
    const int ok[2] = {0, 1}, dup[3] = {0, 1, 1}, outside[2] = {0, 4}, negative[2] = {-1, 0}, without[2] = {1, 2};
    EXPECT_EQ(zap_comm_create_group(nullptr, ok, 2, 1, nullptr, &c), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_comm_create_group(w.t[0], nullptr, 2, 1, nullptr, &c), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_comm_create_group(w.t[0], ok, 0, 1, nullptr, &c), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_comm_create_group(w.t[0], ok, 2, 1, nullptr, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_comm_create_group(w.t[0], ok, 2, ZAP_COMM_CONTEXT_ID_MAX + 1, nullptr, &c), ZAP_ERR_INVALID_PARAM);
    EXPECT_TRUE(log.contains("context id")) << log.all();
    EXPECT_EQ(zap_comm_create_group(w.t[0], dup, 3, 1, nullptr, &c), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_comm_create_group(w.t[0], outside, 2, 1, nullptr, &c), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_comm_create_group(w.t[0], negative, 2, 1, nullptr, &c), ZAP_ERR_INVALID_PARAM);
    EXPECT_TRUE(log.contains("listed twice")) << log.all();
    EXPECT_EQ(zap_comm_create_group(w.t[0], without, 2, 1, nullptr, &c), ZAP_ERR_INVALID_PARAM);
    EXPECT_TRUE(log.contains("must list its caller")) << log.all();
    zap_comm_params_t bad{};
    bad.allreduce_alg = "fastest";
    EXPECT_EQ(zap_comm_create_group(w.t[0], ok, 2, 1, &bad, &c), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(c, nullptr);
    // The largest id is fine.
    ASSERT_EQ(zap_comm_create_group(w.t[0], ok, 2, ZAP_COMM_CONTEXT_ID_MAX, nullptr, &c), ZAP_OK);
    zap_comm_destroy(c);
}

// 2,000 group communicators made and destroyed one after another on every
// rank, half with a collective (their setup included): every result right,
// no pool buffer left out, and the process's memory where it was.
TEST(CommGroup, TwoThousandCreateDestroyCyclesKeepMemoryFlat)
{
    RankWorld w(3, false);
    const int all[3] = {0, 1, 2};
    const int cycles = 2000;
    auto run_cycles = [&](int from, int to) {
        w.run([&](int r) {
            for (int i = from; i < to; i++) {
                zap_comm_t *c = nullptr;
                ASSERT_EQ(zap_comm_create_group(w.t[r], all, 3, (uint32_t)i, nullptr, &c), ZAP_OK) << i;
                if (i % 2 == 0) {
                    int64_t x = value(i, r), s = 0;
                    ASSERT_EQ(zap_allreduce(c, &x, &s, 1, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK) << i;
                    ASSERT_EQ(s, expected_sum(i, {0, 1, 2})) << i;
                }
                zap_comm_destroy(c);
            }
        });
    };
    run_cycles(0, 200); // warm: the allocator's arenas, the threads' stacks
    long before = rss_kib();
    run_cycles(200, 200 + cycles);
    long grown = rss_kib() - before;
#if defined(__SANITIZE_ADDRESS__)
    // AddressSanitizer keeps freed memory in quarantine, so the resident size
    // grows whatever the code does; its leak check at exit covers the cycles.
    std::printf("resident growth not checked under AddressSanitizer (%ld KiB)\n", grown);
#else
    EXPECT_LT(grown, 2048) << "KiB grown over " << cycles << " cycles";
#endif
    zap_pool_stats_t st{};
    ASSERT_EQ(zap_pool_stats(zap_transport_pool(w.t[0]), &st), ZAP_OK);
    EXPECT_EQ(st.buffers_out, 0u);
}

// Communicators whose members overlap, their collectives posted in a
// different interleaving on every rank (each communicator's own calls in the
// same order everywhere). A wait advances its own communicator's operations
// only, so a rank drives them all until every one is done (zap_comm_progress
// and tests, as an MPI layer's progress function does), the last posted first.
TEST(CommGroup, OverlappingGroupsInterleaved)
{
    const int n = 4;
    RankWorld w(n, false);
    const std::vector<std::vector<int>> groups = {{0, 1, 2, 3}, {0, 1, 2}, {1, 2, 3}, {3, 0}, {2, 1}};
    std::vector<std::vector<int64_t>> sums(n, std::vector<int64_t>(groups.size(), -1));
    w.run([&](int r) {
        std::vector<zap_comm_t *> c(groups.size(), nullptr);
        std::vector<zap_request_t *> req;
        std::vector<size_t> which;
        std::vector<int64_t> in(groups.size());
        for (size_t k = 0; k < groups.size(); k++) {
            bool member = false;
            for (int m : groups[k])
                member = member || m == r;
            if (member) {
                ASSERT_EQ(zap_comm_create_group(w.t[r], groups[k].data(), (int)groups[k].size(), 100 + (uint32_t)k,
                                                nullptr, &c[k]),
                          ZAP_OK);
            }
        }
        // Rank r posts its communicators' calls starting at communicator r.
        for (size_t i = 0; i < groups.size(); i++) {
            size_t k = (i + (size_t)r) % groups.size();
            if (c[k] == nullptr)
                continue;
            in[k] = value((int)k, r);
            zap_request_t *q = nullptr;
            ASSERT_EQ(zap_iallreduce(c[k], &in[k], &sums[r][k], 1, ZAP_DT_INT64, ZAP_OP_SUM, &q), ZAP_OK);
            req.push_back(q);
            which.push_back(k);
        }
        std::vector<zap_status_t> st(req.size(), ZAP_INPROGRESS);
        for (size_t left = req.size(); left > 0;) {
            for (auto *x : c) {
                if (x != nullptr) {
                    EXPECT_EQ(zap_comm_progress(x), ZAP_OK);
                }
            }
            for (size_t i = req.size(); i-- > 0;) {
                int done = 0;
                if (st[i] != ZAP_INPROGRESS)
                    continue;
                zap_status_t t = zap_request_test(req[i], &done);
                if (done) {
                    st[i] = t;
                    left--;
                }
            }
        }
        for (size_t i = 0; i < req.size(); i++) {
            EXPECT_EQ(st[i], ZAP_OK) << "communicator " << which[i];
            zap_request_free(req[i]);
        }
        for (auto *x : c)
            zap_comm_destroy(x);
    });
    for (int r = 0; r < n; r++)
        for (size_t k = 0; k < groups.size(); k++) {
            bool member = false;
            for (int m : groups[k])
                member = member || m == r;
            if (member) {
                EXPECT_EQ(sums[r][k], expected_sum((int)k, groups[k])) << "rank " << r << " communicator " << k;
            }
        }
}

// Destroy waits for nobody: rank 0 destroys its communicators (in creation
// order) before rank 1 even starts destroying its own (in reverse); were
// destroy collective, rank 0 would wait for rank 1 forever.
TEST(CommGroup, DestroyInDifferentOrdersWithoutWaiting)
{
    RankWorld w(2, false);
    const int both[2] = {0, 1};
    std::atomic<bool> zero_done{false};
    w.run([&](int r) {
        std::vector<zap_comm_t *> c(6, nullptr);
        for (int k = 0; k < 6; k++) {
            ASSERT_EQ(zap_comm_create_group(w.t[r], both, 2, 40 + (uint32_t)k, nullptr, &c[k]), ZAP_OK);
            int64_t x = value(k, r), s = 0;
            ASSERT_EQ(zap_allreduce(c[k], &x, &s, 1, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
            EXPECT_EQ(s, expected_sum(k, {0, 1}));
        }
        if (r == 0) {
            for (auto *x : c)
                zap_comm_destroy(x);
            zero_done = true;
        } else {
            while (!zero_done)
                std::this_thread::yield();
            for (int k = 5; k >= 0; k--)
                zap_comm_destroy(c[k]);
        }
    });
}

// A subgroup names ranks of its parent and takes the parent's settings,
// params' fields over them.
TEST(CommGroup, SubgroupTakesParentRanksAndSettings)
{
    World w(4, Params().allreduce("ring"));
    const int two[2] = {3, 1}; // parent ranks
    std::vector<int64_t> sum(4, -1);
    w.run([&](int r) {
        if (r != 1 && r != 3)
            return;
        zap_comm_t *s = nullptr, *t = nullptr;
        ASSERT_EQ(zap_comm_create_subgroup(w.c[r], two, 2, 9, nullptr, &s), ZAP_OK);
        zap_comm_attr_t a = query(s, ZAP_COMM_ATTR_RANK | ZAP_COMM_ATTR_SIZE | ZAP_COMM_ATTR_ALGORITHMS);
        EXPECT_EQ(a.size, 2);
        EXPECT_EQ(a.rank, r == 3 ? 0 : 1);
        EXPECT_STREQ(a.allreduce_algorithm, "ring") << "the parent's setting";
        Params rd = Params().allreduce("rd").timeout(ZAP_COMM_TIMEOUT_NONE);
        ASSERT_EQ(zap_comm_create_subgroup(w.c[r], two, 2, 10, &rd, &t), ZAP_OK);
        zap_comm_attr_t b = query(t, ZAP_COMM_ATTR_ALGORITHMS | ZAP_COMM_ATTR_TIMEOUT);
        EXPECT_STREQ(b.allreduce_algorithm, "rd") << "params over the parent's";
        EXPECT_EQ(b.timeout_s, ZAP_COMM_TIMEOUT_NONE);
        int64_t x = value(0, r);
        EXPECT_EQ(zap_allreduce(s, &x, &sum[r], 1, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
        int64_t y = 0;
        EXPECT_EQ(zap_allreduce(t, &x, &y, 1, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
        EXPECT_EQ(y, sum[r]);
        zap_comm_destroy(s);
        zap_comm_destroy(t);
    });
    EXPECT_EQ(sum[1], expected_sum(0, {1, 3}));
    EXPECT_EQ(sum[3], expected_sum(0, {1, 3}));
}

// Every collective runs on a group communicator whose members are a part of
// the transport, numbered in the group's order.
TEST(CommGroup, EveryCollectiveRunsOnAGroup)
{
    RankWorld w(5, false);
    const std::vector<int> members = {4, 0, 2};
    w.run([&](int r) {
        if (r != 0 && r != 2 && r != 4)
            return;
        zap_comm_t *c = nullptr;
        ASSERT_EQ(zap_comm_create_group(w.t[r], members.data(), 3, 11, nullptr, &c), ZAP_OK);
        int me = zap_comm_rank(c);
        std::vector<int32_t> big(100000, me + 1), out(100000);
        EXPECT_EQ(zap_allreduce(c, big.data(), out.data(), big.size(), ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
        EXPECT_EQ(out[99999], 6);
        int32_t b = me == 2 ? 55 : 0;
        EXPECT_EQ(zap_bcast(c, &b, 1, ZAP_DT_INT32, 2), ZAP_OK);
        EXPECT_EQ(b, 55);
        int32_t all[3] = {0, 0, 0}, mine = 10 * me;
        EXPECT_EQ(zap_allgather(c, &mine, 1, all, ZAP_DT_INT32), ZAP_OK);
        EXPECT_EQ(all[0] + all[1] + all[2], 30);
        int32_t parts[3] = {7, 8, 9}, got = -1;
        EXPECT_EQ(zap_scatter(c, parts, &got, 1, ZAP_DT_INT32, 0), ZAP_OK);
        EXPECT_EQ(got, 7 + me);
        EXPECT_EQ(zap_barrier(c), ZAP_OK);
        zap_comm_destroy(c);
    });
}

} // namespace
