/* SHA-512 (FIPS 180-4), written once for the host C11 build and the GPU.
 *
 * The Ed25519 verifier hashes R || A || M with it. Every function is ZAP_HD
 * (host and device), so the CI build, which has no GPU, runs exactly the code
 * the kernel runs. The context is a plain struct the caller provides (on the
 * GPU it lives in the thread's registers and local memory); nothing allocates.
 * Inputs are byte pointers with no alignment requirement, so a message can be
 * read straight out of a batch blob in device memory.
 *
 * Cost: one compression per 128-byte block (80 rounds of 64-bit operations,
 * which sm_90 emulates with 32-bit ones). For a 32-byte message that is one
 * block, about 1% of a verification on the GPU; the curve arithmetic
 * dominates. */
#ifndef ZAP_ED25519_SHA512_H
#define ZAP_ED25519_SHA512_H

#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define ZAP_HD __host__ __device__
#define ZAP_HD_INLINE __host__ __device__ __forceinline__
#else
#define ZAP_HD
#define ZAP_HD_INLINE static inline
#endif

/* The 80 round constants, once as a list so that the host copy and the
 * device copy (constant memory: every thread of a warp reads the same entry
 * in the same round, which is the constant cache's best case) cannot differ. */
#define ZAP_SHA512_K_VALUES                                                                   \
    0x428a2f98d728ae22ULL, 0x7137449123ef65cdULL, 0xb5c0fbcfec4d3b2fULL,                       \
        0xe9b5dba58189dbbcULL, 0x3956c25bf348b538ULL, 0x59f111f1b605d019ULL,                   \
        0x923f82a4af194f9bULL, 0xab1c5ed5da6d8118ULL, 0xd807aa98a3030242ULL,                   \
        0x12835b0145706fbeULL, 0x243185be4ee4b28cULL, 0x550c7dc3d5ffb4e2ULL,                   \
        0x72be5d74f27b896fULL, 0x80deb1fe3b1696b1ULL, 0x9bdc06a725c71235ULL,                   \
        0xc19bf174cf692694ULL, 0xe49b69c19ef14ad2ULL, 0xefbe4786384f25e3ULL,                   \
        0x0fc19dc68b8cd5b5ULL, 0x240ca1cc77ac9c65ULL, 0x2de92c6f592b0275ULL,                   \
        0x4a7484aa6ea6e483ULL, 0x5cb0a9dcbd41fbd4ULL, 0x76f988da831153b5ULL,                   \
        0x983e5152ee66dfabULL, 0xa831c66d2db43210ULL, 0xb00327c898fb213fULL,                   \
        0xbf597fc7beef0ee4ULL, 0xc6e00bf33da88fc2ULL, 0xd5a79147930aa725ULL,                   \
        0x06ca6351e003826fULL, 0x142929670a0e6e70ULL, 0x27b70a8546d22ffcULL,                   \
        0x2e1b21385c26c926ULL, 0x4d2c6dfc5ac42aedULL, 0x53380d139d95b3dfULL,                   \
        0x650a73548baf63deULL, 0x766a0abb3c77b2a8ULL, 0x81c2c92e47edaee6ULL,                   \
        0x92722c851482353bULL, 0xa2bfe8a14cf10364ULL, 0xa81a664bbc423001ULL,                   \
        0xc24b8b70d0f89791ULL, 0xc76c51a30654be30ULL, 0xd192e819d6ef5218ULL,                   \
        0xd69906245565a910ULL, 0xf40e35855771202aULL, 0x106aa07032bbd1b8ULL,                   \
        0x19a4c116b8d2d0c8ULL, 0x1e376c085141ab53ULL, 0x2748774cdf8eeb99ULL,                   \
        0x34b0bcb5e19b48a8ULL, 0x391c0cb3c5c95a63ULL, 0x4ed8aa4ae3418acbULL,                   \
        0x5b9cca4f7763e373ULL, 0x682e6ff3d6b2b8a3ULL, 0x748f82ee5defb2fcULL,                   \
        0x78a5636f43172f60ULL, 0x84c87814a1f0ab72ULL, 0x8cc702081a6439ecULL,                   \
        0x90befffa23631e28ULL, 0xa4506cebde82bde9ULL, 0xbef9a3f7b2c67915ULL,                   \
        0xc67178f2e372532bULL, 0xca273eceea26619cULL, 0xd186b8c721c0c207ULL,                   \
        0xeada7dd6cde0eb1eULL, 0xf57d4f7fee6ed178ULL, 0x06f067aa72176fbaULL,                   \
        0x0a637dc5a2c898a6ULL, 0x113f9804bef90daeULL, 0x1b710b35131c471bULL,                   \
        0x28db77f523047d84ULL, 0x32caab7b40c72493ULL, 0x3c9ebe0a15c9bebcULL,                   \
        0x431d67c49c100d4cULL, 0x4cc5d4becb3e42b6ULL, 0x597f299cfc657e2aULL,                   \
        0x5fcb6fab3ad6faecULL, 0x6c44198c4a475817ULL

static const uint64_t zap_sha512_k_host[80] = {ZAP_SHA512_K_VALUES};
#if defined(__CUDACC__)
static __constant__ uint64_t zap_sha512_k_dev[80] = {ZAP_SHA512_K_VALUES};
#endif

ZAP_HD_INLINE uint64_t zap_sha512_k(int i)
{
#if defined(__CUDA_ARCH__)
    return zap_sha512_k_dev[i];
#else
    return zap_sha512_k_host[i];
#endif
}

