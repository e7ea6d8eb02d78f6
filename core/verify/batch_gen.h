/* Seeded Ed25519 batches in the zap batch format, for tests, benchmarks and
 * `zap-verify gen` (library zap_verify_gen; not in libzap or the public API).
 * The items come from the one Ed25519 generator,
 * cuda/ed25519/ed25519_testgen.h, with a mix whose every corruption can
 * never verify: each item is signed by one of `keys` key pairs, and a
 * fraction of them (drawn per item) is corrupted in one of the ways of
 * zap_gen_kind_t. So the expected verdict of every item is known by
 * construction (valid exactly when not corrupted); the tests check it
 * against libsodium. The bytes depend on the parameters only, never on the
 * thread count. */
#ifndef ZAP_VERIFY_BATCH_GEN_H
#define ZAP_VERIFY_BATCH_GEN_H
#include <stdint.h>
#include "zap/verify.h"

/* The generator's kinds (ZAP_MUT_* of ed25519_testgen.h, numbered densely). */
typedef enum zap_gen_kind {
    ZAP_GEN_VALID = 0,
    ZAP_GEN_FLIP_R,     /* one bit of R flipped */
    ZAP_GEN_FLIP_S,     /* one bit of S flipped */
    ZAP_GEN_FLIP_A,     /* one bit of the public key flipped */
    ZAP_GEN_FLIP_MSG,   /* one bit of the message flipped (R for empty messages) */
    ZAP_GEN_S_PLUS_L,   /* S replaced by S + L: same point, not reduced */
    ZAP_GEN_WRONG_KEY,  /* another key pair's public key */
    ZAP_GEN_KIND_COUNT
} zap_gen_kind_t;

typedef struct zap_gen_params {
    uint64_t items;
    uint32_t keys;            /* distinct key pairs (>= 1) */
    double invalid_fraction;  /* 0..1 */
    uint64_t seed;
    int variable;             /* 0: fixed 32-byte messages; 1: 0..max_msg_len bytes in a blob */
    uint32_t max_msg_len;     /* variable only; 0 means 1232 */
    unsigned threads;         /* 0: all cores */
    uint64_t batch_id;
} zap_gen_params_t;

/* Layout of the batch zap_gen_batch writes for p (the blob size depends on
 * the seeded message lengths). */
zap_status_t zap_gen_layout(const zap_gen_params_t *p, zap_batch_layout_t *layout_p);

/* Writes the whole batch (header included) into buf (len >= total_bytes of
 * zap_gen_layout) and, when expected is not NULL, the expected verdict
 * bitmap (ceil(items/32) words). kinds (optional) gets each item's kind. */
zap_status_t zap_gen_batch(const zap_gen_params_t *p, void *buf, size_t len, uint32_t *expected, uint8_t *kinds);

const char *zap_gen_kind_name(zap_gen_kind_t k);
#endif
