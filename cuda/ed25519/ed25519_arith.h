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
 *           Barrett reduction of the 512-bit hash, the S < L check, signed
 *           fixed-window digits.
 *   group   twisted Edwards -x^2 + y^2 = 1 + d x^2 y^2 in extended
 *           coordinates (Hisil-Wong-Carter-Dawson formulas), point decoding
 *           with libsodium 1.0.18's checks, encoding.
 *   verify  the whole libsodium 1.0.18 acceptance rule for one item
 *           (zap_ed25519_verify_item; the rule is written out in
 *           docs/ed25519.md and above that function).
 *   x4      the four-lane form of the scalar multiplication that the GPU's
 *           small-batch kernel spreads over four lanes, with its host
 *           reference (zap_x4_host_verify_item).
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

/* Phase marks for the phase profiler (zap-ed25519-phases): a no-op unless
 * the including file defines ZAP_ED25519_PHASE_MARK(phase) first. */
#ifndef ZAP_ED25519_PHASE_MARK
#define ZAP_ED25519_PHASE_MARK(phase) ((void)0)
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

/* Column sums of f^2, doubled when twice is 1, carried: one body for lanes
 * of a warp that need f^2 and 2 f^2 at the same step (the four-lane form
 * below), so that they run one instruction stream. */
ZAP_HD_INLINE void zap_fe_sqx_body(zap_fe_t *h, const zap_fe_t *f, int twice)
{
    int64_t t[10];
    zap_fe_sq_cols(t, f);
    ZAP_UNROLL
    for (int i = 0; i < 10; i++)
        t[i] += twice ? t[i] : 0;
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

static __device__ __noinline__ zap_fe_t zap_fe_sqx_dev(const zap_fe_t f, int twice)
{
    zap_fe_t h;
    zap_fe_sqx_body(&h, &f, twice);
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

/* h = f^2 (twice 0) or 2 f^2 (twice 1), carried. */
ZAP_HD_INLINE void zap_fe_sqx(zap_fe_t *h, const zap_fe_t *f, int twice)
{
#if defined(__CUDA_ARCH__)
    *h = zap_fe_sqx_dev(*f, twice);
#else
    zap_fe_sqx_body(h, f, twice);
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

/* Signed radix-2^w digits of k < 2^253 (8 little-endian words): n digits with
 * k = sum d[i] 2^(w i), d[i] in [-2^(w-1), 2^(w-1)), the top digit in
 * [0, 2]. Needs n w >= 254, so that the top digit absorbs the last carry
 * (k < 2^253 leaves the top window at most 1 before the carry). Unlike a
 * sliding-window NAF, every item of a batch has a digit at the same bit
 * positions: the GPU's lanes add at the same steps and never diverge (zero
 * digits add the identity). */
ZAP_HD_INLINE void zap_sc_signed_digits(int8_t *d, int n, const uint32_t k[8], int w)
{
    int carry = 0;
    for (int i = 0; i < n; i++) {
        int v = (int)zap_sc_bits(k, w * i, w) + carry;
        carry = (v + (1 << (w - 1))) >> w;
        d[i] = (int8_t)(v - carry * (1 << w));
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

/* The scalar multiplication [k](-A) + [S]B uses signed fixed windows: k in
 * radix 2^4 (64 digits in [-8, 8)), S in radix 2^7 (37 digits in [-64, 64)).
 * The tables hold the multiples 0..2^(w-1) of their point, entry 0 being the
 * identity, so a digit d selects entry |d| and a negative digit negates it.
 *   base point: 65 affine entries (0..64 B) of 120 bytes (7,800 bytes),
 *     built once by zap_ed25519_btab_build (ed25519_host.c); the GPU keeps
 *     it in shared memory.
 *   key: 9 cached entries (0..8 (-A)), built per item. */
#define ZAP_ED25519_BTAB_W 7
#define ZAP_ED25519_BTAB_N 65
#define ZAP_ED25519_BTAB_DIGITS 37 /* 37 * 7 = 259 >= 254 */
#define ZAP_ED25519_ATAB_W 4
#define ZAP_ED25519_ATAB_N 9
#define ZAP_ED25519_ATAB_DIGITS 64

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

/* 1 if the canonical encoding of the point (X : Y : Z) equals the 32 bytes
 * r, computed without an inversion from r's decoding: rd and r_ok are what
 * zap_ge_frombytes(rd, r) gave. Requires r to have passed
 * zap_ge_has_small_order (r not on the list). Then the encodings are equal
 * exactly when r's y is canonical, r decodes, and the points are equal:
 * the encoding fixes y and the parity of x, the decoder returns the x of
 * that parity, and only y = +-1 (on the list) have x = 0, the one value
 * whose encoding cannot carry a set sign bit. The GPU's four-lane kernel
 * decodes R on lanes that are otherwise idle while A is decoded, and so
 * saves the inversion of the final encoding. */
ZAP_HD_INLINE int zap_ge_p2_encodes_to(const zap_ge_p2_t *p, const uint8_t r[32],
                                       const zap_ge_p3_t *rd, int r_ok)
{
    zap_fe_t t, d;
    zap_fe_mul(&t, &rd->X, &p->Z);
    zap_fe_sub(&d, &p->X, &t);
    int ex = zap_fe_iszero(&d);
    zap_fe_mul(&t, &rd->Y, &p->Z);
    zap_fe_sub(&d, &p->Y, &t);
    int ey = zap_fe_iszero(&d);
    return r_ok & zap_ge_is_canonical(r) & ex & ey;
}

ZAP_HD_INLINE void zap_ge_p3_0(zap_ge_p3_t *h)
{
    zap_fe_0(&h->X);
    zap_fe_1(&h->Y);
    zap_fe_1(&h->Z);
    zap_fe_0(&h->T);
}

ZAP_HD_INLINE void zap_ge_cached_0(zap_ge_cached_t *h)
{
    zap_fe_1(&h->YpX);
    zap_fe_1(&h->YmX);
    zap_fe_1(&h->Z);
    zap_fe_0(&h->T2d);
}

ZAP_HD_INLINE void zap_ge_niels_0(zap_ge_niels_t *h)
{
    zap_fe_1(&h->ypx);
    zap_fe_1(&h->ymx);
    zap_fe_0(&h->xy2d);
}

/* h = -f when neg is 1, else f. A select, not a branch: lanes of one warp
 * that disagree on neg do not diverge. */
ZAP_HD_INLINE void zap_fe_cneg(zap_fe_t *h, const zap_fe_t *f, int neg)
{
    ZAP_UNROLL
    for (int i = 0; i < 10; i++)
        h->v[i] = neg ? -f->v[i] : f->v[i];
}

/* r = p + q (neg 0) or p - q (neg 1), q cached. -(x, y) = (-x, y) swaps Y+X
 * with Y-X and negates T; the swap is a choice of pointer and the negation
 * is applied to the product T * 2dT, so the entry is read straight from its
 * table (no copy held in registers) and no lane branches on the sign. */
ZAP_HD_INLINE void zap_ge_add_signed(zap_ge_p1p1_t *r, const zap_ge_p3_t *p,
                                     const zap_ge_cached_t *q, int neg)
{
    zap_fe_t a, b, c, zz, dd, t;
    const zap_fe_t *qp = neg ? &q->YmX : &q->YpX;
    const zap_fe_t *qm = neg ? &q->YpX : &q->YmX;
    zap_fe_add(&t, &p->Y, &p->X);
    zap_fe_mul(&b, &t, qp);
    zap_fe_sub(&t, &p->Y, &p->X);
    zap_fe_mul(&a, &t, qm);
    zap_fe_mul(&c, &p->T, &q->T2d);
    zap_fe_cneg(&c, &c, neg);
    zap_fe_mul(&zz, &p->Z, &q->Z);
    zap_fe_add(&dd, &zz, &zz);
    zap_fe_sub(&r->X, &b, &a);
    zap_fe_add(&r->Y, &b, &a);
    zap_fe_add(&r->Z, &dd, &c); /* level 3 */
    zap_fe_sub(&r->T, &dd, &c); /* level 3 */
}

/* r = p + q (neg 0) or p - q (neg 1), q affine; as zap_ge_add_signed. */
ZAP_HD_INLINE void zap_ge_madd_signed(zap_ge_p1p1_t *r, const zap_ge_p3_t *p,
                                      const zap_ge_niels_t *q, int neg)
{
    zap_fe_t a, b, c, dd, t;
    const zap_fe_t *qp = neg ? &q->ymx : &q->ypx;
    const zap_fe_t *qm = neg ? &q->ypx : &q->ymx;
    zap_fe_add(&t, &p->Y, &p->X);
    zap_fe_mul(&b, &t, qp);
    zap_fe_sub(&t, &p->Y, &p->X);
    zap_fe_mul(&a, &t, qm);
    zap_fe_mul(&c, &p->T, &q->xy2d);
    zap_fe_cneg(&c, &c, neg);
    zap_fe_add(&dd, &p->Z, &p->Z);
    zap_fe_sub(&r->X, &b, &a);
    zap_fe_add(&r->Y, &b, &a);
    zap_fe_add(&r->Z, &dd, &c);
    zap_fe_sub(&r->T, &dd, &c);
}

/* r = p + d * P for a signed digit |d| <= 8, tab[j] = j P (cached, j <= 8). */
ZAP_HD_INLINE void zap_ge_add_digit(zap_ge_p1p1_t *r, const zap_ge_p3_t *p,
                                    const zap_ge_cached_t *tab, int d)
{
    int neg = d < 0;
    zap_ge_add_signed(r, p, &tab[neg ? -d : d], neg);
}

/* r = p + d * B for a signed digit |d| <= 64, btab[j] = j B (affine). */
ZAP_HD_INLINE void zap_ge_madd_digit(zap_ge_p1p1_t *r, const zap_ge_p3_t *p,
                                     const zap_ge_niels_t *btab, int d)
{
    int neg = d < 0;
    zap_ge_madd_signed(r, p, &btab[neg ? -d : d], neg);
}

/* r = a*P + b*B, variable time, for a, b < 2^253 (8 little-endian words),
 * where ptab[j] = j P (cached, j < ZAP_ED25519_ATAB_N, ptab[0] the identity)
 * and btab[j] = j B (affine, j < ZAP_ED25519_BTAB_N, btab[0] the identity).
 * Straus with signed fixed windows: from bit 252 down, one doubling per bit
 * (252), an addition of P's digit at every bit divisible by 4 (64) and of
 * B's at every bit divisible by 7 (37). The schedule depends on the bit
 * position only, never on the scalars, so on the GPU a warp's lanes run the
 * same instruction stream (a sliding-window NAF makes each lane add at its
 * own positions, and the warp then executes every lane's additions). The
 * addition formula is complete on this curve (a = -1 square, d non-square),
 * so adding the identity, a point to itself or a point of small order needs
 * no special case. */
ZAP_HD_INLINE void zap_ge_double_scalarmult(zap_ge_p2_t *r, const uint32_t a[8],
                                            const zap_ge_cached_t *ptab, const uint32_t b[8],
                                            const zap_ge_niels_t *btab)
{
    int8_t ad[ZAP_ED25519_ATAB_DIGITS], bd[ZAP_ED25519_BTAB_DIGITS];
    zap_sc_signed_digits(ad, ZAP_ED25519_ATAB_DIGITS, a, ZAP_ED25519_ATAB_W);
    zap_sc_signed_digits(bd, ZAP_ED25519_BTAB_DIGITS, b, ZAP_ED25519_BTAB_W);
    zap_ge_p1p1_t t;
    zap_ge_p3_t u;
    /* bit 252 = 4 * 63 = 7 * 36: both top digits, added to the identity */
    zap_ge_p3_0(&u);
    zap_ge_add_digit(&t, &u, ptab, ad[ZAP_ED25519_ATAB_DIGITS - 1]);
    zap_ge_p1p1_to_p3(&u, &t);
    zap_ge_madd_digit(&t, &u, btab, bd[ZAP_ED25519_BTAB_DIGITS - 1]);
    zap_ge_p1p1_to_p2(r, &t);
    int ia = ZAP_ED25519_ATAB_DIGITS - 1, ib = ZAP_ED25519_BTAB_DIGITS - 1;
    int ca = 0, cb = 0; /* bits since the last digit of each scalar */
    for (int bit = 251; bit >= 0; bit--) {
        zap_ge_p2_dbl(&t, r);
        if (++ca == ZAP_ED25519_ATAB_W) {
            ca = 0;
            ia--;
            zap_ge_p1p1_to_p3(&u, &t);
            zap_ge_add_digit(&t, &u, ptab, ad[ia]);
        }
        if (++cb == ZAP_ED25519_BTAB_W) {
            cb = 0;
            ib--;
            zap_ge_p1p1_to_p3(&u, &t);
            zap_ge_madd_digit(&t, &u, btab, bd[ib]);
        }
        zap_ge_p1p1_to_p2(r, &t);
    }
}

/* ptab[j] = j P for j < ZAP_ED25519_ATAB_N, ptab[0] the identity. One
 * running point (j P = (j - 1) P + P) keeps few values live on the GPU. */
ZAP_HD_INLINE void zap_ge_multiples(zap_ge_cached_t *ptab, const zap_ge_p3_t *p)
{
    zap_ge_p1p1_t t;
    zap_ge_p3_t cur = *p;
    zap_ge_cached_0(&ptab[0]);
    zap_ge_p3_to_cached(&ptab[1], p);
    for (int j = 2; j < ZAP_ED25519_ATAB_N; j++) {
        zap_ge_add(&t, &cur, &ptab[1]);
        zap_ge_p1p1_to_p3(&cur, &t);
        zap_ge_p3_to_cached(&ptab[j], &cur);
    }
}

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

/* ------------------------------------------------------------------------ */
/* Four-lane form: one point spread over four GPU lanes                      */
/* ------------------------------------------------------------------------ */

/* For small batches the GPU gives each item four lanes of a warp, and lane q
 * (0..3) holds coordinate q of the running point (X, Y, Z, T). Every point
 * operation is two rounds; in a round each lane gathers the four lanes'
 * values (all[0..3], shuffles on the GPU) and computes one field product.
 * The products of the extended-coordinate formulas are independent four at a
 * time (Hisil, Wong, Carter, Dawson, "Twisted Edwards curves revisited",
 * 2008), so an operation takes two products of latency instead of seven or
 * eight, which is what a batch too small to fill the GPU waits for. The
 * round functions below compute exactly the serial formulas' values (same
 * sums, same products, same limb bounds); lanes differ only in which
 * operands they select, never in the instructions they run. Tables are
 * spread the same way: lane q keeps component q of every entry.
 *   cached entry (Y+X, Y-X, Z, 2dT) -> lane components (Y-X, Y+X, Z, 2dT)
 *   affine entry (y+x, y-x, 2dxy)   -> lane components (y-x, y+x, 1, 2dxy)
 * zap_x4_dbl1, zap_x4_add1 and zap_x4_cached read all[2] only on lane 2 and
 * all[3] only on lane 3 (each lane's own value), so for them a lane needs
 * just lanes 0 and 1's values. */

/* Products of the four-lane rounds. inl is a compile-time constant in the
 * GPU's four-lane kernel: 1 inlines the product's body into the round (no
 * call, and the round's shuffles and selects can overlap the product), 0
 * calls the out-of-line product as everywhere else. Same value either way. */
ZAP_HD_INLINE void zap_fe_mul_x(zap_fe_t *h, const zap_fe_t *f, const zap_fe_t *g, int inl)
{
    if (inl)
        zap_fe_mul_body(h, f, g);
    else
        zap_fe_mul(h, f, g);
}

ZAP_HD_INLINE void zap_fe_sqx_x(zap_fe_t *h, const zap_fe_t *f, int twice, int inl)
{
    if (inl)
        zap_fe_sqx_body(h, f, twice);
    else
        zap_fe_sqx(h, f, twice);
}

/* h = (a, b, c, d)[q], by selects. */
ZAP_HD_INLINE void zap_fe_sel4(zap_fe_t *h, const zap_fe_t *a, const zap_fe_t *b,
                               const zap_fe_t *c, const zap_fe_t *d, int q)
{
    ZAP_UNROLL
    for (int i = 0; i < 10; i++) {
        int32_t lo = q == 0 ? a->v[i] : b->v[i];
        int32_t hi = q == 2 ? c->v[i] : d->v[i];
        h->v[i] = q < 2 ? lo : hi;
    }
}

/* Doubling, round 1, on (X, Y, Z, T): X^2, Y^2, 2 Z^2, (X + Y)^2. */
ZAP_HD_INLINE void zap_x4_dbl1(zap_fe_t *out, const zap_fe_t all[4], int q, int inl)
{
    zap_fe_t xy, in;
    zap_fe_add(&xy, &all[0], &all[1]); /* level 2 */
    zap_fe_sel4(&in, &all[0], &all[1], &all[2], &xy, q);
    zap_fe_sqx_x(out, &in, q == 2, inl);
}

/* Doubling, round 2, on (A, B, C, D) = (X^2, Y^2, 2Z^2, (X+Y)^2): the
 * completed point of zap_ge_p2_dbl, then its four extended coordinates. */
ZAP_HD_INLINE void zap_x4_dbl2(zap_fe_t *out, const zap_fe_t all[4], int q, int inl)
{
    zap_fe_t xc, yc, zc, tc, a, b;
    zap_fe_add(&yc, &all[1], &all[0]); /* level 2 */
    zap_fe_sub(&zc, &all[1], &all[0]); /* level 2 */
    zap_fe_sub(&xc, &all[3], &yc);     /* level 3 */
    zap_fe_sub(&tc, &all[2], &zc);     /* level 3 */
    zap_fe_sel4(&a, &xc, &yc, &zc, &xc, q);
    zap_fe_sel4(&b, &tc, &zc, &tc, &yc, q);
    zap_fe_mul_x(out, &a, &b, inl);
}

/* Addition of Q (neg 0) or -Q (neg 1), round 1, on (X, Y, Z, T); comp is
 * this lane's component of Q. Lanes 0 and 1 give (Y-X)(Y2-X2) and
 * (Y+X)(Y2+X2), with the P side swapped for -Q (whose Y+X and Y-X are Q's
 * swapped); lane 2 Z Z2; lane 3 T 2dT2, negated for -Q. */
ZAP_HD_INLINE void zap_x4_add1(zap_fe_t *out, const zap_fe_t all[4], int q,
                               const zap_fe_t *comp, int neg, int inl)
{
    zap_fe_t ymx, ypx, s0, s1, in;
    zap_fe_sub(&ymx, &all[1], &all[0]); /* level 2 (3 for a decoded key) */
    zap_fe_add(&ypx, &all[1], &all[0]);
    zap_fe_sel4(&s0, &ymx, &ypx, &ymx, &ymx, neg);
    zap_fe_sel4(&s1, &ypx, &ymx, &ypx, &ypx, neg);
    zap_fe_sel4(&in, &s0, &s1, &all[2], &all[3], q);
    zap_fe_mul_x(out, &in, comp, inl);
    zap_fe_cneg(out, out, q == 3 && neg);
}

/* Addition, round 2, on the four products of round 1: the completed point
 * of zap_ge_add_signed, then its four extended coordinates. */
ZAP_HD_INLINE void zap_x4_add2(zap_fe_t *out, const zap_fe_t all[4], int q, int neg, int inl)
{
    zap_fe_t pa, pb, dd, e, f, g, hh, a, b;
    zap_fe_sel4(&pa, &all[0], &all[1], &all[0], &all[0], neg); /* (Y-X)(Y2-X2) */
    zap_fe_sel4(&pb, &all[1], &all[0], &all[1], &all[1], neg); /* (Y+X)(Y2+X2) */
    zap_fe_add(&dd, &all[2], &all[2]); /* 2 Z Z2, level 2 */
    zap_fe_sub(&e, &pb, &pa);          /* level 2 */
    zap_fe_add(&hh, &pb, &pa);         /* level 2 */
    zap_fe_sub(&f, &dd, &all[3]);      /* level 3 */
    zap_fe_add(&g, &dd, &all[3]);      /* level 3 */
    zap_fe_sel4(&a, &e, &g, &f, &e, q);
    zap_fe_sel4(&b, &f, &hh, &g, &hh, q);
    zap_fe_mul_x(out, &a, &b, inl);
}

/* Lane q's component of the cached form of the point (X, Y, Z, T):
 * Y - X, Y + X, Z or 2dT, carried (one product, by 1 or by 2d). */
ZAP_HD_INLINE void zap_x4_cached(zap_fe_t *out, const zap_fe_t all[4], int q, int inl)
{
    zap_fe_t ymx, ypx, in, one, d2, k;
    zap_fe_sub(&ymx, &all[1], &all[0]);
    zap_fe_add(&ypx, &all[1], &all[0]);
    zap_fe_sel4(&in, &ymx, &ypx, &all[2], &all[3], q);
    zap_fe_1(&one);
    zap_fe_d2(&d2);
    zap_fe_sel4(&k, &one, &one, &one, &d2, q);
    zap_fe_mul_x(out, &in, &k, inl);
}

#if !defined(__CUDA_ARCH__)
/* The four-lane double scalar multiplication run on the host, the four lanes
 * one after the other at each round: the reference for the GPU's four-lane
 * kernel, with the schedule of zap_ge_double_scalarmult. p is the point
 * (extended), btab the base-point table; returns the result as a p2 point. */
static inline void zap_x4_host_round_dbl(zap_fe_t st[4])
{
    zap_fe_t all[4], nx[4];
    for (int q = 0; q < 4; q++)
        all[q] = st[q];
    for (int q = 0; q < 4; q++)
        zap_x4_dbl1(&nx[q], all, q, q & 1);
    for (int q = 0; q < 4; q++)
        zap_x4_dbl2(&st[q], nx, q, q & 1);
}

static inline void zap_x4_host_round_add(zap_fe_t st[4], const zap_fe_t comp[4], int neg)
{
    zap_fe_t all[4], nx[4];
    for (int q = 0; q < 4; q++)
        all[q] = st[q];
    for (int q = 0; q < 4; q++)
        zap_x4_add1(&nx[q], all, q, &comp[q], neg, q & 1);
    for (int q = 0; q < 4; q++)
        zap_x4_add2(&st[q], nx, q, neg, q & 1);
}

static inline void zap_x4_host_double_scalarmult(zap_ge_p2_t *r, const uint32_t a[8],
                                                 const zap_ge_p3_t *p, const uint32_t b[8],
                                                 const zap_ge_niels_t *btab)
{
    zap_fe_t ptab[ZAP_ED25519_ATAB_N][4], st[4], one;
    int8_t ad[ZAP_ED25519_ATAB_DIGITS], bd[ZAP_ED25519_BTAB_DIGITS];
    zap_sc_signed_digits(ad, ZAP_ED25519_ATAB_DIGITS, a, ZAP_ED25519_ATAB_W);
    zap_sc_signed_digits(bd, ZAP_ED25519_BTAB_DIGITS, b, ZAP_ED25519_BTAB_W);
    zap_fe_1(&one);
    /* table: entry 0 the identity (cached (1, 1, 1, 0): components 1, 1, 1, 0) */
    for (int q = 0; q < 4; q++) {
        if (q < 3)
            zap_fe_1(&ptab[0][q]);
        else
            zap_fe_0(&ptab[0][q]);
    }
    zap_fe_t pt[4] = {p->X, p->Y, p->Z, p->T};
    for (int q = 0; q < 4; q++)
        zap_x4_cached(&ptab[1][q], pt, q, 0);
    for (int q = 0; q < 4; q++)
        st[q] = pt[q];
    for (int j = 2; j < ZAP_ED25519_ATAB_N; j++) {
        zap_x4_host_round_add(st, ptab[1], 0);
        for (int q = 0; q < 4; q++)
            zap_x4_cached(&ptab[j][q], st, q, 1);
    }
    /* identity, then the top digits */
    zap_fe_0(&st[0]);
    zap_fe_1(&st[1]);
    zap_fe_1(&st[2]);
    zap_fe_0(&st[3]);
    int ia = ZAP_ED25519_ATAB_DIGITS - 1, ib = ZAP_ED25519_BTAB_DIGITS - 1;
    for (int bit = 252; bit >= 0; bit--) {
        if (bit < 252)
            zap_x4_host_round_dbl(st);
        if (bit % ZAP_ED25519_ATAB_W == 0) {
            int d = ad[ia--], neg = d < 0;
            zap_x4_host_round_add(st, ptab[neg ? -d : d], neg);
        }
        if (bit % ZAP_ED25519_BTAB_W == 0) {
            int d = bd[ib--], neg = d < 0;
            const zap_ge_niels_t *e = &btab[neg ? -d : d];
            zap_fe_t comp[4] = {e->ymx, e->ypx, one, e->xy2d};
            zap_x4_host_round_add(st, comp, neg);
        }
    }
    r->X = st[0];
    r->Y = st[1];
    r->Z = st[2];
}

/* The verdict the GPU's four-lane kernel computes, on the host: every check
 * evaluated (no early exit, as the kernel's lanes must stay together), R
 * decoded beside A, the four-lane double scalar multiplication, and the
 * comparison with R through zap_ge_p2_encodes_to instead of an encoding.
 * Must equal zap_ed25519_verify_item (and libsodium) on every input. */
static inline int zap_x4_host_verify_item(const uint8_t pk[32], const uint8_t r[32],
                                          const uint8_t s[32], const uint8_t *msg, uint64_t len,
                                          const zap_ge_niels_t *btab)
{
    int ok = zap_sc_is_canonical(s) & !zap_ge_has_small_order(r) & zap_ge_is_canonical(pk) &
             !zap_ge_has_small_order(pk);
    zap_ge_p3_t a, rd;
    int a_ok = zap_ge_frombytes(&a, pk);
    int r_ok = zap_ge_frombytes(&rd, r);
    if (!a_ok) /* a failed decoding leaves the point unfinished: compute on with a valid one */
        zap_ge_p3_0(&a);
    if (!r_ok)
        zap_ge_p3_0(&rd);
    zap_fe_neg(&a.X, &a.X); /* -A */
    zap_fe_neg(&a.T, &a.T);
    uint8_t hbuf[64];
    uint32_t k[8], sw[8];
    zap_ed25519_hram(hbuf, r, pk, msg, len);
    zap_sc_reduce512(k, hbuf);
    for (int i = 0; i < 8; i++)
        sw[i] = (uint32_t)s[4 * i] | ((uint32_t)s[4 * i + 1] << 8) |
                ((uint32_t)s[4 * i + 2] << 16) | ((uint32_t)s[4 * i + 3] << 24);
    zap_ge_p2_t rp;
    zap_x4_host_double_scalarmult(&rp, k, &a, sw, btab);
    return ok & a_ok & zap_ge_p2_encodes_to(&rp, r, &rd, r_ok);
}
#endif

/* ------------------------------------------------------------------------ */
/* Verification of one item under libsodium 1.0.18's rule                    */
/* ------------------------------------------------------------------------ */


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
    ZAP_ED25519_PHASE_MARK(1); /* range and blocklist checks */
    zap_ge_p3_t a;
    int decoded = zap_ge_frombytes(&a, pk);
    ZAP_ED25519_PHASE_MARK(2); /* decoding A: the (p-5)/8 power */
    if (!decoded)
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
    ZAP_ED25519_PHASE_MARK(3); /* SHA-512(R || A || M) mod L */

    zap_ge_cached_t ptab[ZAP_ED25519_ATAB_N];
    zap_ge_multiples(ptab, &a);
    ZAP_ED25519_PHASE_MARK(4); /* the table of multiples of -A */
    zap_ge_p2_t rp;
    zap_ge_double_scalarmult(&rp, k, ptab, sw, btab);
    ZAP_ED25519_PHASE_MARK(5); /* [k](-A) + [S]B */
    uint8_t rcheck[32];
    zap_ge_p2_tobytes(rcheck, &rp);
    uint8_t diff = 0;
    for (int i = 0; i < 32; i++)
        diff |= rcheck[i] ^ r[i];
    ZAP_ED25519_PHASE_MARK(6); /* encoding R' (an inversion) and the comparison */
    return diff == 0;
}

#endif
