/* Seeded generator of Ed25519 batches with libsodium as the oracle, shared by
 * the tests (tests/ed25519) and the benchmark. Not part of the zap library.
 *
 * Every item starts as a real signature made by libsodium with one of n_keys
 * distinct key pairs; a mutation is then applied (or not) and the expected
 * verdict is what libsodium 1.0.18's crypto_sign_verify_detached says about
 * the final bytes. Item i depends only on (seed, i), so generation runs on
 * all cores and a failing item can be regenerated alone. */
#ifndef ZAP_ED25519_TESTGEN_H
#define ZAP_ED25519_TESTGEN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What was done to an item. */
typedef enum zap_ed25519_mut {
    ZAP_MUT_NONE = 0,         /* valid signature */
    ZAP_MUT_FLIP_R,           /* one bit of R flipped */
    ZAP_MUT_FLIP_S,           /* one bit of S flipped */
    ZAP_MUT_FLIP_A,           /* one bit of the public key flipped */
    ZAP_MUT_FLIP_MSG,         /* one bit of the message flipped */
    ZAP_MUT_S_PLUS_L,         /* S + L: same value mod L, not reduced */
    ZAP_MUT_S_EQ_L,           /* S = L exactly */
    ZAP_MUT_S_RANDOM_HIGH,    /* S random with some of the top 4 bits set */
    ZAP_MUT_R_NONCANONICAL,   /* R's y replaced by p + j (j < 19), either sign */
    ZAP_MUT_A_NONCANONICAL,   /* A's y replaced by p + j */
    ZAP_MUT_R_SMALL_ORDER,    /* R = an encoding of a small-order point */
    ZAP_MUT_A_SMALL_ORDER,    /* A = an encoding of a small-order point */
    ZAP_MUT_WRONG_KEY,        /* another key pair's public key */
    ZAP_MUT_A_MIXED_ORDER,    /* A + T (T order 8), re-signed for that key (1/8 valid) */
    ZAP_MUT_R_MIXED_ORDER,    /* R + T, S recomputed for it (invalid, cofactorless) */
    ZAP_MUT_A_RANDOM,         /* 32 random bytes as key (often not a point) */
    ZAP_MUT_R_RANDOM,         /* 32 random bytes as R */
    ZAP_MUT_SMALL_A_FORGERY,  /* small-order A with R = [S]B: cofactored-valid forgery */
    ZAP_MUT_MALFORMED,        /* variable records only: message range outside the blob */
    ZAP_MUT_COUNT
} zap_ed25519_mut_t;

const char *zap_ed25519_mut_name(int kind);

typedef struct zap_ed25519_gen_params {
    uint64_t seed;
    uint64_t n;
    uint32_t n_keys;         /* distinct key pairs (>= 2) */
    int variable_msgs;       /* 0: 128-byte fixed records; 1: variable records + blob */
    uint32_t max_msg_len;    /* variable records: lengths uniform in [min_msg_len, max_msg_len] */
    uint32_t min_msg_len;
    int all_mutations;       /* 1: every mutation kind mixed in (differential sets) */
    uint32_t invalid_ppm;    /* 0: only bit flips of R, S, A or the message, on this
                              * many items per million (benchmark mixes) */
    int threads;             /* 0: all online CPUs */
    int skip_oracle;         /* 1: expected = intended verdict, no libsodium pass */
} zap_ed25519_gen_params_t;

typedef struct zap_ed25519_batch {
    uint8_t *records; /* n * stride bytes, malloc'ed */
    size_t stride;    /* 128 */
    uint64_t n;
    int variable_msgs;
    uint8_t *blob; /* variable records: the messages (malloc'ed), else NULL */
    uint64_t blob_len;
    uint8_t *expected; /* libsodium's verdict per item (2: malformed) */
    uint8_t *kind;     /* zap_ed25519_mut_t per item */
} zap_ed25519_batch_t;

/* Fill *out (caller's struct; buffers allocated here). Returns 0, or -1 on
 * bad parameters or failed allocation/signing (out is then freed). */
int zap_ed25519_gen(const zap_ed25519_gen_params_t *p, zap_ed25519_batch_t *out);
void zap_ed25519_batch_free(zap_ed25519_batch_t *b);

/* libsodium verdicts for every item of b on `threads` threads (0: all CPUs);
 * malformed records get 2. Returns the wall time in seconds. */
double zap_ed25519_oracle(const zap_ed25519_batch_t *b, uint64_t first, uint64_t count,
                          uint8_t *verdicts, int threads);

int zap_ed25519_online_cpus(void);

#ifdef __cplusplus
}
#endif
#endif
