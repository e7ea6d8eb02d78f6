// Reduce, reduce_scatter(_block), gather(v), alltoall(v), scan and exscan
// over the UCX transport between processes, differential against Open MPI's
// own collectives in the same processes: every algorithm (the shared-memory
// and single-copy forms included, and the automatic choice), every root,
// in place, uneven counts, negative displacements, every datatype and op
// whose results are exact (integers, pairs, small-integer floats and
// complex sums), bit for bit; a non-commutative user op in rank order;
// mismatched counts reported on every rank.
#include <gtest/gtest.h>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include "mpi_harness.h"
#include "one_host_fixture.h"
extern "C" {
#include "zap/coll.h"
#include "zap/ucp.h"
}

ZAP_ONE_HOST_FIXTURE_STORAGE;

namespace {

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
    case ZAP_DT_COMPLEX64: return MPI_C_FLOAT_COMPLEX;
    case ZAP_DT_COMPLEX128: return MPI_C_DOUBLE_COMPLEX;
    case ZAP_DT_FLOAT_INT: return MPI_FLOAT_INT;
    case ZAP_DT_DOUBLE_INT: return MPI_DOUBLE_INT;
    case ZAP_DT_LONG_INT: return MPI_LONG_INT;
    case ZAP_DT_2INT: return MPI_2INT;
    case ZAP_DT_SHORT_INT: return MPI_SHORT_INT;
    case ZAP_DT_LONG_DOUBLE_INT: return MPI_LONG_DOUBLE_INT;
    default: return MPI_DATATYPE_NULL; // float16, bfloat16: no MPI type
    }
}

MPI_Op mpi_op(zap_op_t op)
{
    const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MIN,  MPI_MAX, MPI_BAND,   MPI_BOR,
                          MPI_BXOR, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_MINLOC, MPI_MAXLOC};
    return ops[op];
}

// Every (type, op) zap and MPI both have whose results are exact in any
// order (complex products can differ in the sign of a zero part).
std::vector<std::pair<zap_dtype_t, zap_op_t>> exact_pairs()
{
    std::vector<std::pair<zap_dtype_t, zap_op_t>> v;
    for (int d = 0; d < ZAP_DT_COUNT; d++)
        for (int o = 0; o < ZAP_OP_COUNT; o++) {
            zap_dtype_t dt = (zap_dtype_t)d;
            zap_op_t op = (zap_op_t)o;
            if (!zap_op_supported(dt, op) || mpi_type(dt) == MPI_DATATYPE_NULL)
                continue;
            if ((dt == ZAP_DT_COMPLEX64 || dt == ZAP_DT_COMPLEX128) && op == ZAP_OP_PROD)
                continue;
            v.push_back({dt, op});
        }
    return v;
}

// count elements of rank r's input: integers full range (a third 0 under
// logical ops), floats small integers (products: 1, -1, 2 sparsely), pairs
// small values with scattered indices; every byte written (padding 0).
void fill(zap_dtype_t dt, zap_op_t op, int r, uint64_t seed, void *p, size_t count)
{
    size_t es = zap_dtype_size(dt);
    std::memset(p, 0, count * es);
    for (size_t i = 0; i < count; i++) {
        uint64_t h = mix(seed * 1000003 + (uint64_t)r * 7919 + i);
        char *e = (char *)p + i * es;
        if (dt <= ZAP_DT_UINT64) {
            if ((op == ZAP_OP_LAND || op == ZAP_OP_LOR || op == ZAP_OP_LXOR) && h % 3 == 0)
                h = 0;
            std::memcpy(e, &h, es);
        } else if (dt == ZAP_DT_FLOAT32 || dt == ZAP_DT_FLOAT64 || dt == ZAP_DT_COMPLEX64 ||
                   dt == ZAP_DT_COMPLEX128) {
            double v[2] = {(double)((int)(h % 17) - 8), (double)((int)((h >> 8) % 17) - 8)};
            if (op == ZAP_OP_PROD)
                v[0] = h % 6 == 0 ? 2.0 : ((h >> 12) & 1) ? -1.0 : 1.0;
            if (dt == ZAP_DT_FLOAT32 || dt == ZAP_DT_COMPLEX64) {
                float f[2] = {(float)v[0], (float)v[1]};
                std::memcpy(e, f, es);
            } else {
                std::memcpy(e, v, es);
            }
        } else {
            int k = (int)((h >> 16) % 50) - 10, iv = (int)(h % 4) - 1;
            switch (dt) {
            case ZAP_DT_FLOAT_INT: { zap_float_int_t x; std::memset(&x, 0, sizeof(x)); x.v = (float)iv; x.k = k; std::memcpy(e, &x, sizeof(x)); break; }
            case ZAP_DT_DOUBLE_INT: { zap_double_int_t x; std::memset(&x, 0, sizeof(x)); x.v = iv; x.k = k; std::memcpy(e, &x, sizeof(x)); break; }
            case ZAP_DT_LONG_INT: { zap_long_int_t x; std::memset(&x, 0, sizeof(x)); x.v = iv; x.k = k; std::memcpy(e, &x, sizeof(x)); break; }
            case ZAP_DT_2INT: { zap_2int_t x = {iv, k}; std::memcpy(e, &x, sizeof(x)); break; }
            case ZAP_DT_SHORT_INT: { zap_short_int_t x; std::memset(&x, 0, sizeof(x)); x.v = (short)iv; x.k = k; std::memcpy(e, &x, sizeof(x)); break; }
            default: { // long double: its significant bytes only, the padding stays 0
                long double v = iv;
                std::memcpy(e, &v, 10);
                std::memcpy(e + offsetof(zap_long_double_int_t, k), &k, sizeof(k));
                break;
            }
            }
        }
    }
}

