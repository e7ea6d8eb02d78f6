/* Ed25519 verification arithmetic, written once for the host and the GPU.
 *
 * Everything here is ZAP_HD: __host__ __device__ under nvcc, plain static
 * inline C11 otherwise. The host build (ed25519_host.c, run in CI without a
 * GPU) and the kernel (ed25519_kernel.cu) therefore compile the same source,
 * and the host tests that compare it with libsodium test the GPU's arithmetic.
 *
 * Contents, bottom up:
 *   field   GF(p), p = 2^255 - 19, ten signed 32-bit limbs in radix 2^25.5
 *           (26, 25, 26, ... bits). 32-bit limbs suit sm_90, whose 32x32->64
 *           multiply-add is native while 64-bit multiplies are emulated.
 *   scalar  integers mod L = 2^252 + 27742317777372353535851937790883648493:
 *           Barrett reduction of the 512-bit hash, the S < L check, w-NAF.
 *   group   twisted Edwards -x^2 + y^2 = 1 + d x^2 y^2 in extended
 *           coordinates (Hisil-Wong-Carter-Dawson formulas), point decoding
 *           with libsodium 1.0.18's checks, encoding.
 *   verify  the whole libsodium 1.0.18 acceptance rule for one item
 *           (zap_ed25519_verify_item; the rule is written out in
 *           docs/ed25519.md and above that function).
 *
 * Limb bounds (the invariant every field operation relies on). Let U be the
 * bound of a carried element, as fe_mul and fe_sq return: |limb| <= 2^25 for
 * even limbs and 2^24 for odd ones (plus a few units on limbs 1 and 5).
 * fe_frombytes and the canonical constants have non-negative limbs below 2U.
 * A sum or difference of such elements is bounded by the sum of the bounds;
 * "level k" means k U. fe_mul and fe_sq accept inputs up to level 3.37: then
 * 19*g (and 38*f on odd limbs) fits an int32 and every 64-bit column sum
 * stays below 2^62. The point formulas below are arranged so that no
 * multiplication input exceeds level 3 (annotated where it is tight).
 *
 * Variable time: verification handles public data only, so branches and
 * table indices depend on the inputs freely (as libsodium's
 * ge25519_double_scalarmult_vartime does). Nothing here is for secrets. */
#ifndef ZAP_ED25519_ARITH_H
#define ZAP_ED25519_ARITH_H

#include <stddef.h>
#include <stdint.h>

#include "ed25519_sha512.h"

#if defined(__CUDACC__)
#define ZAP_UNROLL _Pragma("unroll")
#elif defined(__clang__)
#define ZAP_UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define ZAP_UNROLL _Pragma("GCC unroll 16")
#else
#define ZAP_UNROLL
#endif

/* ------------------------------------------------------------------------ */
/* Field elements                                                            */
/* ------------------------------------------------------------------------ */

typedef struct zap_fe {
    int32_t v[10];
} zap_fe_t;

/* Bit offset of limb i in the radix-2^25.5 representation. */
ZAP_HD_INLINE int zap_fe_limb_off(int i)
{
    return 26 * ((i + 1) / 2) + 25 * (i / 2);
}

ZAP_HD_INLINE int zap_fe_limb_bits(int i)
{
    return (i & 1) ? 25 : 26;
}

ZAP_HD_INLINE void zap_fe_0(zap_fe_t *h)
{
    ZAP_UNROLL
    for (int i = 0; i < 10; i++)
        h->v[i] = 0;
}

ZAP_HD_INLINE void zap_fe_1(zap_fe_t *h)
{
    zap_fe_0(h);
    h->v[0] = 1;
}

ZAP_HD_INLINE void zap_fe_copy(zap_fe_t *h, const zap_fe_t *f)
{
    ZAP_UNROLL
    for (int i = 0; i < 10; i++)
        h->v[i] = f->v[i];
}

/* The curve constant d = -121665/121666, 2d, and sqrt(-1) = 2^((p-1)/4), as
 * canonical limbs (computed with arbitrary-precision integers; the host test
 * Ed25519Field.ConstantsSatisfyDefiningEquations checks them). Written as
 * immediates so the device needs no table. */
ZAP_HD_INLINE void zap_fe_d(zap_fe_t *h)
{
    const int32_t c[10] = {56195235, 13857412, 51736253, 6949390,  114729,
                           24766616, 60832955, 30306712, 48412415, 21499315};
    ZAP_UNROLL
    for (int i = 0; i < 10; i++)
        h->v[i] = c[i];
}

ZAP_HD_INLINE void zap_fe_d2(zap_fe_t *h)
{
    const int32_t c[10] = {45281625, 27714825, 36363642, 13898781, 229458,
                           15978800, 54557047, 27058993, 29715967, 9444199};
    ZAP_UNROLL
    for (int i = 0; i < 10; i++)
        h->v[i] = c[i];
}

ZAP_HD_INLINE void zap_fe_sqrtm1(zap_fe_t *h)
{
    const int32_t c[10] = {34513072, 25610706, 9377949,  3500415, 12389472,
                           33281959, 41962654, 31548777, 326685,  11406482};
    ZAP_UNROLL
    for (int i = 0; i < 10; i++)
        h->v[i] = c[i];
}

ZAP_HD_INLINE void zap_fe_add(zap_fe_t *h, const zap_fe_t *f, const zap_fe_t *g)
{
    ZAP_UNROLL
    for (int i = 0; i < 10; i++)
        h->v[i] = f->v[i] + g->v[i];
}

ZAP_HD_INLINE void zap_fe_sub(zap_fe_t *h, const zap_fe_t *f, const zap_fe_t *g)
{
    ZAP_UNROLL
    for (int i = 0; i < 10; i++)
        h->v[i] = f->v[i] - g->v[i];
}

