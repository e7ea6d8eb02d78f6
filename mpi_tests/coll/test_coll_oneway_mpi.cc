// The one-way shared-memory exchanges (agree/agree_shm.c, coll/shm/shm.h):
// small broadcasts, scatters, gathers, reduces and scans on ranks of one
// host, whose writers do not wait for their readers (up to
// the segment's banks of exchanges ahead), and how a mismatch that only some
// ranks can see reaches every rank: the rank that sees it fails and revokes
// the communicator, so every other rank fails that call or its next one.
// Every rank of these runs is on one host, so each communicator has its
// segment.
#include <gtest/gtest.h>
#include <cstdint>
#include <cstring>
#include <vector>
#include "mpi_harness.h"
#include "one_host_fixture.h"
extern "C" {
#include "zap/coll.h"
#include "zap/ucp.h"
#include "coll/coll_test.h"
}

ZAP_ONE_HOST_FIXTURE_STORAGE;

namespace {

// A fresh communicator per test (OneHostComm): the mismatch tests leave
// theirs revoked.
class Oneway : public OneHostComm {
  protected:
    // The banks of slots of this communicator's segment: how far a writer
    // runs ahead (deeper where the node is oversubscribed, coll/shm/shm.h).
    int ahead() const
    {
        int banks = zap_coll_test_comm_shm_banks(comm_);
        EXPECT_GE(banks, zap_coll_test_shm_banks(MpiSize()));
        return banks;
    }
    // An allreduce every rank must see succeed with the right sum.
    void sum_ok(int tag)
    {
        int32_t x = tag, y = 0;
        ASSERT_EQ(zap_allreduce(comm_, &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK) << "allreduce " << tag;
        ASSERT_EQ(y, tag * MpiSize());
    }
    // After a failure one rank saw alone: this rank's status for the failing
    // call (st) is its own error where it saw it, else success or the
    // revocation (it may have read the other rank's notice before it
    // finished); its next call fails on every rank, never succeeds.
    void expect_revoked_next()
    {
        int32_t x = 1, y = 0;
        zap_status_t st = zap_allreduce(comm_, &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM);
        EXPECT_TRUE(st == ZAP_ERR_REVOKED || st == ZAP_ERR_MISMATCH) << zap_status_string(st);
        int32_t b = 0;
        EXPECT_EQ(zap_bcast(comm_, &b, 1, ZAP_DT_INT32, 0), ZAP_ERR_REVOKED) << "the communicator stays revoked";
    }
};

// The root completes ahead() broadcasts before any other rank has entered the
// first: the others wait for a message the root sends only afterwards, so a
// root that waited for its readers would never get there (the test would
// time out).
TEST_F(Oneway, BroadcastRootCompletesBeforeItsReadersArrive)
{
    int rank = MpiRank(), size = MpiSize();
    for (int root : {0, size - 1}) {
        sum_ok(1);
        std::vector<std::vector<int64_t>> bufs(ahead(), std::vector<int64_t>(3, -1));
        if (rank == root) {
            for (int i = 0; i < ahead(); i++) {
                bufs[i] = {i, 100 + i, 200 + i};
                ASSERT_EQ(zap_bcast(comm_, bufs[i].data(), 3, ZAP_DT_INT64, root), ZAP_OK);
            }
            for (int q = 0; q < size; q++)
                if (q != root)
                    MPI_Send(&root, 1, MPI_INT, q, 7, MPI_COMM_WORLD);
        } else {
            int token = -1;
            MPI_Recv(&token, 1, MPI_INT, root, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int i = 0; i < ahead(); i++) {
                ASSERT_EQ(zap_bcast(comm_, bufs[i].data(), 3, ZAP_DT_INT64, root), ZAP_OK);
                EXPECT_EQ(bufs[i][0], i) << "root " << root << " call " << i;
                EXPECT_EQ(bufs[i][2], 200 + i) << "root " << root << " call " << i;
            }
        }
        sum_ok(2);
    }
}

// A scatter's root too, with the largest blocks whose other ranks' share
// fits its slot (4032 bytes over p - 1 blocks; on 2 ranks a 4032-byte block
// of a 8064-byte total): it completes ahead() calls before any reader enters
// the first, as a broadcast's does.
TEST_F(Oneway, ScatterRootCompletesBeforeItsReadersArriveUpToASlotOfOthersBlocks)
{
    int rank = MpiRank(), size = MpiSize(), root = size - 1;
    size_t blk = ZAP_COLL_SHM_MAX_BYTES / (size_t)(size - 1);
    sum_ok(1);
    std::vector<std::vector<uint8_t>> got(ahead(), std::vector<uint8_t>(blk, 0));
    std::vector<uint8_t> all(blk * (size_t)size);
    if (rank == root) {
        for (int i = 0; i < ahead(); i++) {
            for (size_t j = 0; j < all.size(); j++)
                all[j] = (uint8_t)(j * 7 + (size_t)i * 13);
            ASSERT_EQ(zap_scatter(comm_, all.data(), got[i].data(), blk, ZAP_DT_UINT8, root), ZAP_OK);
        }
        for (int q = 0; q < size; q++)
            if (q != root)
                MPI_Send(&root, 1, MPI_INT, q, 8, MPI_COMM_WORLD);
    } else {
        int token = -1;
        MPI_Recv(&token, 1, MPI_INT, root, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < ahead(); i++) {
            ASSERT_EQ(zap_scatter(comm_, nullptr, got[i].data(), blk, ZAP_DT_UINT8, root), ZAP_OK);
            for (size_t j = 0; j < blk; j++)
                ASSERT_EQ(got[i][j], (uint8_t)(((size_t)rank * blk + j) * 7 + (size_t)i * 13))
                    << "call " << i << " byte " << j;
        }
    }
    sum_ok(2);
}

// The same for the other side: a gather's (and a reduce's) non-roots write
// and go on; the root, arriving after ahead() calls of theirs, finds every
// block still there.
TEST_F(Oneway, GatherAndReduceContributorsCompleteBeforeTheRootArrives)
{
    int rank = MpiRank(), size = MpiSize(), root = size - 1;
    sum_ok(1);
    const int n = ahead() / 2;
    std::vector<std::vector<int32_t>> g(n, std::vector<int32_t>(2 * (size_t)size, -1));
    std::vector<std::vector<int64_t>> r(n, std::vector<int64_t>(2, -1));
    if (rank == root) {
        int token = -1;
        for (int q = 0; q < size - 1; q++)
            MPI_Recv(&token, 1, MPI_INT, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    for (int i = 0; i < n; i++) {
        int32_t mine[2] = {1000 * i + rank, -(1000 * i + rank)};
        ASSERT_EQ(zap_gather(comm_, mine, 2, g[i].data(), ZAP_DT_INT32, root), ZAP_OK);
        int64_t v[2] = {i + rank, (int64_t)1 << rank};
        ASSERT_EQ(zap_reduce(comm_, v, r[i].data(), 2, ZAP_DT_INT64, ZAP_OP_SUM, root), ZAP_OK);
    }
    if (rank != root)
        MPI_Send(&rank, 1, MPI_INT, root, 9, MPI_COMM_WORLD);
    if (rank == root) {
        for (int i = 0; i < n; i++) {
            for (int q = 0; q < size; q++) {
                EXPECT_EQ(g[i][2 * q], 1000 * i + q) << "gather " << i << " block " << q;
                EXPECT_EQ(g[i][2 * q + 1], -(1000 * i + q)) << "gather " << i << " block " << q;
            }
            EXPECT_EQ(r[i][0], (int64_t)i * size + (int64_t)size * (size - 1) / 2) << "reduce " << i;
            EXPECT_EQ(r[i][1], ((int64_t)1 << size) - 1) << "reduce " << i;
        }
    }
    sum_ok(2);
}

// A long stream of every one-way call from every root, interleaved with
// two-way ones: the banks are reused many times over with writers running
// ahead, and every rank ends with every byte right.
TEST_F(Oneway, LongMixedStreamStaysRight)
{
    int rank = MpiRank(), size = MpiSize();
    long bad = 0;
    std::vector<int32_t> all((size_t)size * 3), mine(3), big(1000);
    for (int i = 0; i < 3000; i++) {
        int root = (i / 7) % size;
        switch (i % 7) {
        case 0: {
            int64_t b[2] = {rank == root ? i : -1, rank == root ? -i : -1};
            ASSERT_EQ(zap_bcast(comm_, b, 2, ZAP_DT_INT64, root), ZAP_OK);
            bad += b[0] != i || b[1] != -i;
            break;
        }
        case 1: {
            for (size_t j = 0; j < all.size(); j++)
                all[j] = rank == root ? (int32_t)(i + j) : -1;
            ASSERT_EQ(zap_scatter(comm_, all.data(), mine.data(), 3, ZAP_DT_INT32, root), ZAP_OK);
            bad += mine[2] != i + 3 * rank + 2;
            break;
        }
        case 2: {
            int32_t x = i, y = 0;
            ASSERT_EQ(zap_allreduce(comm_, &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
            bad += y != i * size;
            break;
        }
        case 3: {
            for (int j = 0; j < 3; j++)
                mine[j] = i * 10 + rank;
            std::fill(all.begin(), all.end(), -1);
            ASSERT_EQ(zap_gather(comm_, mine.data(), 3, all.data(), ZAP_DT_INT32, root), ZAP_OK);
            if (rank == root)
                for (int q = 0; q < size; q++)
                    bad += all[3 * (size_t)q + 2] != i * 10 + q;
            break;
        }
        case 4: {
            int64_t v = i + rank, out = -1;
            ASSERT_EQ(zap_reduce(comm_, &v, &out, 1, ZAP_DT_INT64, ZAP_OP_SUM, root), ZAP_OK);
            if (rank == root)
                bad += out != (int64_t)i * size + (int64_t)size * (size - 1) / 2;
            break;
        }
        case 5: {
            int64_t v = i + rank, out = -1, ex = -1;
            ASSERT_EQ(zap_scan(comm_, &v, &out, 1, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
            ASSERT_EQ(zap_exscan(comm_, &v, &ex, 1, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
            bad += out != (int64_t)i * (rank + 1) + (int64_t)rank * (rank + 1) / 2;
            if (rank > 0)
                bad += ex != (int64_t)i * rank + (int64_t)rank * (rank - 1) / 2;
            break;
        }
        default: {
            big[999] = rank == root ? i : 0;
            ASSERT_EQ(zap_bcast(comm_, big.data(), 1000, ZAP_DT_INT32, root), ZAP_OK);
            bad += big[999] != i;
        }
        }
    }
    EXPECT_EQ(bad, 0);
}

// Non-blocking one-way calls posted back to back and completed together.
TEST_F(Oneway, OutstandingBroadcastsCompleteInOrder)
{
    int rank = MpiRank(), size = MpiSize();
    const int n = 3 * ahead();
    std::vector<std::vector<int32_t>> bufs(n, std::vector<int32_t>(4, -1));
    std::vector<zap_request_t *> reqs(n, nullptr);
    for (int i = 0; i < n; i++) {
        int root = i % size;
        if (rank == root)
            bufs[i] = {i, i + 1, i + 2, i + 3};
        ASSERT_EQ(zap_ibcast(comm_, bufs[i].data(), 4, ZAP_DT_INT32, root, &reqs[i]), ZAP_OK);
    }
    for (int i = n - 1; i >= 0; i--) {
        ASSERT_EQ(zap_request_wait(reqs[i]), ZAP_OK) << "call " << i;
        zap_request_free(reqs[i]);
    }
    for (int i = 0; i < n; i++)
        EXPECT_EQ(bufs[i][3], i + 3) << "call " << i;
    sum_ok(1);
}

// A reader whose count differs from the root's finds it at once and fails
// with a mismatch; the root has gone on and learns of it from the
// revocation: no rank's next call succeeds.
TEST_F(Oneway, ReaderMismatchRevokesTheCommunicatorOnEveryRank)
{
    MpiExpectLog("differ");
    MpiExpectLog("revoked");
    int rank = MpiRank(), size = MpiSize(), odd = size - 1;
    sum_ok(1);
    int64_t b[3] = {5, 6, 7};
    zap_status_t st = zap_bcast(comm_, b, rank == odd ? 3 : 2, ZAP_DT_INT64, 0);
    if (rank == odd)
        EXPECT_EQ(st, ZAP_ERR_MISMATCH);
    else
        EXPECT_TRUE(st == ZAP_OK || st == ZAP_ERR_REVOKED) << zap_status_string(st);
    expect_revoked_next();
}

// Two ranks that each name themselves root: neither reads anything, and the
// readers check against the root they name, so nobody sees it in the call;
// the chain finds it at the next two-way call, on every rank.
TEST_F(Oneway, TwoRanksNamingThemselvesRootFailTheNextTwoWayCall)
{
    MpiExpectLog("earlier call");
    MpiExpectLog("revoked");
    int rank = MpiRank(), size = MpiSize();
    sum_ok(1);
    int64_t b[2] = {rank, rank};
    int root = rank == size - 1 ? size - 1 : 0;
    EXPECT_EQ(zap_bcast(comm_, b, 2, ZAP_DT_INT64, root), ZAP_OK);
    if (rank != size - 1) {
        EXPECT_EQ(b[1], 0) << "readers read rank 0";
    }
    int32_t x = 1, y = 0;
    zap_status_t st = zap_allreduce(comm_, &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM);
    EXPECT_TRUE(st == ZAP_ERR_MISMATCH || st == ZAP_ERR_REVOKED) << zap_status_string(st);
    int32_t z = 0;
    EXPECT_EQ(zap_bcast(comm_, &z, 1, ZAP_DT_INT32, 0), ZAP_ERR_REVOKED);
}

// A reader whose own arguments are invalid returns its own error; the others
// fail at the latest in their next call.
TEST_F(Oneway, ReaderLocalErrorRevokesTheCommunicator)
{
    MpiExpectLog("NULL buffer");
    MpiExpectLog("differ"); // the rank at fault: its algorithm lane says it never chose one
    MpiExpectLog("revoked");
    int rank = MpiRank(), size = MpiSize(), odd = size - 1;
    sum_ok(1);
    int64_t b[2] = {1, 2};
    zap_status_t st = zap_bcast(comm_, rank == odd ? nullptr : b, 2, ZAP_DT_INT64, 0);
    if (rank == odd)
        EXPECT_EQ(st, ZAP_ERR_INVALID_PARAM);
    else
        EXPECT_TRUE(st == ZAP_OK || st == ZAP_ERR_REVOKED) << zap_status_string(st);
    expect_revoked_next();
}

// A gather whose root disagrees with a contributor about the count: the root
// reads every slot and fails; the contributors have gone on and fail next.
TEST_F(Oneway, GatherRootFindsAContributorsMismatch)
{
    MpiExpectLog("differ");
    MpiExpectLog("revoked");
    int rank = MpiRank(), size = MpiSize();
    sum_ok(1);
    std::vector<int32_t> mine(4, rank), all(4 * (size_t)size);
    zap_status_t st = zap_gather(comm_, mine.data(), rank == 1 ? 3 : 4, all.data(), ZAP_DT_INT32, 0);
    if (rank == 0) {
        EXPECT_EQ(st, ZAP_ERR_MISMATCH);
    } else {
        EXPECT_TRUE(st == ZAP_OK || st == ZAP_ERR_REVOKED) << zap_status_string(st);
    }
    expect_revoked_next();
}

// The segment's depth follows the node: where its ranks run oversubscribed
// (more ranks than cores, as ctest's 4-rank runs on 2 cores) a reader is
// descheduled for whole time slices, and a writer gets 256 banks to run
// ahead instead of 64 (up to 4 ranks).
TEST_F(Oneway, SegmentIsDeeperWhereTheNodeIsOversubscribed)
{
    zap_comm_attr_t a{};
    a.field_mask = ZAP_COMM_ATTR_OVERSUBSCRIBED;
    ASSERT_EQ(zap_comm_query(comm_, &a), ZAP_OK);
    int base = zap_coll_test_shm_banks(MpiSize());
    EXPECT_EQ(zap_coll_test_comm_shm_banks(comm_), a.oversubscribed && MpiSize() <= 4 ? 256 : base)
        << "oversubscribed " << a.oversubscribed;
    // Every rank's segment is the same one: they agree on its depth.
    int mine = zap_coll_test_comm_shm_banks(comm_), lo = 0, hi = 0;
    MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_EQ(lo, hi);
}

// The fast form (engine/fast.h): a small blocking call with nothing else in
// flight runs its exchange without an operation. A broadcast's root never
// waits for its readers, so every one of its calls takes it; the results
// stay right whichever form each rank takes.
TEST_F(Oneway, SmallBlockingCallsTakeTheFastForm)
{
    int rank = MpiRank(), size = MpiSize();
    sum_ok(1);
    unsigned long long before = zap_coll_test_fast_calls(comm_);
    const int n = 64;
    for (int i = 0; i < n; i++) {
        int64_t v[2] = {rank == 0 ? i : -1, rank == 0 ? 7 * i : -1};
        ASSERT_EQ(zap_bcast(comm_, v, 2, ZAP_DT_INT64, 0), ZAP_OK);
        EXPECT_EQ(v[0], i);
        EXPECT_EQ(v[1], 7 * i);
        int32_t x = rank + i, y = 0;
        ASSERT_EQ(zap_allreduce(comm_, &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
        EXPECT_EQ(y, size * i + size * (size - 1) / 2);
    }
    unsigned long long fast = zap_coll_test_fast_calls(comm_) - before;
    if (rank == 0) {
        EXPECT_GE(fast, (unsigned long long)(n - 1)) << "the root's broadcasts (the first call of a size chooses)";
    }
    unsigned long long total = 0;
    MPI_Allreduce(&fast, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_GE(total, (unsigned long long)n) << "allreduces: at least one rank per call comes last";
}

// A non-blocking broadcast's root needs nothing of its readers: in the fast
// form it completes inside its post, with the communicator's shared
// completed request, which tests, waits and frees like any other.
TEST_F(Oneway, NonBlockingRootCompletesInItsPost)
{
    int rank = MpiRank();
    sum_ok(1);
    int32_t first = rank == 0 ? 41 : -1;
    ASSERT_EQ(zap_bcast(comm_, &first, 1, ZAP_DT_INT32, 0), ZAP_OK); /* the size is chosen */
    EXPECT_EQ(first, 41);
    for (int i = 0; i < 4; i++) {
        int32_t v = rank == 0 ? 100 + i : -1;
        zap_request_t *req = nullptr;
        ASSERT_EQ(zap_ibcast(comm_, &v, 1, ZAP_DT_INT32, 0, &req), ZAP_OK);
        if (rank == 0) {
            int done = 0;
            EXPECT_EQ(zap_request_test(req, &done), ZAP_OK);
            EXPECT_EQ(done, 1) << "call " << i;
        }
        EXPECT_EQ(zap_request_wait(req), ZAP_OK);
        zap_request_free(req);
        EXPECT_EQ(v, 100 + i);
    }
    sum_ok(2);
}

// One rank has a non-blocking call in flight, so its blocking calls run as
// operations, while the other ranks take the fast form: they meet in the
// same exchanges.
TEST_F(Oneway, FastAndOperationRanksMeet)
{
    int rank = MpiRank(), size = MpiSize();
    sum_ok(1);
    sum_ok(2); /* the sizes below are chosen once */
    for (int round = 0; round < 8; round++) {
        int32_t x = rank + 1, y = 0;
        zap_request_t *req = nullptr;
        ASSERT_EQ(zap_iallreduce(comm_, &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM, &req), ZAP_OK);
        if (rank != round % size) {
            ASSERT_EQ(zap_request_wait(req), ZAP_OK);
        }
        for (int i = 0; i < 2 * ahead(); i++) {
            int32_t b = rank == 1 % size ? 1000 * round + i : -1;
            ASSERT_EQ(zap_bcast(comm_, &b, 1, ZAP_DT_INT32, 1 % size), ZAP_OK);
            EXPECT_EQ(b, 1000 * round + i);
            int32_t s = 1, t = 0;
            ASSERT_EQ(zap_allreduce(comm_, &s, &t, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
            EXPECT_EQ(t, size);
        }
        if (rank == round % size) {
            ASSERT_EQ(zap_request_wait(req), ZAP_OK);
        }
        zap_request_free(req);
        EXPECT_EQ(y, size * (size + 1) / 2);
    }
}

// Reduce_scatter_block and scan take the fast form too; a scan's rank may
// finish through the prefix lane of the rank below it alone (scan_shm.c),
// which that rank wrote in either form. One rank per round runs its calls as
// operations (a non-blocking call in flight), so every rank meets lanes
// written by both forms, and the results stay those of the rank-order folds.
TEST_F(Oneway, ReduceScatterAndScanTakeTheFastFormAndMeetOperations)
{
    int rank = MpiRank(), size = MpiSize();
    sum_ok(1);
    unsigned long long before = zap_coll_test_fast_calls(comm_), rs_fast = 0;
    const int n = 2 * ahead();
    for (int round = 0; round < size + 1; round++) {
        int32_t x = rank + 1, y = 0;
        zap_request_t *req = nullptr;
        bool slow = round < size && rank == round;
        if (slow) {
            ASSERT_EQ(zap_iallreduce(comm_, &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM, &req), ZAP_OK);
        } else if (round < size) {
            ASSERT_EQ(zap_allreduce(comm_, &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
        }
        for (int i = 0; i < n; i++) {
            std::vector<int64_t> in(2 * size), out(2, -1);
            for (int q = 0; q < size; q++) {
                in[2 * q] = 1000 * rank + q + i;
                in[2 * q + 1] = rank * i - q;
            }
            unsigned long long f0 = zap_coll_test_fast_calls(comm_);
            ASSERT_EQ(zap_reduce_scatter_block(comm_, in.data(), out.data(), 2, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
            rs_fast += zap_coll_test_fast_calls(comm_) - f0;
            int64_t s0 = 0, s1 = 0;
            for (int q = 0; q < size; q++) {
                s0 += 1000 * q + rank + i;
                s1 += q * i - rank;
            }
            EXPECT_EQ(out[0], s0) << "round " << round << " call " << i;
            EXPECT_EQ(out[1], s1) << "round " << round << " call " << i;
            int64_t v[3] = {rank + i, 2 * rank, -rank * i}, pre[3] = {0, 0, 0}, ex[3] = {-7, -7, -7};
            ASSERT_EQ(zap_scan(comm_, v, pre, 3, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
            ASSERT_EQ(zap_exscan(comm_, v, ex, 3, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
            int64_t t0 = 0, t1 = 0, t2 = 0;
            for (int q = 0; q < rank; q++) {
                t0 += q + i;
                t1 += 2 * q;
                t2 += -q * i;
            }
            if (rank > 0) {
                EXPECT_EQ(ex[0], t0) << "round " << round << " call " << i;
                EXPECT_EQ(ex[1], t1);
                EXPECT_EQ(ex[2], t2);
            } else {
                EXPECT_EQ(ex[0], -7) << "exscan leaves rank 0's recvbuf alone";
            }
            EXPECT_EQ(pre[0], t0 + rank + i) << "round " << round << " call " << i;
            EXPECT_EQ(pre[1], t1 + 2 * rank);
            EXPECT_EQ(pre[2], t2 - rank * i);
        }
        if (slow) {
            ASSERT_EQ(zap_request_wait(req), ZAP_OK);
            zap_request_free(req);
        }
        if (round < size) {
            EXPECT_EQ(y, size * (size + 1) / 2);
        }
    }
    unsigned long long fast = zap_coll_test_fast_calls(comm_) - before, total = 0, rs_total = 0;
    MPI_Allreduce(&fast, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&rs_fast, &rs_total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_GE(total, (unsigned long long)n) << "the last round has no operation: its calls take the fast form";
    EXPECT_GE(rs_total, (unsigned long long)n / 2) << "reduce_scatter_block: the last rank to write takes it";
}

// A reader whose arguments differ from the root's finds it in the fast form
// and hands the call to an operation, which reports it as every form does.
TEST_F(Oneway, FastReaderHandsAMismatchToTheOperation)
{
    MpiExpectLog("differ");
    MpiExpectLog("revoked");
    int rank = MpiRank();
    sum_ok(1);
    int32_t b[3] = {5, 6, 7};
    for (int i = 0; i < 3; i++) /* the size is chosen, and the fast form runs */
        ASSERT_EQ(zap_bcast(comm_, b, 3, ZAP_DT_INT32, 0), ZAP_OK);
    zap_status_t st = zap_bcast(comm_, b, rank == 1 ? 2 : 3, ZAP_DT_INT32, 0);
    if (rank == 1) {
        EXPECT_EQ(st, ZAP_ERR_MISMATCH);
    } else {
        EXPECT_TRUE(st == ZAP_OK || st == ZAP_ERR_REVOKED) << zap_status_string(st);
    }
    expect_revoked_next();
}

} // namespace