// The value and index bytes of every element (pairs' padding is not part of
// MPI's type signature: Open MPI need not keep it).
bool same(zap_dtype_t dt, const void *a, const void *b, size_t count, size_t *bad)
{
    size_t es = zap_dtype_size(dt), vbytes = es, koff = 0;
    switch (dt) {
    case ZAP_DT_DOUBLE_INT: vbytes = 8, koff = offsetof(zap_double_int_t, k); break;
    case ZAP_DT_LONG_INT: vbytes = sizeof(long), koff = offsetof(zap_long_int_t, k); break;
    case ZAP_DT_SHORT_INT: vbytes = sizeof(short), koff = offsetof(zap_short_int_t, k); break;
    case ZAP_DT_LONG_DOUBLE_INT: vbytes = 10, koff = offsetof(zap_long_double_int_t, k); break;
    default: break;
    }
    for (size_t i = 0; i < count; i++) {
        const char *x = (const char *)a + i * es, *y = (const char *)b + i * es;
        if (std::memcmp(x, y, vbytes) != 0 || (koff && std::memcmp(x + koff, y + koff, sizeof(int)) != 0)) {
            *bad = i;
            return false;
        }
    }
    return true;
}

class CollsMpi : public WorldTransport {};

// A communicator with coll's algorithm forced (auto: the selection).
struct Comm {
    zap_comm_t *c = nullptr;
    Comm(zap_transport_t *t, const std::string &coll, const char *alg)
    {
        zap_comm_params_t p{};
        if (coll == "reduce") p.reduce_alg = alg;
        else if (coll == "reduce_scatter") p.reduce_scatter_alg = alg;
        else if (coll == "gather") p.gather_alg = alg;
        else if (coll == "alltoall") p.alltoall_alg = alg;
        else if (coll == "scan") p.scan_alg = alg;
        else if (coll == "exscan") p.exscan_alg = alg;
        EXPECT_EQ(zap_comm_create_ex(t, &p, &c), ZAP_OK);
    }
    Comm(const Comm &) = delete;
    Comm &operator=(const Comm &) = delete;
    ~Comm() { zap_comm_destroy(c); }
    operator zap_comm_t *() const { return c; }
};

const char *const kReduceAlgs[] = {"auto", "binomial", "rabenseifner", "shm", "cma"};
const char *const kRsAlgs[] = {"auto", "rhalving", "ring", "shm", "cma"};
const char *const kScanAlgs[] = {"auto", "rd", "linear", "shm", "blocks", "chain"};
const char *const kGatherAlgs[] = {"auto", "linear", "binomial", "shm"};
const char *const kA2aAlgs[] = {"auto", "pairwise", "bruck", "linear", "shm", "cma"};

// Sizes: small (a slot), medium (the large area), large (beyond the
// single-copy threshold); more ranks on the 2-core CI machine are
// scheduling-bound: fewer sizes there.
std::vector<size_t> counts_for(size_t small, size_t big)
{
    if (MpiSize() > 2)
        return {small, big};
    return {0, small, 2 * small + 1, big};
}

TEST_F(CollsMpi, ReduceMatchesMpiReduceEveryRootTypeAndOp)
{
    int rank = MpiRank(), size = MpiSize();
    for (const char *alg : kReduceAlgs) {
        Comm comm(t_, "reduce", alg);
        uint64_t seed = 1;
        for (auto [dt, op] : exact_pairs())
            for (size_t count : {(size_t)7, (size_t)300}) {
                size_t es = zap_dtype_size(dt);
                int root = (int)(seed % (uint64_t)size);
                bool in_place = seed % 3 == 0;
                std::vector<uint8_t> in(count * es), out(count * es + 1, 0xEE), ref(count * es);
                fill(dt, op, rank, seed++, in.data(), count);
                if (in_place && rank == root)
                    std::memcpy(out.data(), in.data(), count * es);
                ASSERT_EQ(zap_reduce(comm, in_place && rank == root ? ZAP_IN_PLACE : in.data(), out.data(), count, dt,
                                     op, root),
                          ZAP_OK)
                    << alg << " " << zap_dtype_name(dt) << " " << zap_op_name(op);
                MPI_Reduce(in.data(), ref.data(), (int)count, mpi_type(dt), mpi_op(op), root, MPI_COMM_WORLD);
                size_t bad = 0;
                if (rank == root) {
                    ASSERT_TRUE(same(dt, out.data(), ref.data(), count, &bad))
                        << alg << " " << zap_dtype_name(dt) << " " << zap_op_name(op) << " root " << root
                        << " element " << bad;
                }
                ASSERT_EQ(out[count * es], 0xEE) << "past the end";
            }
        // Large vectors (the large shared area; Rabenseifner's halves; single
        // copy), every root, odd roots in place.
        for (size_t count : counts_for(1000, 300001))
            for (int root = 0; root < size; root++) {
                std::vector<int32_t> in(count + 1), out(count + 1, -9), ref(count + 1);
                for (size_t i = 0; i < count; i++)
                    in[i] = (int32_t)mix((uint64_t)rank * 77 + i);
                bool in_place = root % 2 == 1 && rank == root;
                if (in_place)
                    std::memcpy(out.data(), in.data(), count * 4);
                ASSERT_EQ(zap_reduce(comm, in_place ? ZAP_IN_PLACE : in.data(), out.data(), count, ZAP_DT_INT32,
                                     ZAP_OP_SUM, root),
                          ZAP_OK);
                MPI_Reduce(in.data(), ref.data(), (int)count, MPI_INT32_T, MPI_SUM, root, MPI_COMM_WORLD);
                if (rank == root) {
                    ASSERT_EQ(std::memcmp(out.data(), ref.data(), count * 4), 0) << alg << " count " << count;
                }
                ASSERT_EQ(out[count], -9);
            }
    }
}