ZAP_HD_INLINE void zap_fe_neg(zap_fe_t *h, const zap_fe_t *f)
{
    ZAP_UNROLL
    for (int i = 0; i < 10; i++)
        h->v[i] = -f->v[i];
}

/* Carry 64-bit column sums into a carried element. Rounding carries (add half
 * the radix, then shift) leave each limb centred on zero, |even| <= 2^25 and
 * |odd| <= 2^24 plus a small excess on limb 0/1, which is what keeps sums of
 * three carried elements multipliable. Two interleaved chains (0..4 and 4..9)
 * shorten the dependency chain. Right shifts of negative values are
 * arithmetic on every compiler zap supports (gcc, clang, nvcc). */
ZAP_HD_INLINE int64_t zap_fe_carry_step(int64_t *lo, int bits)
{
    int64_t c = (*lo + ((int64_t)1 << (bits - 1))) >> bits;
    *lo -= c * ((int64_t)1 << bits);
    return c;
}

ZAP_HD_INLINE void zap_fe_carry64(zap_fe_t *out, int64_t h[10])
{
    int64_t c;
    c = zap_fe_carry_step(&h[0], 26);
    h[1] += c;
    c = zap_fe_carry_step(&h[4], 26);
    h[5] += c;
    c = zap_fe_carry_step(&h[1], 25);
    h[2] += c;
    c = zap_fe_carry_step(&h[5], 25);
    h[6] += c;
    c = zap_fe_carry_step(&h[2], 26);
    h[3] += c;
    c = zap_fe_carry_step(&h[6], 26);
    h[7] += c;
    c = zap_fe_carry_step(&h[3], 25);
    h[4] += c;
    c = zap_fe_carry_step(&h[7], 25);
    h[8] += c;
    c = zap_fe_carry_step(&h[4], 26);
    h[5] += c;
    c = zap_fe_carry_step(&h[8], 26);
    h[9] += c;
    c = zap_fe_carry_step(&h[9], 25);
    h[0] += c * 19;
    c = zap_fe_carry_step(&h[0], 26);
    h[1] += c;
    ZAP_UNROLL
    for (int i = 0; i < 10; i++)
        out->v[i] = (int32_t)h[i];
}

/* h = f * g. Schoolbook over limbs: limb i sits at 2^ceil(25.5 i), so the
 * product of two odd limbs lands one bit above the next limb's position
 * (factor 2), and anything at 2^255 or above wraps around times 19. */
ZAP_HD_INLINE void zap_fe_mul_body(zap_fe_t *h, const zap_fe_t *f, const zap_fe_t *g)
{
    int32_t g19[10], f2[10];
    int64_t t[10];
    ZAP_UNROLL
    for (int i = 0; i < 10; i++) {
        g19[i] = 19 * g->v[i]; /* fits: |g| <= 3 U, 19 * 3 * 2^25 < 2^31 */
        f2[i] = 2 * f->v[i];
        t[i] = 0;
    }
    ZAP_UNROLL
    for (int i = 0; i < 10; i++) {
        ZAP_UNROLL
        for (int j = 0; j < 10; j++) {
            int32_t a = ((i & 1) && (j & 1)) ? f2[i] : f->v[i];
            int32_t b = (i + j >= 10) ? g19[j] : g->v[j];
            t[(i + j) % 10] += (int64_t)a * b;
        }
    }
    zap_fe_carry64(h, t);
}

/* Column sums of f^2 (before carrying), times dbl (1 or 2). Each unordered
 * limb pair is multiplied once, with the symmetric factor 2 folded into the
 * first operand and the odd-odd 2 and the wrap-around 19 into the second. */
ZAP_HD_INLINE void zap_fe_sq_cols(int64_t t[10], const zap_fe_t *f)
{
    int32_t f2[10], f19[10], f38[10];
    ZAP_UNROLL
    for (int i = 0; i < 10; i++) {
        f2[i] = 2 * f->v[i];
        f19[i] = 19 * f->v[i];
        /* only odd limbs need (and fit) 38x: 38 * 3 * 2^24 < 2^31 */
        f38[i] = (i & 1) ? 38 * f->v[i] : 0;
        t[i] = 0;
    }
    ZAP_UNROLL
    for (int i = 0; i < 10; i++) {
        ZAP_UNROLL
        for (int j = i; j < 10; j++) {
            int both_odd = (i & 1) && (j & 1);
            int32_t a = (i != j) ? f2[i] : f->v[i];
            int32_t b;
            if (i + j >= 10)
                b = both_odd ? f38[j] : f19[j];
            else
                b = both_odd ? f2[j] : f->v[j];
            t[(i + j) % 10] += (int64_t)a * b;
        }
    }
}

ZAP_HD_INLINE void zap_fe_sq_body(zap_fe_t *h, const zap_fe_t *f)
{
    int64_t t[10];
    zap_fe_sq_cols(t, f);
    zap_fe_carry64(h, t);
}

/* Column sums of 2 f^2, carried: the body of zap_fe_sq2. */
ZAP_HD_INLINE void zap_fe_sq2_body(zap_fe_t *h, const zap_fe_t *f)
{
    int64_t t[10];
    zap_fe_sq_cols(t, f);
    ZAP_UNROLL
    for (int i = 0; i < 10; i++)
        t[i] += t[i];
    zap_fe_carry64(h, t);
}

/* Code size on the GPU. Inlined everywhere, the three products above would
 * make the kernel about half a megabyte of straight-line code, far beyond the
 * SM's instruction cache: measured on the H200, every warp then stalls on
 * instruction fetch (1.2 M verifications/s). On the device they are
 * therefore out-of-line functions taking and returning elements by value (in
 * registers); the host inlines the same bodies. */
