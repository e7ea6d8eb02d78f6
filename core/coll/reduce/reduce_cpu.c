/* CPU reductions, one loop per datatype and op, written out so that each is a
 * plain loop the compiler vectorises (this file is built with -O3). Integer
 * sum and product are computed in the unsigned type of the same width, so
 * they wrap instead of overflowing (signed overflow is undefined in C).
 * float16 and bfloat16 convert each element to float, combine and round back
 * to nearest even: one rounding per combination, a fixed order.
 *
 * The per-type functions below were generated once by a short script and are
 * kept as plain C (no token pasting), as STYLE.md asks. */
#include "coll/reduce/reduce.h"
#include <string.h>

/* On x86-64 each loop is built twice, for AVX2 and for the baseline (SSE2),
 * and the loader picks one per machine (docs/collectives.md, "Memory").
 * Results do not depend on the choice: every element is one IEEE operation
 * (no FMA contraction, no reassociation), so ranks on different CPUs still
 * agree bit for bit. */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define ZAP_REDUCE_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef ZAP_REDUCE_CLONES
#define ZAP_REDUCE_CLONES
#endif

size_t zap_dtype_size(zap_dtype_t dt)
{
    switch (dt) {
    case ZAP_DT_INT8: case ZAP_DT_UINT8: return 1;
    case ZAP_DT_INT16: case ZAP_DT_UINT16: case ZAP_DT_FLOAT16: case ZAP_DT_BFLOAT16: return 2;
    case ZAP_DT_INT32: case ZAP_DT_UINT32: case ZAP_DT_FLOAT32: return 4;
    case ZAP_DT_INT64: case ZAP_DT_UINT64: case ZAP_DT_FLOAT64: return 8;
    case ZAP_DT_COMPLEX64: return 2 * sizeof(float);
    case ZAP_DT_COMPLEX128: return 2 * sizeof(double);
    case ZAP_DT_FLOAT_INT: return sizeof(zap_float_int_t);
    case ZAP_DT_DOUBLE_INT: return sizeof(zap_double_int_t);
    case ZAP_DT_LONG_INT: return sizeof(zap_long_int_t);
    case ZAP_DT_2INT: return sizeof(zap_2int_t);
    case ZAP_DT_SHORT_INT: return sizeof(zap_short_int_t);
    case ZAP_DT_LONG_DOUBLE_INT: return sizeof(zap_long_double_int_t);
    default: return 0;
    }
}

const char *zap_dtype_name(zap_dtype_t dt)
{
    static const char *const names[ZAP_DT_COUNT] = {
        "int8",      "int16",      "int32",      "int64",    "uint8",   "uint16",   "uint32",
        "uint64",    "float16",    "bfloat16",   "float32",  "float64", "complex64", "complex128",
        "float_int", "double_int", "long_int",   "2int",     "short_int", "long_double_int"};
    return (unsigned)dt < ZAP_DT_COUNT ? names[dt] : NULL;
}

const char *zap_op_name(zap_op_t op)
{
    static const char *const names[ZAP_OP_COUNT] = {"sum",  "prod", "min",  "max",    "band",  "bor",
                                                    "bxor", "land", "lor",  "lxor",   "minloc", "maxloc"};
    if (zap_op_is_user(op))
        return "user";
    return (unsigned)op < ZAP_OP_COUNT ? names[op] : NULL;
}

static bool is_float(zap_dtype_t dt)
{
    return dt == ZAP_DT_FLOAT16 || dt == ZAP_DT_BFLOAT16 || dt == ZAP_DT_FLOAT32 || dt == ZAP_DT_FLOAT64;
}

bool zap_reduce_supported(zap_dtype_t dt, zap_op_t op)
{
    if ((unsigned)dt >= ZAP_DT_COUNT)
        return false;
    if (zap_op_is_user(op))
        return zap_user_op_live(op);
    if ((unsigned)op >= ZAP_OP_COUNT)
        return false;
    if (dt <= ZAP_DT_UINT64) /* integers: everything but the pair ops */
        return op < ZAP_OP_MINLOC;
    if (is_float(dt))
        return op <= ZAP_OP_MAX;
    if (dt == ZAP_DT_COMPLEX64 || dt == ZAP_DT_COMPLEX128)
        return op == ZAP_OP_SUM || op == ZAP_OP_PROD;
    return op == ZAP_OP_MINLOC || op == ZAP_OP_MAXLOC; /* pair types */
}