typedef struct zap_sha512_ctx {
    uint64_t state[8];
    uint64_t total;   /* bytes absorbed so far (messages < 2^61 bytes) */
    uint8_t buf[128]; /* partial block; fill = total % 128 */
} zap_sha512_ctx_t;

ZAP_HD_INLINE uint64_t zap_sha512_rotr(uint64_t x, int n)
{
    return (x >> n) | (x << (64 - n));
}

ZAP_HD_INLINE void zap_sha512_init(zap_sha512_ctx_t *c)
{
    c->state[0] = 0x6a09e667f3bcc908ULL;
    c->state[1] = 0xbb67ae8584caa73bULL;
    c->state[2] = 0x3c6ef372fe94f82bULL;
    c->state[3] = 0xa54ff53a5f1d36f1ULL;
    c->state[4] = 0x510e527fade682d1ULL;
    c->state[5] = 0x9b05688c2b3e6c1fULL;
    c->state[6] = 0x1f83d9abfb41bd6bULL;
    c->state[7] = 0x5be0cd19137e2179ULL;
    c->total = 0;
}

/* One compression of a 128-byte block. The message schedule is kept as a
 * rolling window of 16 words rather than 80, to keep the GPU's local-memory
 * footprint small. */
ZAP_HD_INLINE void zap_sha512_block_body(uint64_t st[8], const uint8_t *p)
{
    uint64_t w[16];
    uint64_t a = st[0], b = st[1], c = st[2], d = st[3];
    uint64_t e = st[4], f = st[5], g = st[6], h = st[7];
    for (int i = 0; i < 16; i++) {
        uint64_t v = 0;
        for (int j = 0; j < 8; j++)
            v = (v << 8) | p[8 * i + j];
        w[i] = v;
    }
    for (int i = 0; i < 80; i++) {
        uint64_t wi;
        if (i < 16) {
            wi = w[i];
        } else {
            uint64_t w15 = w[(i - 15) & 15], w2 = w[(i - 2) & 15];
            uint64_t s0 = zap_sha512_rotr(w15, 1) ^ zap_sha512_rotr(w15, 8) ^ (w15 >> 7);
            uint64_t s1 = zap_sha512_rotr(w2, 19) ^ zap_sha512_rotr(w2, 61) ^ (w2 >> 6);
            wi = w[i & 15] + s0 + w[(i - 7) & 15] + s1;
            w[i & 15] = wi;
        }
        uint64_t S1 = zap_sha512_rotr(e, 14) ^ zap_sha512_rotr(e, 18) ^ zap_sha512_rotr(e, 41);
        uint64_t ch = (e & f) ^ (~e & g);
        uint64_t t1 = h + S1 + ch + zap_sha512_k(i) + wi;
        uint64_t S0 = zap_sha512_rotr(a, 28) ^ zap_sha512_rotr(a, 34) ^ zap_sha512_rotr(a, 39);
        uint64_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint64_t t2 = S0 + maj;
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    st[0] += a;
    st[1] += b;
    st[2] += c;
    st[3] += d;
    st[4] += e;
    st[5] += f;
    st[6] += g;
    st[7] += h;
}

/* Out of line on the GPU (one copy of the 80 rounds instead of one per call
 * site: the kernel's code must fit the instruction cache); inlined on the
 * host. */
#if defined(__CUDACC__)
static __device__ __noinline__ void zap_sha512_block_dev(uint64_t st[8], const uint8_t *p)
{
    zap_sha512_block_body(st, p);
}
#endif

ZAP_HD_INLINE void zap_sha512_block(uint64_t st[8], const uint8_t *p)
{
#if defined(__CUDA_ARCH__)
    zap_sha512_block_dev(st, p);
#else
    zap_sha512_block_body(st, p);
#endif
}

ZAP_HD_INLINE void zap_sha512_update(zap_sha512_ctx_t *c, const uint8_t *in, uint64_t len)
{
    unsigned fill = (unsigned)(c->total & 127);
    c->total += len;
    if (fill) {
        while (len > 0 && fill < 128) {
            c->buf[fill++] = *in++;
            len--;
        }
        if (fill < 128)
            return;
        zap_sha512_block(c->state, c->buf);
    }
    while (len >= 128) {
        zap_sha512_block(c->state, in);
        in += 128;
        len -= 128;
    }
    for (unsigned i = 0; i < len; i++)
        c->buf[i] = in[i];
}

ZAP_HD_INLINE void zap_sha512_final(zap_sha512_ctx_t *c, uint8_t out[64])
{
    unsigned fill = (unsigned)(c->total & 127);
    uint64_t bits = c->total << 3;
    c->buf[fill++] = 0x80;
    if (fill > 112) {
        while (fill < 128)
            c->buf[fill++] = 0;
        zap_sha512_block(c->state, c->buf);
        fill = 0;
    }
    while (fill < 120)
        c->buf[fill++] = 0;
    /* The length field is 128 bits; the high 64 are zero for any message we
     * can be given (the upper word was cleared by the loop above). */
    for (int j = 0; j < 8; j++)
        c->buf[120 + j] = (uint8_t)(bits >> (56 - 8 * j));
    zap_sha512_block(c->state, c->buf);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            out[8 * i + j] = (uint8_t)(c->state[i] >> (56 - 8 * j));
}

#endif
