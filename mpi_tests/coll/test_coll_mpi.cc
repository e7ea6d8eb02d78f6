// Collectives over the UCX transport between processes, differential against
// Open MPI: MPI_Allreduce / MPI_Bcast / MPI_Scatterv / MPI_Allgatherv for every
// datatype, op and algorithm. Integers must match exactly, floats within a
// relative tolerance (the reduction orders differ); float16 and bfloat16 have
// no MPI type, so their inputs are small integers and the MPI reference runs
// on the same values as float, where every order is exact. Also: every rank
// holds identical bytes, several non-blocking operations overlap, and a
// mismatch is reported on every rank.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>
#include <unistd.h>
#include "log_capture.h"
#include "mpi_harness.h"
extern "C" {
#include "zap/coll.h"
#include "zap/coll_mpi.h"
#include "zap/ucp.h"
#include "coll/coll_test.h"
}

namespace {

// Communicator settings for a test, built field by field.
struct Params : zap_comm_params_t {
    Params() : zap_comm_params_t{} {}
    Params &allreduce(const char *a) { allreduce_alg = a; return *this; }
    Params &bcast(const char *a) { bcast_alg = a; return *this; }
    Params &pipeline(uint64_t b) { pipeline_bytes = b; return *this; }
};

// What zap_comm_query says of c.
zap_comm_attr_t query(const zap_comm_t *c, uint64_t mask, size_t bytes = 0)
{
    zap_comm_attr_t a{};
    a.field_mask = mask;
    a.bytes = bytes;
    EXPECT_EQ(zap_comm_query(c, &a), ZAP_OK);
    return a;
}
bool shared_memory(const zap_comm_t *c) { return query(c, ZAP_COMM_ATTR_SHARED_MEMORY).shared_memory != 0; }
size_t shared_memory_bytes(const zap_comm_t *c) { return query(c, ZAP_COMM_ATTR_SHARED_MEMORY).shared_memory_bytes; }
bool single_copy(const zap_comm_t *c) { return query(c, ZAP_COMM_ATTR_SINGLE_COPY).single_copy != 0; }
const char *allreduce_algorithm(const zap_comm_t *c, size_t bytes)
{
    return query(c, ZAP_COMM_ATTR_ALGORITHMS, bytes).allreduce_algorithm;
}

// A communicator over all ranks of t with params, destroyed with its scope.
struct Comm {
    zap_comm_t *c = nullptr;
    Comm(zap_transport_t *t, const zap_comm_params_t &params) { EXPECT_EQ(zap_comm_create_ex(t, &params, &c), ZAP_OK); }
    Comm(const Comm &) = delete;
    Comm &operator=(const Comm &) = delete;
    ~Comm() { zap_comm_destroy(c); }
    operator zap_comm_t *() const { return c; }
};

uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

MPI_Datatype mpi_type(zap_dtype_t dt)
{
    switch (dt) {
    case ZAP_DT_INT8: return MPI_INT8_T;
    case ZAP_DT_INT16: return MPI_INT16_T;
    case ZAP_DT_INT32: return MPI_INT32_T;
    case ZAP_DT_INT64: return MPI_INT64_T;
    case ZAP_DT_UINT8: return MPI_UINT8_T;
    case ZAP_DT_UINT16: return MPI_UINT16_T;
    case ZAP_DT_UINT32: return MPI_UINT32_T;
    case ZAP_DT_UINT64: return MPI_UINT64_T;
    case ZAP_DT_FLOAT32: return MPI_FLOAT;
    case ZAP_DT_FLOAT64: return MPI_DOUBLE;
    default: return MPI_FLOAT; // float16/bfloat16: reference in float
    }
}

MPI_Op mpi_op(zap_op_t op)
{
    const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_LAND, MPI_LOR, MPI_LXOR};
    return ops[op];
}

bool is_half(zap_dtype_t dt) { return dt == ZAP_DT_FLOAT16 || dt == ZAP_DT_BFLOAT16; }

// Exact encoders/decoders for the small integer values used with 16-bit floats.
uint16_t enc16(zap_dtype_t dt, float v)
{
    if (dt == ZAP_DT_BFLOAT16) {
        uint32_t x;
        std::memcpy(&x, &v, 4);
        return (uint16_t)(x >> 16);
    }
    if (v == 0)
        return 0;
    int e;
    double m = std::frexp(std::fabs(v), &e);
    return (uint16_t)((v < 0 ? 0x8000 : 0) | ((e - 1 + 15) << 10) | (uint16_t)std::lround((m * 2 - 1) * 1024));
}

class CollMpi : public ::testing::Test {
  protected:
    static void SetUpTestSuite()
    {
        ASSERT_EQ(zap_ucp_transport_create(MPI_COMM_WORLD, nullptr, &t_), ZAP_OK);
        ASSERT_EQ(zap_comm_create(t_, &comm_), ZAP_OK);
    }
    static void TearDownTestSuite()
    {
        zap_comm_destroy(comm_);
        comm_ = nullptr;
        zap_transport_close(t_);
        t_ = nullptr;
    }
    static zap_transport_t *t_;
    static zap_comm_t *comm_;
};
zap_transport_t *CollMpi::t_ = nullptr;
zap_comm_t *CollMpi::comm_ = nullptr;

// One differential allreduce; failures name dtype, op, count and element.
void diff_allreduce(zap_comm_t *comm, zap_dtype_t dt, zap_op_t op, size_t count, uint64_t seed)
{
    int rank = MpiRank(), size = MpiSize();
    size_t es = zap_dtype_size(dt);
    std::vector<uint8_t> in(count * es + 8), out(count * es + 8, 0xEE);
    std::vector<float> fin(count), fref(count);
    for (size_t i = 0; i < count; i++) {
        uint64_t h = mix(seed * 7777 + (uint64_t)rank * 104729 + i);
        if (is_half(dt)) {
            float v = op == ZAP_OP_PROD ? (h % 5 == 0 ? 2.0f : ((h >> 9) & 1 ? -1.0f : 1.0f)) : (float)((int)(h % 33) - 16);
            fin[i] = v;
            uint16_t e = enc16(dt, v);
            std::memcpy(&in[i * 2], &e, 2);
        } else if (dt == ZAP_DT_FLOAT32) {
            float v = op == ZAP_OP_PROD ? 1.0f + (float)(h % 1000) / 4000.0f : (float)((double)(h % 2000001) / 1000.0 - 1000.0);
            std::memcpy(&in[i * 4], &v, 4);
        } else if (dt == ZAP_DT_FLOAT64) {
            double v = op == ZAP_OP_PROD ? 1.0 + (double)(h % 1000) / 4000.0 : (double)(h % 2000001) / 1000.0 - 1000.0;
            std::memcpy(&in[i * 8], &v, 8);
        } else {
            std::memcpy(&in[i * es], &h, es);
        }
    }
    ASSERT_EQ(zap_allreduce(comm, in.data(), out.data(), count, dt, op), ZAP_OK)
        << zap_dtype_name(dt) << " " << zap_op_name(op) << " count " << count;
    ASSERT_EQ(out[count * es], 0xEE) << "wrote past the end";
    std::vector<uint8_t> ref(count * es + 8);
    if (is_half(dt)) {
        MPI_Allreduce(fin.data(), fref.data(), (int)count, MPI_FLOAT, mpi_op(op), MPI_COMM_WORLD);
        for (size_t i = 0; i < count; i++) {
            uint16_t e = enc16(dt, fref[i]);
            std::memcpy(&ref[i * 2], &e, 2);
        }
    } else {
        MPI_Allreduce(in.data(), ref.data(), (int)count, mpi_type(dt), mpi_op(op), MPI_COMM_WORLD);
    }
    for (size_t i = 0; i < count; i++) {
        bool ok;
        if (dt == ZAP_DT_FLOAT32) {
            float a, b;
            std::memcpy(&a, &out[i * 4], 4);
            std::memcpy(&b, &ref[i * 4], 4);
            ok = std::fabs(a - b) <= 1e-6f * (std::fabs(b) + 1000.0f) * (float)size; // inputs within +-1000
        } else if (dt == ZAP_DT_FLOAT64) {
            double a, b;
            std::memcpy(&a, &out[i * 8], 8);
            std::memcpy(&b, &ref[i * 8], 8);
            ok = std::fabs(a - b) <= 1e-14 * (std::fabs(b) + 1000.0) * size;
        } else {
            ok = std::memcmp(&out[i * es], &ref[i * es], es) == 0;
        }
        if (!ok) {
            ADD_FAILURE() << zap_dtype_name(dt) << " " << zap_op_name(op) << " count " << count << " element " << i
                          << " differs from MPI_Allreduce: got 0x" << std::hex << (int)out[i * es] << " want 0x"
                          << (int)ref[i * es] << " input 0x" << (int)in[i * es] << std::dec;
            return;
        }
    }
    // Identical bytes on every rank: compare with rank 0's result.
    std::vector<uint8_t> r0(out.begin(), out.begin() + count * es);
    MPI_Bcast(r0.data(), (int)r0.size(), MPI_BYTE, 0, MPI_COMM_WORLD);
    ASSERT_EQ(std::memcmp(r0.data(), out.data(), r0.size()), 0) << "rank " << rank << " differs from rank 0";
}

