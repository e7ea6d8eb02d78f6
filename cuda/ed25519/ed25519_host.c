/* Host reference verifier: the GPU's arithmetic (ed25519_arith.h) compiled
 * as C11, plus the base-point table that the host and the GPU both use.
 *
 * The table is computed, not typed in: B is decoded from its standard
 * encoding (y = 4/5, x even) with the same point decoder that decodes keys,
 * and its multiples 1..64 are formed with the same addition formula the
 * verifier uses, then made affine (entry 0 is the identity). A wrong table
 * would make every valid signature fail, which the RFC 8032 tests catch at
 * once. */
#include "ed25519_host.h"

#include <pthread.h>
#include <string.h>

#include "base/log.h"

#include "ed25519_records.h"

void zap_ed25519_btab_build(zap_ge_niels_t out[ZAP_ED25519_BTAB_N])
{
    uint8_t enc[32];
    memset(enc, 0x66, sizeof(enc));
    enc[0] = 0x58;
    zap_ge_p3_t b;
    int ok = zap_ge_frombytes(&b, enc);
    (void)ok; /* the constant encoding always decodes; the tests prove it */

    zap_ge_p1p1_t t;
    zap_ge_p3_t cur = b;
    zap_ge_cached_t cb;
    zap_ge_p3_to_cached(&cb, &b);
    zap_ge_niels_0(&out[0]);
    for (int i = 1; i < ZAP_ED25519_BTAB_N; i++) {
        zap_fe_t recip, x, y, v, d2;
        uint8_t s[32];
        zap_fe_invert(&recip, &cur.Z);
        zap_fe_mul(&x, &cur.X, &recip);
        zap_fe_mul(&y, &cur.Y, &recip);
        /* store canonical limbs (level 2 at most) */
        zap_fe_add(&v, &y, &x);
        zap_fe_tobytes(s, &v);
        zap_fe_frombytes(&out[i].ypx, s);
        zap_fe_sub(&v, &y, &x);
        zap_fe_tobytes(s, &v);
        zap_fe_frombytes(&out[i].ymx, s);
        zap_fe_d2(&d2);
        zap_fe_mul(&v, &x, &y);
        zap_fe_mul(&v, &v, &d2);
        zap_fe_tobytes(s, &v);
        zap_fe_frombytes(&out[i].xy2d, s);
        zap_ge_add(&t, &cur, &cb); /* cur = (i + 1) B */
        zap_ge_p1p1_to_p3(&cur, &t);
    }
}

static zap_ge_niels_t zap_ed25519_btab_storage[ZAP_ED25519_BTAB_N];
static pthread_once_t zap_ed25519_btab_once = PTHREAD_ONCE_INIT;

static void zap_ed25519_btab_init(void)
{
    zap_ed25519_btab_build(zap_ed25519_btab_storage);
}

const zap_ge_niels_t *zap_ed25519_btab(void)
{
    pthread_once(&zap_ed25519_btab_once, zap_ed25519_btab_init);
    return zap_ed25519_btab_storage;
}

int zap_ed25519_verify_host(const uint8_t pk[32], const uint8_t sig[64], const uint8_t *msg,
                            size_t len)
{
    static const uint8_t empty[1] = {0};
    if (msg == NULL)
        msg = empty;
    return zap_ed25519_verify_item(pk, sig, sig + 32, msg, (uint64_t)len, zap_ed25519_btab());
}

zap_status_t zap_ed25519_verify_host_batch(const void *records, size_t stride, uint64_t n,
                                           int variable_msgs, const void *blob,
                                           uint64_t blob_len, uint8_t *verdicts)
{
    size_t min = variable_msgs ? ZAP_ED25519_VAR_RECORD_MIN : ZAP_ED25519_FIXED_RECORD_MIN;
    if (n == 0)
        return ZAP_OK;
    if (records == NULL || verdicts == NULL || stride < min ||
        (variable_msgs && blob == NULL && blob_len > 0)) {
        zap_error("ed25519: host batch: bad arguments (records %p, verdicts %p, stride %zu, "
                  "minimum %zu)",
                  records, (void *)verdicts, stride, min);
        return ZAP_ERR_INVALID_PARAM;
    }
    const zap_ge_niels_t *btab = zap_ed25519_btab();
    static const uint8_t empty[1] = {0};
    const uint8_t *b = blob ? (const uint8_t *)blob : empty;
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *rec = (const uint8_t *)records + i * stride;
        const uint8_t *msg;
        uint64_t len;
        if (!zap_ed25519_record_msg(rec, variable_msgs, b, blob_len, &msg, &len)) {
            verdicts[i] = ZAP_ED25519_VERDICT_MALFORMED;
            continue;
        }
        verdicts[i] = (uint8_t)zap_ed25519_verify_item(rec, rec + 32, rec + 64, msg, len, btab);
    }
    return ZAP_OK;
}
