// Test harness for the collectives over the in-process transport: a world of
// n ranks as threads, each with its own communicator (the fixture of
// tests/rank_threads.h), plus value helpers that compute references
// independently of zap's reduction code.
#pragma once
#include <gtest/gtest.h>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>
#include "rank_threads.h"
extern "C" {
#include "zap/coll.h"
#include "zap/inproc.h"
}

namespace colltest {

// Communicator settings for a test, built field by field:
// World w(n, Params().allreduce("ring").pipeline(64 << 10)).
struct Params : zap_comm_params_t {
    Params() : zap_comm_params_t{} {}
    Params &allreduce(const char *a) { allreduce_alg = a; return *this; }
    Params &bcast(const char *a) { bcast_alg = a; return *this; }
    // The other collectives' forced algorithm by the collective's name
    // ("reduce", "reduce_scatter", "gather", "alltoall", "scan", "exscan").
    Params &alg(const std::string &coll, const char *a)
    {
        if (coll == "reduce") reduce_alg = a;
        else if (coll == "reduce_scatter") reduce_scatter_alg = a;
        else if (coll == "gather") gather_alg = a;
        else if (coll == "alltoall") alltoall_alg = a;
        else if (coll == "scan") scan_alg = a;
        else if (coll == "exscan") exscan_alg = a;
        return *this;
    }
    Params &pipeline(uint64_t b) { pipeline_bytes = b; return *this; }
    Params &gpu(zap_comm_gpu_path_t g) { gpu_path = g; return *this; }
    Params &gpu_min(uint64_t b) { gpu_min_bytes = b; return *this; }
    Params &oversub(bool on) { oversubscribed = on ? ZAP_COMM_SWITCH_ON : ZAP_COMM_SWITCH_OFF; return *this; }
    Params &timeout(double s) { timeout_s = s; return *this; }
};

// n ranks with a communicator each, made with params (default settings
// without).
struct World : RankWorld {
    explicit World(int nranks) : RankWorld(nranks, true, nullptr) {}
    World(int nranks, const zap_comm_params_t &params) : RankWorld(nranks, true, &params) {}
};

inline bool is_float(zap_dtype_t dt)
{
    return dt == ZAP_DT_FLOAT16 || dt == ZAP_DT_BFLOAT16 || dt == ZAP_DT_FLOAT32 || dt == ZAP_DT_FLOAT64;
}
inline bool is_signed(zap_dtype_t dt) { return dt <= ZAP_DT_INT64; }
inline size_t dsize(zap_dtype_t dt) { return zap_dtype_size(dt); }
// The twelve numeric types and seven ops this harness's reference knows
// (test_ops.cc has its own for the complex and pair types and the other ops).
inline bool classic(zap_dtype_t dt, zap_op_t op) { return dt <= ZAP_DT_FLOAT64 && op <= ZAP_OP_BXOR; }

// Exact encodings of small dyadic values (no rounding needed, so a naive
// encoder is independent of zap's and correct).
inline uint16_t enc_half(double v)
{
    if (v == 0)
        return std::signbit(v) ? 0x8000 : 0;
    uint16_t sign = v < 0 ? 0x8000 : 0;
    int e;
    double m = std::frexp(std::fabs(v), &e); // v = m * 2^e, m in [0.5, 1)
    int exp = e - 1 + 15;
    uint16_t man = (uint16_t)std::lround((m * 2 - 1) * 1024);
    return (uint16_t)(sign | (exp << 10) | man);
}
inline double dec_half(uint16_t h)
{
    int exp = (h >> 10) & 31, man = h & 1023;
    double v = exp == 0 ? std::ldexp(man, -24) : std::ldexp(1024 + man, exp - 25);
    return (h & 0x8000) ? -v : v;
}
inline uint16_t enc_bf16(double v)
{
    float f = (float)v;
    uint32_t x;
    std::memcpy(&x, &f, 4);
    return (uint16_t)(x >> 16); // exact for the values used
}
inline double dec_bf16(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

// Element i of a typed buffer, as double (floats) or as raw 64-bit (ints).
inline double get_f(zap_dtype_t dt, const void *p, size_t i)
{
    switch (dt) {
    case ZAP_DT_FLOAT16: return dec_half(((const uint16_t *)p)[i]);
    case ZAP_DT_BFLOAT16: return dec_bf16(((const uint16_t *)p)[i]);
    case ZAP_DT_FLOAT32: return ((const float *)p)[i];
    default: return ((const double *)p)[i];
    }
}
inline void put_f(zap_dtype_t dt, void *p, size_t i, double v)
{
    switch (dt) {
    case ZAP_DT_FLOAT16: ((uint16_t *)p)[i] = enc_half(v); break;
    case ZAP_DT_BFLOAT16: ((uint16_t *)p)[i] = enc_bf16(v); break;
    case ZAP_DT_FLOAT32: ((float *)p)[i] = (float)v; break;
    default: ((double *)p)[i] = v; break;
    }
}
// Sign-extended for signed types.
inline int64_t get_i(zap_dtype_t dt, const void *p, size_t i)
{
    switch (dt) {
    case ZAP_DT_INT8: return ((const int8_t *)p)[i];
    case ZAP_DT_INT16: return ((const int16_t *)p)[i];
    case ZAP_DT_INT32: return ((const int32_t *)p)[i];
    case ZAP_DT_INT64: return ((const int64_t *)p)[i];
    case ZAP_DT_UINT8: return ((const uint8_t *)p)[i];
    case ZAP_DT_UINT16: return ((const uint16_t *)p)[i];
    case ZAP_DT_UINT32: return ((const uint32_t *)p)[i];
    default: return (int64_t)((const uint64_t *)p)[i];
    }
}
inline void put_i(zap_dtype_t dt, void *p, size_t i, uint64_t v)
{
    std::memcpy((char *)p + i * dsize(dt), &v, dsize(dt)); // little-endian truncation
}
inline uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

// Input of rank r, element i: full-range integers; for floats small
// integer-valued numbers (sum, min, max) or 1, -1, 2 sparsely (prod), so
// every result is exact in every datatype and order.
inline void fill_input(zap_dtype_t dt, zap_op_t op, int r, uint64_t seed, void *p, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        uint64_t h = mix(seed * 1000003 + (uint64_t)r * 7919 + i);
        if (!is_float(dt)) {
            put_i(dt, p, i, h);
        } else if (op == ZAP_OP_PROD) {
            put_f(dt, p, i, (h % 6 == 0) ? 2.0 : ((h >> 8) & 1 ? -1.0 : 1.0));
        } else {
            put_f(dt, p, i, (double)((int)(h % 17) - 8));
        }
    }
}

// Reference allreduce of element i over nranks inputs (independent of zap).
inline void reference(zap_dtype_t dt, zap_op_t op, const std::vector<std::vector<uint8_t>> &in, size_t i,
                      void *out)
{
    if (is_float(dt)) {
        double acc = get_f(dt, in[0].data(), i);
        for (size_t r = 1; r < in.size(); r++) {
            double v = get_f(dt, in[r].data(), i);
            switch (op) {
            case ZAP_OP_SUM: acc += v; break;
            case ZAP_OP_PROD: acc *= v; break;
            case ZAP_OP_MIN: acc = std::min(acc, v); break;
            default: acc = std::max(acc, v); break;
            }
        }
        put_f(dt, out, 0, acc);
        return;
    }
    uint64_t acc = (uint64_t)get_i(dt, in[0].data(), i);
    for (size_t r = 1; r < in.size(); r++) {
        int64_t v = get_i(dt, in[r].data(), i);
        switch (op) {
        case ZAP_OP_SUM: acc += (uint64_t)v; break;
        case ZAP_OP_PROD: acc *= (uint64_t)v; break;
        case ZAP_OP_MIN:
        case ZAP_OP_MAX: {
            bool less = is_signed(dt) ? (int64_t)acc > v : (uint64_t)acc > (uint64_t)v;
            // acc holds the sign-extended / zero-extended current value
            if ((op == ZAP_OP_MIN) == less)
                acc = (uint64_t)v;
            break;
        }
        case ZAP_OP_BAND: acc &= (uint64_t)v; break;
        case ZAP_OP_BOR: acc |= (uint64_t)v; break;
        default: acc ^= (uint64_t)v; break;
        }
        // keep acc normalised to the type (sign/zero extension) for compares
        uint8_t tmp[8];
        put_i(dt, tmp, 0, acc);
        acc = (uint64_t)get_i(dt, tmp, 0);
    }
    put_i(dt, out, 0, acc);
}

} // namespace colltest