TEST_F(CollsMpi, ReduceScatterMatchesMpiBothForms)
{
    int rank = MpiRank(), size = MpiSize();
    for (const char *alg : kRsAlgs) {
        Comm comm(t_, "reduce_scatter", alg);
        uint64_t seed = 3;
        for (auto [dt, op] : exact_pairs()) {
            size_t es = zap_dtype_size(dt), count = 5;
            std::vector<uint8_t> in(count * size * es), out(count * es), ref(count * es);
            fill(dt, op, rank, seed++, in.data(), count * size);
            ASSERT_EQ(zap_reduce_scatter_block(comm, in.data(), out.data(), count, dt, op), ZAP_OK) << alg;
            MPI_Reduce_scatter_block(in.data(), ref.data(), (int)count, mpi_type(dt), mpi_op(op), MPI_COMM_WORLD);
            size_t bad = 0;
            ASSERT_TRUE(same(dt, out.data(), ref.data(), count, &bad))
                << alg << " " << zap_dtype_name(dt) << " " << zap_op_name(op) << " element " << bad;
        }
        for (size_t scale : counts_for(100, 80000)) {
            for (bool in_place : {false, true}) {
                std::vector<size_t> counts(size);
                std::vector<int> icounts(size);
                size_t total = 0;
                for (int r = 0; r < size; r++) {
                    counts[r] = r == 1 ? 0 : scale + (size_t)r * 3;
                    icounts[r] = (int)counts[r];
                    total += counts[r];
                }
                std::vector<int64_t> in(total + 1), out(total + 1, -1), ref(total + 1, -1);
                for (size_t i = 0; i < total; i++)
                    in[i] = (int64_t)mix((uint64_t)rank * 1311 + i);
                if (in_place)
                    out = in;
                ASSERT_EQ(zap_reduce_scatter(comm, in_place ? ZAP_IN_PLACE : in.data(), out.data(), counts.data(),
                                             ZAP_DT_INT64, ZAP_OP_BXOR),
                          ZAP_OK);
                MPI_Reduce_scatter(in.data(), ref.data(), icounts.data(), MPI_INT64_T, MPI_BXOR, MPI_COMM_WORLD);
                ASSERT_EQ(std::memcmp(out.data(), ref.data(), counts[rank] * 8), 0)
                    << alg << " scale " << scale << (in_place ? " in place" : "");
            }
        }
    }
}

