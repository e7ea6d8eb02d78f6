// Reduce, reduce_scatter(_block), scan and exscan over the in-process
// transport: every algorithm (forced) on 1-17 ranks, every root, uneven and
// zero counts, in place, a non-commutative user op in rank order, against
// the rank-ordered reference of ref_ops.h; buffers beyond the result are left
// alone; mismatched arguments are reported on every rank.
#include "coll/ref_ops.h"
#include "log_capture.h"
#include <string>
#include <tuple>
extern "C" {
#include "zap/config.h"
}

using namespace colltest;

namespace {

// One case: a datatype and op (or the affine user op) and a count.
struct Case {
    zap_dtype_t dt;
    zap_op_t op; // ZAP_OP_COUNT: the affine user op
    size_t count;
};

struct Inputs {
    zap_dtype_t dt;
    zap_op_t op; // what the call passes
    bool affine;
    std::vector<std::vector<uint8_t>> in;
    Inputs(const Case &c, int n, size_t count, uint64_t seed, zap_op_t user)
        : dt(c.op == ZAP_OP_COUNT ? ZAP_DT_2INT : c.dt), op(c.op == ZAP_OP_COUNT ? user : c.op),
          affine(c.op == ZAP_OP_COUNT), in(n, std::vector<uint8_t>(count * dsize(dt) + 1, 0x5c))
    {
        for (int r = 0; r < n; r++) {
            if (affine)
                fill_affine(r, seed, in[r].data(), count);
            else
                fill_any(dt, op, r, seed, in[r].data(), count);
        }
    }
    std::vector<uint8_t> fold(int lo, int hi, size_t count) const
    {
        return affine ? fold_affine(in, lo, hi, count) : colltest::fold(dt, op, in, lo, hi, count);
    }
    std::string name(size_t count) const
    {
        return std::string(zap_dtype_name(dt)) + " " + zap_op_name(op) + " count " + std::to_string(count);
    }
};

// The cases every algorithm and rank count runs; the larger ones on some
// rank counts only, to keep CI short.
std::vector<Case> cases(int n)
{
    std::vector<Case> v = {{ZAP_DT_INT32, ZAP_OP_SUM, (size_t)(2 * n + 1)},
                           {ZAP_DT_2INT, ZAP_OP_COUNT, 37},
                           {ZAP_DT_FLOAT64, ZAP_OP_MAX, 5},
                           {ZAP_DT_UINT8, ZAP_OP_BXOR, 0}};
    if (n == 1 || n == 2 || n == 3 || n == 4 || n == 7 || n == 8 || n == 13 || n == 17) {
        v.push_back({ZAP_DT_INT32, ZAP_OP_SUM, 70001});
        v.push_back({ZAP_DT_2INT, ZAP_OP_COUNT, 20011});
        v.push_back({ZAP_DT_DOUBLE_INT, ZAP_OP_MINLOC, 3001});
    }
    return v;
}

using AlgRanks = std::tuple<std::string, std::string, int>; // collective, algorithm, ranks

class Reductions : public ::testing::TestWithParam<AlgRanks> {
  protected:
    std::string coll = std::get<0>(GetParam()), alg = std::get<1>(GetParam());
    int n = std::get<2>(GetParam());
    UserOp compose{affine_compose, 0};
};

TEST_P(Reductions, MatchTheRankOrderedReference)
{
    World w(n, Params().alg(coll, alg.c_str()));
    uint64_t seed = 100;
    for (const Case &c : cases(n)) {
        for (bool in_place : {false, true}) {
            Inputs x(c, n, coll == "reduce_scatter" ? 0 : c.count, seed++, compose.op); // reduce_scatter: its own
            size_t es = dsize(x.dt), count = c.count;
            if (coll == "reduce") {
                // Every root for the small cases, a few for the large ones.
                for (int root = 0; root < n; root++) {
                    if (count > 1000 && root != 0 && root != n - 1 && root != n / 2)
                        continue;
                    std::vector<std::vector<uint8_t>> out(n, std::vector<uint8_t>(count * es + 1, 0xA5));
                    if (in_place)
                        out[root] = x.in[root];
                    std::vector<zap_status_t> st(n);
                    w.run([&](int r) {
                        const void *send = in_place && r == root ? ZAP_IN_PLACE : x.in[r].data();
                        st[r] = zap_reduce(w.c[r], send, out[r].data(), count, x.dt, x.op, root);
                    });
                    std::vector<uint8_t> want = x.fold(0, n - 1, count);
                    for (int r = 0; r < n; r++)
                        ASSERT_EQ(st[r], ZAP_OK) << x.name(count) << " root " << root << " rank " << r;
                    ASSERT_EQ(std::memcmp(out[root].data(), want.data(), count * es), 0)
                        << x.name(count) << " root " << root << (in_place ? " in place" : "");
                    for (int r = 0; r < n; r++)
                        if (r != root) { // only the root's recvbuf is written
                            ASSERT_EQ(out[r], std::vector<uint8_t>(count * es + 1, 0xA5)) << "rank " << r;
                        }
                    ASSERT_EQ(out[root][count * es], in_place ? 0x5c : 0xA5) << "past the end";
                }
            } else if (coll == "reduce_scatter") {
                for (bool block : {true, false}) {
                    // Uneven parts with empty ones for the v-form, count each for the block form.
                    std::vector<size_t> counts(n, count);
                    if (!block)
                        for (int r = 0; r < n; r++)
                            counts[r] = r % 3 == 1 ? 0 : count + (size_t)r % 4;
                    size_t total = 0;
                    for (size_t k : counts)
                        total += k;
                    Inputs y(c, n, total, seed++, compose.op);
                    std::vector<std::vector<uint8_t>> out(n);
                    for (int r = 0; r < n; r++)
                        out[r] = in_place ? y.in[r] : std::vector<uint8_t>(total * es + 1, 0xA5);
                    std::vector<zap_status_t> st(n);
                    w.run([&](int r) {
                        const void *send = in_place ? ZAP_IN_PLACE : y.in[r].data();
                        st[r] = block ? zap_reduce_scatter_block(w.c[r], send, out[r].data(), count, y.dt, y.op)
                                      : zap_reduce_scatter(w.c[r], send, out[r].data(), counts.data(), y.dt, y.op);
                    });
                    std::vector<uint8_t> want = y.fold(0, n - 1, total);
                    size_t off = 0;
                    for (int r = 0; r < n; r++) {
                        ASSERT_EQ(st[r], ZAP_OK) << y.name(total) << " rank " << r;
                        ASSERT_EQ(std::memcmp(out[r].data(), want.data() + off * es, counts[r] * es), 0)
                            << y.name(total) << (block ? " block" : " v") << (in_place ? " in place" : "")
                            << " rank " << r;
                        if (!in_place) { // nothing past this rank's part
                            ASSERT_EQ(out[r][counts[r] * es], 0xA5) << "rank " << r;
                        }
                        off += counts[r];
                    }
                }
            } else { // scan, exscan
                bool ex = coll == "exscan";
                std::vector<std::vector<uint8_t>> out(n, std::vector<uint8_t>(count * es + 1, 0xA5));
                if (in_place)
                    out = x.in;
                std::vector<zap_status_t> st(n);
                w.run([&](int r) {
                    const void *send = in_place ? ZAP_IN_PLACE : x.in[r].data();
                    st[r] = ex ? zap_exscan(w.c[r], send, out[r].data(), count, x.dt, x.op)
                               : zap_scan(w.c[r], send, out[r].data(), count, x.dt, x.op);
                });
                for (int r = 0; r < n; r++) {
                    ASSERT_EQ(st[r], ZAP_OK) << x.name(count) << " rank " << r;
                    if (ex && r == 0) { // left as it was
                        ASSERT_EQ(out[0], in_place ? x.in[0] : std::vector<uint8_t>(count * es + 1, 0xA5));
                        continue;
                    }
                    std::vector<uint8_t> want = x.fold(0, ex ? r - 1 : r, count);
                    ASSERT_EQ(std::memcmp(out[r].data(), want.data(), count * es), 0)
                        << coll << " " << x.name(count) << (in_place ? " in place" : "") << " rank " << r;
                    ASSERT_EQ(out[r][count * es], in_place ? 0x5c : 0xA5) << "past the end, rank " << r;
                }
            }
        }
    }
}

std::vector<AlgRanks> params()
{
    std::vector<AlgRanks> v;
    const std::pair<const char *, std::vector<const char *>> colls[] = {
        {"reduce", {"binomial", "rabenseifner"}},
        {"reduce_scatter", {"rhalving", "ring"}},
        {"scan", {"rd", "linear"}},
        {"exscan", {"rd", "linear"}}};
    for (auto &c : colls)
        for (const char *a : c.second)
            for (int n = 1; n <= 17; n++)
                v.push_back({c.first, a, n});
    return v;
}

INSTANTIATE_TEST_SUITE_P(AlgRanks, Reductions, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<AlgRanks> &i) {
                             return std::get<0>(i.param) + "_" + std::get<1>(i.param) + "_" +
                                    std::to_string(std::get<2>(i.param)) + "ranks";
                         });