int zap_op_supported(zap_dtype_t dt, zap_op_t op) { return zap_reduce_supported(dt, op) ? 1 : 0; }

/* IEEE binary16 <-> float, round to nearest even; NaN stays NaN (quiet). */
float zap_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while ((man & 0x400u) == 0);
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

uint16_t zap_float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) /* inf or NaN */
        return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
    if (absx >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (absx < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
        if (absx < 0x33000000u) /* < 2^-25: rounds to zero */
            return (uint16_t)sign;
        uint32_t e = absx >> 23, man = (absx & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e; /* value = man * 2^(e-150); units of 2^-24 */
        uint32_t half = man >> shift, rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1u)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((absx >> 13) - ((127u - 15u) << 10));
    uint32_t rest = absx & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
        half++;
    return (uint16_t)(sign | half);
}

float zap_bf16_to_float(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

uint16_t zap_float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it quiet and a NaN */
        return (uint16_t)((x >> 16) | 0x40u);
    uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)((x + rounding) >> 16);
}


ZAP_REDUCE_CLONES static void reduce_int8(zap_op_t op, int8_t *d, const int8_t *a, const int8_t *b, size_t n)
{
    switch (op) {
    case ZAP_OP_SUM:
        for (size_t i = 0; i < n; i++)
            d[i] = (int8_t)((uint8_t)a[i] + (uint8_t)b[i]);
        break;
    case ZAP_OP_PROD:
        for (size_t i = 0; i < n; i++)
            d[i] = (int8_t)((uint8_t)a[i] * (uint8_t)b[i]);
        break;
    case ZAP_OP_MIN:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] < b[i] ? a[i] : b[i];
        break;
    case ZAP_OP_MAX:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] > b[i] ? a[i] : b[i];
        break;
    case ZAP_OP_BAND:
        for (size_t i = 0; i < n; i++)
            d[i] = (int8_t)(a[i] & b[i]);
        break;
    case ZAP_OP_BOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (int8_t)(a[i] | b[i]);
        break;
    case ZAP_OP_BXOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (int8_t)(a[i] ^ b[i]);
        break;
    default:
        break;
    }
}

ZAP_REDUCE_CLONES static void reduce_int16(zap_op_t op, int16_t *d, const int16_t *a, const int16_t *b, size_t n)
{
    switch (op) {
    case ZAP_OP_SUM:
        for (size_t i = 0; i < n; i++)
            d[i] = (int16_t)((uint16_t)a[i] + (uint16_t)b[i]);
        break;
    case ZAP_OP_PROD:
        for (size_t i = 0; i < n; i++)
            d[i] = (int16_t)((uint16_t)a[i] * (uint16_t)b[i]);
        break;
    case ZAP_OP_MIN:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] < b[i] ? a[i] : b[i];
        break;
    case ZAP_OP_MAX:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] > b[i] ? a[i] : b[i];
        break;
    case ZAP_OP_BAND:
        for (size_t i = 0; i < n; i++)
            d[i] = (int16_t)(a[i] & b[i]);
        break;
    case ZAP_OP_BOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (int16_t)(a[i] | b[i]);
        break;
    case ZAP_OP_BXOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (int16_t)(a[i] ^ b[i]);
        break;
    default:
        break;
    }
}