TEST_F(CollsMpi, ScanAndExscanMatchMpi)
{
    int rank = MpiRank();
    for (const char *alg : kScanAlgs) {
        Comm sc(t_, "scan", alg), ex(t_, "exscan", alg);
        uint64_t seed = 9;
        for (auto [dt, op] : exact_pairs())
          for (size_t above : {0, 1}) { // within a slot, then above it (the large area's form)
            size_t es = zap_dtype_size(dt), count = above ? 4100 / es + 3 : 6;
            std::vector<uint8_t> in(count * es), out(count * es), ref(count * es), xout(count * es, 0x11),
                xref(count * es, 0x11);
            fill(dt, op, rank, seed++, in.data(), count);
            ASSERT_EQ(zap_scan(sc, in.data(), out.data(), count, dt, op), ZAP_OK);
            MPI_Scan(in.data(), ref.data(), (int)count, mpi_type(dt), mpi_op(op), MPI_COMM_WORLD);
            size_t bad = 0;
            ASSERT_TRUE(same(dt, out.data(), ref.data(), count, &bad))
                << "scan " << alg << " " << zap_dtype_name(dt) << " " << zap_op_name(op) << " element " << bad;
            ASSERT_EQ(zap_exscan(ex, in.data(), xout.data(), count, dt, op), ZAP_OK);
            MPI_Exscan(in.data(), xref.data(), (int)count, mpi_type(dt), mpi_op(op), MPI_COMM_WORLD);
            if (rank > 0)
                ASSERT_TRUE(same(dt, xout.data(), xref.data(), count, &bad))
                    << "exscan " << alg << " " << zap_dtype_name(dt) << " " << zap_op_name(op) << " element " << bad;
            else
                ASSERT_EQ(xout, std::vector<uint8_t>(count * es, 0x11)) << "rank 0's exscan recvbuf was written";
          }
        for (size_t count : counts_for(500, 200001))
            for (bool in_place : {false, true}) {
                std::vector<int32_t> in(count), out(count), ref(count), xout(count, 7), xref(count, 7);
                for (size_t i = 0; i < count; i++)
                    in[i] = (int32_t)mix((uint64_t)rank << 32 | i);
                if (in_place)
                    out = xout = in;
                ASSERT_EQ(zap_scan(sc, in_place ? ZAP_IN_PLACE : in.data(), out.data(), count, ZAP_DT_INT32, ZAP_OP_SUM),
                          ZAP_OK);
                MPI_Scan(in.data(), ref.data(), (int)count, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
                ASSERT_EQ(out, ref) << "scan " << alg << " count " << count;
                ASSERT_EQ(zap_exscan(ex, in_place ? ZAP_IN_PLACE : in.data(), xout.data(), count, ZAP_DT_INT32,
                                     ZAP_OP_SUM),
                          ZAP_OK);
                MPI_Exscan(in.data(), xref.data(), (int)count, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
                if (rank > 0) {
                    ASSERT_EQ(xout, xref) << "exscan " << alg << " count " << count << " in place " << in_place;
                }
            }
    }
}

// Streams of scans and exscans of floats, sizes with the prefix lane, one
// without and one above a slot (the large area, reused call after call), so
// that a prefix of another exchange or size would be read if the lane's
// exchange number were not checked: every result is the left fold in rank
// order, bit for bit, computed here from all inputs.
TEST_F(CollsMpi, ScanStreamsAreTheRankOrderFoldBitForBit)
{
    int rank = MpiRank(), size = MpiSize();
    // Not oversubscribed, whatever the machine: the fast form then polls for
    // the slots rather than handing most calls to the operation.
    zap_comm_params_t params{};
    params.oversubscribed = ZAP_COMM_SWITCH_OFF;
    zap_comm_t *sc = nullptr;
    ASSERT_EQ(zap_comm_create_ex(t_, &params, &sc), ZAP_OK);
    std::unique_ptr<zap_comm_t, void (*)(zap_comm_t *)> hold(sc, zap_comm_destroy);
    // Runs of one kind and size (the fast form needs the size of the call
    // before), longer than the banks, so that slots and lanes are reused.
    const std::pair<bool, size_t> phases[] = {{false, 50}, {true, 50},   {false, 49},  {false, 700}, {true, 49},
                                              {true, 700}, {false, 2000}, {true, 2000}, {false, 50}};
    const int per_phase = 80;
    for (int it = 0; it < (int)std::size(phases) * per_phase; it++) {
        auto [exclusive, count] = phases[it / per_phase];
        std::vector<float> in(count), out(count, -1.0f), all(count * (size_t)size), fold(count);
        for (size_t i = 0; i < count; i++)
            in[i] = (float)((double)(mix((uint64_t)it << 40 | (uint64_t)rank << 20 | i) % 2000001) / 997.0 - 1003.0);
        MPI_Allgather(in.data(), (int)count, MPI_FLOAT, all.data(), (int)count, MPI_FLOAT, MPI_COMM_WORLD);
        int last = exclusive ? rank - 1 : rank;
        for (size_t i = 0; i < count; i++) {
            float acc = all[i];
            for (int q = 1; q <= last; q++)
                acc = acc + all[(size_t)q * count + i];
            fold[i] = acc;
        }
        zap_status_t st = exclusive ? zap_exscan(sc, in.data(), out.data(), count, ZAP_DT_FLOAT32, ZAP_OP_SUM)
                                    : zap_scan(sc, in.data(), out.data(), count, ZAP_DT_FLOAT32, ZAP_OP_SUM);
        ASSERT_EQ(st, ZAP_OK) << "call " << it;
        if (last < 0)
            continue;
        ASSERT_EQ(std::memcmp(out.data(), fold.data(), count * sizeof(float)), 0)
            << (exclusive ? "exscan" : "scan") << " call " << it << " count " << count;
    }
}

// Gather on one host at the block sizes that choose its shared-memory
// forms: the slots up to 4032 bytes, the large area above (where single-copy
// reads are dear, or with shm forced) up to 512 KiB blocks, the transport
// beyond. Bytes, every root, in place or not.
TEST_F(CollsMpi, GatherMatchesMpiAtEverySharedMemoryBlockSize)
{
    int rank = MpiRank(), size = MpiSize();
    for (const char *alg : {"auto", "shm"}) {
        Comm comm(t_, "gather", alg);
        for (size_t count : {size_t(4032), size_t(4033), size_t(40000) + 7, size_t(512) << 10, (size_t(512) << 10) + 1})
            for (int root = 0; root < size; root++)
                for (bool in_place : {false, true}) {
                    std::vector<uint8_t> mine(count), got(count * size + 1, 5), ref(count * size + 1, 5);
                    for (size_t i = 0; i < count; i++)
                        mine[i] = (uint8_t)mix((uint64_t)rank * 977 + count * 3 + (size_t)root + i);
                    bool ip = in_place && rank == root;
                    if (ip)
                        std::copy(mine.begin(), mine.end(), got.begin() + (ptrdiff_t)(rank * count));
                    ASSERT_EQ(zap_gather(comm, ip ? ZAP_IN_PLACE : mine.data(), count, got.data(), ZAP_DT_UINT8, root),
                              ZAP_OK);
                    MPI_Gather(mine.data(), (int)count, MPI_UINT8_T, ref.data(), (int)count, MPI_UINT8_T, root,
                               MPI_COMM_WORLD);
                    if (rank == root) {
                        ASSERT_EQ(got, ref) << alg << " block " << count << " root " << root << (ip ? " in place" : "");
                    }
                }
    }
}

TEST_F(CollsMpi, GatherAndGathervMatchMpi)
{
    int rank = MpiRank(), size = MpiSize();
    for (const char *alg : kGatherAlgs) {
        Comm comm(t_, "gather", alg);
        for (size_t count : counts_for(11, 40000))
            for (int root = 0; root < size; root++)
                for (bool in_place : {false, true}) {
                    std::vector<int16_t> mine(count + 1), got(count * size + 1, 5), ref(count * size + 1, 5);
                    for (size_t i = 0; i < count; i++)
                        mine[i] = (int16_t)mix((uint64_t)rank * 31 + i);
                    bool ip = in_place && rank == root;
                    if (ip)
                        std::copy(mine.begin(), mine.begin() + count, got.begin() + rank * count);
                    ASSERT_EQ(zap_gather(comm, ip ? ZAP_IN_PLACE : mine.data(), count, got.data(), ZAP_DT_INT16, root),
                              ZAP_OK);
                    MPI_Gather(mine.data(), (int)count, MPI_INT16_T, ref.data(), (int)count, MPI_INT16_T, root,
                               MPI_COMM_WORLD);
                    if (rank == root) {
                        ASSERT_EQ(got, ref) << alg << " count " << count << " root " << root;
                    }
                }
        // gatherv: uneven, reversed with gaps, negative displacements.
        for (int root = 0; root < size; root++) {
            std::vector<size_t> counts(size);
            std::vector<ptrdiff_t> displs(size);
            std::vector<int> icounts(size), idispls(size);
            size_t area = 0;
            for (int r = 0; r < size; r++) {
                counts[r] = r == 1 ? 0 : (size_t)(r + 1) * 2011;
                area += counts[r] + 4;
            }
            size_t at = 0;
            for (int r = size - 1; r >= 0; r--) {
                displs[r] = (ptrdiff_t)at - (ptrdiff_t)(area / 2);
                idispls[r] = (int)displs[r];
                icounts[r] = (int)counts[r];
                at += counts[r] + 4;
            }
            std::vector<double> mine(counts[rank] + 1), got(area, -1), ref(area, -1);
            for (size_t i = 0; i < counts[rank]; i++)
                mine[i] = (double)mix((uint64_t)rank << 24 | i);
            ASSERT_EQ(zap_gatherv(comm, mine.data(), counts[rank], got.data() + area / 2, counts.data(), displs.data(),
                                  ZAP_DT_FLOAT64, root),
                      ZAP_OK);
            MPI_Gatherv(mine.data(), icounts[rank], MPI_DOUBLE, ref.data() + area / 2, icounts.data(), idispls.data(),
                        MPI_DOUBLE, root, MPI_COMM_WORLD);
            if (rank == root) {
                ASSERT_EQ(std::memcmp(got.data(), ref.data(), area * 8), 0) << alg << " gatherv root " << root;
            }
        }
    }
}

TEST_F(CollsMpi, AlltoallAndAlltoallvMatchMpi)
{
    int rank = MpiRank(), size = MpiSize();
    for (const char *alg : kA2aAlgs) {
        Comm comm(t_, "alltoall", alg);
        // Also the largest blocks whose others' share fits a slot (4032
        // bytes over p - 1 blocks of int32) and one element more.
        std::vector<size_t> counts = counts_for(3, 30000);
        counts.push_back(4032 / 4 / (size_t)(size > 1 ? size - 1 : 1));
        counts.push_back(counts.back() + 1);
        for (size_t count : counts)
            for (bool in_place : {false, true}) {
                std::vector<int32_t> s(count * size + 1), got(count * size + 1, 7), ref(count * size + 1, 7);
                for (size_t i = 0; i < count * size; i++)
                    s[i] = (int32_t)mix((uint64_t)rank << 40 | i);
                if (in_place)
                    std::copy(s.begin(), s.end(), got.begin());
                ASSERT_EQ(zap_alltoall(comm, in_place ? ZAP_IN_PLACE : s.data(), count, got.data(), ZAP_DT_INT32),
                          ZAP_OK);
                MPI_Alltoall(s.data(), (int)count, MPI_INT32_T, ref.data(), (int)count, MPI_INT32_T, MPI_COMM_WORLD);
                if (in_place)
                    got[count * size] = 7;
                ASSERT_EQ(got, ref) << alg << " count " << count << (in_place ? " in place" : "");
            }
        // alltoallv: rank r sends (r + 2j) % 4 * 1001 elements to j; reversed
        // layouts with gaps, around the middle of their areas.
        std::vector<size_t> sc(size), rc(size);
        std::vector<ptrdiff_t> sd(size), rd(size);
        std::vector<int> isc(size), irc(size), isd(size), ird(size);
        size_t stot = 0, rtot = 0;
        for (int j = 0; j < size; j++) {
            sc[j] = (size_t)((rank + 2 * j) % 4) * 1001;
            rc[j] = (size_t)((j + 2 * rank) % 4) * 1001;
            stot += sc[j] + 2;
            rtot += rc[j] + 2;
        }
        size_t sat = 0, rat = 0;
        for (int j = size - 1; j >= 0; j--) {
            sd[j] = (ptrdiff_t)sat - (ptrdiff_t)(stot / 2);
            rd[j] = (ptrdiff_t)rat - (ptrdiff_t)(rtot / 2);
            sat += sc[j] + 2;
            rat += rc[j] + 2;
            isc[j] = (int)sc[j], irc[j] = (int)rc[j], isd[j] = (int)sd[j], ird[j] = (int)rd[j];
        }
        std::vector<uint64_t> s(stot), got(rtot, 1), ref(rtot, 1);
        for (size_t i = 0; i < stot; i++)
            s[i] = mix((uint64_t)rank << 48 | i);
        ASSERT_EQ(zap_alltoallv(comm, s.data() + stot / 2, sc.data(), sd.data(), got.data() + rtot / 2, rc.data(),
                                rd.data(), ZAP_DT_UINT64),
                  ZAP_OK);
        MPI_Alltoallv(s.data() + stot / 2, isc.data(), isd.data(), MPI_UINT64_T, ref.data() + rtot / 2, irc.data(),
                      ird.data(), MPI_UINT64_T, MPI_COMM_WORLD);
        ASSERT_EQ(got, ref) << alg << " alltoallv";
    }
}

// Scatter on one host at the totals that choose its shared-memory form: the
// root's slot while the other ranks' blocks fit its 4032 bytes (a total of
// up to 4032 * p / (p - 1)), the large area just above that and up to
// 64 KiB on 2 ranks, 512 KiB on more (zap_scatter_shm_copy_max, scatter.h),
// single copy beyond. Bytes, so that the totals land exactly at each
// boundary on 3 ranks too; the area is filled and read in pieces of 32 KiB,
// so a total of several pieces has blocks that end inside one. Single copy's
// readers of blocks up to 256 KiB read two at a time: 1.5 times the bound
// gives such blocks on 4 ranks, 3 times larger ones.
std::vector<size_t> scatter_totals(int ranks)
{
    const size_t slot = 4032, copy_max = ranks <= 2 ? 64 << 10 : 512 << 10;
    const size_t others = ranks > 1 ? slot / (size_t)(ranks - 1) : slot; // the largest block in the slot
    return {slot + 1,     others * (size_t)ranks, (others + 1) * (size_t)ranks, 2 * slot + 7, (32 << 10) * 3 + 5,
            copy_max - 1, copy_max,               copy_max + 1,                 copy_max + copy_max / 2, 3 * copy_max};
}

TEST_F(CollsMpi, ScatterAndScattervMatchMpiAtEverySharedMemorySize)
{
    int rank = MpiRank(), size = MpiSize();
    Comm comm(t_, "scatter", "auto");
    for (size_t total : scatter_totals(size)) {
        size_t count = (total + size - 1) / size; // the first total of p blocks at or above total
        for (int root = 0; root < size; root++)
            for (bool in_place : {false, true}) {
                std::vector<uint8_t> send(count * size), got(count + 1, 0xa5), ref(count + 1, 0xa5);
                for (size_t i = 0; i < send.size(); i++)
                    send[i] = rank == root ? (uint8_t)mix(total * 131 + (size_t)root * 7 + i) : 0;
                // In place (MPI_IN_PLACE at the root): its recvbuf is its own
                // block of sendbuf, left as it is.
                bool ip = in_place && rank == root;
                uint8_t *recv = ip ? send.data() + (size_t)root * count : got.data();
                ASSERT_EQ(zap_scatter(comm, rank == root ? send.data() : nullptr, recv, count, ZAP_DT_UINT8, root),
                          ZAP_OK);
                MPI_Scatter(send.data(), (int)count, MPI_UINT8_T, ref.data(), (int)count, MPI_UINT8_T, root,
                            MPI_COMM_WORLD);
                if (ip)
                    std::copy(recv, recv + count, got.begin());
                ASSERT_EQ(got, ref) << "total " << count * size << " root " << root << (ip ? " in place" : "");
            }
        // scatterv, the same total in uneven blocks laid out in reverse rank
        // order with gaps; the root's own block empty, as an MPI_IN_PLACE
        // root's is in the Open MPI component.
        for (int root = 0; root < size; root++)
            for (bool root_empty : {false, true}) {
                std::vector<size_t> counts(size);
                std::vector<ptrdiff_t> displs(size);
                std::vector<int> icounts(size), idispls(size);
                size_t sum = 0, area = 0;
                for (int r = 0; r < size; r++) {
                    counts[r] = root_empty && r == root ? 0 : total / size + (size_t)r * 3;
                    sum += counts[r];
                }
                for (int r = size - 1; r >= 0; r--) {
                    displs[r] = (ptrdiff_t)area;
                    area += counts[r] + 5;
                }
                for (int r = 0; r < size; r++)
                    icounts[r] = (int)counts[r], idispls[r] = (int)displs[r];
                std::vector<uint8_t> send(area), got(counts[rank] + 1, 0xa5), ref(counts[rank] + 1, 0xa5);
                for (size_t i = 0; i < area; i++)
                    send[i] = (uint8_t)mix(total * 17 + (size_t)root * 5 + i);
                ASSERT_EQ(zap_scatterv(comm, rank == root ? send.data() : nullptr, counts.data(), displs.data(),
                                       got.data(), counts[rank], ZAP_DT_UINT8, root),
                          ZAP_OK);
                MPI_Scatterv(send.data(), icounts.data(), idispls.data(), MPI_UINT8_T, ref.data(), icounts[rank],
                             MPI_UINT8_T, root, MPI_COMM_WORLD);
                ASSERT_EQ(got, ref) << "scatterv total " << sum << " root " << root << (root_empty ? " root empty" : "");
            }
    }
}

// Scatters of every form from rotating roots, back to back and outstanding
// together, between broadcasts through the same large area: each must find
// its own blocks, none a neighbour's or a previous call's.
TEST_F(CollsMpi, ScattersBetweenBroadcastsReuseTheLargeAreaSafely)
{
    int rank = MpiRank(), size = MpiSize();
    Comm comm(t_, "scatter", "auto");
    std::vector<size_t> totals = scatter_totals(size);
    const int calls = 24; // scatter, broadcast, scatter, ... posted at once
    std::vector<std::vector<uint8_t>> send(calls), got(calls), ref(calls);
    std::vector<zap_request_t *> reqs(calls);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < calls; i++) {
            int root = (i / 2 + round) % size;
            size_t total = totals[(size_t)(i / 2 + round) % totals.size()];
            if (i % 2 == 1) { // a broadcast above a slot: the result area
                total = 3 * total + 8;
                ref[i].assign(total, 0);
                for (size_t j = 0; j < total; j++)
                    ref[i][j] = (uint8_t)mix((uint64_t)round << 40 | (uint64_t)i << 32 | j);
                got[i] = rank == root ? ref[i] : std::vector<uint8_t>(total, 0);
                ASSERT_EQ(zap_ibcast(comm, got[i].data(), total, ZAP_DT_UINT8, root, &reqs[i]), ZAP_OK);
                continue;
            }
            size_t count = (total + size - 1) / size;
            send[i].assign(count * size, 0);
            for (size_t j = 0; j < send[i].size(); j++)
                send[i][j] = (uint8_t)mix((uint64_t)round << 40 | (uint64_t)i << 32 | j);
            auto block = send[i].begin() + (ptrdiff_t)(rank * count);
            ref[i].assign(block, block + (ptrdiff_t)count);
            got[i].assign(count, 0x5a);
            ASSERT_EQ(zap_iscatter(comm, rank == root ? send[i].data() : nullptr, got[i].data(), count, ZAP_DT_UINT8,
                                   root, &reqs[i]),
                      ZAP_OK);
        }
        for (int i = 0; i < calls; i++) {
            ASSERT_EQ(zap_request_wait(reqs[i]), ZAP_OK) << "round " << round << " call " << i;
            zap_request_free(reqs[i]);
        }
        for (int i = 0; i < calls; i++)
            ASSERT_EQ(got[i], ref[i]) << "round " << round << " call " << i << (i % 2 ? " bcast" : " scatter");
        // And blocking, one at a time, with Open MPI's scatter between them.
        for (int i = 0; i < calls; i += 2) {
            int root = (i + round) % size;
            size_t count = send[i].size() / size;
            std::vector<uint8_t> mine(count + 1, 1), theirs(count + 1, 1);
            ASSERT_EQ(zap_scatter(comm, send[i].data(), mine.data(), count, ZAP_DT_UINT8, root), ZAP_OK);
            MPI_Scatter(send[i].data(), (int)count, MPI_UINT8_T, theirs.data(), (int)count, MPI_UINT8_T, root,
                        MPI_COMM_WORLD);
            ASSERT_EQ(mine, theirs) << "round " << round << " blocking call " << i;
        }
    }
}

