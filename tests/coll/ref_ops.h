// Reference reductions for every datatype and op (zap/coll.h), written here
// independently of core/coll/reduce: inputs whose every combination is exact,
// combined element by element in rank order, ((x0 op x1) op x2) ...; plus the
// user ops the suites use (a non-commutative one whose result shows the
// order). Used by the suites of the MPI-style collectives (reduce,
// reduce_scatter, scan, exscan, and allreduce's further ops and types).
#pragma once
#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cstring>
#include <vector>
#include "coll_harness.h"

namespace colltest {

inline bool is_pair(zap_dtype_t dt) { return dt >= ZAP_DT_FLOAT_INT && dt <= ZAP_DT_LONG_DOUBLE_INT; }
inline bool is_complex(zap_dtype_t dt) { return dt == ZAP_DT_COMPLEX64 || dt == ZAP_DT_COMPLEX128; }
inline bool is_logical(zap_op_t op) { return op == ZAP_OP_LAND || op == ZAP_OP_LOR || op == ZAP_OP_LXOR; }

// Pair values as (long double v, int k), whatever the pair type.
inline void pair_get(zap_dtype_t dt, const void *p, size_t i, long double *v, int *k)
{
    const char *e = (const char *)p + i * dsize(dt);
    switch (dt) {
    case ZAP_DT_FLOAT_INT: { zap_float_int_t x; std::memcpy(&x, e, sizeof(x)); *v = x.v; *k = x.k; break; }
    case ZAP_DT_DOUBLE_INT: { zap_double_int_t x; std::memcpy(&x, e, sizeof(x)); *v = x.v; *k = x.k; break; }
    case ZAP_DT_LONG_INT: { zap_long_int_t x; std::memcpy(&x, e, sizeof(x)); *v = (long double)x.v; *k = x.k; break; }
    case ZAP_DT_2INT: { zap_2int_t x; std::memcpy(&x, e, sizeof(x)); *v = x.v; *k = x.k; break; }
    case ZAP_DT_SHORT_INT: { zap_short_int_t x; std::memcpy(&x, e, sizeof(x)); *v = x.v; *k = x.k; break; }
    default: { zap_long_double_int_t x; std::memcpy(&x, e, sizeof(x)); *v = x.v; *k = x.k; break; }
    }
}
// Writes the value and the index only (the padding keeps its bytes).
inline void pair_put(zap_dtype_t dt, void *p, size_t i, long double v, int k)
{
    char *e = (char *)p + i * dsize(dt);
    switch (dt) {
    case ZAP_DT_FLOAT_INT: { float x = (float)v; std::memcpy(e, &x, sizeof(x)); std::memcpy(e + offsetof(zap_float_int_t, k), &k, 4); break; }
    case ZAP_DT_DOUBLE_INT: { double x = (double)v; std::memcpy(e, &x, sizeof(x)); std::memcpy(e + offsetof(zap_double_int_t, k), &k, 4); break; }
    case ZAP_DT_LONG_INT: { long x = (long)v; std::memcpy(e, &x, sizeof(x)); std::memcpy(e + offsetof(zap_long_int_t, k), &k, 4); break; }
    case ZAP_DT_2INT: { int x = (int)v; std::memcpy(e, &x, sizeof(x)); std::memcpy(e + offsetof(zap_2int_t, k), &k, 4); break; }
    case ZAP_DT_SHORT_INT: { short x = (short)v; std::memcpy(e, &x, sizeof(x)); std::memcpy(e + offsetof(zap_short_int_t, k), &k, 4); break; }
    default: { // the value's significant bytes only: x87's 80 bits leave 6 bytes of padding in 16
        long double x = v;
        std::memcpy(e, &x, LDBL_MANT_DIG == 64 ? 10 : sizeof(long double));
        std::memcpy(e + offsetof(zap_long_double_int_t, k), &k, 4);
        break;
    }
    }
}

// Input of rank r, element i, for dt and op: integers full range (logical
// ops: a third of them 0); floats and complex parts small integers (products:
// 1, -1 and a few 2s, so every result is exact); pairs small values (ties)
// with indices that are not in rank order. Every byte of the buffer is
// written (pair padding 0).
inline void fill_any(zap_dtype_t dt, zap_op_t op, int r, uint64_t seed, void *p, size_t count)
{
    std::memset(p, 0, count * dsize(dt));
    if (dt <= ZAP_DT_FLOAT64) {
        fill_input(dt, op, r, seed, p, count);
        if (is_logical(op))
            for (size_t i = 0; i < count; i++)
                if (mix(seed + i * 31 + (uint64_t)r) % 3 == 0)
                    put_i(dt, p, i, 0);
        return;
    }
    for (size_t i = 0; i < count; i++) {
        uint64_t h = mix(seed * 1000003 + (uint64_t)r * 7919 + i);
        if (is_complex(dt)) {
            double re, im;
            if (op == ZAP_OP_PROD) {
                static const double unit[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
                re = unit[h % 4][0];
                im = unit[h % 4][1];
                if (h % 11 == 0) { // 1 + i now and then
                    re = 1;
                    im = 1;
                }
            } else {
                re = (double)((int)(h % 9) - 4);
                im = (double)((int)((h >> 8) % 9) - 4);
            }
            if (dt == ZAP_DT_COMPLEX64) {
                float x[2] = {(float)re, (float)im};
                std::memcpy((char *)p + i * 8, x, 8);
            } else {
                double x[2] = {re, im};
                std::memcpy((char *)p + i * 16, x, 16);
            }
        } else {
            pair_put(dt, p, i, (long double)((int)(h % 4) - 1), (int)((h >> 16) % 50) - 10);
        }
    }
}

// acc = acc op x for element i (acc holds the lower ranks' result).
inline void combine(zap_dtype_t dt, zap_op_t op, void *acc, const void *x, size_t i)
{
    if (dt <= ZAP_DT_FLOAT64 && !is_logical(op)) {
        std::vector<std::vector<uint8_t>> two(2, std::vector<uint8_t>(8));
        std::memcpy(two[0].data(), (char *)acc + i * dsize(dt), dsize(dt));
        std::memcpy(two[1].data(), (const char *)x + i * dsize(dt), dsize(dt));
        reference(dt, op, two, 0, (char *)acc + i * dsize(dt));
        return;
    }
    if (is_logical(op)) {
        bool a = get_i(dt, acc, i) != 0, b = get_i(dt, x, i) != 0;
        bool v = op == ZAP_OP_LAND ? (a && b) : op == ZAP_OP_LOR ? (a || b) : (a != b);
        put_i(dt, acc, i, v ? 1 : 0);
        return;
    }
    if (is_complex(dt)) {
        double a[2], b[2];
        if (dt == ZAP_DT_COMPLEX64) {
            float fa[2], fb[2];
            std::memcpy(fa, (char *)acc + i * 8, 8);
            std::memcpy(fb, (const char *)x + i * 8, 8);
            a[0] = fa[0], a[1] = fa[1], b[0] = fb[0], b[1] = fb[1];
        } else {
            std::memcpy(a, (char *)acc + i * 16, 16);
            std::memcpy(b, (const char *)x + i * 16, 16);
        }
        double re = op == ZAP_OP_SUM ? a[0] + b[0] : a[0] * b[0] - a[1] * b[1];
        double im = op == ZAP_OP_SUM ? a[1] + b[1] : a[0] * b[1] + a[1] * b[0];
        if (dt == ZAP_DT_COMPLEX64) {
            float f[2] = {(float)re, (float)im};
            std::memcpy((char *)acc + i * 8, f, 8);
        } else {
            double d[2] = {re, im};
            std::memcpy((char *)acc + i * 16, d, 16);
        }
        return;
    }
    long double av, bv;
    int ak, bk;
    pair_get(dt, acc, i, &av, &ak);
    pair_get(dt, x, i, &bv, &bk);
    bool first = op == ZAP_OP_MAXLOC ? av > bv : av < bv;
    if (first)
        return;
    if (av == bv) {
        pair_put(dt, acc, i, av, std::min(ak, bk)); // MPI: the lowest index wins a tie
    } else { // the winner whole, padding included
        std::memcpy((char *)acc + i * dsize(dt), (const char *)x + i * dsize(dt), dsize(dt));
    }
}

// The reduction of in[lo .. hi] (inclusive) in rank order, every element.
inline std::vector<uint8_t> fold(zap_dtype_t dt, zap_op_t op, const std::vector<std::vector<uint8_t>> &in, int lo,
                                 int hi, size_t count)
{
    std::vector<uint8_t> acc(in[lo].begin(), in[lo].begin() + count * dsize(dt));
    for (int r = lo + 1; r <= hi; r++)
        for (size_t i = 0; i < count; i++)
            combine(dt, op, acc.data(), in[r].data(), i);
    return acc;
}

// Every (datatype, op) pair zap defines.
inline std::vector<std::pair<zap_dtype_t, zap_op_t>> all_type_ops()
{
    std::vector<std::pair<zap_dtype_t, zap_op_t>> v;
    for (int d = 0; d < ZAP_DT_COUNT; d++)
        for (int o = 0; o < ZAP_OP_COUNT; o++)
            if (zap_op_supported((zap_dtype_t)d, (zap_op_t)o))
                v.push_back({(zap_dtype_t)d, (zap_op_t)o});
    return v;
}

// --- user ops ------------------------------------------------------------------

// Composition of affine maps x -> a x + b on (a, b) = (v, k) of a zap_2int_t,
// in MPI's user-function convention inout = in op inout, "apply in's map,
// then inout's": (a1, b1) op (a2, b2) = (a2 a1, a2 b1 + b2), wrapping.
// Associative, not commutative: the result shows the order of the operands.
inline void affine_compose(const void *in, void *inout, size_t count, void *ctx)
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
// The same as acc = acc op x for the reference.
inline void affine_ref(void *acc, const void *x, size_t i)
{
    zap_2int_t a, b;
    std::memcpy(&a, (char *)acc + i * 8, 8);
    std::memcpy(&b, (const char *)x + i * 8, 8);
    affine_compose(&a, &b, 1, nullptr); // b = a op b
    std::memcpy((char *)acc + i * 8, &b, 8);
}
// Odd multipliers and any offsets, so the maps never collapse to constants.
inline void fill_affine(int r, uint64_t seed, void *p, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        uint64_t h = mix(seed * 977 + (uint64_t)r * 131 + i);
        zap_2int_t e = {(int)((h & 0xffff) | 1), (int)(h >> 32)};
        std::memcpy((char *)p + i * 8, &e, 8);
    }
}
inline std::vector<uint8_t> fold_affine(const std::vector<std::vector<uint8_t>> &in, int lo, int hi, size_t count)
{
    std::vector<uint8_t> acc(in[lo].begin(), in[lo].begin() + count * 8);
    for (int r = lo + 1; r <= hi; r++)
        for (size_t i = 0; i < count; i++)
            affine_ref(acc.data(), in[r].data(), i);
    return acc;
}

// A user op made with zap_op_create, destroyed with its scope.
struct UserOp {
    zap_op_t op = ZAP_OP_SUM;
    UserOp(zap_op_fn fn, int commutative, void *ctx = nullptr)
    {
        EXPECT_EQ(zap_op_create(fn, commutative, ctx, &op), ZAP_OK);
    }
    UserOp(const UserOp &) = delete;
    UserOp &operator=(const UserOp &) = delete;
    ~UserOp() { zap_op_destroy(op); }
};

} // namespace colltest