#if defined(__CUDACC__)
static __device__ __noinline__ zap_fe_t zap_fe_mul_dev(const zap_fe_t f, const zap_fe_t g)
{
    zap_fe_t h;
    zap_fe_mul_body(&h, &f, &g);
    return h;
}

static __device__ __noinline__ zap_fe_t zap_fe_sq_dev(const zap_fe_t f)
{
    zap_fe_t h;
    zap_fe_sq_body(&h, &f);
    return h;
}

static __device__ __noinline__ zap_fe_t zap_fe_sq2_dev(const zap_fe_t f)
{
    zap_fe_t h;
    zap_fe_sq2_body(&h, &f);
    return h;
}
#endif

ZAP_HD_INLINE void zap_fe_mul(zap_fe_t *h, const zap_fe_t *f, const zap_fe_t *g)
{
#if defined(__CUDA_ARCH__)
    *h = zap_fe_mul_dev(*f, *g);
#else
    zap_fe_mul_body(h, f, g);
#endif
}

ZAP_HD_INLINE void zap_fe_sq(zap_fe_t *h, const zap_fe_t *f)
{
#if defined(__CUDA_ARCH__)
    *h = zap_fe_sq_dev(*f);
#else
    zap_fe_sq_body(h, f);
#endif
}

/* h = 2 f^2, carried (the doubling formula needs 2Z^2 at level 1). */
ZAP_HD_INLINE void zap_fe_sq2(zap_fe_t *h, const zap_fe_t *f)
{
#if defined(__CUDA_ARCH__)
    *h = zap_fe_sq2_dev(*f);
#else
    zap_fe_sq2_body(h, f);
#endif
}

/* h = f^(2^n): n successive squarings (not unrolled: keeps code small). */
ZAP_HD_INLINE void zap_fe_sqn(zap_fe_t *h, const zap_fe_t *f, int n)
{
    zap_fe_sq(h, f);
    for (int i = 1; i < n; i++)
        zap_fe_sq(h, h);
}

/* Shared prefix of the two exponentiation chains: returns z^(2^250 - 1) in
 * *z250 and z^11 in *z11. */
ZAP_HD_INLINE void zap_fe_pow_2_250(zap_fe_t *z250, zap_fe_t *z11, const zap_fe_t *z)
{
    zap_fe_t t0, t1, t2, z9;
    zap_fe_sq(&t0, z);         /* z^2 */
    zap_fe_sqn(&t1, &t0, 2);   /* z^8 */
    zap_fe_mul(&z9, z, &t1);   /* z^9 */
    zap_fe_mul(z11, &t0, &z9); /* z^11 */
    zap_fe_sq(&t0, z11);       /* z^22 */
    zap_fe_mul(&t0, &z9, &t0); /* z^(2^5 - 1) */
    zap_fe_sqn(&t1, &t0, 5);
    zap_fe_mul(&t0, &t1, &t0); /* z^(2^10 - 1) */
    zap_fe_sqn(&t1, &t0, 10);
    zap_fe_mul(&t1, &t1, &t0); /* z^(2^20 - 1) */
    zap_fe_sqn(&t2, &t1, 20);
    zap_fe_mul(&t1, &t2, &t1); /* z^(2^40 - 1) */
    zap_fe_sqn(&t1, &t1, 10);
    zap_fe_mul(&t0, &t1, &t0); /* z^(2^50 - 1) */
    zap_fe_sqn(&t1, &t0, 50);
    zap_fe_mul(&t1, &t1, &t0); /* z^(2^100 - 1) */
    zap_fe_sqn(&t2, &t1, 100);
    zap_fe_mul(&t1, &t2, &t1); /* z^(2^200 - 1) */
    zap_fe_sqn(&t1, &t1, 50);
    zap_fe_mul(z250, &t1, &t0); /* z^(2^250 - 1) */
}

/* h = z^(p - 2) = 1/z (0 for z = 0). */
ZAP_HD_INLINE void zap_fe_invert(zap_fe_t *h, const zap_fe_t *z)
{
    zap_fe_t t, z11;
    zap_fe_pow_2_250(&t, &z11, z);
    zap_fe_sqn(&t, &t, 5);   /* z^(2^255 - 32) */
    zap_fe_mul(h, &t, &z11); /* z^(2^255 - 21) */
}

/* h = z^((p - 5) / 8) = z^(2^252 - 3), the square-root exponent. */
ZAP_HD_INLINE void zap_fe_pow22523(zap_fe_t *h, const zap_fe_t *z)
{
    zap_fe_t t, z11;
    zap_fe_pow_2_250(&t, &z11, z);
    zap_fe_sqn(&t, &t, 2); /* z^(2^252 - 4) */
    zap_fe_mul(h, &t, z);  /* z^(2^252 - 3) */
}

/* Load the low 255 bits of s (bit 255, the sign bit of a point encoding, is
 * ignored, as libsodium's fe25519_frombytes does). No reduction: a value in
 * [p, 2^255) is kept as is, which is fine for arithmetic. */
ZAP_HD_INLINE void zap_fe_frombytes(zap_fe_t *h, const uint8_t s[32])
{
    ZAP_UNROLL
    for (int i = 0; i < 10; i++) {
        int off = zap_fe_limb_off(i), bits = zap_fe_limb_bits(i);
        int byte = off >> 3, shift = off & 7;
        uint64_t acc = 0;
        ZAP_UNROLL
        for (int k = 0; k < 5; k++)
            if (byte + k < 32)
                acc |= (uint64_t)s[byte + k] << (8 * k);
        h->v[i] = (int32_t)((acc >> shift) & ((1u << bits) - 1u));
    }
}