// Every type and op through reduce, reduce_scatter_block and scan under the
// automatic choice, on a few rank counts.
TEST(Reductions, EveryTypeAndOpUnderTheAutomaticChoice)
{
    for (int n : {2, 3, 6}) {
        World w(n);
        uint64_t seed = 5;
        for (auto [dt, op] : all_type_ops()) {
            if (is_complex(dt) && op == ZAP_OP_PROD)
                continue; // exact but for the sign of zero parts, which follows the parenthesisation (test_ops.cc)
            size_t count = 11, es = dsize(dt);
            std::vector<std::vector<uint8_t>> in(n, std::vector<uint8_t>(n * count * es));
            for (int r = 0; r < n; r++)
                fill_any(dt, op, r, seed++, in[r].data(), n * count);
            std::vector<std::vector<uint8_t>> red(n, std::vector<uint8_t>(n * count * es)), rs = red, sc = red;
            w.run([&](int r) {
                EXPECT_EQ(zap_reduce(w.c[r], in[r].data(), red[r].data(), n * count, dt, op, n - 1), ZAP_OK);
                EXPECT_EQ(zap_reduce_scatter_block(w.c[r], in[r].data(), rs[r].data(), count, dt, op), ZAP_OK);
                EXPECT_EQ(zap_scan(w.c[r], in[r].data(), sc[r].data(), n * count, dt, op), ZAP_OK);
            });
            std::string what = std::string(zap_dtype_name(dt)) + " " + zap_op_name(op);
            std::vector<uint8_t> all = fold(dt, op, in, 0, n - 1, n * count);
            EXPECT_EQ(red[n - 1], all) << "reduce " << what;
            for (int r = 0; r < n; r++) {
                EXPECT_EQ(std::memcmp(rs[r].data(), all.data() + r * count * es, count * es), 0)
                    << "reduce_scatter_block " << what << " rank " << r;
                EXPECT_EQ(sc[r], fold(dt, op, in, 0, r, n * count)) << "scan " << what << " rank " << r;
            }
        }
    }
}