ZAP_REDUCE_CLONES static void reduce_int32(zap_op_t op, int32_t *d, const int32_t *a, const int32_t *b, size_t n)
{
    switch (op) {
    case ZAP_OP_SUM:
        for (size_t i = 0; i < n; i++)
            d[i] = (int32_t)((uint32_t)a[i] + (uint32_t)b[i]);
        break;
    case ZAP_OP_PROD:
        for (size_t i = 0; i < n; i++)
            d[i] = (int32_t)((uint32_t)a[i] * (uint32_t)b[i]);
        break;
    case ZAP_OP_MIN:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] < b[i] ? a[i] : b[i];
        break;
    case ZAP_OP_MAX:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] > b[i] ? a[i] : b[i];
        break;
    case ZAP_OP_BAND:
        for (size_t i = 0; i < n; i++)
            d[i] = (int32_t)(a[i] & b[i]);
        break;
    case ZAP_OP_BOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (int32_t)(a[i] | b[i]);
        break;
    case ZAP_OP_BXOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (int32_t)(a[i] ^ b[i]);
        break;
    default:
        break;
    }
}

ZAP_REDUCE_CLONES static void reduce_int64(zap_op_t op, int64_t *d, const int64_t *a, const int64_t *b, size_t n)
{
    switch (op) {
    case ZAP_OP_SUM:
        for (size_t i = 0; i < n; i++)
            d[i] = (int64_t)((uint64_t)a[i] + (uint64_t)b[i]);
        break;
    case ZAP_OP_PROD:
        for (size_t i = 0; i < n; i++)
            d[i] = (int64_t)((uint64_t)a[i] * (uint64_t)b[i]);
        break;
    case ZAP_OP_MIN:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] < b[i] ? a[i] : b[i];
        break;
    case ZAP_OP_MAX:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] > b[i] ? a[i] : b[i];
        break;
    case ZAP_OP_BAND:
        for (size_t i = 0; i < n; i++)
            d[i] = (int64_t)(a[i] & b[i]);
        break;
    case ZAP_OP_BOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (int64_t)(a[i] | b[i]);
        break;
    case ZAP_OP_BXOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (int64_t)(a[i] ^ b[i]);
        break;
    default:
        break;
    }
}

ZAP_REDUCE_CLONES static void reduce_uint8(zap_op_t op, uint8_t *d, const uint8_t *a, const uint8_t *b, size_t n)
{
    switch (op) {
    case ZAP_OP_SUM:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint8_t)(a[i] + b[i]);
        break;
    case ZAP_OP_PROD:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint8_t)(a[i] * b[i]);
        break;
    case ZAP_OP_MIN:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] < b[i] ? a[i] : b[i];
        break;
    case ZAP_OP_MAX:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] > b[i] ? a[i] : b[i];
        break;
    case ZAP_OP_BAND:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint8_t)(a[i] & b[i]);
        break;
    case ZAP_OP_BOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint8_t)(a[i] | b[i]);
        break;
    case ZAP_OP_BXOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint8_t)(a[i] ^ b[i]);
        break;
    default:
        break;
    }
}

ZAP_REDUCE_CLONES static void reduce_uint16(zap_op_t op, uint16_t *d, const uint16_t *a, const uint16_t *b, size_t n)
{
    switch (op) {
    case ZAP_OP_SUM:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint16_t)(a[i] + b[i]);
        break;
    case ZAP_OP_PROD:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint16_t)(a[i] * b[i]);
        break;
    case ZAP_OP_MIN:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] < b[i] ? a[i] : b[i];
        break;
    case ZAP_OP_MAX:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] > b[i] ? a[i] : b[i];
        break;
    case ZAP_OP_BAND:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint16_t)(a[i] & b[i]);
        break;
    case ZAP_OP_BOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint16_t)(a[i] | b[i]);
        break;
    case ZAP_OP_BXOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint16_t)(a[i] ^ b[i]);
        break;
    default:
        break;
    }
}

ZAP_REDUCE_CLONES static void reduce_uint32(zap_op_t op, uint32_t *d, const uint32_t *a, const uint32_t *b, size_t n)
{
    switch (op) {
    case ZAP_OP_SUM:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint32_t)(a[i] + b[i]);
        break;
    case ZAP_OP_PROD:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint32_t)(a[i] * b[i]);
        break;
    case ZAP_OP_MIN:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] < b[i] ? a[i] : b[i];
        break;
    case ZAP_OP_MAX:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] > b[i] ? a[i] : b[i];
        break;
    case ZAP_OP_BAND:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint32_t)(a[i] & b[i]);
        break;
    case ZAP_OP_BOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint32_t)(a[i] | b[i]);
        break;
    case ZAP_OP_BXOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint32_t)(a[i] ^ b[i]);
        break;
    default:
        break;
    }
}