/* Canonical encoding: the unique representative in [0, p), little endian. */
ZAP_HD_INLINE void zap_fe_tobytes_body(uint8_t s[32], const zap_fe_t *f)
{
    int64_t h[10];
    ZAP_UNROLL
    for (int i = 0; i < 10; i++)
        h[i] = f->v[i];
    /* Floor carries, three passes, bring every limb into [0, 2^bits) with the
     * value in [0, 2^255): pass one leaves only limb 0 out of range (by the
     * wrapped carry), pass two can ripple at most once round, pass three
     * settles it. */
    for (int pass = 0; pass < 3; pass++) {
        ZAP_UNROLL
        for (int i = 0; i < 10; i++) {
            int bits = zap_fe_limb_bits(i);
            int64_t c = h[i] >> bits;
            h[i] -= c * ((int64_t)1 << bits);
            if (i < 9)
                h[i + 1] += c;
            else
                h[0] += 19 * c;
        }
    }
    /* Now 0 <= value < 2^255 < 2p. value >= p exactly when value + 19 carries
     * out of bit 255; q is that carry. */
    int64_t q = (h[0] + 19) >> 26;
    ZAP_UNROLL
    for (int i = 1; i < 10; i++)
        q = (h[i] + q) >> zap_fe_limb_bits(i);
    h[0] += 19 * q;
    ZAP_UNROLL
    for (int i = 0; i < 9; i++) {
        int bits = zap_fe_limb_bits(i);
        int64_t c = h[i] >> bits;
        h[i] -= c * ((int64_t)1 << bits);
        h[i + 1] += c;
    }
    h[9] &= ((int64_t)1 << 25) - 1; /* drop 2^255 (subtracting p = 2^255 - 19) */
    ZAP_UNROLL
    for (int i = 0; i < 32; i++)
        s[i] = 0;
    ZAP_UNROLL
    for (int i = 0; i < 10; i++) {
        int off = zap_fe_limb_off(i);
        uint64_t v = (uint64_t)h[i] << (off & 7);
        ZAP_UNROLL
        for (int k = 0; k < 5; k++)
            if ((off >> 3) + k < 32)
                s[(off >> 3) + k] |= (uint8_t)(v >> (8 * k));
    }
}

#if defined(__CUDACC__)
static __device__ __noinline__ void zap_fe_tobytes_dev(uint8_t s[32], const zap_fe_t f)
{
    zap_fe_tobytes_body(s, &f);
}
#endif

ZAP_HD_INLINE void zap_fe_tobytes(uint8_t s[32], const zap_fe_t *f)
{
#if defined(__CUDA_ARCH__)
    zap_fe_tobytes_dev(s, *f);
#else
    zap_fe_tobytes_body(s, f);
#endif
}

ZAP_HD_INLINE int zap_fe_iszero(const zap_fe_t *f)
{
    uint8_t s[32];
    zap_fe_tobytes(s, f);
    uint8_t acc = 0;
    for (int i = 0; i < 32; i++)
        acc |= s[i];
    return acc == 0;
}

/* "Negative" means the canonical value is odd (RFC 8032's sign of x). */
ZAP_HD_INLINE int zap_fe_isnegative(const zap_fe_t *f)
{
    uint8_t s[32];
    zap_fe_tobytes(s, f);
    return s[0] & 1;
}

/* ------------------------------------------------------------------------ */
/* Scalars mod L                                                             */
/* ------------------------------------------------------------------------ */

/* L as little-endian 32-bit words. */
ZAP_HD_INLINE uint32_t zap_sc_l_word(int i)
{
    const uint32_t l[8] = {0x5cf5d3edu, 0x5812631au, 0xa2f79cd6u, 0x14def9deu,
                           0u,          0u,          0u,          0x10000000u};
    return l[i];
}

/* The S range check of libsodium's sc25519_is_canonical: 1 if the 32-byte
 * little-endian integer s is < L, else 0. */
ZAP_HD_INLINE int zap_sc_is_canonical(const uint8_t s[32])
{
    for (int i = 7; i >= 0; i--) {
        uint32_t w = (uint32_t)s[4 * i] | ((uint32_t)s[4 * i + 1] << 8) |
                     ((uint32_t)s[4 * i + 2] << 16) | ((uint32_t)s[4 * i + 3] << 24);
        uint32_t l = zap_sc_l_word(i);
        if (w != l)
            return w < l;
    }
    return 0; /* s == L */
}

/* out = x mod L for a 512-bit little-endian x (the SHA-512 output), as 8
 * little-endian words. Barrett reduction with base b = 2^32, k = 8 words:
 * q = floor(floor(x / b^7) * mu / b^9) with mu = floor(b^16 / L) (9 words,
 * computed offline), r = x - q L mod b^9, then at most two subtractions of L
 * (HAC 14.42). Checked against libsodium's crypto_core_ed25519_scalar_reduce
 * by the host tests. */