// ops collectives of n int32 each outstanding at once on comm, posted in
// order and waited in reverse. Op i is a broadcast from root(i) when
// bcast(i), else a sum allreduce forced to alg(i) (the test hook switches
// comm's algorithm between the posts). Every root's data and every sum is
// checked at four places.
template <class IsBcast, class Root, class Alg>
void interleaved(zap_comm_t *comm, size_t n, int ops, IsBcast bcast, Root root, Alg alg)
{
    int rank = MpiRank(), size = MpiSize();
    std::vector<std::vector<int32_t>> in(ops, std::vector<int32_t>(n)), out(ops, std::vector<int32_t>(n, -1));
    std::vector<zap_request_t *> req(ops);
    for (int i = 0; i < ops; i++) {
        for (size_t j = 0; j < n; j++)
            in[i][j] = bcast(i) ? (rank == root(i) ? (int32_t)(i * 1000003 + j) : 0) : rank + i + (int)(j % 5);
        if (bcast(i)) {
            ASSERT_EQ(zap_ibcast(comm, in[i].data(), n, ZAP_DT_INT32, root(i), &req[i]), ZAP_OK);
        } else {
            ASSERT_EQ(zap_coll_test_force(comm, "allreduce", alg(i)), ZAP_OK);
            ASSERT_EQ(zap_iallreduce(comm, in[i].data(), out[i].data(), n, ZAP_DT_INT32, ZAP_OP_SUM, &req[i]), ZAP_OK);
        }
    }
    ASSERT_EQ(zap_coll_test_force(comm, "allreduce", "auto"), ZAP_OK);
    for (int i = ops - 1; i >= 0; i--) {
        EXPECT_EQ(zap_request_wait(req[i]), ZAP_OK) << i;
        zap_request_free(req[i]);
    }
    for (int i = 0; i < ops; i++)
        for (size_t j : {(size_t)0, (size_t)131071, n / 2, n - 1}) {
            if (bcast(i))
                ASSERT_EQ(in[i][j], (int32_t)(i * 1000003 + j)) << "bcast " << i << " element " << j;
            else
                ASSERT_EQ(out[i][j], size * (size - 1) / 2 + size * (i + (int)(j % 5))) << "allreduce " << i;
        }
}

class AllreduceMpi : public CollMpi, public ::testing::WithParamInterface<const char *> {};

TEST_P(AllreduceMpi, EveryDatatypeAndOpMatchesMpiAllreduce)
{
    Comm comm(t_, Params().allreduce(GetParam()));
    uint64_t seed = 1;
    for (int d = 0; d <= ZAP_DT_FLOAT64; d++) // the numeric types (complex and pairs: test_colls_mpi.cc)
        for (int o = 0; o <= ZAP_OP_LXOR; o++)
            if (zap_op_supported((zap_dtype_t)d, (zap_op_t)o))
                for (size_t count : {(size_t)1, (size_t)77, (size_t)2011}) {
                    // More than 2 ranks on the 2-core CI machine are scheduling-bound:
                    // one odd count there (the inproc suite covers sizes exhaustively).
                    if (MpiSize() > 2 && count != 2011)
                        continue;
                    diff_allreduce(comm, (zap_dtype_t)d, (zap_op_t)o, count, seed++);
                }
}

TEST_P(AllreduceMpi, LargeVectorMatchesMpiAllreduce)
{
    Comm comm(t_, Params().allreduce(GetParam()));
    diff_allreduce(comm, ZAP_DT_FLOAT32, ZAP_OP_SUM, (4u << 20) / 4 + 3, 5);
    diff_allreduce(comm, ZAP_DT_INT64, ZAP_OP_BXOR, 300001, 6);
}

INSTANTIATE_TEST_SUITE_P(Alg, AllreduceMpi, ::testing::Values("auto", "rd", "rabenseifner", "ring", "direct", "shm", "cma"));

class BcastMpi : public CollMpi, public ::testing::WithParamInterface<const char *> {};

TEST_P(BcastMpi, MatchesMpiBcastForEveryRootAndSize)
{
    Comm comm(t_, Params().bcast(GetParam()).pipeline(64 << 10));
    int rank = MpiRank(), size = MpiSize();
    for (int root : {0, size - 1})
        for (size_t bytes : {(size_t)0, (size_t)1, (size_t)999, (size_t)65536, (size_t)1000003, (size_t)(4u << 20)}) {
            std::vector<uint8_t> a(bytes + 1, 0), b(bytes + 1, 0);
            if (rank == root)
                for (size_t i = 0; i < bytes; i++)
                    a[i] = b[i] = (uint8_t)mix(bytes * 31 + i);
            ASSERT_EQ(zap_bcast(comm, a.data(), bytes / 4, ZAP_DT_UINT32, root), ZAP_OK);
            MPI_Bcast(b.data(), (int)(bytes / 4), MPI_UINT32_T, root, MPI_COMM_WORLD);
            ASSERT_EQ(std::memcmp(a.data(), b.data(), bytes + 1), 0) << "root " << root << " bytes " << bytes;
        }
}

INSTANTIATE_TEST_SUITE_P(Alg, BcastMpi, ::testing::Values("auto", "binomial", "scatter_allgather", "chain", "rd", "shm"));

// Waits for req in MPI while driving comm, as a program that waits outside
// zap for peers still inside a collective does (zap_comm_progress).
void wait_driving(MPI_Request *req, zap_comm_t *comm)
{
    for (int done = 0; !done;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (!done) {
            EXPECT_EQ(zap_comm_progress(comm), ZAP_OK);
        }
    }
}

