// Allreduce over the in-process transport: every algorithm, datatype and op,
// rank counts 1..17, sizes 0 to 4 MiB (sampled: small odd counts for every
// combination, large ones for a few), checked against a reference computed
// here and for identical bytes on every rank.
#include "coll_harness.h"
#include "log_capture.h"
#include <string>
extern "C" {
#include "zap/config.h"
}

using namespace colltest;

namespace {
const char *const kAlgs[] = {"rd", "rabenseifner", "ring", "direct"};

// Runs one allreduce on every rank and checks the result. in_place uses
// ZAP_IN_PLACE. Returns false (after recording failures) on a mismatch.
void check_allreduce(World &w, zap_dtype_t dt, zap_op_t op, size_t count, uint64_t seed, bool in_place)
{
    size_t es = dsize(dt);
    std::vector<std::vector<uint8_t>> in(w.n, std::vector<uint8_t>(count * es + 1));
    std::vector<std::vector<uint8_t>> out(w.n, std::vector<uint8_t>(count * es + 1, 0xA5));
    for (int r = 0; r < w.n; r++)
        fill_input(dt, op, r, seed, in[r].data(), count);
    if (in_place)
        for (int r = 0; r < w.n; r++)
            out[r] = in[r];
    std::vector<zap_status_t> st(w.n, ZAP_OK);
    w.run([&](int r) {
        st[r] = zap_allreduce(w.c[r], in_place ? ZAP_IN_PLACE : in[r].data(), out[r].data(), count, dt, op);
    });
    for (int r = 0; r < w.n; r++)
        ASSERT_EQ(st[r], ZAP_OK) << "rank " << r << " " << zap_status_string(st[r]);
    std::vector<uint8_t> ref(8);
    for (size_t i = 0; i < count; i++) {
        reference(dt, op, in, i, ref.data());
        if (std::memcmp(ref.data(), out[0].data() + i * es, es) != 0) {
            ADD_FAILURE() << zap_dtype_name(dt) << " " << zap_op_name(op) << " count " << count << " element " << i
                          << " differs from the reference";
            return;
        }
    }
    for (int r = 1; r < w.n; r++)
        if (out[r] != out[0]) {
            ADD_FAILURE() << "rank " << r << " holds other bytes than rank 0 (" << zap_dtype_name(dt) << " "
                          << zap_op_name(op) << " count " << count << ")";
            return;
        }
    // The guard byte past the end is untouched.
    for (int r = 0; r < w.n; r++)
        EXPECT_EQ(out[r][count * es], in_place ? in[r][count * es] : 0xA5) << "overflow on rank " << r;
}

class AllreduceAll : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(AllreduceAll, EveryDatatypeAndOpMatchesReferenceOnEveryRank)
{
    const char *alg = kAlgs[std::get<0>(GetParam())];
    int n = std::get<1>(GetParam());
    World w(n, Params().allreduce(alg));
    uint64_t seed = 1;
    for (int d = 0; d < ZAP_DT_COUNT; d++)
        for (int o = 0; o < ZAP_OP_COUNT; o++) {
            zap_dtype_t dt = (zap_dtype_t)d;
            zap_op_t op = (zap_op_t)o;
            if (!zap_op_supported(dt, op) || !classic(dt, op))
                continue;
            for (size_t count : {(size_t)0, (size_t)1, (size_t)3, (size_t)(2 * n + 1), (size_t)257})
                check_allreduce(w, dt, op, count, seed++, (count % 2) == 1 && o == 0);
        }
}

// Large vectors, sampled: the sizes where segmenting and block splits matter.
TEST_P(AllreduceAll, LargeVectorsMatchReference)
{
    const char *alg = kAlgs[std::get<0>(GetParam())];
    int n = std::get<1>(GetParam());
    if (n != 1 && n != 2 && n != 3 && n != 4 && n != 7 && n != 8 && n != 13 && n != 17)
        GTEST_SKIP() << "large sizes sampled on rank counts 1-4, 7, 8, 13, 17 to keep CI short";
    World w(n, Params().allreduce(alg).pipeline(64 << 10)); // several segments per ring block
    check_allreduce(w, ZAP_DT_INT32, ZAP_OP_SUM, 65537, 11, false);
    check_allreduce(w, ZAP_DT_FLOAT16, ZAP_OP_MAX, 40001, 12, true);
    check_allreduce(w, ZAP_DT_UINT8, ZAP_OP_BXOR, 300007, 13, false);
    if (n <= 8)
        check_allreduce(w, ZAP_DT_FLOAT32, ZAP_OP_SUM, (4u << 20) / 4, 14, false); // 4 MiB
}

INSTANTIATE_TEST_SUITE_P(AlgRanks, AllreduceAll,
                         ::testing::Combine(::testing::Range(0, 4), ::testing::Range(1, 18)),
                         [](const ::testing::TestParamInfo<std::tuple<int, int>> &i) {
                             return std::string(kAlgs[std::get<0>(i.param)]) + "_" +
                                    std::to_string(std::get<1>(i.param)) + "ranks";
                         });

// Floats with rounding: the result depends on the order, so it is checked for
// identical bytes on every rank and across runs, and for closeness to a
// double-precision sum.
TEST(Allreduce, FloatRoundingIsDeterministicAndIdenticalOnEveryRank)
{
    for (const char *alg : kAlgs)
        for (int n : {3, 6, 8}) {
            World w(n, Params().allreduce(alg));
            const size_t count = 4099;
            std::vector<std::vector<float>> in(n, std::vector<float>(count));
            for (int r = 0; r < n; r++)
                for (size_t i = 0; i < count; i++)
                    in[r][i] = (float)((double)(mix(r * 131 + i) % 100000) / 7.0 - 7000.0);
            std::vector<std::vector<float>> first;
            for (int run = 0; run < 2; run++) {
                std::vector<std::vector<float>> out(n, std::vector<float>(count));
                w.run([&](int r) {
                    EXPECT_EQ(zap_allreduce(w.c[r], in[r].data(), out[r].data(), count, ZAP_DT_FLOAT32, ZAP_OP_SUM),
                              ZAP_OK);
                });
                for (int r = 1; r < n; r++)
                    ASSERT_EQ(std::memcmp(out[r].data(), out[0].data(), count * 4), 0) << alg << " rank " << r;
                if (run == 0)
                    first = out;
                else
                    ASSERT_EQ(std::memcmp(out[0].data(), first[0].data(), count * 4), 0) << alg << " run to run";
                for (size_t i = 0; i < count; i++) {
                    double ref = 0;
                    for (int r = 0; r < n; r++)
                        ref += in[r][i];
                    ASSERT_NEAR(out[0][i], ref, 1e-3 * (std::fabs(ref) + 1)) << alg << " element " << i;
                }
            }
        }
}

TEST(Allreduce, AutomaticChoiceFollowsTheSelectionTable)
{
    EXPECT_STREQ(zap_coll_auto_algorithm("allreduce", 8, 4), "rd");
    EXPECT_STREQ(zap_coll_auto_algorithm("allreduce", 8, 64), "rd");
    EXPECT_STREQ(zap_coll_auto_algorithm("allreduce", 8 << 20, 4), "ring");
    EXPECT_EQ(zap_coll_auto_algorithm("nosuch", 8, 4), nullptr);
    // The table lists every collective's rows, each collective's together and
    // in match order, allreduce's first.
    size_t total = zap_coll_selection_table(nullptr, 0);
    std::vector<zap_coll_selection_row_t> rows(total);
    EXPECT_EQ(zap_coll_selection_table(rows.data(), rows.size()), total);
    size_t nar = 0, nbc = 0, first_bc = total;
    for (size_t i = 0; i < total; i++) {
        nar += std::string(rows[i].collective) == "allreduce";
        if (std::string(rows[i].collective) == "bcast") {
            first_bc = nbc++ == 0 ? i : first_bc;
        }
    }
    EXPECT_GT(nar, 0u);
    EXPECT_GT(nbc, 0u);
    EXPECT_STREQ(rows[0].collective, "allreduce");
    ASSERT_LT(first_bc, total);
    EXPECT_STREQ(rows[first_bc].collective, "bcast");
    EXPECT_STREQ(rows[first_bc + nbc - 1].collective, "bcast"); // together
}

// The names ZAP_ALLREDUCE_ALG and ZAP_BCAST_ALG accept are the tables': the
// setting's index is the algorithm's place in the table.
TEST(Allreduce, AlgorithmSettingsNameTheTablesAlgorithms)
{
    const zap_config_entry_t *ar = nullptr, *bc = nullptr;
    for (size_t i = 0; i < zap_config_count(); i++) {
        if (std::string(zap_config_entry(i)->name) == "ZAP_ALLREDUCE_ALG")
            ar = zap_config_entry(i);
        if (std::string(zap_config_entry(i)->name) == "ZAP_BCAST_ALG")
            bc = zap_config_entry(i);
    }
    ASSERT_NE(ar, nullptr);
    ASSERT_NE(bc, nullptr);
    EXPECT_STREQ(ar->accepted, "auto|rd|rabenseifner|ring|direct|shm|cma|hier");
    EXPECT_STREQ(bc->accepted, "auto|binomial|scatter_allgather|chain|rd|shm|hier");
    // Each name, forced, is what the communicator runs.
    int i = 0;
    for (const char *name : {"rd", "rabenseifner", "ring", "direct"}) {
        World w(1, Params().allreduce(name));
        zap_comm_attr_t a{};
        a.field_mask = ZAP_COMM_ATTR_ALGORITHMS;
        a.bytes = 64;
        ASSERT_EQ(zap_comm_query(w.c[0], &a), ZAP_OK);
        EXPECT_STREQ(a.allreduce_algorithm, name) << i++;
    }
    for (const char *name : {"binomial", "scatter_allgather", "chain", "rd"}) {
        World w(1, Params().bcast(name));
        zap_comm_attr_t a{};
        a.field_mask = ZAP_COMM_ATTR_ALGORITHMS;
        a.bytes = 64;
        ASSERT_EQ(zap_comm_query(w.c[0], &a), ZAP_OK);
        EXPECT_STREQ(a.bcast_algorithm, name);
    }
}

// An unknown name fails the communicator's creation, from the environment
// and from params alike, with a line listing the valid names.
TEST(Allreduce, UnknownAlgorithmNameIsAnErrorListingValidOnes)
{
    RankWorld w(2, false);
    for (bool from_env : {true, false}) {
        LogCapture log;
        std::vector<zap_comm_t *> c(2, nullptr);
        std::vector<zap_status_t> st(2);
        {
            ScopedEnv env("ZAP_ALLREDUCE_ALG", from_env ? "bogus" : nullptr);
            zap_comm_params_t p{};
            p.allreduce_alg = from_env ? nullptr : "bogus";
            w.run([&](int r) { st[r] = zap_comm_create_ex(w.t[r], &p, &c[r]); });
        }
        EXPECT_EQ(st[0], ZAP_ERR_INVALID_PARAM) << (from_env ? "environment" : "params");
        EXPECT_EQ(st[1], ZAP_ERR_INVALID_PARAM) << (from_env ? "environment" : "params");
        EXPECT_EQ(c[0], nullptr);
        EXPECT_TRUE(log.contains("rabenseifner")) << log.all();
        EXPECT_TRUE(log.contains(from_env ? "ZAP_ALLREDUCE_ALG" : "allreduce_alg")) << log.all();
    }
}

// The algorithm setting is read when a communicator is made: every state of
// the environment then (set, replaced, added beside, removed) is what that
// communicator gets, and later changes leave it as it was.
TEST(Allreduce, AlgorithmSettingIsReadWhenTheCommunicatorIsMade)
{
    RankWorld w(1, false);
    int x = 3, y = 0;
    auto make_and_call = [&] {
        zap_comm_t *c = nullptr;
        zap_status_t st = zap_comm_create(w.t[0], &c);
        if (st == ZAP_OK)
            st = zap_allreduce(c, &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM);
        zap_comm_destroy(c);
        return st;
    };
    unsetenv("ZAP_ALLREDUCE_ALG");
    EXPECT_EQ(make_and_call(), ZAP_OK);
    setenv("ZAP_ALLREDUCE_ALG", "bogus", 1);
    EXPECT_EQ(make_and_call(), ZAP_ERR_INVALID_PARAM);
    setenv("ZAP_ALLREDUCE_ALG", "ring", 1);
    EXPECT_EQ(make_and_call(), ZAP_OK);
    setenv("ZAP_COLL_TEST_NEIGHBOUR", "1", 1); // environ grows (and may move)
    setenv("ZAP_ALLREDUCE_ALG", "bogus", 1);
    EXPECT_EQ(make_and_call(), ZAP_ERR_INVALID_PARAM);
    unsetenv("ZAP_COLL_TEST_NEIGHBOUR"); // entries shift
    EXPECT_EQ(make_and_call(), ZAP_ERR_INVALID_PARAM);
    unsetenv("ZAP_ALLREDUCE_ALG");
    EXPECT_EQ(make_and_call(), ZAP_OK);
    EXPECT_EQ(y, 3);
    // A communicator keeps what it read: a bad value set afterwards changes
    // nothing.
    zap_comm_t *c = nullptr;
    ASSERT_EQ(zap_comm_create_ex(w.t[0], &Params().allreduce("ring"), &c), ZAP_OK);
    setenv("ZAP_ALLREDUCE_ALG", "bogus", 1);
    EXPECT_EQ(zap_allreduce(c, &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
    unsetenv("ZAP_ALLREDUCE_ALG");
    zap_comm_destroy(c);
}

TEST(Allreduce, BitwiseOpOnFloatIsUnsupportedOnThatRankAndMismatchElsewhere)
{
    LogCapture log;
    World w(3);
    std::vector<zap_status_t> st(3);
    float x[3] = {1, 2, 3}, y[3];
    w.run([&](int r) {
        st[r] = zap_allreduce(w.c[r], &x[r], &y[r], 1, ZAP_DT_FLOAT32, r == 1 ? ZAP_OP_BAND : ZAP_OP_SUM);
    });
    EXPECT_EQ(st[1], ZAP_ERR_UNSUPPORTED);
    EXPECT_EQ(st[0], ZAP_ERR_MISMATCH);
    EXPECT_EQ(st[2], ZAP_ERR_MISMATCH);
}
// The direct algorithm's flat exchange meets every mismatch on every rank:
// counts apart (rank 0's message malformed too, the accumulator's start),
// datatypes of one size, a rank failing locally, forced and under auto (where
// sizes past the direct threshold agree flat before rabenseifner or ring).
TEST(Allreduce, DirectReportsEveryMismatchOnEveryRank)
{
    for (const char *alg : {"direct", "auto"})
        for (int n : {3, 4, 8, 9, 17}) {
            for (int odd : {0, n - 1})
                for (size_t big : {(size_t)2, (size_t)300, (size_t)100000}) {
                    LogCapture log;
                    World w(n, Params().allreduce(alg));
                    std::vector<std::vector<int32_t>> in(n, std::vector<int32_t>(big, 1)), out = in;
                    std::vector<zap_status_t> st(n);
                    w.run([&](int r) {
                        size_t count = r == odd ? big : 1;
                        st[r] = zap_allreduce(w.c[r], in[r].data(), out[r].data(), count, ZAP_DT_INT32, ZAP_OP_SUM);
                    });
                    for (int r = 0; r < n; r++)
                        EXPECT_EQ(st[r], ZAP_ERR_MISMATCH)
                            << alg << " " << n << " ranks, rank " << odd << " count " << big << ", rank " << r;
                    EXPECT_TRUE(log.contains("differ") || log.contains("wrong size")) << log.all();
                }
            {
                LogCapture log;
                World w(n, Params().allreduce(alg));
                std::vector<zap_status_t> st(n);
                std::vector<uint32_t> x(n, 1), y(n);
                w.run([&](int r) {
                    st[r] = zap_allreduce(w.c[r], &x[r], &y[r], 1, r == n / 2 ? ZAP_DT_FLOAT32 : ZAP_DT_UINT32,
                                          ZAP_OP_MAX);
                });
                for (int r = 0; r < n; r++)
                    EXPECT_EQ(st[r], ZAP_ERR_MISMATCH) << alg << " " << n << " ranks, rank " << r;
                EXPECT_TRUE(log.contains("datatype")) << log.all();
            }
            {
                LogCapture log;
                World w(n, Params().allreduce(alg));
                std::vector<zap_status_t> st(n);
                std::vector<float> x(n, 1), y(n);
                w.run([&](int r) {
                    st[r] = zap_allreduce(w.c[r], &x[r], &y[r], 1, ZAP_DT_FLOAT32, r == 0 ? ZAP_OP_BAND : ZAP_OP_SUM);
                    // The communicator still works afterwards.
                    float one = 1, sum = 0;
                    EXPECT_EQ(zap_allreduce(w.c[r], &one, &sum, 1, ZAP_DT_FLOAT32, ZAP_OP_SUM), ZAP_OK);
                    EXPECT_EQ(sum, (float)n);
                });
                EXPECT_EQ(st[0], ZAP_ERR_UNSUPPORTED);
                for (int r = 1; r < n; r++)
                    EXPECT_EQ(st[r], ZAP_ERR_MISMATCH) << alg << " " << n << " ranks, rank " << r;
            }
        }
}

// Auto does not take direct (docs/collectives.md, "Selection"): small
// vectors use recursive doubling whether or not a rank runs oversubscribed.
// The float sum tells them apart: direct would add ((1 + 1e8) - 1e8) + 1 = 1,
// rd adds (1 + 1e8) + (-1e8 + 1) = 0.
TEST(Allreduce, AutoTakesRdForSmallVectors)
{
    const float v[4] = {1.0f, 1e8f, -1e8f, 1.0f};
    const size_t big = 1500; // 6000 bytes: rd's row
    ASSERT_STREQ(zap_coll_auto_algorithm("allreduce", big * 4, 4), "rd");
    for (bool over : {false, true}) {
        World w(4, Params().oversub(over));
        for (size_t count : {(size_t)1, big}) {
            std::vector<std::vector<float>> in(4), out(4, std::vector<float>(count, 7.0f));
            for (int r = 0; r < 4; r++)
                in[r].assign(count, v[r]);
            w.run([&](int r) {
                EXPECT_EQ(zap_allreduce(w.c[r], in[r].data(), out[r].data(), count, ZAP_DT_FLOAT32, ZAP_OP_SUM),
                          ZAP_OK);
            });
            float want = 0.0f;
            for (int r = 0; r < 4; r++)
                for (size_t i = 0; i < count; i += count - 1 > 0 ? count - 1 : 1)
                    EXPECT_EQ(out[r][i], want) << (over ? "oversubscribed" : "dedicated") << ", count " << count
                                               << ", rank " << r << ", element " << i;
        }
    }
}

// Under auto, the flat exchange of small vectors and the recursive-doubling
// one of rd-selected rank counts each match their own kind only: a forced
// algorithm past the flat rank limit falls back to recursive doubling.
TEST(Allreduce, DirectForcedOnManyRanksRunsAsRecursiveDoubling)
{
    const int n = 33; // ZAP_COLL_FLAT_MAX_RANKS (core/coll/agree/agree.h) + 1
    World w(n, Params().allreduce("direct"));
    std::vector<int64_t> x(n), y(n);
    w.run([&](int r) {
        x[r] = r;
        EXPECT_EQ(zap_allreduce(w.c[r], &x[r], &y[r], 1, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
    });
    for (int r = 0; r < n; r++)
        EXPECT_EQ(y[r], (int64_t)n * (n - 1) / 2);
}
} // namespace

// Scratch above the pool's largest class is a mapping of its own per
// allocation; a communicator keeps it between calls, so repeated large calls
// map nothing new, results stay right, and destroying the communicator gives
// it back (engine/mem.c, zap_coll_scratch_free). The world's pool is host
// memory, so scratch comes from it on a machine with a GPU too (a managed
// transport pool sends host data's scratch to a separate host pool).
TEST(Allreduce, LargeScratchIsKeptBetweenCallsAndGivenBackAtDestroy)
{
    zap_pool_params_t pp{};
    pp.backend = ZAP_POOL_BACKEND_HOST;
    pp.device = -1;
    pp.name = "keep-test";
    zap_pool_t *pool = nullptr;
    ASSERT_EQ(zap_pool_create(&pp, &pool), ZAP_OK);
    zap_inproc_world_t *iw = nullptr;
    ASSERT_EQ(zap_inproc_world_create(2, pool, &iw), ZAP_OK);
    World w(2, Params().allreduce("rd")); // only for check_allreduce's rank threads and buffers
    std::vector<zap_comm_t *> own(2, nullptr);
    std::vector<zap_transport_t *> t(2, nullptr);
    zap_comm_params_t params = Params().allreduce("rd"); // two slots of the whole vector: 1.2 MiB of scratch
    for (int r = 0; r < 2; r++)
        ASSERT_EQ(zap_inproc_transport(iw, r, &t[r]), ZAP_OK);
    w.run([&](int r) { EXPECT_EQ(zap_comm_create_ex(t[r], &params, &own[r]), ZAP_OK); });
    std::swap(w.c, own); // check_allreduce runs on the world over the host pool
    zap_pool_stats_t s0, s1, s2;
    check_allreduce(w, ZAP_DT_FLOAT32, ZAP_OP_SUM, 600 << 8, 21, false);
    zap_pool_stats(pool, &s0);
    for (int i = 0; i < 5; i++)
        check_allreduce(w, ZAP_DT_FLOAT32, ZAP_OP_SUM, 600 << 8, 22 + i, i % 2 == 1);
    check_allreduce(w, ZAP_DT_INT32, ZAP_OP_SUM, 500 << 8, 30, false); // smaller: a kept buffer fits
    zap_pool_stats(pool, &s1);
    EXPECT_GT(s0.cold_allocs, 0u) << "the first call needs buffers above the largest class";
    EXPECT_EQ(s1.cold_allocs, s0.cold_allocs) << "later calls reuse the kept buffers";
    EXPECT_GT(s1.class_in_use[ZAP_POOL_COLD_CLASS], 0u);
    EXPECT_LE(s1.class_in_use[ZAP_POOL_COLD_CLASS], 4u) << "at most two per communicator, two communicators";
    for (int r = 0; r < 2; r++) {
        zap_comm_destroy(w.c[r]);
        w.c[r] = nullptr;
    }
    std::swap(w.c, own); // the world's own communicators go with it
    zap_pool_stats(pool, &s2);
    EXPECT_EQ(s2.class_in_use[ZAP_POOL_COLD_CLASS], 0u) << "destroy gives the kept buffers back";
    zap_inproc_world_destroy(iw);
    EXPECT_EQ(zap_pool_destroy(pool), ZAP_OK);
}