ZAP_HD_INLINE void zap_sc_reduce512(uint32_t out[8], const uint8_t in[64])
{
    const uint32_t mu[9] = {170660635u,  3986482595u, 140716455u,  554049885u, 4294967275u,
                            4294967295u, 4294967295u, 4294967295u, 15u};
    uint32_t x[16];
    for (int i = 0; i < 16; i++)
        x[i] = (uint32_t)in[4 * i] | ((uint32_t)in[4 * i + 1] << 8) |
               ((uint32_t)in[4 * i + 2] << 16) | ((uint32_t)in[4 * i + 3] << 24);

    /* q1 = x >> 224 (9 words); q2 = q1 * mu (18 words); only words 9.. of q2
     * (q3 = q2 >> 288) are needed, but the low words feed their carries. */
    uint32_t q2[18];
    for (int i = 0; i < 18; i++)
        q2[i] = 0;
    for (int i = 0; i < 9; i++) {
        uint64_t carry = 0;
        uint32_t a = x[7 + i];
        for (int j = 0; j < 9; j++) {
            uint64_t t = (uint64_t)a * mu[j] + q2[i + j] + carry;
            q2[i + j] = (uint32_t)t;
            carry = t >> 32;
        }
        q2[i + 9] = (uint32_t)carry;
    }
    const uint32_t *q3 = q2 + 9; /* 9 words */

    /* r2 = (q3 * L) mod b^9 */
    uint32_t r2[9];
    for (int i = 0; i < 9; i++)
        r2[i] = 0;
    for (int i = 0; i < 9; i++) {
        uint64_t carry = 0;
        for (int j = 0; i + j < 9; j++) {
            uint32_t lj = j < 8 ? zap_sc_l_word(j) : 0u;
            uint64_t t = (uint64_t)q3[i] * lj + r2[i + j] + carry;
            r2[i + j] = (uint32_t)t;
            carry = t >> 32;
        }
    }
    /* r = (x mod b^9) - r2 mod b^9 */
    uint32_t r[9];
    int64_t borrow = 0;
    for (int i = 0; i < 9; i++) {
        int64_t t = (int64_t)x[i] - r2[i] + borrow;
        r[i] = (uint32_t)t;
        borrow = t < 0 ? -1 : 0;
    }
    /* while r >= L: r -= L (HAC: at most twice) */
    for (int round = 0; round < 2; round++) {
        uint32_t t[9];
        int64_t b2 = 0;
        for (int i = 0; i < 9; i++) {
            uint32_t lj = i < 8 ? zap_sc_l_word(i) : 0u;
            int64_t d = (int64_t)r[i] - lj + b2;
            t[i] = (uint32_t)d;
            b2 = d < 0 ? -1 : 0;
        }
        if (b2 == 0)
            for (int i = 0; i < 9; i++)
                r[i] = t[i];
    }
    for (int i = 0; i < 8; i++)
        out[i] = r[i];
}

/* Bits [bit, bit + count) of a little-endian 8-word scalar; count <= 8. */
ZAP_HD_INLINE uint32_t zap_sc_bits(const uint32_t k[8], int bit, int count)
{
    int w = bit >> 5, sh = bit & 31;
    uint32_t v = w < 8 ? k[w] >> sh : 0u;
    if (sh + count > 32 && w + 1 < 8)
        v |= k[w + 1] << (32 - sh);
    return v & ((1u << count) - 1u);
}

/* Width-w NAF of k < 2^253: naf[i] in {0, +-1, +-3, ..., +-(2^(w-1) - 1)},
 * k = sum naf[i] 2^i, any two non-zero digits at least w apart. */
ZAP_HD_INLINE void zap_sc_wnaf(int8_t naf[256], const uint32_t k[8], int w)
{
    for (int i = 0; i < 256; i++)
        naf[i] = 0;
    int carry = 0, bit = 0;
    while (bit < 256) {
        if ((int)zap_sc_bits(k, bit, 1) == carry) {
            bit++;
            continue;
        }
        int now = w;
        if (now > 256 - bit)
            now = 256 - bit;
        int word = (int)zap_sc_bits(k, bit, now) + carry;
        carry = (word >> (w - 1)) & 1;
        word -= carry << w;
        naf[bit] = (int8_t)word;
        bit += now;
    }
}

/* ------------------------------------------------------------------------ */
/* Group elements                                                            */
/* ------------------------------------------------------------------------ */

/* Projective (X:Y:Z): x = X/Z, y = Y/Z. */
typedef struct zap_ge_p2 {
    zap_fe_t X, Y, Z;
} zap_ge_p2_t;

/* Extended (X:Y:Z:T): also XY = ZT. */
typedef struct zap_ge_p3 {
    zap_fe_t X, Y, Z, T;
} zap_ge_p3_t;

/* Completed ((X:Z),(Y:T)): x = X/Z, y = Y/T; the output of an addition or a
 * doubling before the final multiplications. Components are at most level 3. */
typedef struct zap_ge_p1p1 {
    zap_fe_t X, Y, Z, T;
} zap_ge_p1p1_t;

/* A point ready to be added: (Y+X, Y-X, Z, 2dT). */
typedef struct zap_ge_cached {
    zap_fe_t YpX, YmX, Z, T2d;
} zap_ge_cached_t;

/* An affine point ready to be added (Z = 1): (y+x, y-x, 2dxy), canonical
 * limbs. The base-point table holds these. */
typedef struct zap_ge_niels {
    zap_fe_t ypx, ymx, xy2d;
} zap_ge_niels_t;

/* The base-point table: odd multiples B, 3B, ..., 127B for the width-8 NAF
 * of S. 64 entries of 120 bytes (7,680 bytes): small enough for shared
 * memory. Built once by zap_ed25519_btab_build (ed25519_host.c). */
#define ZAP_ED25519_BTAB_W 8
#define ZAP_ED25519_BTAB_N 64
/* Width of the NAF of h used against -A: 8 odd multiples, computed per item. */
#define ZAP_ED25519_ATAB_W 5
#define ZAP_ED25519_ATAB_N 8

ZAP_HD_INLINE void zap_ge_p2_0(zap_ge_p2_t *h)
{
    zap_fe_0(&h->X);
    zap_fe_1(&h->Y);
    zap_fe_1(&h->Z);
}

ZAP_HD_INLINE void zap_ge_p1p1_to_p2(zap_ge_p2_t *r, const zap_ge_p1p1_t *p)
{
    zap_fe_mul(&r->X, &p->X, &p->T);
    zap_fe_mul(&r->Y, &p->Y, &p->Z);
    zap_fe_mul(&r->Z, &p->Z, &p->T);
}