// UCX completes an eager send over TCP once the message is in its segment;
// what the socket did not take at once leaves on the sender's later progress
// calls (docs/transport.md, "Progress"). Here segments hold a whole 64 KiB
// chunk and sockets 64 KiB, so a broadcast's root (and each forwarding rank)
// returns with part of its last chunk still in the process, and then waits
// in MPI for every receiver's report: the wait must drive zap (with no
// operation outstanding) for the receivers to finish; without that they wait
// for the rest of the chunk until their deadline.
TEST_F(CollMpi, ARankWaitingOutsideZapDrivesItsCompletedSendsOut)
{
    ScopedEnv tls("UCX_TLS", "tcp,self"), tx("UCX_TCP_TX_SEG_SIZE", "4m"), rx("UCX_TCP_RX_SEG_SIZE", "4m"),
        rndv("UCX_RNDV_THRESH", "8m"), sndbuf("UCX_TCP_SNDBUF", "64k"), rcvbuf("UCX_TCP_RCVBUF", "64k");
    zap_transport_t *t = nullptr;
    ASSERT_EQ(zap_ucp_transport_create(MPI_COMM_WORLD, nullptr, &t), ZAP_OK);
    zap_transport_caps_t caps{};
    ASSERT_EQ(zap_transport_caps(t, &caps), ZAP_OK);
    EXPECT_NE(caps.flags & ZAP_CAP_SENDS_NEED_PROGRESS, 0u) << "TCP without shared memory: sends may need progress";
    {
        Params p;
        p.bcast("chain");
        p.pipeline(64 << 10);
        p.shm = ZAP_COMM_SWITCH_OFF;
        p.cma = ZAP_COMM_SWITCH_OFF;
        p.hier = ZAP_COMM_SWITCH_OFF;
        p.timeout_s = 10; // a receiver left waiting fails instead of hanging
        Comm comm(t, p);
        int rank = MpiRank(), size = MpiSize();
        uint32_t one = 7;
        ASSERT_EQ(zap_bcast(comm, &one, 1, ZAP_DT_UINT32, 0), ZAP_OK); // connected down the chain
        const size_t n = (4u << 20) / 4;
        std::vector<uint32_t> buf(n, 0);
        if (rank == 0)
            for (size_t i = 0; i < n; i++)
                buf[i] = (uint32_t)mix(i);
        MPI_Barrier(MPI_COMM_WORLD);
        zap_status_t st = zap_bcast(comm, buf.data(), n, ZAP_DT_UINT32, 0);
        EXPECT_EQ(st, ZAP_OK);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += buf[i] != (uint32_t)mix(i);
        EXPECT_EQ(bad, 0u);
        int ok = st == ZAP_OK && bad == 0;
        std::vector<int> oks(size, 0);
        MPI_Request req;
        MPI_Igather(&ok, 1, MPI_INT, oks.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
        wait_driving(&req, comm);
        for (int r = 1; rank == 0 && r < size; r++)
            EXPECT_EQ(oks[r], 1) << "rank " << r << " did not get the whole broadcast";
        MPI_Ibarrier(MPI_COMM_WORLD, &req);
        wait_driving(&req, comm);
    }
    zap_transport_close(t);
}

// A communicator's shared-memory slots are faulted in (and written once)
// when its segment is set up (shm_segment.c, prefault): the calls after the
// first, which sets the segment up, take no page faults, though each of the
// first banks-many calls uses a bank no call used before. Without that, each
// takes faults on its own slot and the slots it reads.
TEST_F(CollMpi, SmallCallsAfterTheFirstTakeNoPageFaultsInTheSegment)
{
    zap_comm_t *c = nullptr;
    ASSERT_EQ(zap_comm_create(t_, &c), ZAP_OK);
    zap_comm_attr_t a{};
    a.field_mask = ZAP_COMM_ATTR_SHARED_MEMORY;
    ASSERT_EQ(zap_comm_query(c, &a), ZAP_OK);
    int32_t x = MpiRank() + 1, y = 0;
    ASSERT_EQ(zap_allreduce(c, &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK); // sets the segment up
    struct rusage r0, r1;
    getrusage(RUSAGE_THREAD, &r0);
    for (int i = 0; i < 128; i++)
        ASSERT_EQ(zap_allreduce(c, &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
    getrusage(RUSAGE_THREAD, &r1);
    zap_comm_destroy(c);
    int n = MpiSize();
    EXPECT_EQ(y, n * (n + 1) / 2);
    if (!a.shared_memory)
        GTEST_SKIP() << "this run's communicator has no shared-memory segment";
    EXPECT_LT((r1.ru_minflt - r0.ru_minflt) + (r1.ru_majflt - r0.ru_majflt), 8)
        << "page faults in 128 small allreduces after the first";
}

TEST_F(CollMpi, ScattervMatchesMpiScatterv)
{
    int rank = MpiRank(), size = MpiSize();
    for (int root = 0; root < size; root++) {
        std::vector<size_t> counts(size);
        std::vector<ptrdiff_t> displs(size);
        std::vector<int> icounts(size), idispls(size);
        size_t total = 0;
        for (int r = 0; r < size; r++) {
            counts[r] = (size_t)((r + root) % 3) * 50021;
            displs[r] = (ptrdiff_t)total;
            icounts[r] = (int)counts[r];
            idispls[r] = (int)displs[r];
            total += counts[r] + 3;
        }
        std::vector<double> send(total);
        for (size_t i = 0; i < total; i++)
            send[i] = (double)mix(i + root);
        std::vector<double> a(counts[rank] + 1, -1), b(counts[rank] + 1, -1);
        ASSERT_EQ(zap_scatterv(comm_, send.data(), counts.data(), displs.data(), a.data(), counts[rank],
                               ZAP_DT_FLOAT64, root),
                  ZAP_OK);
        MPI_Scatterv(send.data(), icounts.data(), idispls.data(), MPI_DOUBLE, b.data(), icounts[rank], MPI_DOUBLE,
                     root, MPI_COMM_WORLD);
        ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * 8), 0) << "root " << root;
    }
}

TEST_F(CollMpi, AllgathervMatchesMpiAllgatherv)
{
    int rank = MpiRank(), size = MpiSize();
    std::vector<size_t> counts(size);
    std::vector<ptrdiff_t> displs(size);
    std::vector<int> icounts(size), idispls(size);
    size_t total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = r == 1 ? 0 : (size_t)(r + 1) * 33331;
        displs[r] = (ptrdiff_t)total;
        icounts[r] = (int)counts[r];
        idispls[r] = (int)displs[r];
        total += counts[r];
    }
    std::vector<int16_t> mine(counts[rank] + 1);
    for (size_t i = 0; i < counts[rank]; i++)
        mine[i] = (int16_t)mix((uint64_t)rank << 40 | i);
    std::vector<int16_t> a(total + 1, 3), b(total + 1, 3);
    ASSERT_EQ(zap_allgatherv(comm_, mine.data(), counts[rank], a.data(), counts.data(), displs.data(), ZAP_DT_INT16),
              ZAP_OK);
    MPI_Allgatherv(mine.data(), icounts[rank], MPI_INT16_T, b.data(), icounts.data(), idispls.data(), MPI_INT16_T,
                   MPI_COMM_WORLD);
    ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * 2), 0);
}

// Blocks above a slot and up to 64 KiB go through the shared segment's
// large area (allgather_shm.c; below 8 KiB on 2 ranks): fixed and v-forms,
// in place too, against MPI_Allgather(v).
TEST_F(CollMpi, MidSizeAllgatherThroughTheLargeAreaMatchesMpi)
{
    int rank = MpiRank(), size = MpiSize();
    for (size_t count : {1100, 1900, 5000, 16384, 60000}) { // 60000: through the area where reads are dear
        for (int in_place = 0; in_place < 2; in_place++) {
            std::vector<int32_t> mine(count), a(count * size + 1, 7), b(count * size + 1, 7);
            for (size_t i = 0; i < count; i++)
                mine[i] = (int32_t)mix((uint64_t)rank << 40 | i << 8 | count);
            if (in_place)
                std::memcpy(a.data() + (size_t)rank * count, mine.data(), count * 4);
            ASSERT_EQ(zap_allgather(comm_, in_place ? ZAP_IN_PLACE : mine.data(), count, a.data(), ZAP_DT_INT32),
                      ZAP_OK);
            MPI_Allgather(mine.data(), (int)count, MPI_INT32_T, b.data(), (int)count, MPI_INT32_T, MPI_COMM_WORLD);
            ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << count << (in_place ? " in place" : "");
        }
        std::vector<size_t> counts(size);
        std::vector<ptrdiff_t> displs(size);
        std::vector<int> icounts(size), idispls(size);
        size_t total = 0;
        for (int r = 0; r < size; r++) { /* reversed, uneven, one empty */
            counts[r] = r == size - 1 ? 0 : count - (size_t)r * 100 % (count / 2); /* above count / 2 at any size */
            icounts[r] = (int)counts[r];
        }
        for (int r = size - 1; r >= 0; r--) {
            displs[r] = (ptrdiff_t)total;
            idispls[r] = (int)total;
            total += counts[r] + 3;
        }
        std::vector<int32_t> mine(counts[rank] + 1), a(total, 5), b(total, 5);
        for (size_t i = 0; i < counts[rank]; i++)
            mine[i] = (int32_t)mix((uint64_t)rank << 40 | i);
        ASSERT_EQ(zap_allgatherv(comm_, mine.data(), counts[rank], a.data(), counts.data(), displs.data(),
                                 ZAP_DT_INT32),
                  ZAP_OK);
        MPI_Allgatherv(mine.data(), icounts[rank], MPI_INT32_T, b.data(), icounts.data(), idispls.data(),
                       MPI_INT32_T, MPI_COMM_WORLD);
        ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << count << " v-form";
    }
}

