// The ops and types beyond zap's first ones (logical ops, complex sum and
// product, minloc/maxloc on MPI's pair types) and user ops, through
// allreduce on in-process ranks: every (datatype, op) pair against the
// rank-ordered reference of ref_ops.h, identical bytes on every rank; user
// ops in rank order on every algorithm, non-commutative ones kept off the
// ring; the op API and its agreement.
#include "coll/ref_ops.h"
#include "log_capture.h"
#include <string>
extern "C" {
#include "coll/reduce/reduce.h"
}

using namespace colltest;

namespace {

void check_allreduce_any(World &w, zap_dtype_t dt, zap_op_t op, size_t count, uint64_t seed, bool in_place)
{
    size_t es = dsize(dt);
    std::vector<std::vector<uint8_t>> in(w.n, std::vector<uint8_t>(count * es + 1));
    std::vector<std::vector<uint8_t>> out(w.n, std::vector<uint8_t>(count * es + 1, 0xA5));
    for (int r = 0; r < w.n; r++)
        fill_any(dt, op, r, seed, in[r].data(), count);
    if (in_place)
        out = in;
    std::vector<zap_status_t> st(w.n);
    w.run([&](int r) {
        st[r] = zap_allreduce(w.c[r], in_place ? ZAP_IN_PLACE : in[r].data(), out[r].data(), count, dt, op);
    });
    std::string what = std::string(zap_dtype_name(dt)) + " " + zap_op_name(op) + " count " + std::to_string(count);
    for (int r = 0; r < w.n; r++)
        ASSERT_EQ(st[r], ZAP_OK) << what << " rank " << r;
    std::vector<uint8_t> want = fold(dt, op, in, 0, w.n - 1, count);
    if (is_complex(dt)) { // exact, but the sign of a zero part follows the parenthesisation
        bool f = dt == ZAP_DT_COMPLEX64;
        for (size_t i = 0; i < 2 * count; i++) {
            double x = f ? ((const float *)want.data())[i] : ((const double *)want.data())[i];
            double y = f ? ((const float *)out[0].data())[i] : ((const double *)out[0].data())[i];
            ASSERT_EQ(x, y) << what << " part " << i;
        }
    } else {
        ASSERT_EQ(std::memcmp(want.data(), out[0].data(), count * es), 0) << what;
    }
    for (int r = 1; r < w.n; r++)
        ASSERT_EQ(out[r], out[0]) << what << ": rank " << r << " holds other bytes than rank 0";
}

class OpsRanks : public ::testing::TestWithParam<int> {};

TEST_P(OpsRanks, EveryTypeAndOpMatchesTheRankOrderedReference)
{
    int n = GetParam();
    World w(n);
    uint64_t seed = 7;
    for (auto [dt, op] : all_type_ops())
        for (size_t count : {(size_t)1, (size_t)(2 * n + 1), (size_t)700})
            check_allreduce_any(w, dt, op, count, seed++, count == 1);
}

// Large enough for every algorithm's block splits, on each algorithm.
TEST_P(OpsRanks, PairsAndComplexOnEveryAlgorithm)
{
    int n = GetParam();
    for (const char *alg : {"rd", "rabenseifner", "ring", "direct"}) {
        World w(n, Params().allreduce(alg));
        check_allreduce_any(w, ZAP_DT_DOUBLE_INT, ZAP_OP_MINLOC, 5003, 1, false);
        check_allreduce_any(w, ZAP_DT_LONG_DOUBLE_INT, ZAP_OP_MAXLOC, 301, 2, true);
        check_allreduce_any(w, ZAP_DT_COMPLEX128, ZAP_OP_PROD, 4099, 3, false);
        check_allreduce_any(w, ZAP_DT_UINT16, ZAP_OP_LXOR, 9001, 4, false);
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, OpsRanks, ::testing::Values(1, 2, 3, 5, 8, 13));

// A non-commutative user op in rank order on every algorithm that runs it,
// through the automatic choice's rows too (the ring is kept off: sizes past
// its threshold take Rabenseifner), on every rank count.
class UserOps : public ::testing::TestWithParam<int> {};

TEST_P(UserOps, NonCommutativeAllreduceIsInRankOrderEverywhere)
{
    int n = GetParam();
    UserOp compose(affine_compose, 0);
    for (const char *alg : {"auto", "rd", "rabenseifner", "ring", "direct"}) {
        World w(n, Params().allreduce(alg));
        for (size_t count : {(size_t)1, (size_t)3, (size_t)1000, (size_t)70000}) {
            if (count == 70000 && n > 8 && std::string(alg) != "auto")
                continue; // large on 1-8 ranks per algorithm, every rank count under auto
            std::vector<std::vector<uint8_t>> in(n, std::vector<uint8_t>(count * 8)), out = in;
            for (int r = 0; r < n; r++)
                fill_affine(r, count, in[r].data(), count);
            std::vector<zap_status_t> st(n);
            w.run([&](int r) {
                st[r] = zap_allreduce(w.c[r], in[r].data(), out[r].data(), count, ZAP_DT_2INT, compose.op);
            });
            std::vector<uint8_t> want = fold_affine(in, 0, n - 1, count);
            for (int r = 0; r < n; r++) {
                ASSERT_EQ(st[r], ZAP_OK) << alg << " rank " << r;
                ASSERT_EQ(out[r], want) << alg << " count " << count << " rank " << r << ": not in rank order";
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, UserOps, ::testing::Range(1, 18));

struct Counted {
    std::atomic<int> calls{0};
};

void sum_u64(const void *in, void *inout, size_t count, void *ctx)
{
    ((Counted *)ctx)->calls++;
    for (size_t i = 0; i < count; i++)
        ((uint64_t *)inout)[i] += ((const uint64_t *)in)[i];
}

TEST(UserOp, CommutativeOpGetsItsContextAndSums)
{
    Counted c;
    UserOp sum(sum_u64, 1, &c);
    World w(5, Params().allreduce("ring"));
    const size_t count = 200003; // past the ring's threshold: the ring may run it
    std::vector<std::vector<uint64_t>> in(5, std::vector<uint64_t>(count)), out = in;
    for (int r = 0; r < 5; r++)
        for (size_t i = 0; i < count; i++)
            in[r][i] = mix(r * 1000 + i);
    w.run([&](int r) { EXPECT_EQ(zap_allreduce(w.c[r], in[r].data(), out[r].data(), count, ZAP_DT_UINT64, sum.op), ZAP_OK); });
    for (size_t i = 0; i < count; i += 997) {
        uint64_t want = 0;
        for (int r = 0; r < 5; r++)
            want += in[r][i];
        ASSERT_EQ(out[0][i], want) << i;
    }
    EXPECT_GT(c.calls.load(), 0);
}

TEST(UserOp, CreateRefusesNullAndDestroyIgnoresWhatIsNotOne)
{
    zap_op_t op = ZAP_OP_SUM;
    EXPECT_EQ(zap_op_create(nullptr, 1, nullptr, &op), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(zap_op_create(affine_compose, 1, nullptr, nullptr), ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(op, ZAP_OP_SUM);
    zap_op_destroy(ZAP_OP_SUM);
    zap_op_destroy((zap_op_t)(ZAP_OP_USER_FIRST + 65535));
    ASSERT_EQ(zap_op_create(affine_compose, 0, nullptr, &op), ZAP_OK);
    EXPECT_GE((int)op, (int)ZAP_OP_USER_FIRST);
    EXPECT_STREQ(zap_op_name(op), "user");
    EXPECT_EQ(zap_op_supported(ZAP_DT_FLOAT16, op), 1); // user ops run on every type
    zap_op_destroy(op);
    EXPECT_EQ(zap_op_supported(ZAP_DT_INT32, op), 0); // gone
}

TEST(UserOp, DestroyedOpIsInvalidParamOnItsRankMismatchElsewhere)
{
    LogCapture log;
    UserOp live(affine_compose, 0); // first: the destroyed op's slot is not reused under it
    zap_op_t gone = ZAP_OP_SUM;
    ASSERT_EQ(zap_op_create(affine_compose, 0, nullptr, &gone), ZAP_OK);
    zap_op_destroy(gone);
    ASSERT_NE(gone, live.op);
    World w(3);
    std::vector<zap_status_t> st(3);
    w.run([&](int r) {
        zap_2int_t x[4] = {}, y[4];
        st[r] = zap_allreduce(w.c[r], x, y, 4, ZAP_DT_2INT, r == 1 ? gone : live.op);
    });
    EXPECT_EQ(st[1], ZAP_ERR_INVALID_PARAM);
    EXPECT_EQ(st[0], ZAP_ERR_MISMATCH);
    EXPECT_EQ(st[2], ZAP_ERR_MISMATCH);
    EXPECT_TRUE(log.contains("does not exist")) << log.all();
}

// Ranks agree on "a user op, commutative or not", not on its value: ops
// made by different ranks (as processes would) run together; a commutative
// and a non-commutative one, or a user op and a predefined one, do not.
TEST(UserOp, RanksAgreeOnCommutativityNotOnTheOpsValue)
{
    UserOp a(affine_compose, 0), b(affine_compose, 0), c(affine_compose, 1);
    World w(4);
    std::vector<zap_status_t> st(4);
    auto run = [&](std::function<zap_op_t(int)> pick) {
        w.run([&](int r) {
            zap_2int_t x[3] = {{1, 2}, {3, 4}, {5, 6}}, y[3];
            st[r] = zap_allreduce(w.c[r], x, y, 3, ZAP_DT_2INT, pick(r));
        });
    };
    run([&](int r) { return r % 2 ? a.op : b.op; });
    for (int r = 0; r < 4; r++)
        EXPECT_EQ(st[r], ZAP_OK) << r;
    LogCapture log;
    run([&](int r) { return r == 2 ? c.op : a.op; });
    for (int r = 0; r < 4; r++)
        EXPECT_EQ(st[r], ZAP_ERR_MISMATCH) << r;
    run([&](int r) { return r == 0 ? ZAP_OP_MINLOC : a.op; });
    for (int r = 0; r < 4; r++)
        EXPECT_EQ(st[r], ZAP_ERR_MISMATCH) << r;
    EXPECT_TRUE(log.contains("op")) << log.all();
}

// MPI's C structs for its pair types (MPI 3.1, 5.9.4), written out here.
struct MpiFloatInt { float v; int k; };
struct MpiDoubleInt { double v; int k; };
struct MpiLongInt { long v; int k; };
struct MpiShortInt { short v; int k; };
struct MpiLongDoubleInt { long double v; int k; };

TEST(Types, PairLayoutsAreMpisCStructs)
{
    EXPECT_EQ(zap_dtype_size(ZAP_DT_FLOAT_INT), sizeof(MpiFloatInt));
    EXPECT_EQ(zap_dtype_size(ZAP_DT_DOUBLE_INT), sizeof(MpiDoubleInt));
    EXPECT_EQ(offsetof(zap_double_int_t, k), offsetof(MpiDoubleInt, k));
    EXPECT_EQ(zap_dtype_size(ZAP_DT_LONG_INT), sizeof(MpiLongInt));
    EXPECT_EQ(zap_dtype_size(ZAP_DT_2INT), 2 * sizeof(int));
    EXPECT_EQ(zap_dtype_size(ZAP_DT_SHORT_INT), sizeof(MpiShortInt));
    EXPECT_EQ(offsetof(zap_short_int_t, k), offsetof(MpiShortInt, k));
    EXPECT_EQ(zap_dtype_size(ZAP_DT_LONG_DOUBLE_INT), sizeof(MpiLongDoubleInt));
    EXPECT_EQ(offsetof(zap_long_double_int_t, k), offsetof(MpiLongDoubleInt, k));
    EXPECT_EQ(zap_dtype_size(ZAP_DT_COMPLEX64), 8u);
    EXPECT_EQ(zap_dtype_size(ZAP_DT_COMPLEX128), 16u);
    EXPECT_STREQ(zap_dtype_name(ZAP_DT_LONG_DOUBLE_INT), "long_double_int");
    EXPECT_STREQ(zap_op_name(ZAP_OP_MAXLOC), "maxloc");
}

TEST(Types, TableOfOpsPerType)
{
    EXPECT_EQ(zap_op_supported(ZAP_DT_INT16, ZAP_OP_LXOR), 1);
    EXPECT_EQ(zap_op_supported(ZAP_DT_FLOAT32, ZAP_OP_LAND), 0);
    EXPECT_EQ(zap_op_supported(ZAP_DT_COMPLEX64, ZAP_OP_PROD), 1);
    EXPECT_EQ(zap_op_supported(ZAP_DT_COMPLEX64, ZAP_OP_MAX), 0);
    EXPECT_EQ(zap_op_supported(ZAP_DT_2INT, ZAP_OP_MINLOC), 1);
    EXPECT_EQ(zap_op_supported(ZAP_DT_2INT, ZAP_OP_SUM), 0);
    EXPECT_EQ(zap_op_supported(ZAP_DT_INT32, ZAP_OP_MINLOC), 0);
}

// MPI's rules, by hand: logical results are 0 or 1; a minloc tie takes the
// lowest index whatever the rank order of the indices.
TEST(Types, LogicalResultsAreZeroOrOneAndTiesTakeTheLowestIndex)
{
    World w(3);
    w.run([&](int r) {
        int32_t x[3] = {r == 1 ? 0 : 7 * (r + 1), -5, 0}, y[3];
        EXPECT_EQ(zap_allreduce(w.c[r], x, y, 3, ZAP_DT_INT32, ZAP_OP_LAND), ZAP_OK);
        EXPECT_EQ(y[0], 0);
        EXPECT_EQ(y[1], 1);
        EXPECT_EQ(y[2], 0);
        EXPECT_EQ(zap_allreduce(w.c[r], x, y, 3, ZAP_DT_INT32, ZAP_OP_LXOR), ZAP_OK);
        EXPECT_EQ(y[0], 0); // two nonzero
        EXPECT_EQ(y[1], 1); // three nonzero
        zap_double_int_t p[2] = {{1.5, 10 - r}, {(double)r, 3}}, q[2];
        EXPECT_EQ(zap_allreduce(w.c[r], p, q, 2, ZAP_DT_DOUBLE_INT, ZAP_OP_MINLOC), ZAP_OK);
        EXPECT_EQ(q[0].v, 1.5);
        EXPECT_EQ(q[0].k, 8); // all equal: the lowest index (rank 2's)
        EXPECT_EQ(q[1].v, 0.0);
        EXPECT_EQ(q[1].k, 3);
        EXPECT_EQ(zap_allreduce(w.c[r], p, q, 2, ZAP_DT_DOUBLE_INT, ZAP_OP_MAXLOC), ZAP_OK);
        EXPECT_EQ(q[1].v, 2.0);
    });
}
} // namespace

// The shared-memory forms reduce one operand per rank in one call
// (zap_reduce_cpu_many): its bytes are those of a copy of the first operand
// and one pairwise reduction per further operand, in rank order, for every
// type and op (float sums are not associative, so another order shows).
TEST(Types, ManyOperandReductionIsTheChainOfPairsInRankOrder)
{
    const size_t count = 37;
    const int n = 7;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int dt = 0; dt < ZAP_DT_COUNT; dt++)
        for (int op = 0; op < ZAP_OP_COUNT; op++) {
            if (!zap_reduce_supported((zap_dtype_t)dt, (zap_op_t)op))
                continue;
            size_t bytes = count * zap_dtype_size((zap_dtype_t)dt);
            std::vector<std::vector<unsigned char>> in(n, std::vector<unsigned char>(bytes));
            std::vector<const void *> srcs(n);
            for (int i = 0; i < n; i++) {
                for (auto &b : in[i]) {
                    x = x * 6364136223846793005ull + 1442695040888963407ull;
                    b = (unsigned char)(x >> 56);
                }
                srcs[i] = in[i].data();
            }
            std::vector<unsigned char> chain(in[0]), many(bytes + 1, 0xEE);
            for (int i = 1; i < n; i++)
                zap_reduce_cpu((zap_dtype_t)dt, (zap_op_t)op, chain.data(), chain.data(), in[i].data(), count);
            zap_reduce_cpu_many((zap_dtype_t)dt, (zap_op_t)op, many.data(), srcs.data(), n, count);
            EXPECT_EQ(std::memcmp(chain.data(), many.data(), bytes), 0)
                << zap_dtype_name((zap_dtype_t)dt) << " " << zap_op_name((zap_op_t)op);
            EXPECT_EQ(many[bytes], 0xEE) << "past the end";
        }
}
