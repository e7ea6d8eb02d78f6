/* The reductions MPI has beyond zap's arithmetic and bitwise ops on plain
 * numbers (reduce.h): logical ops on the integer types, sum and product on
 * the complex types, minloc and maxloc on the pair types. Written out per
 * width and type like reduce_cpu.c, so each loop is plain and vectorisable.
 *
 * Logical ops: a nonzero element is true; the result is 0 or 1 in the
 * element's type (MPI_LAND, MPI_LOR, MPI_LXOR). Signed and unsigned types of
 * one width behave alike, so one loop per width serves both.
 *
 * Complex product: (a + bi)(c + di) = (ac - bd) + (ad + bc)i, each part two
 * IEEE products and one sum, no fused multiply-add (the CUDA kernels round
 * the same way) and without C Annex G's recovery of infinities from NaN
 * results. Both parts are symmetric in the operands, so the product is
 * commutative bit for bit, like the sum.
 *
 * minloc / maxloc: the operand with the smaller (larger) value; on equal
 * values the first operand with the smaller of the two indices (MPI: the
 * lowest index wins a tie). The winning element is copied whole, padding
 * included, so a result's bytes are its operands' whatever dst held before
 * (identical on every rank given the inputs). Long double goes through memcpy:
 * pair elements can sit at 8-byte offsets (a shared-memory slot's payload),
 * below long double's alignment. */
#include "coll/reduce/reduce.h"
#include <stdint.h>
#include <string.h>

/* --- logical ops ------------------------------------------------------------ */

static void logical_u8(zap_op_t op, uint8_t *d, const uint8_t *a, const uint8_t *b, size_t n)
{
    switch (op) {
    case ZAP_OP_LAND:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint8_t)(a[i] != 0 && b[i] != 0);
        break;
    case ZAP_OP_LOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint8_t)(a[i] != 0 || b[i] != 0);
        break;
    default:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint8_t)((a[i] != 0) != (b[i] != 0));
        break;
    }
}

static void logical_u16(zap_op_t op, uint16_t *d, const uint16_t *a, const uint16_t *b, size_t n)
{
    switch (op) {
    case ZAP_OP_LAND:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint16_t)(a[i] != 0 && b[i] != 0);
        break;
    case ZAP_OP_LOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint16_t)(a[i] != 0 || b[i] != 0);
        break;
    default:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint16_t)((a[i] != 0) != (b[i] != 0));
        break;
    }
}

static void logical_u32(zap_op_t op, uint32_t *d, const uint32_t *a, const uint32_t *b, size_t n)
{
    switch (op) {
    case ZAP_OP_LAND:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint32_t)(a[i] != 0 && b[i] != 0);
        break;
    case ZAP_OP_LOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint32_t)(a[i] != 0 || b[i] != 0);
        break;
    default:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint32_t)((a[i] != 0) != (b[i] != 0));
        break;
    }
}

static void logical_u64(zap_op_t op, uint64_t *d, const uint64_t *a, const uint64_t *b, size_t n)
{
    switch (op) {
    case ZAP_OP_LAND:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint64_t)(a[i] != 0 && b[i] != 0);
        break;
    case ZAP_OP_LOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint64_t)(a[i] != 0 || b[i] != 0);
        break;
    default:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint64_t)((a[i] != 0) != (b[i] != 0));
        break;
    }
}

/* --- complex ---------------------------------------------------------------- */

/* Elements are (re, im) pairs: element i is x[2i], x[2i+1]. */
static void complex_f(zap_op_t op, float *d, const float *a, const float *b, size_t n)
{
    if (op == ZAP_OP_SUM) {
        for (size_t i = 0; i < 2 * n; i++)
            d[i] = a[i] + b[i];
        return;
    }
    for (size_t i = 0; i < n; i++) {
        float ar = a[2 * i], ai = a[2 * i + 1], br = b[2 * i], bi = b[2 * i + 1];
        float rr = ar * br, ii = ai * bi, ri = ar * bi, ir = ai * br;
        d[2 * i] = rr - ii;
        d[2 * i + 1] = ri + ir;
    }
}

static void complex_d(zap_op_t op, double *d, const double *a, const double *b, size_t n)
{
    if (op == ZAP_OP_SUM) {
        for (size_t i = 0; i < 2 * n; i++)
            d[i] = a[i] + b[i];
        return;
    }
    for (size_t i = 0; i < n; i++) {
        double ar = a[2 * i], ai = a[2 * i + 1], br = b[2 * i], bi = b[2 * i + 1];
        double rr = ar * br, ii = ai * bi, ri = ar * bi, ir = ai * br;
        d[2 * i] = rr - ii;
        d[2 * i + 1] = ri + ir;
    }
}

/* --- minloc, maxloc ------------------------------------------------------------ */

static int min_index(int x, int y) { return x < y ? x : y; }

/* Element i of every pair type the same way: the winner is copied whole,
 * padding included (so a result's bytes come from the operands, never from
 * what dst held), then the index is set. The operands are read before dst
 * is written: dst may be a or b. */