TEST(Reductions, NonblockingFormsOutstandingTogether)
{
    for (int n : {1, 3, 4}) {
        World w(n);
        w.run([&](int r) {
            const size_t k = 1000;
            std::vector<int64_t> x(n * k, r + 1), red(n * k, -1), rs(k), sc(k), ex(k, -7);
            zap_request_t *req[4] = {};
            ASSERT_EQ(zap_ireduce(w.c[r], x.data(), red.data(), n * k, ZAP_DT_INT64, ZAP_OP_SUM, 0, &req[0]), ZAP_OK);
            ASSERT_EQ(zap_ireduce_scatter_block(w.c[r], x.data(), rs.data(), k, ZAP_DT_INT64, ZAP_OP_SUM, &req[1]),
                      ZAP_OK);
            ASSERT_EQ(zap_iscan(w.c[r], x.data(), sc.data(), k, ZAP_DT_INT64, ZAP_OP_SUM, &req[2]), ZAP_OK);
            ASSERT_EQ(zap_iexscan(w.c[r], x.data(), ex.data(), k, ZAP_DT_INT64, ZAP_OP_MAX, &req[3]), ZAP_OK);
            for (int i = 3; i >= 0; i--) {
                EXPECT_EQ(zap_request_wait(req[i]), ZAP_OK);
                zap_request_free(req[i]);
            }
            int64_t total = (int64_t)n * (n + 1) / 2, prefix = (int64_t)(r + 1) * (r + 2) / 2;
            if (r == 0) {
                EXPECT_EQ(red[n * k - 1], total);
            }
            EXPECT_EQ(rs[k - 1], total);
            EXPECT_EQ(sc[0], prefix);
            EXPECT_EQ(ex[k - 1], r == 0 ? -7 : r);
        });
    }
}