// A non-commutative user op (affine maps composed) is combined in rank
// order by every algorithm of every reducing collective, the shared-memory
// and single-copy forms included; the ops are made per process.
void compose(const void *in, void *inout, size_t count, void *ctx)
{
    (void)ctx;
    const zap_2int_t *x = (const zap_2int_t *)in;
    zap_2int_t *y = (zap_2int_t *)inout;
    for (size_t i = 0; i < count; i++) {
        uint32_t a1 = (uint32_t)x[i].v, b1 = (uint32_t)x[i].k, a2 = (uint32_t)y[i].v, b2 = (uint32_t)y[i].k;
        y[i].v = (int)(a2 * a1);
        y[i].k = (int)(a2 * b1 + b2);
    }
}

void compose_mpi(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    compose(in, inout, (size_t)*len, nullptr);
}

TEST_F(CollsMpi, NonCommutativeUserOpInRankOrderOnEveryAlgorithm)
{
    int rank = MpiRank(), size = MpiSize();
    zap_op_t op = ZAP_OP_SUM;
    ASSERT_EQ(zap_op_create(compose, 0, nullptr, &op), ZAP_OK);
    MPI_Op mop;
    MPI_Op_create(compose_mpi, 0, &mop);
    for (size_t count : counts_for(9, 70001)) {
        std::vector<zap_2int_t> in(count * size), out(count * size), ref(count * size);
        for (size_t i = 0; i < in.size(); i++)
            in[i] = {(int)(mix((uint64_t)rank * 5 + i) | 1), (int)mix(i + 17 * (uint64_t)rank)};
        for (const char *alg : kReduceAlgs) {
            Comm c(t_, "reduce", alg);
            ASSERT_EQ(zap_reduce(c, in.data(), out.data(), count, ZAP_DT_2INT, op, size - 1), ZAP_OK);
            MPI_Reduce(in.data(), ref.data(), (int)count, MPI_2INT, mop, size - 1, MPI_COMM_WORLD);
            if (rank == size - 1) {
                ASSERT_EQ(std::memcmp(out.data(), ref.data(), count * 8), 0) << "reduce " << alg;
            }
        }
        for (const char *alg : kRsAlgs) {
            Comm c(t_, "reduce_scatter", alg);
            ASSERT_EQ(zap_reduce_scatter_block(c, in.data(), out.data(), count, ZAP_DT_2INT, op), ZAP_OK);
            MPI_Reduce_scatter_block(in.data(), ref.data(), (int)count, MPI_2INT, mop, MPI_COMM_WORLD);
            ASSERT_EQ(std::memcmp(out.data(), ref.data(), count * 8), 0) << "reduce_scatter_block " << alg;
        }
        for (const char *alg : kScanAlgs) {
            Comm c(t_, "scan", alg);
            ASSERT_EQ(zap_scan(c, in.data(), out.data(), count, ZAP_DT_2INT, op), ZAP_OK);
            MPI_Scan(in.data(), ref.data(), (int)count, MPI_2INT, mop, MPI_COMM_WORLD);
            ASSERT_EQ(std::memcmp(out.data(), ref.data(), count * 8), 0) << "scan " << alg;
        }
        zap_comm_t *c = nullptr;
        ASSERT_EQ(zap_comm_create(t_, &c), ZAP_OK);
        ASSERT_EQ(zap_allreduce(c, in.data(), out.data(), count, ZAP_DT_2INT, op), ZAP_OK);
        MPI_Allreduce(in.data(), ref.data(), (int)count, MPI_2INT, mop, MPI_COMM_WORLD);
        ASSERT_EQ(std::memcmp(out.data(), ref.data(), count * 8), 0) << "allreduce";
        zap_comm_destroy(c);
    }
    MPI_Op_free(&mop);
    zap_op_destroy(op);
}