ZAP_HD_INLINE void zap_ge_p1p1_to_p3(zap_ge_p3_t *r, const zap_ge_p1p1_t *p)
{
    zap_fe_mul(&r->X, &p->X, &p->T);
    zap_fe_mul(&r->Y, &p->Y, &p->Z);
    zap_fe_mul(&r->Z, &p->Z, &p->T);
    zap_fe_mul(&r->T, &p->X, &p->Y);
}

ZAP_HD_INLINE void zap_ge_p3_to_cached(zap_ge_cached_t *r, const zap_ge_p3_t *p)
{
    zap_fe_t d2;
    zap_fe_d2(&d2);
    zap_fe_add(&r->YpX, &p->Y, &p->X); /* level 2 */
    zap_fe_sub(&r->YmX, &p->Y, &p->X); /* level 2 */
    zap_fe_copy(&r->Z, &p->Z);
    zap_fe_mul(&r->T2d, &p->T, &d2);
}

/* Doubling, "dbl-2008-hwcd" with a = -1 (4 squarings, no multiplications). */
ZAP_HD_INLINE void zap_ge_p2_dbl(zap_ge_p1p1_t *r, const zap_ge_p2_t *p)
{
    zap_fe_t xx, yy, zz2, xy;
    zap_fe_sq(&xx, &p->X);
    zap_fe_sq(&yy, &p->Y);
    zap_fe_sq2(&zz2, &p->Z);
    zap_fe_add(&xy, &p->X, &p->Y); /* level 2 */
    zap_fe_sq(&r->X, &xy);
    zap_fe_add(&r->Y, &yy, &xx);       /* level 2 */
    zap_fe_sub(&r->Z, &yy, &xx);       /* level 2 */
    zap_fe_sub(&r->X, &r->X, &r->Y);   /* (X+Y)^2 - YY - XX = 2XY, level 3 */
    zap_fe_sub(&r->T, &zz2, &r->Z);    /* level 3 */
}

/* r = p + q, "add-2008-hwcd-3" with q cached. */
ZAP_HD_INLINE void zap_ge_add(zap_ge_p1p1_t *r, const zap_ge_p3_t *p, const zap_ge_cached_t *q)
{
    zap_fe_t a, b, c, zz, dd, t;
    zap_fe_add(&t, &p->Y, &p->X);
    zap_fe_mul(&b, &t, &q->YpX);
    zap_fe_sub(&t, &p->Y, &p->X);
    zap_fe_mul(&a, &t, &q->YmX);
    zap_fe_mul(&c, &p->T, &q->T2d);
    zap_fe_mul(&zz, &p->Z, &q->Z);
    zap_fe_add(&dd, &zz, &zz);
    zap_fe_sub(&r->X, &b, &a);
    zap_fe_add(&r->Y, &b, &a);
    zap_fe_add(&r->Z, &dd, &c); /* level 3 */
    zap_fe_sub(&r->T, &dd, &c); /* level 3 */
}

/* r = p - q: the same with q negated, -(x, y) = (-x, y), which swaps Y+X
 * with Y-X and negates T. */
ZAP_HD_INLINE void zap_ge_sub(zap_ge_p1p1_t *r, const zap_ge_p3_t *p, const zap_ge_cached_t *q)
{
    zap_fe_t a, b, c, zz, dd, t;
    zap_fe_add(&t, &p->Y, &p->X);
    zap_fe_mul(&b, &t, &q->YmX);
    zap_fe_sub(&t, &p->Y, &p->X);
    zap_fe_mul(&a, &t, &q->YpX);
    zap_fe_mul(&c, &p->T, &q->T2d);
    zap_fe_mul(&zz, &p->Z, &q->Z);
    zap_fe_add(&dd, &zz, &zz);
    zap_fe_sub(&r->X, &b, &a);
    zap_fe_add(&r->Y, &b, &a);
    zap_fe_sub(&r->Z, &dd, &c);
    zap_fe_add(&r->T, &dd, &c);
}

/* r = p + q with q affine (Z = 1): one multiplication fewer. */
ZAP_HD_INLINE void zap_ge_madd(zap_ge_p1p1_t *r, const zap_ge_p3_t *p, const zap_ge_niels_t *q)
{
    zap_fe_t a, b, c, dd, t;
    zap_fe_add(&t, &p->Y, &p->X);
    zap_fe_mul(&b, &t, &q->ypx);
    zap_fe_sub(&t, &p->Y, &p->X);
    zap_fe_mul(&a, &t, &q->ymx);
    zap_fe_mul(&c, &p->T, &q->xy2d);
    zap_fe_add(&dd, &p->Z, &p->Z);
    zap_fe_sub(&r->X, &b, &a);
    zap_fe_add(&r->Y, &b, &a);
    zap_fe_add(&r->Z, &dd, &c);
    zap_fe_sub(&r->T, &dd, &c);
}

ZAP_HD_INLINE void zap_ge_msub(zap_ge_p1p1_t *r, const zap_ge_p3_t *p, const zap_ge_niels_t *q)
{
    zap_fe_t a, b, c, dd, t;
    zap_fe_add(&t, &p->Y, &p->X);
    zap_fe_mul(&b, &t, &q->ymx);
    zap_fe_sub(&t, &p->Y, &p->X);
    zap_fe_mul(&a, &t, &q->ypx);
    zap_fe_mul(&c, &p->T, &q->xy2d);
    zap_fe_add(&dd, &p->Z, &p->Z);
    zap_fe_sub(&r->X, &b, &a);
    zap_fe_add(&r->Y, &b, &a);
    zap_fe_sub(&r->Z, &dd, &c);
    zap_fe_add(&r->T, &dd, &c);
}