// Arguments that differ across ranks end as ZAP_ERR_MISMATCH on every rank
// (the rank with its own error: that error), never a hang; the communicator
// works afterwards.
TEST(Reductions, MismatchesAreReportedOnEveryRank)
{
    LogCapture log;
    const int n = 4;
    World w(n);
    UserOp compose(affine_compose, 0), commutative(affine_compose, 1);
    std::vector<int32_t> x(64, 1), y(64);
    auto all = [&](const char *what, std::function<zap_status_t(int)> call, int culprit = -1,
                   zap_status_t own = ZAP_ERR_MISMATCH) {
        std::vector<zap_status_t> st = w.each(call);
        for (int r = 0; r < n; r++)
            EXPECT_EQ(st[r], r == culprit ? own : ZAP_ERR_MISMATCH) << what << " rank " << r;
    };
    all("reduce root", [&](int r) { return zap_reduce(w.c[r], x.data(), y.data(), 8, ZAP_DT_INT32, ZAP_OP_SUM, r == 2); });
    all("reduce count", [&](int r) { return zap_reduce(w.c[r], x.data(), y.data(), r == 1 ? 9 : 8, ZAP_DT_INT32, ZAP_OP_SUM, 0); });
    all("reduce in place off the root",
        [&](int r) { return zap_reduce(w.c[r], r == 3 ? ZAP_IN_PLACE : x.data(), y.data(), 8, ZAP_DT_INT32, ZAP_OP_SUM, 0); },
        3, ZAP_ERR_INVALID_PARAM);
    all("reduce_scatter counts", [&](int r) {
        size_t counts[n] = {2, 2, 2, 2};
        if (r == 0)
            counts[3] = 3;
        return zap_reduce_scatter(w.c[r], x.data(), y.data(), counts, ZAP_DT_INT32, ZAP_OP_SUM);
    });
    all("reduce_scatter block against v", [&](int r) {
        size_t counts[n] = {2, 2, 2, 2};
        return r == 1 ? zap_reduce_scatter_block(w.c[r], x.data(), y.data(), 2, ZAP_DT_INT32, ZAP_OP_SUM)
                      : zap_reduce_scatter(w.c[r], x.data(), y.data(), counts, ZAP_DT_INT32, ZAP_OP_SUM);
    });
    all("reduce_scatter in place on one rank", [&](int r) {
        return zap_reduce_scatter_block(w.c[r], r == 2 ? ZAP_IN_PLACE : x.data(), y.data(), 2, ZAP_DT_INT32, ZAP_OP_SUM);
    });
    all("scan op", [&](int r) { return zap_scan(w.c[r], x.data(), y.data(), 4, ZAP_DT_INT32, r == 0 ? ZAP_OP_MAX : ZAP_OP_SUM); });
    all("exscan commutativity", [&](int r) {
        return zap_exscan(w.c[r], x.data(), y.data(), 4, ZAP_DT_2INT, r == 3 ? commutative.op : compose.op);
    });
    all("scan against exscan", [&](int r) {
        return r == 0 ? zap_exscan(w.c[r], x.data(), y.data(), 4, ZAP_DT_INT32, ZAP_OP_SUM)
                      : zap_scan(w.c[r], x.data(), y.data(), 4, ZAP_DT_INT32, ZAP_OP_SUM);
    });
    all("reduce minloc on ints", [&](int r) { return zap_reduce(w.c[r], x.data(), y.data(), 4, ZAP_DT_INT32, r == 1 ? ZAP_OP_MINLOC : ZAP_OP_SUM, 0); },
        1, ZAP_ERR_UNSUPPORTED);
    EXPECT_TRUE(log.contains("differ")) << log.all();
    w.run([&](int r) {
        int32_t a = r, s = -1;
        EXPECT_EQ(zap_reduce(w.c[r], &a, &s, 1, ZAP_DT_INT32, ZAP_OP_SUM, 1), ZAP_OK);
        if (r == 1) {
            EXPECT_EQ(s, 6);
        }
    });
}