TEST_F(CollsMpi, CountsThatDisagreeAreReportedOnEveryRank)
{
    MpiExpectLog("differ");
    MpiExpectLog("sent");
    MpiExpectLog("reported bad arguments"); // the others name the rank at fault
    MpiExpectLog("exceeds"); // the transport names a truncated message
    int rank = MpiRank(), size = MpiSize();
    for (const char *alg : {"auto", "linear"}) {
        Comm g(t_, "gather", alg), a(t_, "alltoall", alg);
        std::vector<int32_t> buf(4096, 1), out(4096 * 4);
        std::vector<size_t> counts(size, 10);
        std::vector<ptrdiff_t> displs(size);
        for (int r = 0; r < size; r++)
            displs[r] = r * 10;
        zap_status_t st = zap_gatherv(g, buf.data(), rank == size - 1 ? 12 : 10, out.data(), counts.data(),
                                      displs.data(), ZAP_DT_INT32, 0);
        EXPECT_EQ(st, rank == 0 ? ZAP_ERR_INVALID_PARAM : ZAP_ERR_MISMATCH) << "gatherv " << alg;
        std::vector<size_t> rc(size, 10);
        if (rank == 0)
            rc[size - 1] = 9; // rank size-1 sends 10
        st = zap_alltoallv(a, buf.data(), counts.data(), displs.data(), out.data(), rc.data(), displs.data(),
                           ZAP_DT_INT32);
        EXPECT_EQ(st, rank == 0 ? ZAP_ERR_INVALID_PARAM : ZAP_ERR_MISMATCH) << "alltoallv " << alg;
        st = zap_alltoall(a, buf.data(), rank == 1 ? 5 : 6, out.data(), ZAP_DT_INT32);
        EXPECT_EQ(st, ZAP_ERR_MISMATCH) << "alltoall " << alg;
        // Usable afterwards.
        EXPECT_EQ(zap_alltoall(a, buf.data(), 6, out.data(), ZAP_DT_INT32), ZAP_OK);
    }
}
} // namespace
