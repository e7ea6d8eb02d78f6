// Collectives between processes on several hosts: run by
// tests/faults/cluster_check.sh across network-namespace hosts (each with
// its own host name and /dev/shm) in the layouts 2x2, 2x3, 3x2, 1+3 and
// 2+2+3, and by ctest on one machine (where every rank shares the host and
// the same checks hold for the flat and shared-memory algorithms). Every
// rank computes every rank's input from (rank, seed, element), so the
// reference needs no communication: allreduce for every datatype and op,
// broadcast, scatter(v) and allgather(v) from every root, reduce from every
// root, gather(v) and reduce_scatter(_block) with uneven counts, barrier;
// every rank ends with identical bytes; where the ranks span hosts the
// hierarchy is chosen and the allreduce's and reduce_scatter's inter-host
// bytes stay near their lower bounds, and gather's leave each host once.
#include <gtest/gtest.h>
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>
#include "mpi_harness.h"
#include "coll/coll_harness.h"
extern "C" {
#include "zap/coll.h"
#include "zap/ucp.h"
}

using namespace colltest;

namespace {

class HierMpi : public testing::Test {
  protected:
    zap_transport_t *t = nullptr;
    zap_comm_t *c = nullptr;
    int rank = 0, size = 0;
    void SetUp() override
    {
        rank = MpiRank();
        size = MpiSize();
        ASSERT_EQ(zap_ucp_transport_create(MPI_COMM_WORLD, nullptr, &t), ZAP_OK);
        ASSERT_EQ(zap_comm_create(t, &c), ZAP_OK);
    }
    void TearDown() override
    {
        zap_comm_destroy(c);
        zap_transport_close(t);
    }
    // Every rank's host identity, by zap's transport.
    std::vector<uint64_t> hosts() const
    {
        std::vector<uint64_t> v(size);
        for (int r = 0; r < size; r++)
            EXPECT_EQ(zap_transport_host(t, r, &v[r]), ZAP_OK);
        return v;
    }
    bool layered() const
    {
        auto h = hosts();
        std::vector<uint64_t> u = h;
        std::sort(u.begin(), u.end());
        size_t nh = (size_t)(std::unique(u.begin(), u.end()) - u.begin());
        return nh > 1 && nh < (size_t)size;
    }
    uint64_t xhost() const
    {
        zap_transport_traffic_t tr;
        EXPECT_EQ(zap_transport_traffic(t, &tr), ZAP_OK);
        return tr.bytes[ZAP_PEER_OTHER_HOST];
    }
    bool eager_send_completes_first(size_t len, uint64_t tag, bool progresses, double limit);
};

// Every rank holds the same bytes: min and max of a hash agree.
bool same_everywhere(const void *p, size_t bytes)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ ((const uint8_t *)p)[i]) * 1099511628211ull;
    uint64_t lo = 0, hi = 0;
    MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

const zap_dtype_t kTypes[] = {ZAP_DT_INT8,  ZAP_DT_INT16,  ZAP_DT_INT32,   ZAP_DT_INT64,    ZAP_DT_UINT8,   ZAP_DT_UINT16,
                              ZAP_DT_UINT32, ZAP_DT_UINT64, ZAP_DT_FLOAT16, ZAP_DT_BFLOAT16, ZAP_DT_FLOAT32, ZAP_DT_FLOAT64};
const zap_op_t kOps[] = {ZAP_OP_SUM, ZAP_OP_PROD, ZAP_OP_MIN, ZAP_OP_MAX, ZAP_OP_BAND, ZAP_OP_BOR, ZAP_OP_BXOR};

} // namespace

TEST_F(HierMpi, TheHierarchyIsChosenExactlyWhereRanksSpanHostsWithSeveralRanksOnOne)
{
    zap_comm_attr_t a{};
    a.field_mask = ZAP_COMM_ATTR_ALGORITHMS;
    for (size_t bytes : {(size_t)8, (size_t)1 << 20}) {
        a.bytes = bytes;
        ASSERT_EQ(zap_comm_query(c, &a), ZAP_OK);
        EXPECT_EQ(std::string(a.allreduce_algorithm) == "hier", layered()) << bytes << " bytes";
        EXPECT_EQ(std::string(a.bcast_algorithm) == "hier", layered()) << bytes << " bytes";
    }
}