// A zero count moves nothing and completes on every rank, for every form.
TEST(Reductions, ZeroCountsCompleteAndTouchNothing)
{
    for (int n : {1, 2, 5}) {
        World w(n);
        w.run([&](int r) {
            int32_t guard = 77;
            size_t zeros[5] = {0, 0, 0, 0, 0};
            EXPECT_EQ(zap_reduce(w.c[r], nullptr, nullptr, 0, ZAP_DT_INT32, ZAP_OP_SUM, n - 1), ZAP_OK);
            EXPECT_EQ(zap_reduce_scatter_block(w.c[r], nullptr, nullptr, 0, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
            EXPECT_EQ(zap_reduce_scatter(w.c[r], nullptr, nullptr, zeros, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
            EXPECT_EQ(zap_scan(w.c[r], &guard, &guard, 0, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
            EXPECT_EQ(zap_exscan(w.c[r], nullptr, nullptr, 0, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
            EXPECT_EQ(guard, 77);
        });
    }
}

// The selection table lists the new collectives' rows, and each algorithm
// name is the setting's choice at its index.
TEST(Reductions, SettingsNameTheTablesAlgorithms)
{
    const std::pair<const char *, const char *> settings[] = {
        {"ZAP_REDUCE_ALG", "auto|binomial|rabenseifner|shm|hier|cma"},
        {"ZAP_REDUCE_SCATTER_ALG", "auto|rhalving|ring|shm|cma|hier"},
        {"ZAP_GATHER_ALG", "auto|linear|binomial|shm|hier"},
        {"ZAP_ALLTOALL_ALG", "auto|pairwise|bruck|linear|shm|cma"},
        {"ZAP_SCAN_ALG", "auto|rd|linear|shm|blocks|chain"},
        {"ZAP_EXSCAN_ALG", "auto|rd|linear|shm|blocks|chain"}};
    for (auto [name, accepted] : settings) {
        const zap_config_entry_t *e = nullptr;
        for (size_t i = 0; i < zap_config_count(); i++)
            if (std::string(zap_config_entry(i)->name) == name)
                e = zap_config_entry(i);
        ASSERT_NE(e, nullptr) << name;
        EXPECT_STREQ(e->accepted, accepted);
    }
    for (const char *coll : {"reduce", "reduce_scatter", "gather", "alltoall", "scan", "exscan"})
        EXPECT_NE(zap_coll_auto_algorithm(coll, 64, 4), nullptr) << coll;
    EXPECT_STREQ(zap_coll_auto_algorithm("reduce", 8, 4), "binomial");
    EXPECT_STREQ(zap_coll_auto_algorithm("reduce", 1 << 20, 4), "rabenseifner");
    EXPECT_STREQ(zap_coll_auto_algorithm("scan", 1 << 20, 4), "linear");
    // A name the table does not have fails the creation.
    LogCapture log;
    RankWorld rw(1, false);
    zap_comm_t *c = nullptr;
    Params p;
    p.alltoall_alg = "fastest";
    EXPECT_EQ(zap_comm_create_ex(rw.t[0], &p, &c), ZAP_ERR_INVALID_PARAM);
    EXPECT_TRUE(log.contains("pairwise|bruck|linear|shm|cma")) << log.all();
}
} // namespace