static void loc_float_int(bool max, zap_float_int_t *d, const zap_float_int_t *a, const zap_float_int_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float av = a[i].v, bv = b[i].v;
        int ak = a[i].k, bk = b[i].k;
        bool first = max ? av > bv : av < bv, tie = av == bv;
        const zap_float_int_t *w = first || tie ? &a[i] : &b[i];
        if (w != &d[i])
            memcpy(&d[i], w, sizeof(d[i]));
        d[i].k = first ? ak : tie ? min_index(ak, bk) : bk;
    }
}

static void loc_double_int(bool max, zap_double_int_t *d, const zap_double_int_t *a, const zap_double_int_t *b,
                           size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double av = a[i].v, bv = b[i].v;
        int ak = a[i].k, bk = b[i].k;
        bool first = max ? av > bv : av < bv, tie = av == bv;
        const zap_double_int_t *w = first || tie ? &a[i] : &b[i];
        if (w != &d[i])
            memcpy(&d[i], w, sizeof(d[i]));
        d[i].k = first ? ak : tie ? min_index(ak, bk) : bk;
    }
}

static void loc_long_int(bool max, zap_long_int_t *d, const zap_long_int_t *a, const zap_long_int_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        long av = a[i].v, bv = b[i].v;
        int ak = a[i].k, bk = b[i].k;
        bool first = max ? av > bv : av < bv, tie = av == bv;
        const zap_long_int_t *w = first || tie ? &a[i] : &b[i];
        if (w != &d[i])
            memcpy(&d[i], w, sizeof(d[i]));
        d[i].k = first ? ak : tie ? min_index(ak, bk) : bk;
    }
}

static void loc_2int(bool max, zap_2int_t *d, const zap_2int_t *a, const zap_2int_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int av = a[i].v, bv = b[i].v;
        int ak = a[i].k, bk = b[i].k;
        bool first = max ? av > bv : av < bv, tie = av == bv;
        d[i].v = first || tie ? av : bv;
        d[i].k = first ? ak : tie ? min_index(ak, bk) : bk;
    }
}

static void loc_short_int(bool max, zap_short_int_t *d, const zap_short_int_t *a, const zap_short_int_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        short av = a[i].v, bv = b[i].v;
        int ak = a[i].k, bk = b[i].k;
        bool first = max ? av > bv : av < bv, tie = av == bv;
        const zap_short_int_t *w = first || tie ? &a[i] : &b[i];
        if (w != &d[i])
            memcpy(&d[i], w, sizeof(d[i]));
        d[i].k = first ? ak : tie ? min_index(ak, bk) : bk;
    }
}

static void loc_long_double_int(bool max, unsigned char *d, const unsigned char *a, const unsigned char *b, size_t n)
{
    const size_t es = sizeof(zap_long_double_int_t), vo = offsetof(zap_long_double_int_t, v),
                 ko = offsetof(zap_long_double_int_t, k);
    for (size_t i = 0; i < n; i++, d += es, a += es, b += es) {
        long double av, bv;
        int ak, bk;
        memcpy(&av, a + vo, sizeof(av));
        memcpy(&bv, b + vo, sizeof(bv));
        memcpy(&ak, a + ko, sizeof(ak));
        memcpy(&bk, b + ko, sizeof(bk));
        bool first = max ? av > bv : av < bv, tie = av == bv;
        const unsigned char *w = first || tie ? a : b;
        int k = first ? ak : tie ? min_index(ak, bk) : bk;
        if (w != d)
            memcpy(d, w, es);
        memcpy(d + ko, &k, sizeof(k));
    }
}

static void loc(zap_dtype_t dt, bool max, void *d, const void *a, const void *b, size_t n)
{
    switch (dt) {
    case ZAP_DT_FLOAT_INT: loc_float_int(max, d, a, b, n); break;
    case ZAP_DT_DOUBLE_INT: loc_double_int(max, d, a, b, n); break;
    case ZAP_DT_LONG_INT: loc_long_int(max, d, a, b, n); break;
    case ZAP_DT_2INT: loc_2int(max, d, a, b, n); break;
    case ZAP_DT_SHORT_INT: loc_short_int(max, d, a, b, n); break;
    case ZAP_DT_LONG_DOUBLE_INT: loc_long_double_int(max, d, a, b, n); break;
    default: break;
    }
}

void zap_reduce_cpu_mpi(zap_dtype_t dt, zap_op_t op, void *dst, const void *a, const void *b, size_t count)
{
    if (op == ZAP_OP_LAND || op == ZAP_OP_LOR || op == ZAP_OP_LXOR) {
        switch (zap_dtype_size(dt)) {
        case 1: logical_u8(op, dst, a, b, count); break;
        case 2: logical_u16(op, dst, a, b, count); break;
        case 4: logical_u32(op, dst, a, b, count); break;
        default: logical_u64(op, dst, a, b, count); break;
        }
        return;
    }
    if (op == ZAP_OP_MINLOC || op == ZAP_OP_MAXLOC) {
        loc(dt, op == ZAP_OP_MAXLOC, dst, a, b, count);
        return;
    }
    if (dt == ZAP_DT_COMPLEX64)
        complex_f(op, dst, a, b, count);
    else if (dt == ZAP_DT_COMPLEX128)
        complex_d(op, dst, a, b, count);
}

bool zap_reduce_gpu_capable(zap_dtype_t dt, zap_op_t op)
{
    return !zap_op_is_user(op) && dt != ZAP_DT_LONG_DOUBLE_INT && zap_reduce_supported(dt, op);
}