// Large-area exchanges end without waiting for the other ranks to finish
// reading their input areas (zap_coll_shm_end): the next exchange's turn
// waits for that before any rank rewrites its area. Outstanding together
// (posted back to back, waited in a shuffled order, ranks delayed now and
// then), an allgather whose blocks go through the area, an alltoall and a
// reduce_scatter_block, then a second allgather: every block of every call
// must be the one its rank sent in that iteration.
TEST_F(CollMpi, LargeAreaExchangesOutstandingTogetherKeepEveryBlock)
{
    int rank = MpiRank(), size = MpiSize();
    const size_t ag = size == 2 ? 1500 : 6000; /* above a slot; below 8 KiB on 2 ranks: the area */
    const size_t a2a = 1000, rs = 2000;
    std::vector<int32_t> ag_in(ag), ag_out(ag * size), ag2_in(ag), ag2_out(ag * size);
    std::vector<int32_t> a2a_in(a2a * size), a2a_out(a2a * size), rs_in(rs * size), rs_out(rs);
    auto val = [](uint64_t it, uint64_t kind, uint64_t from, uint64_t to, uint64_t i) {
        return (int32_t)(mix(it << 40 | kind << 36 | from << 28 | to << 20 | i) & 0xffffff);
    };
    for (uint64_t it = 0; it < 300; it++) {
        for (size_t i = 0; i < ag; i++) {
            ag_in[i] = val(it, 1, rank, 0, i);
            ag2_in[i] = val(it, 2, rank, 0, i);
        }
        for (int q = 0; q < size; q++) {
            for (size_t i = 0; i < a2a; i++)
                a2a_in[(size_t)q * a2a + i] = val(it, 3, rank, q, i);
            for (size_t i = 0; i < rs; i++)
                rs_in[(size_t)q * rs + i] = val(it, 4, 0, q, i) + rank;
        }
        zap_request_t *req[4] = {};
        ASSERT_EQ(zap_iallgather(comm_, ag_in.data(), ag, ag_out.data(), ZAP_DT_INT32, &req[0]), ZAP_OK);
        if ((it + (uint64_t)rank) % 7 == 0)
            usleep(200);
        ASSERT_EQ(zap_ialltoall(comm_, a2a_in.data(), a2a, a2a_out.data(), ZAP_DT_INT32, &req[1]), ZAP_OK);
        ASSERT_EQ(zap_ireduce_scatter_block(comm_, rs_in.data(), rs_out.data(), rs, ZAP_DT_INT32, ZAP_OP_SUM, &req[2]),
                  ZAP_OK);
        ASSERT_EQ(zap_iallgather(comm_, ag2_in.data(), ag, ag2_out.data(), ZAP_DT_INT32, &req[3]), ZAP_OK);
        for (int j = 0; j < 4; j++) {
            int w = (int)((it + (uint64_t)j * 3 + (uint64_t)rank) % 4); /* each rank its own order */
            for (int k = 0; k < 4 && req[w] == nullptr; k++)
                w = (w + 1) % 4;
            ASSERT_EQ(zap_request_wait(req[w]), ZAP_OK) << "iteration " << it << " request " << w;
            zap_request_free(req[w]);
            req[w] = nullptr;
        }
        int32_t sum_ranks = size * (size - 1) / 2;
        for (int q = 0; q < size; q++) {
            for (size_t i = 0; i < ag; i += 97) {
                ASSERT_EQ(ag_out[(size_t)q * ag + i], val(it, 1, q, 0, i)) << "allgather 1, iteration " << it;
                ASSERT_EQ(ag2_out[(size_t)q * ag + i], val(it, 2, q, 0, i)) << "allgather 2, iteration " << it;
            }
            for (size_t i = 0; i < a2a; i += 31)
                ASSERT_EQ(a2a_out[(size_t)q * a2a + i], val(it, 3, q, rank, i)) << "alltoall, iteration " << it;
        }
        for (size_t i = 0; i < rs; i += 29)
            ASSERT_EQ(rs_out[i], val(it, 4, 0, rank, i) * size + sum_ranks) << "reduce_scatter, iteration " << it;
    }
}

TEST_F(CollMpi, NonblockingCollectivesOverlap)
{
    int rank = MpiRank(), size = MpiSize();
    const size_t n = 1 << 18;
    std::vector<float> big(n, (float)(rank + 1)), rbig(n);
    std::vector<uint8_t> bytes(3 << 20, rank == 0 ? 0x77 : 0);
    uint64_t bits = 1ull << rank, rbits = 0;
    int32_t m = rank, rm = -1;
    std::vector<int32_t> gathered(size);
    zap_request_t *req[5] = {};
    ASSERT_EQ(zap_iallreduce(comm_, big.data(), rbig.data(), n, ZAP_DT_FLOAT32, ZAP_OP_SUM, &req[0]), ZAP_OK);
    ASSERT_EQ(zap_ibcast(comm_, bytes.data(), bytes.size(), ZAP_DT_UINT8, 0, &req[1]), ZAP_OK);
    ASSERT_EQ(zap_iallreduce(comm_, &bits, &rbits, 1, ZAP_DT_UINT64, ZAP_OP_BOR, &req[2]), ZAP_OK);
    ASSERT_EQ(zap_iallreduce(comm_, &m, &rm, 1, ZAP_DT_INT32, ZAP_OP_MAX, &req[3]), ZAP_OK);
    ASSERT_EQ(zap_iallgather(comm_, &m, 1, gathered.data(), ZAP_DT_INT32, &req[4]), ZAP_OK);
    for (int i = 4; i >= 0; i--) { // reverse order: waiting on one progresses the others
        EXPECT_EQ(zap_request_wait(req[i]), ZAP_OK) << "request " << i;
        zap_request_free(req[i]);
    }
    EXPECT_EQ(rbig[n - 1], (float)(size * (size + 1) / 2));
    EXPECT_EQ(bytes[bytes.size() - 1], 0x77);
    EXPECT_EQ(rbits, (1ull << size) - 1);
    EXPECT_EQ(rm, size - 1);
    for (int r = 0; r < size; r++)
        EXPECT_EQ(gathered[r], r);
}