ZAP_REDUCE_CLONES static void reduce_uint64(zap_op_t op, uint64_t *d, const uint64_t *a, const uint64_t *b, size_t n)
{
    switch (op) {
    case ZAP_OP_SUM:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint64_t)(a[i] + b[i]);
        break;
    case ZAP_OP_PROD:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint64_t)(a[i] * b[i]);
        break;
    case ZAP_OP_MIN:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] < b[i] ? a[i] : b[i];
        break;
    case ZAP_OP_MAX:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] > b[i] ? a[i] : b[i];
        break;
    case ZAP_OP_BAND:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint64_t)(a[i] & b[i]);
        break;
    case ZAP_OP_BOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint64_t)(a[i] | b[i]);
        break;
    case ZAP_OP_BXOR:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint64_t)(a[i] ^ b[i]);
        break;
    default:
        break;
    }
}

ZAP_REDUCE_CLONES static void reduce_float32(zap_op_t op, float *d, const float *a, const float *b, size_t n)
{
    switch (op) {
    case ZAP_OP_SUM:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] + b[i];
        break;
    case ZAP_OP_PROD:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] * b[i];
        break;
    case ZAP_OP_MIN:
        for (size_t i = 0; i < n; i++)
            d[i] = b[i] < a[i] ? b[i] : a[i];
        break;
    case ZAP_OP_MAX:
        for (size_t i = 0; i < n; i++)
            d[i] = b[i] > a[i] ? b[i] : a[i];
        break;
    default:
        break;
    }
}

ZAP_REDUCE_CLONES static void reduce_float64(zap_op_t op, double *d, const double *a, const double *b, size_t n)
{
    switch (op) {
    case ZAP_OP_SUM:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] + b[i];
        break;
    case ZAP_OP_PROD:
        for (size_t i = 0; i < n; i++)
            d[i] = a[i] * b[i];
        break;
    case ZAP_OP_MIN:
        for (size_t i = 0; i < n; i++)
            d[i] = b[i] < a[i] ? b[i] : a[i];
        break;
    case ZAP_OP_MAX:
        for (size_t i = 0; i < n; i++)
            d[i] = b[i] > a[i] ? b[i] : a[i];
        break;
    default:
        break;
    }
}

/* Through float: one rounding per combination. Converting in blocks keeps the
 * inner loops simple enough to vectorise. */
ZAP_REDUCE_CLONES static void reduce_float16(zap_op_t op, uint16_t *d, const uint16_t *a, const uint16_t *b, size_t n)
{
    float fa[256], fb[256];
    for (size_t base = 0; base < n; base += 256) {
        size_t m = n - base < 256 ? n - base : 256;
        for (size_t i = 0; i < m; i++) {
            fa[i] = zap_half_to_float(a[base + i]);
            fb[i] = zap_half_to_float(b[base + i]);
        }
        reduce_float32(op, fa, fa, fb, m);
        for (size_t i = 0; i < m; i++)
            d[base + i] = zap_float_to_half(fa[i]);
    }
}

/* Through float: one rounding per combination. Converting in blocks keeps the
 * inner loops simple enough to vectorise. */
ZAP_REDUCE_CLONES static void reduce_bfloat16(zap_op_t op, uint16_t *d, const uint16_t *a, const uint16_t *b, size_t n)
{
    float fa[256], fb[256];
    for (size_t base = 0; base < n; base += 256) {
        size_t m = n - base < 256 ? n - base : 256;
        for (size_t i = 0; i < m; i++) {
            fa[i] = zap_bf16_to_float(a[base + i]);
            fb[i] = zap_bf16_to_float(b[base + i]);
        }
        reduce_float32(op, fa, fa, fb, m);
        for (size_t i = 0; i < m; i++)
            d[base + i] = zap_float_to_bf16(fa[i]);
    }
}

