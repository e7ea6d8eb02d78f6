/* The seeded Ed25519 batch generator with libsodium 1.0.18 as the oracle
 * (ed25519_testgen.h). Used by the tests, the benchmark and, through
 * core/verify/batch_gen.c, zap-verify; never by the library itself.
 *
 * Randomness: item i draws from splitmix64 seeded with (seed, i), so the
 * batch is the same whatever the thread count. Signatures are libsodium's
 * deterministic crypto_sign_detached, except for the mixed-order mutations,
 * which sign by hand (S = r + k a mod L with libsodium's scalar functions) so
 * that the signature is made for the altered key or nonce point. */
#include "ed25519_testgen.h"

/* Relative: this file is also built into a library without zap's include
 * path (zap_ed25519_testgen, for the GPU host). */
#include "../../core/base/le.h"
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct zap_rng {
    uint64_t s;
} zap_rng_t;

static uint64_t zap_rng_next(zap_rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void zap_rng_init(zap_rng_t *r, uint64_t seed, uint64_t stream)
{
    r->s = seed * 0xd1342543de82ef95ULL + stream;
    (void)zap_rng_next(r);
    r->s ^= stream * 0x2545f4914f6cdd1dULL;
    (void)zap_rng_next(r);
}

static void zap_rng_bytes(zap_rng_t *r, uint8_t *out, size_t len)
{
    for (size_t i = 0; i < len; i += 8) {
        uint64_t v = zap_rng_next(r);
        for (size_t j = 0; j < 8 && i + j < len; j++)
            out[i + j] = (uint8_t)(v >> (8 * j));
    }
}

const char *zap_ed25519_mut_name(int kind)
{
    static const char *names[ZAP_MUT_COUNT] = {
        "valid",          "flip_R",         "flip_S",          "flip_A",
        "flip_msg",       "S_plus_L",       "S_eq_L",          "S_random_high",
        "R_noncanonical", "A_noncanonical", "R_small_order",   "A_small_order",
        "wrong_key",      "A_mixed_order",  "R_mixed_order",   "A_random",
        "R_random",       "small_A_forgery", "malformed"};
    return (kind >= 0 && kind < ZAP_MUT_COUNT) ? names[kind] : "?";
}

static const uint8_t zap_l_bytes[32] = {0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58,
                                        0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
                                        0,    0,    0,    0,    0,    0,    0,    0,
                                        0,    0,    0,    0,    0,    0,    0,    0x10};

/* Encodings of small-order points: the 8 points (both signs where x != 0),
 * x = 0 with the sign bit set, and the non-canonical y = p, p + 1. */
#define ZAP_SMALL_ORDER_N 14
static void zap_small_order_enc(int idx, uint8_t out[32])
{
    static const uint8_t o8a[32] = {0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0,
                                    0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0,
                                    0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39,
                                    0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05};
    static const uint8_t o8b[32] = {0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f,
                                    0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f,
                                    0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6,
                                    0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a};
    memset(out, 0, 32);
    switch (idx / 2) {
    case 0: /* y = 1: identity (order 1), and x = 0 with sign set */
        out[0] = 1;
        break;
    case 1: /* y = p - 1: order 2 */
        memset(out, 0xff, 32);
        out[0] = 0xec;
        out[31] = 0x7f;
        break;
    case 2: /* y = 0: order 4, x = +-sqrt(-1) */
        break;
    case 3:
        memcpy(out, o8a, 32);
        break;
    case 4:
        memcpy(out, o8b, 32);
        break;
    case 5: /* y = p (= 0), non-canonical */
        memset(out, 0xff, 32);
        out[0] = 0xed;
        out[31] = 0x7f;
        break;
    default: /* y = p + 1 (= 1), non-canonical */
        memset(out, 0xff, 32);
        out[0] = 0xee;
        out[31] = 0x7f;
        break;
    }
    if (idx & 1)
        out[31] |= 0x80;
}

/* Sign msg for public key pk (which may differ from the key of az) with
 * nonce point R = [r]B (+ t_r if given): S = r + SHA512(R' || pk || M) a. */
static int zap_sign_by_hand(uint8_t sig[64], const uint8_t az_a[32], const uint8_t pk[32],
                            const uint8_t *msg, size_t len, zap_rng_t *rng, const uint8_t *t_r)
{
    uint8_t wide[64], r[32], a[32], k[32], ka[32], h[64];
    zap_rng_bytes(rng, wide, 64);
    crypto_core_ed25519_scalar_reduce(r, wide);
    memset(wide, 0, 64);
    memcpy(wide, az_a, 32);
    crypto_core_ed25519_scalar_reduce(a, wide);
    if (crypto_scalarmult_ed25519_base_noclamp(sig, r) != 0)
        return -1;
    if (t_r != NULL && crypto_core_ed25519_add(sig, sig, t_r) != 0)
        return -1;
    crypto_hash_sha512_state st;
    crypto_hash_sha512_init(&st);
    crypto_hash_sha512_update(&st, sig, 32);
    crypto_hash_sha512_update(&st, pk, 32);
    crypto_hash_sha512_update(&st, msg, len);
    crypto_hash_sha512_final(&st, h);
    crypto_core_ed25519_scalar_reduce(k, h);
    crypto_core_ed25519_scalar_mul(ka, k, a);
    crypto_core_ed25519_scalar_add(sig + 32, r, ka);
    return 0;
}

typedef struct zap_gen_shared {
    const zap_ed25519_gen_params_t *p;
    zap_ed25519_batch_t *b;
    uint32_t nk;    /* key pairs made: n_keys, plus one that only wrong-key items show */
    uint8_t *pks;   /* nk * 32 */
    uint8_t *sks;   /* nk * 64 */
    uint8_t *azs;   /* nk * 32: clamped secret scalars */
    uint64_t *offs; /* variable: message offsets */
    uint32_t *lens; /* variable: message lengths */
    int threads;
    int failed;
} zap_gen_shared_t;

typedef struct zap_gen_task {
    zap_gen_shared_t *sh;
    int index;
} zap_gen_task_t;

static int zap_pick_kind(const zap_ed25519_gen_params_t *p, zap_rng_t *rng)
{
    if (p->all_mutations) {
        /* about 30% valid; the rest spread over the mutation kinds */
        uint64_t x = zap_rng_next(rng) % 100;
        if (x < 30)
            return ZAP_MUT_NONE;
        int kinds = p->variable_msgs ? ZAP_MUT_COUNT - 1 : ZAP_MUT_COUNT - 2;
        return 1 + (int)(zap_rng_next(rng) % (uint64_t)kinds);
    }
    if (zap_rng_next(rng) % 1000000 >= p->invalid_ppm)
        return ZAP_MUT_NONE;
    if (p->invalid_kinds == 0)
        return ZAP_MUT_FLIP_R + (int)(zap_rng_next(rng) % 4);
    /* the pick-th kind of the set */
    uint32_t kinds = p->invalid_kinds & ((1u << ZAP_MUT_COUNT) - 2u);
    int pick = (int)(zap_rng_next(rng) % (uint64_t)__builtin_popcount(kinds));
    for (int k = 1; k < ZAP_MUT_COUNT; k++)
        if ((kinds >> k) & 1 && pick-- == 0)
            return k;
    return ZAP_MUT_NONE; /* not reached */
}

static void zap_gen_item(zap_gen_shared_t *sh, uint64_t i)
{
    const zap_ed25519_gen_params_t *p = sh->p;
    zap_ed25519_batch_t *b = sh->b;
    zap_rng_t rng;
    zap_rng_init(&rng, p->seed, i);
    uint8_t *rec = b->records + i * b->stride;
    uint32_t key = (uint32_t)(zap_rng_next(&rng) % p->n_keys);
    const uint8_t *pk0 = sh->pks + 32 * (size_t)key;
    uint8_t pk[32], sig[64];
    uint8_t fixed_msg[32];
    uint8_t *msg;
    size_t len;
    if (b->variable_msgs) {
        msg = b->blob + sh->offs[i];
        len = sh->lens[i];
    } else {
        msg = fixed_msg;
        len = 32;
    }
    zap_rng_bytes(&rng, msg, len);
    memcpy(pk, pk0, 32);
    crypto_sign_detached(sig, NULL, msg, len, sh->sks + 64 * (size_t)key);

    int kind = zap_pick_kind(p, &rng);
    uint64_t r64 = zap_rng_next(&rng);
    int bit = (int)(r64 % 256);
    uint8_t t[32];
    switch (kind) {
    case ZAP_MUT_NONE:
        break;
    case ZAP_MUT_FLIP_R:
        sig[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        break;
    case ZAP_MUT_FLIP_S:
        sig[32 + bit / 8] ^= (uint8_t)(1u << (bit % 8));
        break;
    case ZAP_MUT_FLIP_A:
        pk[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        break;
    case ZAP_MUT_FLIP_MSG:
        if (len > 0) {
            uint64_t mb = r64 % (8 * (uint64_t)len);
            msg[mb / 8] ^= (uint8_t)(1u << (mb % 8));
        } else {
            sig[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        }
        break;
    case ZAP_MUT_S_PLUS_L: {
        unsigned c = 0;
        for (int k = 0; k < 32; k++) {
            c += (unsigned)sig[32 + k] + zap_l_bytes[k];
            sig[32 + k] = (uint8_t)c;
            c >>= 8;
        }
        break;
    }
    case ZAP_MUT_S_EQ_L:
        memcpy(sig + 32, zap_l_bytes, 32);
        break;
    case ZAP_MUT_S_RANDOM_HIGH:
        zap_rng_bytes(&rng, sig + 32, 32);
        sig[63] |= (uint8_t)(0x10u << (r64 % 4));
        break;
    case ZAP_MUT_R_NONCANONICAL:
    case ZAP_MUT_A_NONCANONICAL: {
        uint8_t *dst = kind == ZAP_MUT_R_NONCANONICAL ? sig : pk;
        memset(dst, 0xff, 32);
        dst[0] = (uint8_t)(0xed + r64 % 19);
        dst[31] = (uint8_t)(0x7f | ((r64 >> 8) & 1 ? 0x80 : 0));
        break;
    }
    case ZAP_MUT_R_SMALL_ORDER:
        zap_small_order_enc((int)(r64 % ZAP_SMALL_ORDER_N), sig);
        break;
    case ZAP_MUT_A_SMALL_ORDER:
        zap_small_order_enc((int)(r64 % ZAP_SMALL_ORDER_N), pk);
        break;
    case ZAP_MUT_WRONG_KEY:
        memcpy(pk, sh->pks + 32 * (size_t)((key + 1) % sh->nk), 32);
        break;
    case ZAP_MUT_A_MIXED_ORDER:
        /* an order-8 point T (index 6..9 are the order-8 encodings) */
        zap_small_order_enc(6 + (int)(r64 % 4), t);
        if (crypto_core_ed25519_add(pk, pk0, t) != 0 ||
            zap_sign_by_hand(sig, sh->azs + 32 * (size_t)key, pk, msg, len, &rng, NULL) != 0)
            sh->failed = 1;
        break;
    case ZAP_MUT_R_MIXED_ORDER:
        zap_small_order_enc(6 + (int)(r64 % 4), t);
        if (zap_sign_by_hand(sig, sh->azs + 32 * (size_t)key, pk, msg, len, &rng, t) != 0)
            sh->failed = 1;
        break;
    case ZAP_MUT_A_RANDOM:
        zap_rng_bytes(&rng, pk, 32);
        break;
    case ZAP_MUT_R_RANDOM:
        zap_rng_bytes(&rng, sig, 32);
        break;
    case ZAP_MUT_SMALL_A_FORGERY: {
        /* A small order, R = [S]B: R' = [S]B - [k]A equals R whenever [k]A is
         * the identity, so without the blocklist some of these would pass. */
        uint8_t wide[64];
        zap_small_order_enc((int)(r64 % ZAP_SMALL_ORDER_N), pk);
        zap_rng_bytes(&rng, wide, 64);
        crypto_core_ed25519_scalar_reduce(sig + 32, wide);
        if (crypto_scalarmult_ed25519_base_noclamp(sig, sig + 32) != 0)
            sh->failed = 1;
        break;
    }
    case ZAP_MUT_MALFORMED:
        break;
    default:
        break;
    }
    memcpy(rec, pk, 32);
    memcpy(rec + 32, sig, 64);
    if (b->variable_msgs) {
        uint32_t off = (uint32_t)sh->offs[i], ln = sh->lens[i];
        if (kind == ZAP_MUT_MALFORMED) {
            /* range past the end of the blob, sometimes by overflow */
            if (r64 & 1) {
                off = (uint32_t)b->blob_len - (ln > 0 ? ln - 1 : 0);
                ln = ln + 1;
            } else {
                off = 0xfffffff0u;
                ln = 0x20;
            }
        }
        zap_put_le32(rec + 96, off);
        zap_put_le32(rec + 100, ln);
        memset(rec + 104, 0, b->stride - 104);
    } else {
        memcpy(rec + 96, fixed_msg, 32);
        memset(rec + 128, 0, b->stride - 128);
    }
    if (b->kind)
        b->kind[i] = (uint8_t)kind;
    if (!b->expected)
        return;
    if (kind == ZAP_MUT_MALFORMED)
        b->expected[i] = 2;
    else if (p->skip_oracle)
        b->expected[i] = kind == ZAP_MUT_NONE ? 1 : 0;
    else
        b->expected[i] = crypto_sign_verify_detached(sig, msg, len, pk) == 0 ? 1 : 0;
}

static void *zap_gen_worker(void *arg)
{
    zap_gen_task_t *t = (zap_gen_task_t *)arg;
    zap_gen_shared_t *sh = t->sh;
    uint64_t n = sh->b->n;
    uint64_t lo = n * (uint64_t)t->index / (uint64_t)sh->threads;
    uint64_t hi = n * (uint64_t)(t->index + 1) / (uint64_t)sh->threads;
    for (uint64_t i = lo; i < hi; i++)
        zap_gen_item(sh, i);
    return NULL;
}

static void *zap_key_worker(void *arg)
{
    zap_gen_task_t *t = (zap_gen_task_t *)arg;
    zap_gen_shared_t *sh = t->sh;
    for (uint32_t k = (uint32_t)t->index; k < sh->nk; k += (uint32_t)sh->threads) {
        uint8_t seed[32], h[64];
        zap_rng_t rng;
        zap_rng_init(&rng, sh->p->seed ^ 0x6b657973ULL, k);
        zap_rng_bytes(&rng, seed, 32);
        crypto_sign_seed_keypair(sh->pks + 32 * (size_t)k, sh->sks + 64 * (size_t)k, seed);
        crypto_hash_sha512(h, seed, 32);
        h[0] &= 248;
        h[31] &= 127;
        h[31] |= 64;
        memcpy(sh->azs + 32 * (size_t)k, h, 32);
    }
    return NULL;
}

int zap_ed25519_online_cpus(void)
{
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c > 0 ? (int)c : 1;
}

static int zap_run_workers(zap_gen_shared_t *sh, void *(*fn)(void *))
{
    pthread_t *tids = calloc((size_t)sh->threads, sizeof(pthread_t));
    zap_gen_task_t *tasks = calloc((size_t)sh->threads, sizeof(zap_gen_task_t));
    int rc = 0;
    if (tids == NULL || tasks == NULL) {
        free(tids);
        free(tasks);
        return -1;
    }
    int started = 0;
    for (int k = 0; k < sh->threads; k++) {
        tasks[k].sh = sh;
        tasks[k].index = k;
        if (pthread_create(&tids[k], NULL, fn, &tasks[k]) != 0) {
            rc = -1;
            break;
        }
        started++;
    }
    for (int k = 0; k < started; k++)
        pthread_join(tids[k], NULL);
    free(tids);
    free(tasks);
    return rc;
}

void zap_ed25519_batch_free(zap_ed25519_batch_t *b)
{
    if (b == NULL)
        return;
    free(b->records);
    free(b->blob);
    free(b->expected);
    free(b->kind);
    memset(b, 0, sizeof(*b));
}

/* The length of item i's message (variable messages): uniform in
 * [min_msg_len, max_msg_len], from its own stream. */
static uint32_t msg_len_of(const zap_ed25519_gen_params_t *p, uint64_t i)
{
    zap_rng_t rng;
    zap_rng_init(&rng, p->seed ^ 0x6c656e73ULL, i);
    uint32_t lo = p->min_msg_len <= p->max_msg_len ? p->min_msg_len : p->max_msg_len;
    return lo + (uint32_t)(zap_rng_next(&rng) % ((uint64_t)(p->max_msg_len - lo) + 1));
}

/* Offsets are u32 in the record, and the malformed kind needs room past the
 * end of the blob. */
#define ZAP_GEN_MAX_BLOB 0xffffff00ULL

int zap_ed25519_gen_blob_len(const zap_ed25519_gen_params_t *p, uint64_t *blob_len_p)
{
    if (p == NULL || blob_len_p == NULL || p->n_keys < 1)
        return -1;
    uint64_t total = 0;
    for (uint64_t i = 0; p->variable_msgs && i < p->n; i++)
        if ((total += msg_len_of(p, i)) > ZAP_GEN_MAX_BLOB)
            return -1;
    *blob_len_p = total;
    return 0;
}

int zap_ed25519_gen_into(const zap_ed25519_gen_params_t *p, zap_ed25519_batch_t *b)
{
    uint64_t blob_len = 0;
    if (b == NULL || b->stride < 128 || zap_ed25519_gen_blob_len(p, &blob_len) != 0 ||
        (p->variable_msgs && b->blob_len != blob_len) || sodium_init() < 0)
        return -1;
    zap_gen_shared_t sh;
    memset(&sh, 0, sizeof(sh));
    sh.p = p;
    sh.b = b;
    sh.threads = p->threads > 0 ? p->threads : zap_ed25519_online_cpus();
    sh.nk = p->n_keys + 1;
    b->n = p->n;
    b->variable_msgs = p->variable_msgs;
    sh.pks = malloc((size_t)sh.nk * 32);
    sh.sks = malloc((size_t)sh.nk * 64);
    sh.azs = malloc((size_t)sh.nk * 32);
    int rc = -1;
    if (!sh.pks || !sh.sks || !sh.azs)
        goto out;
    if (p->variable_msgs) {
        sh.offs = malloc((size_t)(p->n ? p->n : 1) * sizeof(uint64_t));
        sh.lens = malloc((size_t)(p->n ? p->n : 1) * sizeof(uint32_t));
        if (!sh.offs || !sh.lens)
            goto out;
        uint64_t total = 0;
        for (uint64_t i = 0; i < p->n; i++) {
            sh.lens[i] = msg_len_of(p, i);
            sh.offs[i] = total;
            total += sh.lens[i];
        }
    }
    if (zap_run_workers(&sh, zap_key_worker) != 0)
        goto out;
    if (zap_run_workers(&sh, zap_gen_worker) != 0 || sh.failed)
        goto out;
    rc = 0;
out:
    if (sh.sks)
        sodium_memzero(sh.sks, (size_t)sh.nk * 64);
    if (sh.azs)
        sodium_memzero(sh.azs, (size_t)sh.nk * 32);
    free(sh.pks);
    free(sh.sks);
    free(sh.azs);
    free(sh.offs);
    free(sh.lens);
    return rc;
}

int zap_ed25519_gen(const zap_ed25519_gen_params_t *p, zap_ed25519_batch_t *out)
{
    uint64_t blob_len = 0;
    if (out == NULL)
        return -1;
    memset(out, 0, sizeof(*out));
    if (zap_ed25519_gen_blob_len(p, &blob_len) != 0)
        return -1;
    size_t n = (size_t)(p->n ? p->n : 1);
    out->stride = 128;
    out->records = malloc(n * out->stride);
    out->expected = malloc(n);
    out->kind = malloc(n);
    if (p->variable_msgs) {
        out->blob_len = blob_len;
        out->blob = malloc((size_t)(blob_len ? blob_len : 1));
    }
    if (!out->records || !out->expected || !out->kind || (p->variable_msgs && !out->blob) ||
        zap_ed25519_gen_into(p, out) != 0) {
        zap_ed25519_batch_free(out);
        return -1;
    }
    return 0;
}

typedef struct zap_oracle_task {
    const zap_ed25519_batch_t *b;
    uint64_t lo, hi;
    uint8_t *verdicts; /* indexed from the batch's first item of the range */
    uint64_t first;
} zap_oracle_task_t;

static void *zap_oracle_worker(void *arg)
{
    zap_oracle_task_t *t = (zap_oracle_task_t *)arg;
    const zap_ed25519_batch_t *b = t->b;
    for (uint64_t i = t->lo; i < t->hi; i++) {
        const uint8_t *rec = b->records + i * b->stride;
        const uint8_t *msg = rec + 96;
        uint64_t len = 32;
        if (b->variable_msgs) {
            uint64_t off = zap_get_le32(rec + 96);
            len = zap_get_le32(rec + 100);
            if (off > b->blob_len || len > b->blob_len - off) {
                t->verdicts[i - t->first] = 2;
                continue;
            }
            msg = b->blob + off;
        }
        t->verdicts[i - t->first] =
            crypto_sign_verify_detached(rec + 32, msg, len, rec) == 0 ? 1 : 0;
    }
    return NULL;
}

double zap_ed25519_oracle(const zap_ed25519_batch_t *b, uint64_t first, uint64_t count,
                          uint8_t *verdicts, int threads)
{
    if (threads <= 0)
        threads = zap_ed25519_online_cpus();
    if (sodium_init() < 0)
        return -1.0;
    pthread_t tids[256];
    int created[256];
    zap_oracle_task_t tasks[256];
    if (threads > 256)
        threads = 256;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int k = 0; k < threads; k++) {
        tasks[k].b = b;
        tasks[k].first = first;
        tasks[k].lo = first + count * (uint64_t)k / (uint64_t)threads;
        tasks[k].hi = first + count * (uint64_t)(k + 1) / (uint64_t)threads;
        tasks[k].verdicts = verdicts;
        created[k] = threads > 1 && pthread_create(&tids[k], NULL, zap_oracle_worker, &tasks[k]) == 0;
        if (!created[k])
            zap_oracle_worker(&tasks[k]); /* one thread, or no thread could start */
    }
    for (int k = 0; k < threads; k++)
        if (created[k])
            pthread_join(tids[k], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}