TEST_F(CollMpi, MismatchedCountIsReportedOnEveryRank)
{
    MpiExpectLog("differ");
    MpiExpectLog("wrong size");
    MpiExpectLog("exceeds");
    MpiExpectLog("truncat");
    int rank = MpiRank(), size = MpiSize();
    std::vector<int32_t> in(1 << 20, 1), out(1 << 20);
    size_t count = rank == size - 1 ? (1 << 20) : 3;
    EXPECT_EQ(zap_allreduce(comm_, in.data(), out.data(), count, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_ERR_MISMATCH);
    // The communicator still works afterwards.
    int32_t x = 1, y = 0;
    EXPECT_EQ(zap_allreduce(comm_, &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
    EXPECT_EQ(y, size);
}

// The direct algorithm's flat exchange, forced and under auto (where it
// carries the header of larger vectors too): a count, datatype or local error
// on one rank is reported on every rank over UCX.
TEST_F(CollMpi, DirectReportsMismatchesOnEveryRank)
{
    MpiExpectLog("differ");
    MpiExpectLog("wrong size");
    MpiExpectLog("exceeds");
    MpiExpectLog("truncat");
    MpiExpectLog("not defined");
    int rank = MpiRank(), size = MpiSize();
    for (const char *alg : {"direct", "auto"}) {
        Comm comm(t_, Params().allreduce(alg));
        for (int odd : {0, size - 1})
            for (size_t big : {(size_t)5, (size_t)100000}) {
                std::vector<int32_t> in(big, 1), out(big);
                size_t count = rank == odd ? big : 3;
                EXPECT_EQ(zap_allreduce(comm, in.data(), out.data(), count, ZAP_DT_INT32, ZAP_OP_SUM),
                          ZAP_ERR_MISMATCH)
                    << alg << " rank " << odd << " count " << big;
            }
        uint32_t x = 1, y = 0;
        EXPECT_EQ(zap_allreduce(comm, &x, &y, 1, rank == size - 1 ? ZAP_DT_FLOAT32 : ZAP_DT_UINT32, ZAP_OP_MAX),
                  ZAP_ERR_MISMATCH)
            << alg;
        float f = 1, g = 0;
        EXPECT_EQ(zap_allreduce(comm, &f, &g, 1, ZAP_DT_FLOAT32, rank == 0 ? ZAP_OP_BAND : ZAP_OP_SUM),
                  rank == 0 ? ZAP_ERR_UNSUPPORTED : ZAP_ERR_MISMATCH)
            << alg;
        // The communicator still works afterwards.
        int32_t a = 1, b = 0;
        EXPECT_EQ(zap_allreduce(comm, &a, &b, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK) << alg;
        EXPECT_EQ(b, size) << alg;
    }
}

// The shared-memory allreduce (allreduce_shm.c): every rank of these runs is
// on one host, so the communicator has the segment unless ZAP_COLL_SHM=off.
// Its results are bit for bit those of the direct algorithm (both reduce the
// p vectors in rank order) at every size it carries.
TEST_F(CollMpi, SharedMemoryAllreduceMatchesDirectBitForBit)
{
    ASSERT_TRUE(shared_memory(comm_)) << "all ranks of this test run on one host";
    size_t area = shared_memory_bytes(comm_);
    ASSERT_GE(area, MpiSize() > 4 ? (size_t)512 << 10 : (size_t)4 << 20) << "the default large area";
    int rank = MpiRank();
    Comm shm(t_, Params().allreduce("shm")), direct(t_, Params().allreduce("direct"));
    // In a slot (up to 4032 bytes), then the large area (odd counts, blocks
    // of unequal size, up to the area's 4 MiB, or 512 KiB above 4 ranks).
    for (size_t count : {(size_t)1, (size_t)2, (size_t)333, (size_t)(ZAP_COLL_SHM_MAX_BYTES / 4),
                         (size_t)(ZAP_COLL_SHM_MAX_BYTES / 4 + 1), (size_t)100003, area / 4}) {
        std::vector<float> in(count), a(count), b(count);
        for (size_t i = 0; i < count; i++)
            in[i] = (float)((double)(mix(rank * 1000003ull + i) % 2000001) / 997.0 - 1000.0);
        ASSERT_EQ(zap_allreduce(shm, in.data(), a.data(), count, ZAP_DT_FLOAT32, ZAP_OP_SUM), ZAP_OK) << count;
        ASSERT_EQ(zap_allreduce(direct, in.data(), b.data(), count, ZAP_DT_FLOAT32, ZAP_OP_SUM), ZAP_OK) << count;
        EXPECT_EQ(std::memcmp(a.data(), b.data(), count * 4), 0) << "count " << count;
    }
    // In place.
    double v = rank + 0.25;
    ASSERT_EQ(zap_allreduce(comm_, ZAP_IN_PLACE, &v, 1, ZAP_DT_FLOAT64, ZAP_OP_MAX), ZAP_OK);
    EXPECT_EQ(v, MpiSize() - 1 + 0.25);
}

// The single-copy allreduce (allreduce_cma.c) reads the other ranks' buffers
// directly: bit for bit direct's results, in place too, with one chunk per
// block and with many (a small ZAP_COLL_PIPELINE_BYTES), and under the
// automatic choice from its threshold. Root here, so the reads are permitted.
TEST_F(CollMpi, SingleCopyAllreduceMatchesDirectBitForBit)
{
    ASSERT_TRUE(single_copy(comm_)) << "ranks on one host, as root: process_vm_readv is permitted";
    int rank = MpiRank();
    Comm direct(t_, Params().allreduce("direct"));
    for (uint64_t chunk : {(uint64_t)0, (uint64_t)4 << 10}) {
        Comm cma(t_, Params().allreduce("cma").pipeline(chunk));
        for (size_t count : {(size_t)1, (size_t)5, (size_t)1001, (size_t)100003, ((size_t)1 << 20) + 7}) {
            std::vector<float> in(count), a(count), b(count), c(count);
            for (size_t i = 0; i < count; i++)
                in[i] = (float)((double)(mix(rank * 1000003ull + i) % 2000001) / 997.0 - 1000.0);
            c = in;
            ASSERT_EQ(zap_allreduce(cma, in.data(), a.data(), count, ZAP_DT_FLOAT32, ZAP_OP_SUM), ZAP_OK) << count;
            ASSERT_EQ(zap_allreduce(cma, ZAP_IN_PLACE, c.data(), count, ZAP_DT_FLOAT32, ZAP_OP_SUM), ZAP_OK) << count;
            ASSERT_EQ(zap_allreduce(direct, in.data(), b.data(), count, ZAP_DT_FLOAT32, ZAP_OP_SUM), ZAP_OK) << count;
            EXPECT_EQ(std::memcmp(a.data(), b.data(), count * 4), 0) << "count " << count << " chunk " << chunk;
            EXPECT_EQ(std::memcmp(c.data(), b.data(), count * 4), 0) << "in place, count " << count;
        }
    }
    // A vector a little beyond the shared-memory area, single copy forced
    // (the automatic choice where the ranks are oversubscribed or the probe
    // found the reads dear takes the area round and round instead):
    // integers, exact.
    size_t n = shared_memory_bytes(comm_) / 4 + 3;
    Comm forced(t_, Params().allreduce("cma"));
    ASSERT_STREQ(allreduce_algorithm(forced, n * 4), "cma");
    std::vector<int32_t> in(n), out(n, -1);
    for (size_t i = 0; i < n; i++)
        in[i] = (int32_t)(i % 1009) * (rank + 1);
    ASSERT_EQ(zap_allreduce(forced, in.data(), out.data(), n, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
    int tri = MpiSize() * (MpiSize() + 1) / 2;
    for (size_t i = 0; i < n; i++) // every element: from 4 ranks the result spans the area's slots
        ASSERT_EQ(out[i], (int32_t)(i % 1009) * tri) << i;
}

// Where the probe of single-copy reads (shm_cma_probe.c) finds them dear,
// the automatic choice keeps the allreduce in the shared area, round it for
// vectors larger than it; every rank agreed on the verdict; ZAP_COLL_CMA=on
// prefers the reads whatever the probe says. The reduce and the
// reduce-scatter keep what the area cannot carry for single copy.
TEST_F(CollMpi, SingleCopyPreferenceFollowsTheAgreedProbe)
{
    ASSERT_TRUE(single_copy(comm_));
    bool over = query(comm_, ZAP_COMM_ATTR_OVERSUBSCRIBED).oversubscribed != 0;
    int dear = query(comm_, ZAP_COMM_ATTR_SINGLE_COPY).single_copy_dear, lo = dear, hi = dear;
    ASSERT_EQ(MPI_Allreduce(&dear, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Allreduce(&dear, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(lo, hi) << "the verdict is agreed";
    // Within the area (512 KiB on more than 4 ranks) and from 256 KiB.
    size_t area = shared_memory_bytes(comm_), mid = area / 2 < ((size_t)1 << 20) ? area / 2 : (size_t)1 << 20;
    size_t beyond = area + 4;
    ASSERT_GE(mid, (size_t)256 << 10);
    EXPECT_STREQ(allreduce_algorithm(comm_, mid), over || dear ? "shm" : "cma") << "dear " << dear;
    EXPECT_STREQ(allreduce_algorithm(comm_, beyond), over || dear ? "shm" : "cma") << "dear " << dear;
    Params on;
    on.cma = ZAP_COMM_SWITCH_ON;
    Comm c(t_, on);
    EXPECT_TRUE(single_copy(c));
    EXPECT_EQ(query(c, ZAP_COMM_ATTR_SINGLE_COPY).single_copy_dear, 0);
    EXPECT_STREQ(allreduce_algorithm(c, mid), over ? "shm" : "cma");
    // Either way the sums are exact, within the area and beyond it.
    int rank = MpiRank(), size = MpiSize();
    for (size_t bytes : {mid, 2 * area + 3 * 1024}) {
        std::vector<int64_t> x(bytes / 8), y(bytes / 8, 0), z(bytes / 8, 0);
        for (size_t i = 0; i < x.size(); i++)
            x[i] = (int64_t)(i % 1013) * (rank + 1);
        ASSERT_EQ(zap_allreduce(comm_, x.data(), y.data(), x.size(), ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
        ASSERT_EQ(zap_allreduce(c, x.data(), z.data(), x.size(), ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
        for (size_t i = 0; i < x.size(); i++)
            ASSERT_EQ(y[i], (int64_t)(i % 1013) * size * (size + 1) / 2) << bytes << " " << i;
        EXPECT_EQ(std::memcmp(y.data(), z.data(), x.size() * 8), 0) << bytes;
    }
}

// Single-copy calls outstanding with large shared-memory allreduces and
// broadcasts, waited in reverse; then one freed before its wait, whose free
// finishes it; then ZAP_COLL_CMA=off, where a forced cma takes the
// shared-memory area or the transport.
TEST_F(CollMpi, SingleCopyInterleavedFreedAndOff)
{
    int rank = MpiRank(), size = MpiSize();
    const size_t n = 300000;
    ASSERT_NO_FATAL_FAILURE(interleaved(
        comm_, n, 9, [](int i) { return i % 3 == 0; }, [](int) { return 0; },
        [](int i) { return i % 3 == 1 ? "cma" : "shm"; }));
    std::vector<int32_t> lin(n, 1), lout(n, 0);
    zap_request_t *r = nullptr;
    ASSERT_EQ(zap_coll_test_force(comm_, "allreduce", "cma"), ZAP_OK);
    ASSERT_EQ(zap_iallreduce(comm_, lin.data(), lout.data(), n, ZAP_DT_INT32, ZAP_OP_SUM, &r), ZAP_OK);
    zap_request_free(r);
    EXPECT_EQ(lout[0], size);
    EXPECT_EQ(lout[n - 1], size);
    ASSERT_EQ(zap_coll_test_force(comm_, "allreduce", "auto"), ZAP_OK);

    Params off;
    off.cma = ZAP_COMM_SWITCH_OFF;
    Comm c(t_, off);
    EXPECT_TRUE(shared_memory(c));
    EXPECT_FALSE(single_copy(c));
    EXPECT_STRNE(allreduce_algorithm(c, (size_t)64 << 20), "cma");
    Comm forced(t_, off.allreduce("cma"));
    for (size_t count : {(size_t)1000, (size_t)3 << 20}) { // the area, then above it: the transport
        std::vector<int64_t> x(count, rank + 1), y(count, 0);
        EXPECT_EQ(zap_allreduce(forced, x.data(), y.data(), count, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
        EXPECT_EQ(y[count - 1], (int64_t)size * (size + 1) / 2) << count;
    }
}

// A rank that does not reach a shared-memory exchange in time is named by
// the one that gives up waiting: rank 0 waits its communicator's timeout,
// 0.3 s, the others come 1 s late and still complete (rank 0 published its
// slot before it waited); rank 0 names the first of them, rank 1. A fresh
// communicator: rank 0's is unusable afterwards.
TEST_F(CollMpi, SharedMemoryTimeoutNamesTheMissingRank)
{
    int rank = MpiRank();
    zap_comm_t *c = nullptr;
    Params p; /* the timeout is this rank's own: only how long it waits */
    p.timeout_s = rank == 0 ? 0.3 : 0;
    ASSERT_EQ(zap_comm_create_ex(t_, &p, &c), ZAP_OK);
    ASSERT_TRUE(shared_memory(c));
    int32_t x = 1, y = 0;
    if (rank == 0) {
        MpiExpectLog("to reach it in shared memory");
        EXPECT_EQ(zap_allreduce(c, &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_ERR_TIMED_OUT);
        EXPECT_TRUE(MpiLogSeen("waiting for transport rank 1 to reach it in shared memory")) << MpiLogText();
    } else {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        EXPECT_EQ(zap_allreduce(c, &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
        EXPECT_EQ(y, MpiSize());
    }
    MPI_Barrier(MPI_COMM_WORLD);
    zap_comm_destroy(c);
}

// The large area is reserved as the calls need it, growing: a fresh
// communicator's large calls of growing size, broadcasts and allreduces
// alternating, then small ones again, all checked. Under
// mpi.mpi_coll.np2.shm_no_room (8 MiB of /dev/shm) the growth stops at the
// first call /dev/shm has no room for: that one and larger go over the
// transport, smaller ones still through the area, on every rank alike.
TEST_F(CollMpi, SharedMemoryAreaGrowsWithTheCalls)
{
    int rank = MpiRank(), size = MpiSize();
    zap_comm_t *c = nullptr;
    ASSERT_EQ(zap_comm_create_ex(t_, &Params().allreduce("shm"), &c), ZAP_OK); // not the single-copy form,
                                                                               // which needs no area
    size_t area = shared_memory_bytes(c);
    std::vector<size_t> counts;
    for (size_t bytes : {(size_t)5000, (size_t)64 << 10, (size_t)300 << 10, (size_t)1 << 20, (size_t)3 << 20, area,
                         (size_t)200 << 10, (size_t)8000})
        if (bytes <= area && bytes > ZAP_COLL_SHM_MAX_BYTES)
            counts.push_back(bytes / 4);
    for (size_t i = 0; i < counts.size(); i++) {
        size_t n = counts[i];
        std::vector<int32_t> x(n), y(n, -1);
        for (size_t j = 0; j < n; j++)
            x[j] = i % 2 ? (rank == 1 % size ? (int32_t)(j * 7 + i) : 0) : rank + (int32_t)(j % 11);
        if (i % 2) {
            ASSERT_EQ(zap_bcast(c, x.data(), n, ZAP_DT_INT32, 1 % size), ZAP_OK) << n;
            for (size_t j : {(size_t)0, n / 2, n - 1})
                ASSERT_EQ(x[j], (int32_t)(j * 7 + i)) << n;
        } else {
            ASSERT_EQ(zap_allreduce(c, x.data(), y.data(), n, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK) << n;
            for (size_t j : {(size_t)0, n / 2, n - 1})
                ASSERT_EQ(y[j], size * (size - 1) / 2 + size * (int32_t)(j % 11)) << n;
        }
    }
    zap_comm_destroy(c);
}

// Off on request: the same calls then go over the transport; a large area of
// 0 keeps the slots only.
TEST_F(CollMpi, SharedMemoryOffGivesATransportCommunicator)
{
    {
        Params slots;
        slots.shm_large_bytes = ZAP_COMM_BYTES_ZERO;
        zap_comm_t *c = nullptr;
        zap_status_t st = zap_comm_create_ex(t_, &slots, &c);
        ASSERT_EQ(st, ZAP_OK);
        EXPECT_TRUE(shared_memory(c));
        EXPECT_EQ(shared_memory_bytes(c), (size_t)ZAP_COLL_SHM_MAX_BYTES);
        std::vector<int64_t> in(50000, MpiRank() + 1), out(50000);
        EXPECT_EQ(zap_allreduce(c, in.data(), out.data(), in.size(), ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
        EXPECT_EQ(out[49999], (int64_t)MpiSize() * (MpiSize() + 1) / 2);
        zap_comm_destroy(c);
    }
    Params off;
    off.shm = ZAP_COMM_SWITCH_OFF;
    zap_comm_t *c = nullptr;
    zap_status_t st = zap_comm_create_ex(t_, &off, &c);
    ASSERT_EQ(st, ZAP_OK);
    EXPECT_FALSE(shared_memory(c));
    uint64_t bits = 1ull << MpiRank(), all = 0;
    EXPECT_EQ(zap_allreduce(c, &bits, &all, 1, ZAP_DT_UINT64, ZAP_OP_BOR), ZAP_OK);
    EXPECT_EQ(all, (1ull << MpiSize()) - 1);
    zap_comm_destroy(c);
    // A split of a shared communicator is shared too.
    zap_comm_t *half = nullptr;
    ASSERT_EQ(zap_comm_split(comm_, MpiRank() % 2, 0, &half), ZAP_OK);
    EXPECT_EQ(shared_memory(half), zap_comm_size(half) > 1);
    int32_t one = 1, n = 0;
    EXPECT_EQ(zap_allreduce(half, &one, &n, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
    EXPECT_EQ(n, zap_comm_size(half));
    zap_comm_destroy(half);
}

// A communicator with slots only (no large area): a broadcast above a slot
// but below 8 KiB takes the agreement in the slots and then its own
// recursive-doubling exchange (its data never goes into a slot), from every
// root, and the slots stay intact for the calls after it.
TEST_F(CollMpi, SlotsOnlyBroadcastAboveASlotStaysOutOfTheSlots)
{
    int rank = MpiRank(), size = MpiSize();
    Params slots;
    slots.shm_large_bytes = ZAP_COMM_BYTES_ZERO;
    Comm c(t_, slots);
    ASSERT_TRUE(shared_memory(c));
    ASSERT_EQ(shared_memory_bytes(c), (size_t)ZAP_COLL_SHM_MAX_BYTES);
    for (int root = 0; root < size; root++)
        for (size_t bytes : {(size_t)ZAP_COLL_SHM_MAX_BYTES + 1, (size_t)6000, (size_t)8191}) {
            std::vector<uint8_t> b(bytes, rank == root ? 0 : 0xee);
            if (rank == root)
                for (size_t i = 0; i < bytes; i++)
                    b[i] = (uint8_t)mix(bytes * 7 + i + (size_t)root);
            ASSERT_EQ(zap_bcast(c, b.data(), bytes, ZAP_DT_UINT8, root), ZAP_OK) << bytes;
            for (size_t i = 0; i < bytes; i += bytes / 7)
                ASSERT_EQ(b[i], (uint8_t)mix(bytes * 7 + i + (size_t)root)) << "root " << root << " byte " << i;
            int64_t x = rank + 1, y = 0;
            ASSERT_EQ(zap_allreduce(c, &x, &y, 1, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
            ASSERT_EQ(y, (int64_t)size * (size + 1) / 2);
        }
}

// A broadcast larger than the large area goes round it as a ring of chunks
// (bcast_shm.c): a 256 KiB area holds two 128 KiB chunks, so these messages
// wrap up to 25 times, from every root, between allreduces that share the
// area; then several outstanding at once, waited in reverse order.
TEST_F(CollMpi, BroadcastLargerThanTheAreaGoesRoundIt)
{
    int rank = MpiRank(), size = MpiSize();
    Params small;
    small.shm_large_bytes = 256 << 10;
    small.bcast_alg = "shm";
    Comm c(t_, small);
    ASSERT_TRUE(shared_memory(c));
    ASSERT_EQ(shared_memory_bytes(c), (size_t)256 << 10);
    std::vector<int64_t> ain(40000, rank + 1), aout(40000);
    for (int root = 0; root < size; root++)
        for (size_t bytes : {(size_t)200 << 10, ((size_t)256 << 10) + 1, ((size_t)1 << 20) + 17, (size_t)3 << 20}) {
            std::vector<uint8_t> b(bytes, 0xee);
            if (rank == root)
                for (size_t i = 0; i < bytes; i++)
                    b[i] = (uint8_t)mix(bytes * 5 + i + (size_t)root);
            ASSERT_EQ(zap_bcast(c, b.data(), bytes, ZAP_DT_UINT8, root), ZAP_OK) << bytes;
            size_t wrong = 0;
            for (size_t i = 0; i < bytes; i++)
                wrong += b[i] != (uint8_t)mix(bytes * 5 + i + (size_t)root);
            ASSERT_EQ(wrong, 0u) << "root " << root << " bytes " << bytes;
            ASSERT_EQ(zap_allreduce(c, ain.data(), aout.data(), ain.size(), ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
            ASSERT_EQ(aout[39999], (int64_t)size * (size + 1) / 2);
        }
    const int n = 5;
    const size_t bytes = ((size_t)1 << 20) + 333;
    std::vector<std::vector<uint8_t>> bufs(n, std::vector<uint8_t>(bytes, 0xee));
    std::vector<zap_request_t *> req(n, nullptr);
    for (int i = 0; i < n; i++) {
        int root = i % size;
        if (rank == root)
            for (size_t j = 0; j < bytes; j++)
                bufs[i][j] = (uint8_t)mix(j * 3 + (size_t)i);
        ASSERT_EQ(zap_ibcast(c, bufs[i].data(), bytes, ZAP_DT_UINT8, root, &req[i]), ZAP_OK);
    }
    for (int i = n - 1; i >= 0; i--) {
        ASSERT_EQ(zap_request_wait(req[i]), ZAP_OK) << i;
        zap_request_free(req[i]);
    }
    for (int i = 0; i < n; i++) {
        size_t wrong = 0;
        for (size_t j = 0; j < bytes; j++)
            wrong += bufs[i][j] != (uint8_t)mix(j * 3 + (size_t)i);
        EXPECT_EQ(wrong, 0u) << "outstanding " << i;
    }
}

// Many small allreduces outstanding at once: their exchanges go through the
// banks of slots in post order whatever order they are waited in; then a
// request freed before completion does not break the communicator.
TEST_F(CollMpi, SharedMemoryManyOutstandingAndFreedEarly)
{
    int rank = MpiRank(), size = MpiSize();
    const int n = 40;
    std::vector<uint64_t> in(n), out(n, 0);
    std::vector<zap_request_t *> req(n);
    for (int i = 0; i < n; i++) {
        in[i] = (uint64_t)(rank + 1) * (uint64_t)(i + 1);
        ASSERT_EQ(zap_iallreduce(comm_, &in[i], &out[i], 1, ZAP_DT_UINT64, ZAP_OP_SUM, &req[i]), ZAP_OK);
    }
    for (int i = n - 1; i >= 0; i--) {
        EXPECT_EQ(zap_request_wait(req[i]), ZAP_OK) << i;
        zap_request_free(req[i]);
        EXPECT_EQ(out[i], (uint64_t)(i + 1) * (uint64_t)size * (uint64_t)(size + 1) / 2) << i;
    }
    // Large vectors outstanding together, waited in reverse.
    const size_t big = 40000;
    std::vector<std::vector<int32_t>> bin(6, std::vector<int32_t>(big)), bout(6, std::vector<int32_t>(big, -1));
    std::vector<zap_request_t *> breq(6);
    for (int i = 0; i < 6; i++) {
        for (size_t j = 0; j < big; j++)
            bin[i][j] = (int32_t)((rank + 1) * (i + 1) + (int)(j % 7));
        ASSERT_EQ(zap_iallreduce(comm_, bin[i].data(), bout[i].data(), big, ZAP_DT_INT32, ZAP_OP_SUM, &breq[i]),
                  ZAP_OK);
    }
    for (int i = 5; i >= 0; i--) {
        EXPECT_EQ(zap_request_wait(breq[i]), ZAP_OK) << i;
        zap_request_free(breq[i]);
        for (size_t j : {(size_t)0, big / 2, big - 1})
            ASSERT_EQ(bout[i][j], (i + 1) * size * (size + 1) / 2 + size * (int)(j % 7)) << i << " " << j;
    }
    // Freed before their wait, small and large: the free contributes this
    // rank's vector and waits for the exchange; the communicator goes on.
    uint64_t x = 1, y = 0;
    zap_request_t *r = nullptr;
    ASSERT_EQ(zap_iallreduce(comm_, &x, &y, 1, ZAP_DT_UINT64, ZAP_OP_SUM, &r), ZAP_OK);
    zap_request_free(r);
    std::vector<int32_t> lin(big, 1), lout(big, 0);
    ASSERT_EQ(zap_iallreduce(comm_, lin.data(), lout.data(), big, ZAP_DT_INT32, ZAP_OP_SUM, &r), ZAP_OK);
    zap_request_free(r);
    // The free finished it: the whole result is there.
    EXPECT_TRUE(lout[0] == 0 || lout[0] == size) << lout[0];
    EXPECT_EQ(lout[0], lout[big - 1]);
    int32_t a = rank, b = -1;
    EXPECT_EQ(zap_allreduce(comm_, &a, &b, 1, ZAP_DT_INT32, ZAP_OP_MAX), ZAP_OK);
    EXPECT_EQ(b, size - 1);
    EXPECT_EQ(zap_allreduce(comm_, lin.data(), lout.data(), big, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
    EXPECT_EQ(lout[big - 1], size);
}

// Broadcasts and allreduces share the segment's large area and its order:
// many of both outstanding at once, from different roots, waited in reverse,
// then a freed broadcast. Each root's data and each sum are checked.
TEST_F(CollMpi, SharedMemoryBroadcastsAndAllreducesInterleaved)
{
    int rank = MpiRank(), size = MpiSize();
    const size_t n = 300000; // 1.2 MB: the large area, several chunks
    // The large area's allreduce, not the single-copy one.
    ASSERT_NO_FATAL_FAILURE(interleaved(
        comm_, n, 8, [](int i) { return i % 2 == 0; }, [size](int i) { return i % size; },
        [](int) { return "shm"; }));
    // A broadcast freed before its wait still delivers to the others (when
    // the segment carries it: above 4 ranks this one goes over the transport,
    // where a free cancels).
    std::vector<int32_t> v(n, rank == 0 ? 7 : 0);
    zap_request_t *r = nullptr;
    ASSERT_EQ(zap_ibcast(comm_, v.data(), n, ZAP_DT_INT32, 0, &r), ZAP_OK);
    if (rank == 0 && n * 4 <= shared_memory_bytes(comm_)) {
        zap_request_free(r);
    } else {
        EXPECT_EQ(zap_request_wait(r), ZAP_OK);
        zap_request_free(r);
        EXPECT_EQ(v[n - 1], 7);
    }
    int32_t a = 1, b = 0;
    EXPECT_EQ(zap_allreduce(comm_, &a, &b, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
    EXPECT_EQ(b, size);
}

// Counts on both sides of the shared-memory size bound meet in one exchange:
// every rank reports the mismatch, and the communicator works afterwards.
TEST_F(CollMpi, SharedMemoryMismatchAcrossTheSizeBound)
{
    MpiExpectLog("differ");
    int rank = MpiRank(), size = MpiSize();
    std::vector<int32_t> in(100000, 1), out(100000);
    size_t count = rank == size - 1 ? 100000 : 3;
    EXPECT_EQ(zap_allreduce(comm_, in.data(), out.data(), count, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_ERR_MISMATCH);
    EXPECT_EQ(zap_allreduce(comm_, in.data(), out.data(), 3, rank == 0 ? ZAP_DT_UINT32 : ZAP_DT_INT32, ZAP_OP_SUM),
              ZAP_ERR_MISMATCH);
    EXPECT_EQ(zap_allreduce(comm_, in.data(), out.data(), 3, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
    EXPECT_EQ(out[2], size);
    // Both sides in the large area, then one above it: mismatches too, and
    // the large area's order survives them.
    count = rank == 0 ? 20000 : 30000;
    EXPECT_EQ(zap_allreduce(comm_, in.data(), out.data(), count, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_ERR_MISMATCH);
    std::vector<int32_t> huge(2 << 20, 1), hout(2 << 20);
    count = rank == 0 ? huge.size() : 30000;
    EXPECT_EQ(zap_allreduce(comm_, huge.data(), hout.data(), count, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_ERR_MISMATCH);
    EXPECT_EQ(zap_allreduce(comm_, in.data(), out.data(), 30000, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
    EXPECT_EQ(out[29999], size);
}

// --- group communicators -------------------------------------------------

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

// The ranks of the world with the given parity, in order.
std::vector<int> parity_ranks(int parity)
{
    std::vector<int> v;
    for (int r = parity; r < MpiSize(); r += 2)
        v.push_back(r);
    return v;
}

// Even and odd ranks each make their own communicator, with the ids the test
// gives, without the other ranks taking part; their first allreduce sets it up
// (a shared segment: every rank of these runs is on one host), and the sums
// match MPI's on the same groups.
TEST_F(CollMpi, GroupsAreMadeByTheirMembersAlone)
{
    int rank = MpiRank();
    std::vector<int> mine = parity_ranks(rank % 2);
    zap_comm_t *g = nullptr;
    ASSERT_EQ(zap_comm_create_group(t_, mine.data(), (int)mine.size(), 1000 + (uint32_t)(rank % 2), nullptr, &g),
              ZAP_OK);
    zap_comm_attr_t a = query(g, ZAP_COMM_ATTR_SET_UP | ZAP_COMM_ATTR_CONTEXT | ZAP_COMM_ATTR_SIZE);
    EXPECT_EQ(a.set_up, (int)mine.size() < 2) << "a group of processes sets up with its first allreduce";
    EXPECT_EQ(a.context_id, 1000u + (uint32_t)(rank % 2));
    EXPECT_EQ(a.context_by_zap, 0);
    EXPECT_EQ(a.size, (int)mine.size());
    int64_t x = 3 * rank + 1, y = 0, ref = 0;
    ASSERT_EQ(zap_allreduce(g, &x, &y, 1, ZAP_DT_INT64, ZAP_OP_SUM), ZAP_OK);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Allreduce(&x, &ref, 1, MPI_INT64_T, MPI_SUM, half);
    MPI_Comm_free(&half);
    EXPECT_EQ(y, ref);
    EXPECT_EQ(query(g, ZAP_COMM_ATTR_SET_UP).set_up, 1);
    EXPECT_EQ(shared_memory(g), mine.size() > 1);
    std::vector<int32_t> big(300000, rank), b(300000, rank == mine[0] ? 9 : 0);
    ASSERT_EQ(zap_bcast(g, b.data(), b.size(), ZAP_DT_INT32, 0), ZAP_OK);
    EXPECT_EQ(b[299999], 9);
    zap_comm_destroy(g);
}

// 2,000 group communicators made and destroyed in turn over one transport,
// then 200 with an allreduce each (their setup, segment included): every
// result right and the process's memory where it was.
TEST_F(CollMpi, TwoThousandGroupsCreatedAndDestroyedKeepMemoryFlat)
{
    int p = MpiSize();
    std::vector<int> all(p);
    for (int r = 0; r < p; r++)
        all[r] = r;
    auto cycles = [&](uint32_t from, uint32_t n, bool call) {
        for (uint32_t i = from; i < from + n; i++) {
            zap_comm_t *g = nullptr;
            ASSERT_EQ(zap_comm_create_group(t_, all.data(), p, i, nullptr, &g), ZAP_OK) << i;
            if (call) {
                uint64_t x = 1, y = 0;
                ASSERT_EQ(zap_allreduce(g, &x, &y, 1, ZAP_DT_UINT64, ZAP_OP_SUM), ZAP_OK) << i;
                ASSERT_EQ(y, (uint64_t)p) << i;
            }
            zap_comm_destroy(g);
        }
    };
    cycles(0, 100, true); // warm
    long before = rss_kib();
    double t0 = MPI_Wtime();
    cycles(100, 2000, false);
    double t1 = MPI_Wtime();
    cycles(2100, 200, true);
    long grown = rss_kib() - before;
#if !defined(__SANITIZE_ADDRESS__) /* its quarantine keeps freed memory resident; its leak check covers this */
    EXPECT_LT(grown, 4096) << "KiB grown over 2200 cycles";
#endif
    if (MpiRank() == 0)
        std::printf("group communicators: %.2f us per create+destroy (2000 cycles, %d ranks)\n",
                    (t1 - t0) * 1e6 / 2000, p);
}

// Overlapping group communicators (the whole world twice, with different
// ids, and two shifted halves), their allreduces posted in a different
// interleaving on every rank and driven together until all are done.
TEST_F(CollMpi, OverlappingGroupsInterleaved)
{
    int rank = MpiRank(), p = MpiSize();
    std::vector<std::vector<int>> groups(4);
    for (int r = 0; r < p; r++) {
        groups[0].push_back(r);
        groups[1].push_back(p - 1 - r);
        if (r < p - 1 || p == 1)
            groups[2].push_back(r);
        if (r > 0 || p == 1)
            groups[3].push_back(r);
    }
    std::vector<zap_comm_t *> c(groups.size(), nullptr);
    for (size_t k = 0; k < groups.size(); k++)
        for (int m : groups[k])
            if (m == rank) {
                ASSERT_EQ(zap_comm_create_group(t_, groups[k].data(), (int)groups[k].size(), 2000 + (uint32_t)k,
                                                nullptr, &c[k]),
                          ZAP_OK);
            }
    std::vector<int64_t> in(groups.size()), out(groups.size(), -1);
    std::vector<zap_request_t *> req(groups.size(), nullptr);
    for (size_t i = 0; i < groups.size(); i++) {
        size_t k = (i + (size_t)rank) % groups.size();
        if (c[k] == nullptr)
            continue;
        in[k] = 100 * (int64_t)k + rank;
        ASSERT_EQ(zap_iallreduce(c[k], &in[k], &out[k], 1, ZAP_DT_INT64, ZAP_OP_SUM, &req[k]), ZAP_OK);
    }
    for (bool pending = true; pending;) {
        pending = false;
        for (size_t k = 0; k < groups.size(); k++) {
            if (req[k] == nullptr)
                continue;
            int done = 0;
            EXPECT_EQ(zap_request_test(req[k], &done), ZAP_OK) << k;
            if (done) {
                zap_request_free(req[k]);
                req[k] = nullptr;
            } else {
                pending = true;
                for (auto *x : c)
                    if (x != nullptr)
                        (void)zap_comm_progress(x);
            }
        }
    }
    for (size_t k = 0; k < groups.size(); k++) {
        if (c[k] == nullptr)
            continue;
        int64_t want = 0;
        for (int m : groups[k])
            want += 100 * (int64_t)k + m;
        EXPECT_EQ(out[k], want) << "communicator " << k;
        zap_comm_destroy(c[k]);
    }
}

// Destroy is local: rank 0 destroys its communicators (in creation order)
// and only then reaches the barrier the others wait in before they destroy
// theirs (in reverse); were destroy collective, rank 0 would wait forever.
TEST_F(CollMpi, GroupDestroyInDifferentOrdersWaitsForNobody)
{
    int rank = MpiRank(), p = MpiSize();
    std::vector<int> all(p);
    for (int r = 0; r < p; r++)
        all[r] = r;
    std::vector<zap_comm_t *> c(5, nullptr);
    for (int k = 0; k < 5; k++) {
        ASSERT_EQ(zap_comm_create_group(t_, all.data(), p, 3000 + (uint32_t)k, nullptr, &c[k]), ZAP_OK);
        int32_t x = 1, y = 0;
        ASSERT_EQ(zap_allreduce(c[k], &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
        EXPECT_EQ(y, p);
    }
    if (rank == 0) {
        for (auto *x : c)
            zap_comm_destroy(x);
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        for (int k = 4; k >= 0; k--)
            zap_comm_destroy(c[k]);
    }
}

// The wait hook runs while a blocking call waits for a late rank, and stops
// when it is unset.
TEST_F(CollMpi, WaitHookRunsWhileABlockingCallWaits)
{
    EXPECT_EQ(zap_comm_set_wait_hook(nullptr, nullptr, nullptr), ZAP_ERR_INVALID_PARAM);
    int rank = MpiRank(), p = MpiSize();
    std::vector<int> all(p);
    for (int r = 0; r < p; r++)
        all[r] = r;
    zap_comm_t *c = nullptr;
    ASSERT_EQ(zap_comm_create_group(t_, all.data(), p, 3100, nullptr, &c), ZAP_OK);
    unsigned long calls = 0;
    auto count = [](void *ctx) { ++*(unsigned long *)ctx; };
    ASSERT_EQ(zap_comm_set_wait_hook(c, count, &calls), ZAP_OK);
    for (int late = 0; late < 2; late++) {
        if (late == 1) {
            ASSERT_EQ(zap_comm_set_wait_hook(c, nullptr, nullptr), ZAP_OK);
            calls = 0;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == p - 1)
            usleep(200 * 1000); // the others wait in the call meanwhile
        int32_t x = 1, y = 0;
        ASSERT_EQ(zap_allreduce(c, &x, &y, 1, ZAP_DT_INT32, ZAP_OP_SUM), ZAP_OK);
        EXPECT_EQ(y, p);
        if (rank == 0 && late == 0) {
            EXPECT_GT(calls, 0u) << "the hook never ran in a 200 ms wait";
        }
        if (late == 1) {
            EXPECT_EQ(calls, 0u) << "an unset hook ran";
        }
    }
    zap_comm_destroy(c);
}

TEST(CommMpi, CreateMpiGivesAWorkingCommunicatorThatClosesItsTransport)
{
    zap_comm_t *c = nullptr;
    ASSERT_EQ(zap_comm_create_mpi(MPI_COMM_WORLD, nullptr, &c), ZAP_OK);
    EXPECT_EQ(zap_comm_rank(c), MpiRank());
    EXPECT_EQ(zap_comm_size(c), MpiSize());
    uint64_t x = 1ull << MpiRank(), y = 0;
    EXPECT_EQ(zap_allreduce(c, &x, &y, 1, ZAP_DT_UINT64, ZAP_OP_BOR), ZAP_OK);
    EXPECT_EQ(y, (1ull << MpiSize()) - 1);
    zap_comm_destroy(c); // collective here: closes the transport
}

} // namespace