void zap_reduce_cpu(zap_dtype_t dt, zap_op_t op, void *dst, const void *a, const void *b, size_t count)
{
    if (zap_op_is_user(op)) {
        zap_reduce_user(dt, op, dst, a, b, count);
        return;
    }
    if (op >= ZAP_OP_LAND || dt > ZAP_DT_FLOAT64) {
        zap_reduce_cpu_mpi(dt, op, dst, a, b, count);
        return;
    }
    switch (dt) {
    case ZAP_DT_INT8: reduce_int8(op, dst, a, b, count); break;
    case ZAP_DT_INT16: reduce_int16(op, dst, a, b, count); break;
    case ZAP_DT_INT32: reduce_int32(op, dst, a, b, count); break;
    case ZAP_DT_INT64: reduce_int64(op, dst, a, b, count); break;
    case ZAP_DT_UINT8: reduce_uint8(op, dst, a, b, count); break;
    case ZAP_DT_UINT16: reduce_uint16(op, dst, a, b, count); break;
    case ZAP_DT_UINT32: reduce_uint32(op, dst, a, b, count); break;
    case ZAP_DT_UINT64: reduce_uint64(op, dst, a, b, count); break;
    case ZAP_DT_FLOAT16: reduce_float16(op, dst, a, b, count); break;
    case ZAP_DT_BFLOAT16: reduce_bfloat16(op, dst, a, b, count); break;
    case ZAP_DT_FLOAT32: reduce_float32(op, dst, a, b, count); break;
    case ZAP_DT_FLOAT64: reduce_float64(op, dst, a, b, count); break;
    default: break;
    }
}

/* Every operand after the first through one datatype's loop: the first
 * step reads srcs[0] and srcs[1], the later ones dst and srcs[i]. */
#define REDUCE_MANY(loop, T)                                                                                            \
    for (int i = 1; i < n; i++)                                                                                         \
        loop(op, (T *)dst, (const T *)(i == 1 ? srcs[0] : dst), (const T *)srcs[i], count)

void zap_reduce_cpu_many(zap_dtype_t dt, zap_op_t op, void *dst, const void *const *srcs, int n, size_t count)
{
    size_t bytes = count * zap_dtype_size(dt);
    if (n == 1 || bytes == 0 || zap_op_is_user(op) || op >= ZAP_OP_LAND || dt > ZAP_DT_FLOAT64) {
        memcpy(dst, srcs[0], bytes);
        for (int i = 1; i < n; i++)
            zap_reduce_cpu(dt, op, dst, dst, srcs[i], count);
        return;
    }
    switch (dt) {
    case ZAP_DT_INT8: REDUCE_MANY(reduce_int8, int8_t); break;
    case ZAP_DT_INT16: REDUCE_MANY(reduce_int16, int16_t); break;
    case ZAP_DT_INT32: REDUCE_MANY(reduce_int32, int32_t); break;
    case ZAP_DT_INT64: REDUCE_MANY(reduce_int64, int64_t); break;
    case ZAP_DT_UINT8: REDUCE_MANY(reduce_uint8, uint8_t); break;
    case ZAP_DT_UINT16: REDUCE_MANY(reduce_uint16, uint16_t); break;
    case ZAP_DT_UINT32: REDUCE_MANY(reduce_uint32, uint32_t); break;
    case ZAP_DT_UINT64: REDUCE_MANY(reduce_uint64, uint64_t); break;
    case ZAP_DT_FLOAT16: REDUCE_MANY(reduce_float16, uint16_t); break;
    case ZAP_DT_BFLOAT16: REDUCE_MANY(reduce_bfloat16, uint16_t); break;
    case ZAP_DT_FLOAT32: REDUCE_MANY(reduce_float32, float); break;
    case ZAP_DT_FLOAT64: REDUCE_MANY(reduce_float64, double); break;
    default: break;
    }
}
