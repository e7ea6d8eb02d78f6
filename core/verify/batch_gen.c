/* Seeded batches in the zap batch format (batch_gen.h): the layout, the
 * header and the verdicts around the one Ed25519 generator
 * (cuda/ed25519/ed25519_testgen.c), which writes the records and the message
 * blob in place in the caller's buffer. Signing costs about one fixed-base
 * scalar multiplication per item, on every core. */
#include "verify/batch_gen.h"
#include "verify/verify_impl.h"
#include "base/log.h"
#include "ed25519_testgen.h"
#include <stdlib.h>

/* Default longest variable message: a Solana transaction's payload. */
#define ZAP_GEN_MAX_MSG_LEN 1232

const char *zap_gen_kind_name(zap_gen_kind_t k)
{
    static const char *const names[ZAP_GEN_KIND_COUNT] = {"valid",    "flip-R", "flip-S",   "flip-A",
                                                           "flip-msg", "S+L",    "wrong-key"};
    return (unsigned)k < ZAP_GEN_KIND_COUNT ? names[k] : "unknown";
}

/* The generator's kind of a mutation of ZAP_ED25519_ALWAYS_INVALID_KINDS. */
static uint8_t kind_of(uint8_t mut)
{
    switch (mut) {
    case ZAP_MUT_FLIP_R: return ZAP_GEN_FLIP_R;
    case ZAP_MUT_FLIP_S: return ZAP_GEN_FLIP_S;
    case ZAP_MUT_FLIP_A: return ZAP_GEN_FLIP_A;
    case ZAP_MUT_FLIP_MSG: return ZAP_GEN_FLIP_MSG;
    case ZAP_MUT_S_PLUS_L: return ZAP_GEN_S_PLUS_L;
    case ZAP_MUT_WRONG_KEY: return ZAP_GEN_WRONG_KEY;
    default: return ZAP_GEN_VALID;
    }
}

/* The Ed25519 generator's parameters for p: valid exactly when unmutated. */
static zap_ed25519_gen_params_t engine_params(const zap_gen_params_t *p)
{
    zap_ed25519_gen_params_t e;
    memset(&e, 0, sizeof(e));
    e.seed = p->seed;
    e.n = p->items;
    e.n_keys = p->keys;
    e.variable_msgs = p->variable != 0;
    e.max_msg_len = p->max_msg_len ? p->max_msg_len : ZAP_GEN_MAX_MSG_LEN;
    e.invalid_ppm = (uint32_t)(p->invalid_fraction * 1e6 + 0.5);
    e.invalid_kinds = ZAP_ED25519_ALWAYS_INVALID_KINDS;
    e.threads = (int)p->threads;
    e.skip_oracle = 1;
    return e;
}

zap_status_t zap_gen_layout(const zap_gen_params_t *p, zap_batch_layout_t *layout_p)
{
    if (!p || !layout_p || p->keys == 0 || !(p->invalid_fraction >= 0 && p->invalid_fraction <= 1)) {
        zap_error("gen: bad parameters (keys must be >= 1, invalid fraction in [0, 1])");
        return ZAP_ERR_INVALID_PARAM;
    }
    zap_ed25519_gen_params_t e = engine_params(p);
    uint64_t blob = 0;
    if (zap_ed25519_gen_blob_len(&e, &blob) != 0) {
        zap_error("gen: message blob of %llu items exceeds 4 GiB", (unsigned long long)p->items);
        return ZAP_ERR_INVALID_PARAM;
    }
    return zap_batch_layout(p->items, ZAP_BATCH_RECORD_SIZE, blob, layout_p);
}

/* The expected verdict bitmap from each item's kind. */
static void expected_of(const uint8_t *kinds, uint64_t n, uint32_t *expected)
{
    for (uint64_t w = 0; w < (n + 31) / 32; w++) {
        uint32_t word = 0;
        for (uint64_t i = w * 32; i < n && i < w * 32 + 32; i++)
            word |= (uint32_t)(kinds[i] == ZAP_GEN_VALID) << (i - w * 32);
        expected[w] = word;
    }
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
    uint8_t *kind = kinds;
    if (!kind && expected && !(kind = malloc((size_t)(p->items ? p->items : 1)))) {
        zap_error("gen: no memory for the kinds of %llu items", (unsigned long long)p->items);
        return ZAP_ERR_NO_MEMORY;
    }
    zap_ed25519_gen_params_t e = engine_params(p);
    zap_ed25519_batch_t b;
    memset(&b, 0, sizeof(b));
    b.records = (uint8_t *)buf + l.records_off;
    b.stride = ZAP_BATCH_RECORD_SIZE;
    b.blob = (uint8_t *)buf + l.blob_off;
    b.blob_len = l.total_bytes - l.blob_off;
    b.kind = kind;
    if (zap_ed25519_gen_into(&e, &b) != 0) {
        zap_error("gen: signing %llu items failed (libsodium, or no memory)", (unsigned long long)p->items);
        s = ZAP_ERR_NO_MEMORY;
    }
    for (uint64_t i = 0; s == ZAP_OK && kind && i < p->items; i++)
        kind[i] = kind_of(kind[i]);
    if (s == ZAP_OK && expected)
        expected_of(kind, p->items, expected);
    if (kind != kinds)
        free(kind);
    if (s != ZAP_OK)
        return s;
    zap_batch_view_t v;
    memset(&v, 0, sizeof(v));
    v.scheme = ZAP_SCHEME_ED25519_LIBSODIUM_1_0_18;
    v.flags = p->variable ? 0 : ZAP_BATCH_FLAG_FIXED_MSG;
    v.stride = ZAP_BATCH_RECORD_SIZE;
    v.fixed_msg_len = p->variable ? 0 : 32;
    v.n_items = p->items;
    v.batch_id = p->batch_id;
    v.blob_len = l.total_bytes - l.blob_off;
    return zap_batch_write_header(buf, len, &v);
}