/* Canonical 32-byte encoding of a point: y, with x's sign in bit 255. */
ZAP_HD_INLINE void zap_ge_p2_tobytes(uint8_t s[32], const zap_ge_p2_t *h)
{
    zap_fe_t recip, x, y;
    zap_fe_invert(&recip, &h->Z);
    zap_fe_mul(&x, &h->X, &recip);
    zap_fe_mul(&y, &h->Y, &recip);
    zap_fe_tobytes(s, &y);
    s[31] ^= (uint8_t)(zap_fe_isnegative(&x) << 7);
}

/* Decode a point as libsodium 1.0.18's ge25519_frombytes_negate_vartime does,
 * without the negation: y is the low 255 bits taken as they are (the caller
 * has already rejected y >= p for A), x = sqrt((y^2 - 1) / (d y^2 + 1))
 * computed as u v^3 (u v^7)^((p-5)/8); if v x^2 = -u, x is multiplied by
 * sqrt(-1); if v x^2 is neither u nor -u there is no point: return 0. The
 * root whose parity matches bit 255 is chosen. (libsodium does not refuse
 * x = 0 with the sign bit set here; for A such points, y = +-1, are on the
 * small-order blocklist before decoding.) Returns 1 on success. */
ZAP_HD_INLINE int zap_ge_frombytes(zap_ge_p3_t *h, const uint8_t s[32])
{
    zap_fe_t u, v, v3, vxx, chk, one, d;
    zap_fe_1(&one);
    zap_fe_d(&d);
    zap_fe_frombytes(&h->Y, s);
    zap_fe_1(&h->Z);
    zap_fe_sq(&u, &h->Y);
    zap_fe_mul(&v, &u, &d);
    zap_fe_sub(&u, &u, &one); /* u = y^2 - 1 */
    zap_fe_add(&v, &v, &one); /* v = d y^2 + 1 */

    zap_fe_sq(&v3, &v);
    zap_fe_mul(&v3, &v3, &v);     /* v^3 */
    zap_fe_sq(&h->X, &v3);
    zap_fe_mul(&h->X, &h->X, &v);
    zap_fe_mul(&h->X, &h->X, &u); /* u v^7 */
    zap_fe_pow22523(&h->X, &h->X);
    zap_fe_mul(&h->X, &h->X, &v3);
    zap_fe_mul(&h->X, &h->X, &u); /* u v^3 (u v^7)^((p-5)/8) */

    zap_fe_sq(&vxx, &h->X);
    zap_fe_mul(&vxx, &vxx, &v);
    zap_fe_sub(&chk, &vxx, &u);
    if (!zap_fe_iszero(&chk)) {
        zap_fe_add(&chk, &vxx, &u);
        if (!zap_fe_iszero(&chk))
            return 0;
        zap_fe_t sqrtm1;
        zap_fe_sqrtm1(&sqrtm1);
        zap_fe_mul(&h->X, &h->X, &sqrtm1);
    }
    if (zap_fe_isnegative(&h->X) != (s[31] >> 7))
        zap_fe_neg(&h->X, &h->X);
    zap_fe_mul(&h->T, &h->X, &h->Y);
    return 1;
}

/* libsodium 1.0.18's ge25519_is_canonical: 0 if the low 255 bits of s, read
 * as y, are >= p (that is 0x7f ff .. ff then a first byte >= 0xed), else 1.
 * The sign bit is not looked at. */
ZAP_HD_INLINE int zap_ge_is_canonical(const uint8_t s[32])
{
    if ((s[31] & 0x7f) != 0x7f)
        return 1;
    for (int i = 30; i > 0; i--)
        if (s[i] != 0xff)
            return 1;
    return s[0] < 0xed;
}

/* libsodium 1.0.18's ge25519_has_small_order: a byte blocklist, not an order
 * computation. It matches, with bit 255 (the x sign) ignored, the encodings
 * y = 0 (order 4), y = 1 (order 1), the two y values of the order-8 points,
 * y = p - 1 (order 2), and the non-canonical y = p (= 0) and y = p + 1 (= 1).
 * Returns 1 if s is on the list. Points of mixed order (a small-order
 * component added to a large-order point) are not on it and are accepted. */
ZAP_HD_INLINE int zap_ge_has_small_order(const uint8_t s[32])
{
    /* the two order-8 y values, little endian */
    const uint8_t o8a[32] = {0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4,
                             0x89, 0xf2, 0xef, 0x98, 0xf0, 0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6,
                             0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05};
    const uint8_t o8b[32] = {0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b,
                             0x76, 0x0d, 0x10, 0x67, 0x0f, 0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39,
                             0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a};
    int eq_a = 1, eq_b = 1, mid_zero = 1, mid_ff = 1;
    for (int i = 0; i < 32; i++) {
        uint8_t c = i == 31 ? (uint8_t)(s[31] & 0x7f) : s[i];
        eq_a &= c == o8a[i];
        eq_b &= c == o8b[i];
        if (i >= 1 && i <= 30) {
            mid_zero &= c == 0x00;
            mid_ff &= c == 0xff;
        }
    }
    uint8_t top = (uint8_t)(s[31] & 0x7f);
    if (eq_a || eq_b)
        return 1;
    if (mid_zero && top == 0x00 && (s[0] == 0x00 || s[0] == 0x01))
        return 1; /* y = 0, y = 1 */
    if (mid_ff && top == 0x7f && (s[0] == 0xec || s[0] == 0xed || s[0] == 0xee))
        return 1; /* y = p - 1, p, p + 1 */
    return 0;
}

/* r = a*P + b*B, variable time, where P is given by its cached odd multiples
 * ptab[i] = (2i+1) P (i < 8), B by the base-point table btab[i] = (2i+1) B
 * (i < 64, affine), and a, b < 2^253 as 8 little-endian words. Interleaved
 * (Straus) double-and-add from the top non-zero digit: one doubling per bit
 * (about 253), about 253/6 additions for a and 253/9 for b. */
