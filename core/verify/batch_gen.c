/* Seeded batch generation (batch_gen.h). Determinism: every random choice of
 * item i comes from a splitmix64 stream keyed by (seed, i), and key k from
 * BLAKE2b(seed, k), so the bytes of a batch depend on its parameters only,
 * never on the thread count. Signing costs about one fixed-base scalar
 * multiplication per item (~25 us with libsodium's ref10 code), so 200,000
 * items take ~2.5 s on 2 cores. */
#include "verify/batch_gen.h"
#include "verify/verify_impl.h"
#include "base/log.h"
#include <sodium.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define GEN_CHUNK 1024u /* items per work unit: a multiple of 32 */

static const uint8_t ED25519_L[32] = {0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7,
                                      0xa2, 0xde, 0xf9, 0xde, 0x14, 0,    0,    0,    0,    0,    0,
                                      0,    0,    0,    0,    0,    0,    0,    0,    0,    0x10};

const char *zap_gen_kind_name(zap_gen_kind_t k)
{
    static const char *const names[ZAP_GEN_KIND_COUNT] = {"valid",    "flip-R",   "flip-S",   "flip-A",
                                                           "flip-msg", "S+L",      "wrong-key"};
    return (unsigned)k < ZAP_GEN_KIND_COUNT ? names[k] : "unknown";
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t item_stream(uint64_t seed, uint64_t i, uint64_t salt)
{
    uint64_t s = seed ^ (i * 0xD1B54A32D192ED03ull) ^ (salt * 0xABC98388FB8FAC03ull);
    splitmix(&s);
    return s;
}

static uint32_t msg_len_of(const zap_gen_params_t *p, uint64_t i)
{
    uint32_t max = p->max_msg_len ? p->max_msg_len : 1232;
    uint64_t s = item_stream(p->seed, i, 1);
    return (uint32_t)(splitmix(&s) % ((uint64_t)max + 1));
}

zap_status_t zap_gen_layout(const zap_gen_params_t *p, zap_batch_layout_t *layout_p)
{
    if (!p || !layout_p || p->keys == 0 || !(p->invalid_fraction >= 0 && p->invalid_fraction <= 1)) {
        zap_error("gen: bad parameters (keys must be >= 1, invalid fraction in [0, 1])");
        return ZAP_ERR_INVALID_PARAM;
    }
    uint64_t blob = 0;
    if (p->variable)
        for (uint64_t i = 0; i < p->items; i++) {
            blob += msg_len_of(p, i);
            if (blob > UINT32_MAX) {
                zap_error("gen: message blob of %llu items exceeds 4 GiB", (unsigned long long)p->items);
                return ZAP_ERR_INVALID_PARAM;
            }
        }
    return zap_batch_layout(p->items, ZAP_BATCH_RECORD_SIZE, blob, layout_p);
}

typedef struct gen_job {
    const zap_gen_params_t *p;
    uint8_t *records, *blob;
    const uint64_t *msg_off; /* variable only */
    uint8_t (*pk)[32];
    uint8_t (*sk)[64];
    uint32_t nkeys_total;    /* keys + 1: the extra one signs wrong-key items */
    uint32_t *expected;
    uint8_t *kinds;
    atomic_uint_fast64_t next_key, next_item;
} gen_job_t;

static void gen_key(gen_job_t *j, uint64_t k)
{
    uint8_t in[16], seed[32];
    zap_put64(in, j->p->seed);
    zap_put64(in + 8, k);
    crypto_generichash(seed, 32, in, 16, (const uint8_t *)"zap-gen-key", 11);
    crypto_sign_seed_keypair(j->pk[k], j->sk[k], seed);
}

static void gen_item(gen_job_t *j, uint64_t i, uint8_t *kind_p)
{
    const zap_gen_params_t *p = j->p;
    uint8_t *rec = j->records + i * ZAP_BATCH_RECORD_SIZE;
    uint64_t s = item_stream(p->seed, i, 2);
    uint32_t k = (uint32_t)(i % p->keys);
    uint8_t *msg;
    uint32_t mlen;
    memset(rec, 0, ZAP_BATCH_RECORD_SIZE);
    if (p->variable) {
        msg = j->blob + j->msg_off[i];
        mlen = msg_len_of(p, i);
        zap_put32(rec + ZAP_REC_MSG_OFF, (uint32_t)j->msg_off[i]);
        zap_put32(rec + ZAP_REC_MSG_LEN, mlen);
    } else {
        msg = rec + ZAP_REC_MSG;
        mlen = 32;
    }
    for (uint32_t b = 0; b < mlen; b += 8) {
        uint64_t r = splitmix(&s);
        for (uint32_t c = 0; c < 8 && b + c < mlen; c++)
            msg[b + c] = (uint8_t)(r >> (8 * c));
    }
    double u = (double)(splitmix(&s) >> 11) * (1.0 / 9007199254740992.0);
    zap_gen_kind_t kind = ZAP_GEN_VALID;
    if (u < p->invalid_fraction)
        kind = (zap_gen_kind_t)(1 + splitmix(&s) % (ZAP_GEN_KIND_COUNT - 1));
    if (kind == ZAP_GEN_FLIP_MSG && mlen == 0)
        kind = ZAP_GEN_FLIP_R;
    uint32_t signer = kind == ZAP_GEN_WRONG_KEY ? (k + 1) % j->nkeys_total : k;
    memcpy(rec + ZAP_REC_PK, j->pk[k], 32);
    crypto_sign_detached(rec + ZAP_REC_SIG, NULL, msg, mlen, j->sk[signer]);
    uint64_t bit = splitmix(&s);
    switch (kind) {
    case ZAP_GEN_FLIP_R: rec[ZAP_REC_SIG + (bit % 256) / 8] ^= (uint8_t)(1u << (bit % 8)); break;
    /* S bits 0..251: flipping bit 252+ could leave S >= L, a different
     * (though also invalid) kind. */
    case ZAP_GEN_FLIP_S: rec[ZAP_REC_SIG + 32 + (bit % 252) / 8] ^= (uint8_t)(1u << (bit % 252 % 8)); break;
    case ZAP_GEN_FLIP_A: rec[ZAP_REC_PK + (bit % 256) / 8] ^= (uint8_t)(1u << (bit % 8)); break;
    case ZAP_GEN_FLIP_MSG: msg[(bit % (8ull * mlen)) / 8] ^= (uint8_t)(1u << (bit % 8)); break;
    case ZAP_GEN_S_PLUS_L: {
        unsigned carry = 0;
        for (int b = 0; b < 32; b++) {
            unsigned v = rec[ZAP_REC_SIG + 32 + b] + ED25519_L[b] + carry;
            rec[ZAP_REC_SIG + 32 + b] = (uint8_t)v;
            carry = v >> 8;
        }
        break;
    }
    default: break;
    }
    *kind_p = (uint8_t)kind;
}

static void *gen_worker(void *arg)
{
    gen_job_t *j = arg;
    for (;;) {
        uint64_t k = atomic_fetch_add(&j->next_key, 1);
        if (k >= j->nkeys_total)
            break;
        gen_key(j, k);
    }
    return NULL;
}

static void *gen_items_worker(void *arg)
{
    gen_job_t *j = arg;
    const uint64_t n = j->p->items;
    for (;;) {
        uint64_t lo = atomic_fetch_add(&j->next_item, GEN_CHUNK);
        if (lo >= n)
            break;
        uint64_t hi = lo + GEN_CHUNK < n ? lo + GEN_CHUNK : n;
        for (uint64_t w = lo; w < hi; w += 32) {
            uint32_t word = 0;
            for (uint64_t i = w; i < w + 32 && i < hi; i++) {
                uint8_t kind;
                gen_item(j, i, &kind);
                if (kind == ZAP_GEN_VALID)
                    word |= 1u << (i - w);
                if (j->kinds)
                    j->kinds[i] = kind;
            }
            if (j->expected)
                j->expected[w / 32] = word;
        }
    }
    return NULL;
}

static void run_team(unsigned t, void *(*fn)(void *), gen_job_t *j)
{
    pthread_t tids[256];
    unsigned started = 0;
    for (; started + 1 < t && started < 256; started++)
        if (pthread_create(&tids[started], NULL, fn, j) != 0)
            break;
    fn(j);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
}

zap_status_t zap_gen_batch(const zap_gen_params_t *p, void *buf, size_t len, uint32_t *expected, uint8_t *kinds)
{
    zap_batch_layout_t l;
    zap_status_t s = zap_gen_layout(p, &l);
    if (s != ZAP_OK)
        return s;
    if (!buf || len < l.total_bytes) {
        zap_error("gen: buffer of %zu bytes, the batch needs %llu", len, (unsigned long long)l.total_bytes);
        return ZAP_ERR_INVALID_PARAM;
    }
    if (sodium_init() < 0) {
        zap_error("gen: sodium_init failed");
        return ZAP_ERR_UNSUPPORTED;
    }
    gen_job_t j;
    memset(&j, 0, sizeof(j));
    j.p = p;
    j.records = (uint8_t *)buf + l.records_off;
    j.blob = (uint8_t *)buf + l.blob_off;
    j.expected = expected;
    j.kinds = kinds;
    j.nkeys_total = p->keys + 1;
    j.pk = malloc((size_t)j.nkeys_total * 32);
    j.sk = malloc((size_t)j.nkeys_total * 64);
    uint64_t *off = p->variable ? malloc((size_t)(p->items ? p->items : 1) * sizeof(uint64_t)) : NULL;
    if (!j.pk || !j.sk || (p->variable && !off)) {
        zap_error("gen: no memory for %u keys", j.nkeys_total);
        s = ZAP_ERR_NO_MEMORY;
        goto out;
    }
    if (p->variable) {
        uint64_t o = 0;
        for (uint64_t i = 0; i < p->items; i++) {
            off[i] = o;
            o += msg_len_of(p, i);
        }
        j.msg_off = off;
    }
    unsigned t = p->threads;
    if (t == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        t = c > 0 ? (unsigned)c : 1;
    }
    atomic_init(&j.next_key, 0);
    atomic_init(&j.next_item, 0);
    run_team(t, gen_worker, &j);
    run_team(t, gen_items_worker, &j);
    zap_batch_view_t v;
    memset(&v, 0, sizeof(v));
    v.scheme = ZAP_SCHEME_ED25519_LIBSODIUM_1_0_18;
    v.flags = p->variable ? 0 : ZAP_BATCH_FLAG_FIXED_MSG;
    v.stride = ZAP_BATCH_RECORD_SIZE;
    v.fixed_msg_len = p->variable ? 0 : 32;
    v.n_items = p->items;
    v.batch_id = p->batch_id;
    v.blob_len = l.total_bytes - l.blob_off;
    s = zap_batch_write_header(buf, len, &v);
out:
    sodium_memzero(j.sk ? (void *)j.sk : (void *)&j, j.sk ? (size_t)j.nkeys_total * 64 : 0);
    free(j.pk);
    free(j.sk);
    free(off);
    return s;
}