// Between hosts over TCP the transport keeps messages up to 16 MiB eager
// (docs/transport.md, "TCP between hosts"): such a send completes while its
// receiver on the other host has posted nothing, where a rendezvous (UCX's
// way beyond 8 KiB) waits for the receiver. Rank 0 sends len bytes to the
// first rank of another host, which posts only once rank 0 has reported over
// MPI whether the send completed; until then it stays out of the transport
// or, with progresses, drives it without posting (needed once the message
// is more than the sockets hold: UCX then takes it into its own buffers).
// Returns false (and does nothing) when every rank is on one host.
bool HierMpi::eager_send_completes_first(size_t len, uint64_t tag, bool progresses, double limit)
{
    auto h = hosts();
    int far = -1;
    for (int r = 1; r < size && far < 0; r++)
        if (h[r] != h[0])
            far = r;
    if (far < 0)
        return false;
    std::vector<uint8_t> buf(len);
    char hello = 'h';
    if (rank == 0) { // connect first: wiring up needs both sides in the transport
        EXPECT_EQ(zap_transport_send(t, far, tag - 1, &hello, 1), ZAP_OK);
        EXPECT_EQ(zap_transport_recv(t, far, tag - 1, &hello, 1, nullptr), ZAP_OK);
        for (size_t i = 0; i < len; i++)
            buf[i] = (uint8_t)(i * 131 + 7);
        zap_request_t *r = nullptr;
        EXPECT_EQ(zap_transport_isend(t, far, tag, buf.data(), len, &r), ZAP_OK);
        int done = 0;
        double until = zap_clock_now() + limit;
        while (r != nullptr && !done && zap_clock_now() < until)
            EXPECT_EQ(zap_request_test(r, &done), ZAP_OK);
        EXPECT_TRUE(done) << "a " << len << "-byte send to another host waited for its receiver: not eager";
        char word = done ? 'e' : 'r';
        MPI_Send(&word, 1, MPI_CHAR, far, 0, MPI_COMM_WORLD);
        if (r != nullptr) {
            EXPECT_EQ(zap_request_wait(r), ZAP_OK);
            zap_request_free(r);
        }
    } else if (rank == far) {
        EXPECT_EQ(zap_transport_recv(t, 0, tag - 1, &hello, 1, nullptr), ZAP_OK);
        EXPECT_EQ(zap_transport_send(t, 0, tag - 1, &hello, 1), ZAP_OK);
        char word = 0;
        MPI_Request mr;
        MPI_Irecv(&word, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD, &mr);
        for (int flag = 0; !flag;) {
            if (progresses)
                zap_transport_progress(t);
            MPI_Test(&mr, &flag, MPI_STATUS_IGNORE);
        }
        size_t got = 0;
        EXPECT_EQ(zap_transport_recv(t, 0, tag, buf.data(), len, &got), ZAP_OK);
        EXPECT_EQ(got, len);
        size_t bad = 0;
        for (size_t i = 0; i < len; i++)
            bad += buf[i] != (uint8_t)(i * 131 + 7);
        EXPECT_EQ(bad, 0u);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return true;
}

// 256 KiB: two UCX fragments' worth beyond 64 KiB, within the socket buffers.
TEST_F(HierMpi, BetweenHostsOverTcpAMessageUpTo1MiBCompletesBeforeItsReceiverPosts)
{
    if (!eager_send_completes_first(256u << 10, 0x7C95, false, 5.0))
        GTEST_SKIP() << "every rank on one host: no message crosses hosts";
}

// 4 MiB, more than the sockets hold: with the threshold at 1 MiB it fails.
TEST_F(HierMpi, BetweenHostsOverTcpA4MiBMessageCompletesWhileItsReceiverOnlyProgresses)
{
    if (!eager_send_completes_first(4u << 20, 0x7C97, true, 20.0))
        GTEST_SKIP() << "every rank on one host: no message crosses hosts";
}

TEST_F(HierMpi, AllreduceOfEveryDatatypeAndOpMatchesTheReference)
{
    uint64_t digest = 1469598103934665603ull; /* of every result, compared across ranks at the end */
    for (zap_dtype_t dt : kTypes)
        for (zap_op_t op : kOps) {
            if (!zap_op_supported(dt, op))
                continue;
            // 3000 elements are small (in the agreement) for 1- and 2-byte
            // types and large (chunks on the node's and leaders'
            // communicators) from 4 bytes; 70001 for a few pairs only.
            bool big = (dt == ZAP_DT_INT32 && op == ZAP_OP_SUM) || (dt == ZAP_DT_FLOAT16 && op == ZAP_OP_MAX) ||
                       (dt == ZAP_DT_UINT8 && op == ZAP_OP_BXOR) || (dt == ZAP_DT_FLOAT64 && op == ZAP_OP_PROD);
            for (size_t count : {(size_t)7, (size_t)3000, (size_t)70001}) {
                if (count == 70001 && !big)
                    continue;
                size_t es = dsize(dt);
                uint64_t seed = count * 13 + dt * 7 + op;
                std::vector<std::vector<uint8_t>> in(size, std::vector<uint8_t>(count * es));
                for (int r = 0; r < size; r++)
                    fill_input(dt, op, r, seed, in[r].data(), count);
                std::vector<uint8_t> out(count * es), ref(8);
                bool in_place = count == 7;
                if (in_place)
                    out = in[rank];
                ASSERT_EQ(zap_allreduce(c, in_place ? ZAP_IN_PLACE : in[rank].data(), out.data(), count, dt, op), ZAP_OK);
                for (size_t i = 0; i < count; i++) {
                    reference(dt, op, in, i, ref.data());
                    ASSERT_EQ(0, std::memcmp(ref.data(), out.data() + i * es, es))
                        << zap_dtype_name(dt) << " " << zap_op_name(op) << " count " << count << " element " << i;
                }
                for (size_t i = 0; i < out.size(); i++)
                    digest = (digest ^ out[i]) * 1099511628211ull;
            }
        }
    EXPECT_TRUE(same_everywhere(&digest, sizeof(digest))) << "some rank ended with other bytes";
}

TEST_F(HierMpi, LargeAllreduceCrossesHostsNearTheLowerBound)
{
    size_t count = (size_t)1 << 21; // 8 MiB of float32: chunks and slices
    std::vector<float> in(count), out(count);
    for (size_t i = 0; i < count; i++)
        in[i] = (float)((i + (size_t)rank) % 13);
    uint64_t before = xhost();
    ASSERT_EQ(zap_allreduce(c, in.data(), out.data(), count, ZAP_DT_FLOAT32, ZAP_OP_SUM), ZAP_OK);
    uint64_t sent = xhost() - before;
    for (size_t i = 0; i < count; i += 4099) {
        double want = 0;
        for (int r = 0; r < size; r++)
            want += (double)((i + (size_t)r) % 13);
        ASSERT_EQ(out[i], (float)want) << "element " << i;
    }
    ASSERT_TRUE(same_everywhere(out.data(), count * 4));
    // Bytes per host, against 2(H-1)/H of the vector.
    auto h = hosts();
    std::vector<uint64_t> all(size);
    MPI_Allgather(&sent, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
    std::vector<uint64_t> u = h;
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
    int H = (int)u.size();
    if (!layered())
        return;
    double bound = 2.0 * (H - 1) / H * (double)(count * 4);
    for (uint64_t id : u) {
        uint64_t host_sent = 0;
        for (int r = 0; r < size; r++)
            host_sent += h[r] == id ? all[r] : 0;
        EXPECT_LE((double)host_sent, 1.05 * bound) << "a host sent " << host_sent << " bytes, bound " << bound;
        EXPECT_GE((double)host_sent, 0.95 * bound) << "a host sent " << host_sent << " bytes, bound " << bound;
    }
}

TEST_F(HierMpi, BroadcastFromEveryRootArrivesIntact)
{
    for (size_t bytes : {(size_t)1, (size_t)5000, (size_t)100003, ((size_t)2 << 20) + 3})
        for (int root = 0; root < size; root++) {
            auto data = test_pattern(bytes, (uint32_t)(bytes + root));
            std::vector<uint8_t> buf(bytes, 0);
            if (rank == root)
                buf = data;
            ASSERT_EQ(zap_bcast(c, buf.data(), bytes, ZAP_DT_UINT8, root), ZAP_OK);
            ASSERT_TRUE(buf == data) << bytes << " bytes from root " << root;
        }
}

TEST_F(HierMpi, ScattervAndAllgathervFromEveryRootArriveIntact)
{
    for (size_t k : {(size_t)1, (size_t)4000}) {
        std::vector<size_t> counts(size);
        std::vector<ptrdiff_t> displs(size);
        size_t at = 0;
        for (int r = 0; r < size; r++) {
            counts[r] = (size_t)((r * 3 + 1) % 4) * k; // some zero
            displs[r] = (ptrdiff_t)at;
            at += counts[r] + 1;
        }
        std::vector<int64_t> src(at);
        for (size_t i = 0; i < at; i++)
            src[i] = (int64_t)(i * 7919 + k);
        for (int root = 0; root < size; root++) {
            std::vector<int64_t> out(4 * k, -1);
            ASSERT_EQ(zap_scatterv(c, src.data(), counts.data(), displs.data(), out.data(), 4 * k, ZAP_DT_INT64, root),
                      ZAP_OK);
            for (size_t i = 0; i < counts[rank]; i++)
                ASSERT_EQ(out[i], src[displs[rank] + i]) << "root " << root << " element " << i;
        }
        std::vector<int64_t> all(at, -1), mine(counts[rank]);
        for (size_t i = 0; i < counts[rank]; i++)
            mine[i] = src[displs[rank] + i];
        ASSERT_EQ(zap_allgatherv(c, mine.data(), counts[rank], all.data(), counts.data(), displs.data(), ZAP_DT_INT64),
                  ZAP_OK);
        for (int r = 0; r < size; r++)
            for (size_t i = 0; i < counts[r]; i++)
                ASSERT_EQ(all[displs[r] + i], src[displs[r] + i]) << "block " << r;
    }
}

TEST_F(HierMpi, BarriersAndNonBlockingCallsInterleave)
{
    // A barrier, then several non-blocking collectives of each kind at once,
    // waited in reverse.
    ASSERT_EQ(zap_barrier(c), ZAP_OK);
    const int n = 6;
    std::vector<zap_request_t *> req(n, nullptr);
    std::vector<std::vector<int32_t>> buf(n, std::vector<int32_t>(100000));
    for (int i = 0; i < n; i++) {
        for (auto &x : buf[i])
            x = rank + i;
        if (i % 2 == 0)
            ASSERT_EQ(zap_iallreduce(c, ZAP_IN_PLACE, buf[i].data(), buf[i].size(), ZAP_DT_INT32, ZAP_OP_SUM, &req[i]),
                      ZAP_OK);
        else
            ASSERT_EQ(zap_ibcast(c, buf[i].data(), buf[i].size(), ZAP_DT_INT32, i % size, &req[i]), ZAP_OK);
    }
    for (int i = n - 1; i >= 0; i--) {
        ASSERT_EQ(zap_request_wait(req[i]), ZAP_OK) << "operation " << i;
        zap_request_free(req[i]);
        int32_t want = i % 2 == 0 ? size * (size - 1) / 2 + size * i : i % size + i;
        ASSERT_EQ(buf[i][99999], want) << "operation " << i;
    }
    ASSERT_EQ(zap_barrier(c), ZAP_OK);
}

TEST_F(HierMpi, ReduceFromEveryRootMatchesTheReference)
{
    const zap_dtype_t types[] = {ZAP_DT_INT32, ZAP_DT_UINT8, ZAP_DT_FLOAT16, ZAP_DT_FLOAT64, ZAP_DT_INT64};
    for (zap_dtype_t dt : types)
        for (zap_op_t op : {ZAP_OP_SUM, ZAP_OP_MAX, ZAP_OP_BXOR}) {
            if (!zap_op_supported(dt, op))
                continue;
            // 5 elements ride the agreement; 3000 are staged from 4-byte
            // types (node reduce, leaders' reduce, then to the root).
            for (size_t count : {(size_t)5, (size_t)3000, (size_t)70001}) {
                size_t es = dsize(dt);
                uint64_t seed = count * 17 + dt * 5 + op;
                std::vector<std::vector<uint8_t>> in(size, std::vector<uint8_t>(count * es));
                for (int r = 0; r < size; r++)
                    fill_input(dt, op, r, seed, in[r].data(), count);
                for (int root = 0; root < size; root++) {
                    if (count == 70001 && root != size - 1)
                        continue;
                    bool in_place = rank == root && root % 2 == 1;
                    std::vector<uint8_t> out(count * es, 0), ref(8);
                    if (in_place)
                        out = in[rank];
                    ASSERT_EQ(zap_reduce(c, in_place ? ZAP_IN_PLACE : in[rank].data(), out.data(), count, dt, op, root),
                              ZAP_OK);
                    if (rank != root)
                        continue;
                    for (size_t i = 0; i < count; i++) {
                        reference(dt, op, in, i, ref.data());
                        ASSERT_EQ(0, std::memcmp(ref.data(), out.data() + i * es, es))
                            << zap_dtype_name(dt) << " " << zap_op_name(op) << " count " << count << " root " << root
                            << " element " << i;
                    }
                }
            }
        }
}

TEST_F(HierMpi, ReduceScatterOfUnevenPartsMatchesTheReference)
{
    for (size_t k : {(size_t)3, (size_t)5000}) {
        std::vector<size_t> counts(size);
        for (int r = 0; r < size; r++)
            counts[r] = (size_t)((r * 5 + 2) % 4) * k; // some zero
        size_t total = std::accumulate(counts.begin(), counts.end(), (size_t)0), off = 0;
        for (int r = 0; r < rank; r++)
            off += counts[r];
        for (zap_dtype_t dt : {ZAP_DT_INT32, ZAP_DT_FLOAT32, ZAP_DT_UINT16}) {
            for (bool in_place : {false, true}) {
                size_t es = dsize(dt);
                std::vector<std::vector<uint8_t>> in(size, std::vector<uint8_t>(total * es));
                for (int r = 0; r < size; r++)
                    fill_input(dt, ZAP_OP_SUM, r, k + dt, in[r].data(), total);
                std::vector<uint8_t> out = in_place ? in[rank] : std::vector<uint8_t>(counts[rank] * es + 1), ref(8);
                const void *src = in_place ? ZAP_IN_PLACE : in[rank].data();
                ASSERT_EQ(zap_reduce_scatter(c, src, out.data(), counts.data(), dt, ZAP_OP_SUM), ZAP_OK);
                for (size_t i = 0; i < counts[rank]; i++) {
                    reference(dt, ZAP_OP_SUM, in, off + i, ref.data());
                    ASSERT_EQ(0, std::memcmp(ref.data(), out.data() + i * es, es))
                        << zap_dtype_name(dt) << " k " << k << " element " << i << " in place " << in_place;
                }
            }
        }
        // The block form: every rank's part k elements.
        std::vector<std::vector<uint8_t>> in(size, std::vector<uint8_t>(k * size * 8));
        for (int r = 0; r < size; r++)
            fill_input(ZAP_DT_INT64, ZAP_OP_BXOR, r, k, in[r].data(), k * size);
        std::vector<uint8_t> out(k * 8), ref(8);
        ASSERT_EQ(zap_reduce_scatter_block(c, in[rank].data(), out.data(), k, ZAP_DT_INT64, ZAP_OP_BXOR), ZAP_OK);
        for (size_t i = 0; i < k; i++) {
            reference(ZAP_DT_INT64, ZAP_OP_BXOR, in, rank * k + i, ref.data());
            ASSERT_EQ(0, std::memcmp(ref.data(), out.data() + i * 8, 8)) << "block form, element " << i;
        }
    }
}

TEST_F(HierMpi, LargeReduceScatterSendsEachHostsOtherPartsOnce)
{
    size_t k = (size_t)1 << 18; // 1 MiB of int32 per rank
    std::vector<int32_t> in(k * size, 1), out(k);
    uint64_t before = xhost();
    ASSERT_EQ(zap_reduce_scatter_block(c, in.data(), out.data(), k, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
    uint64_t sent = xhost() - before;
    ASSERT_EQ(out[0], size);
    ASSERT_EQ(out[k - 1], size);
    if (!layered())
        return;
    // A host with m ranks sends the other hosts' parts of its sum: (p - m) k.
    auto h = hosts();
    std::vector<uint64_t> all(size);
    MPI_Allgather(&sent, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
    uint64_t host_sent = 0;
    int m = 0;
    for (int r = 0; r < size; r++)
        if (h[r] == h[rank]) {
            host_sent += all[r];
            m++;
        }
    double bound = (double)((size_t)(size - m) * k * 4);
    EXPECT_GE((double)host_sent, bound);
    EXPECT_LE((double)host_sent, 1.01 * bound + 8192) << "this host sent " << host_sent << " bytes";
}

TEST_F(HierMpi, GatherAndGathervFromEveryRootLandInPlace)
{
    for (size_t k : {(size_t)2, (size_t)6000}) {
        std::vector<size_t> counts(size);
        std::vector<ptrdiff_t> displs(size);
        size_t at = 0;
        for (int r = size - 1; r >= 0; r--) { // displacements against rank order, with gaps
            counts[r] = (size_t)((r * 3 + 2) % 4) * k;
            displs[r] = (ptrdiff_t)at;
            at += counts[r] + 1;
        }
        std::vector<int32_t> mine(counts[rank]), fixed(k);
        for (size_t i = 0; i < counts[rank]; i++)
            mine[i] = (int32_t)(rank * 100003 + i);
        for (size_t i = 0; i < k; i++)
            fixed[i] = (int32_t)(rank * 7 + i);
        for (int root = 0; root < size; root++) {
            std::vector<int32_t> out(at, -1), all(k * size, -1);
            ASSERT_EQ(zap_gatherv(c, mine.data(), counts[rank], rank == root ? out.data() : nullptr, counts.data(),
                                  displs.data(), ZAP_DT_INT32, root),
                      ZAP_OK);
            ASSERT_EQ(zap_gather(c, fixed.data(), k, rank == root ? all.data() : nullptr, ZAP_DT_INT32, root), ZAP_OK);
            if (rank != root)
                continue;
            std::vector<int32_t> want(at, -1);
            for (int r = 0; r < size; r++)
                for (size_t i = 0; i < counts[r]; i++)
                    want[displs[r] + i] = (int32_t)(r * 100003 + i);
            ASSERT_TRUE(out == want) << "gatherv to root " << root;
            for (int r = 0; r < size; r++)
                for (size_t i = 0; i < k; i++)
                    ASSERT_EQ(all[r * k + i], (int32_t)(r * 7 + i)) << "gather to root " << root << " block " << r;
        }
    }
}

TEST_F(HierMpi, GathersCrossHostsOnlyFromLeaders)
{
    size_t k = 50000;
    std::vector<int64_t> mine(k, rank), out(k * size);
    uint64_t before = xhost();
    ASSERT_EQ(zap_gather(c, mine.data(), k, rank == 0 ? out.data() : nullptr, ZAP_DT_INT64, 0), ZAP_OK);
    uint64_t sent = xhost() - before;
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            ASSERT_EQ(out[r * k + k - 1], r);
    }
    if (!layered())
        return;
    // A host's leader is its lowest rank; the others send nothing across.
    auto h = hosts();
    int leader = rank;
    for (int r = 0; r < size; r++)
        if (h[r] == h[rank] && r < leader)
            leader = r;
    int m = 0;
    for (int r = 0; r < size; r++)
        m += h[r] == h[rank];
    if (leader != rank) {
        EXPECT_EQ(sent, 0u) << "rank " << rank << " is not its host's leader";
    } else if (h[rank] != h[0]) {
        EXPECT_LE((double)sent, 1.01 * (double)(m * k * 8) + 2048) << "the leader sent " << sent << " bytes";
    }
}