ZAP_HD_INLINE void zap_ge_double_scalarmult(zap_ge_p2_t *r, const uint32_t a[8],
                                            const zap_ge_cached_t *ptab, const uint32_t b[8],
                                            const zap_ge_niels_t *btab)
{
    int8_t an[256], bn[256];
    zap_sc_wnaf(an, a, ZAP_ED25519_ATAB_W);
    zap_sc_wnaf(bn, b, ZAP_ED25519_BTAB_W);
    zap_ge_p2_0(r);
    int i = 255;
    while (i >= 0 && an[i] == 0 && bn[i] == 0)
        i--;
    zap_ge_p1p1_t t;
    zap_ge_p3_t u;
    for (; i >= 0; i--) {
        zap_ge_p2_dbl(&t, r);
        int da = an[i], db = bn[i];
        if (da > 0) {
            zap_ge_p1p1_to_p3(&u, &t);
            zap_ge_add(&t, &u, &ptab[da >> 1]);
        } else if (da < 0) {
            zap_ge_p1p1_to_p3(&u, &t);
            zap_ge_sub(&t, &u, &ptab[(-da) >> 1]);
        }
        if (db > 0) {
            zap_ge_p1p1_to_p3(&u, &t);
            zap_ge_madd(&t, &u, &btab[db >> 1]);
        } else if (db < 0) {
            zap_ge_p1p1_to_p3(&u, &t);
            zap_ge_msub(&t, &u, &btab[(-db) >> 1]);
        }
        zap_ge_p1p1_to_p2(r, &t);
    }
}

/* ptab[i] = (2i+1) P for i < ZAP_ED25519_ATAB_N. */
ZAP_HD_INLINE void zap_ge_odd_multiples(zap_ge_cached_t *ptab, const zap_ge_p3_t *p)
{
    zap_ge_p1p1_t t;
    zap_ge_p3_t p2, cur;
    zap_ge_p2_t pp;
    zap_fe_copy(&pp.X, &p->X);
    zap_fe_copy(&pp.Y, &p->Y);
    zap_fe_copy(&pp.Z, &p->Z);
    zap_ge_p2_dbl(&t, &pp);
    zap_ge_p1p1_to_p3(&p2, &t);
    zap_ge_p3_to_cached(&ptab[0], p);
    cur = *p;
    for (int i = 1; i < ZAP_ED25519_ATAB_N; i++) {
        zap_ge_cached_t c2;
        zap_ge_p3_to_cached(&c2, &p2);
        zap_ge_add(&t, &cur, &c2);
        zap_ge_p1p1_to_p3(&cur, &t);
        zap_ge_p3_to_cached(&ptab[i], &cur);
    }
}

/* ------------------------------------------------------------------------ */
/* Verification of one item under libsodium 1.0.18's rule                    */
/* ------------------------------------------------------------------------ */

/* Hash R || A || M with the message read through a plain pointer (host
 * memory, or device global memory on the GPU). */
ZAP_HD_INLINE void zap_ed25519_hram(uint8_t h[64], const uint8_t r[32], const uint8_t pk[32],
                                    const uint8_t *msg, uint64_t len)
{
    zap_sha512_ctx_t c;
    zap_sha512_init(&c);
    zap_sha512_update(&c, r, 32);
    zap_sha512_update(&c, pk, 32);
    zap_sha512_update(&c, msg, len);
    zap_sha512_final(&c, h);
}

/* Returns 1 if (pk, R || S) is a valid signature of msg under libsodium
 * 1.0.18's crypto_sign_verify_detached, else 0. In order:
 *   1. S < L                                  (sc25519_is_canonical)
 *   2. R not on the small-order blocklist     (ge25519_has_small_order)
 *   3. A's y < p                              (ge25519_is_canonical)
 *   4. A not on the small-order blocklist
 *   5. A decodes (x exists)                   (ge25519_frombytes_negate_vartime)
 *   6. k = SHA-512(R || A || M) mod L
 *   7. R' = [k](-A) + [S]B, and encode(R') == R byte for byte (cofactorless;
 *      a non-canonical R can never equal a canonical encoding).
 * btab is the base-point table (global, constant or shared memory). */
ZAP_HD_INLINE int zap_ed25519_verify_item(const uint8_t pk[32], const uint8_t r[32],
                                          const uint8_t s[32], const uint8_t *msg, uint64_t len,
                                          const zap_ge_niels_t *btab)
{
    if (!zap_sc_is_canonical(s))
        return 0;
    if (zap_ge_has_small_order(r))
        return 0;
    if (!zap_ge_is_canonical(pk) || zap_ge_has_small_order(pk))
        return 0;
    zap_ge_p3_t a;
    if (!zap_ge_frombytes(&a, pk))
        return 0;
    zap_fe_neg(&a.X, &a.X); /* -A */
    zap_fe_neg(&a.T, &a.T);

    uint8_t hbuf[64];
    uint32_t k[8], sw[8];
    zap_ed25519_hram(hbuf, r, pk, msg, len);
    zap_sc_reduce512(k, hbuf);
    for (int i = 0; i < 8; i++)
        sw[i] = (uint32_t)s[4 * i] | ((uint32_t)s[4 * i + 1] << 8) |
                ((uint32_t)s[4 * i + 2] << 16) | ((uint32_t)s[4 * i + 3] << 24);

    zap_ge_cached_t ptab[ZAP_ED25519_ATAB_N];
    zap_ge_odd_multiples(ptab, &a);
    zap_ge_p2_t rp;
    zap_ge_double_scalarmult(&rp, k, ptab, sw, btab);
    uint8_t rcheck[32];
    zap_ge_p2_tobytes(rcheck, &rp);
    uint8_t diff = 0;
    for (int i = 0; i < 32; i++)
        diff |= rcheck[i] ^ r[i];
    return diff == 0;
}

#endif
