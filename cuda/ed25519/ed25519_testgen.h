/* The one seeded generator of Ed25519 batches, with libsodium as the oracle:
 * the GPU tests (tests/ed25519) and the benchmark call it directly, and the
 * verify layer's zap batches (`zap-verify gen`, tests/verify, the MPI and
 * bad-input suites, the fuzz seeds) are written around it
 * (core/verify/batch_gen.c). Not part of the zap library.
 *
 * Every item starts as a real signature made by libsodium with one of n_keys
 * distinct key pairs; a mutation is then applied (or not) and the expected
 * verdict is what libsodium 1.0.18's crypto_sign_verify_detached says about
 * the final bytes (or, with skip_oracle, what the mutation intends). Item i
 * depends only on (seed, i), so generation runs on all cores, the bytes do
 * not depend on the thread count, and a failing item can be regenerated
 * alone. */
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

/* All-zero fields are the defaults, except n_keys. */
typedef struct zap_ed25519_gen_params {
    uint64_t seed;
    uint64_t n;
    uint32_t n_keys;         /* distinct key pairs the items are signed with (>= 1) */
    int variable_msgs;       /* 0: 128-byte fixed records; 1: variable records + blob */
    uint32_t max_msg_len;    /* variable records: lengths uniform in [min_msg_len, max_msg_len] */
    uint32_t min_msg_len;
    int all_mutations;       /* 1: every mutation kind mixed in (differential sets) */
    uint32_t invalid_ppm;    /* all_mutations 0: this many items per million get a
                              * mutation of invalid_kinds (benchmark mixes) */
    int threads;             /* 0: all online CPUs */
    int skip_oracle;         /* 1: expected = intended verdict, no libsodium pass */
    uint32_t invalid_kinds;  /* all_mutations 0: the kinds (bits 1u << kind) an invalid
                              * item is drawn from, uniformly; 0: the four bit flips.
                              * Only kinds that can never verify keep skip_oracle exact. */
} zap_ed25519_gen_params_t;

/* The kinds that never verify: with them, an item is valid exactly when it is
 * not mutated (what `zap-verify gen` mixes). */
#define ZAP_ED25519_ALWAYS_INVALID_KINDS                                                                       \
    ((1u << ZAP_MUT_FLIP_R) | (1u << ZAP_MUT_FLIP_S) | (1u << ZAP_MUT_FLIP_A) | (1u << ZAP_MUT_FLIP_MSG) |         \
     (1u << ZAP_MUT_S_PLUS_L) | (1u << ZAP_MUT_WRONG_KEY))

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

/* Fill *out (caller's struct; buffers allocated here, released with
 * zap_ed25519_batch_free). Returns 0, or -1 on bad parameters or failed
 * allocation/signing (out is then freed). */
int zap_ed25519_gen(const zap_ed25519_gen_params_t *p, zap_ed25519_batch_t *out);
void zap_ed25519_batch_free(zap_ed25519_batch_t *b);

/* The blob bytes the batch of p needs (0 for fixed messages): the sum of its
 * seeded message lengths. Returns 0, or -1 on bad parameters or a blob
 * beyond the 32-bit offsets of the records. */
int zap_ed25519_gen_blob_len(const zap_ed25519_gen_params_t *p, uint64_t *blob_len_p);

/* zap_ed25519_gen into the caller's buffers (borrowed): b->records (p->n
 * records of b->stride >= 128 bytes), b->blob of b->blob_len =
 * zap_ed25519_gen_blob_len bytes (variable messages), and, when not NULL,
 * b->expected and b->kind (p->n bytes each). b->n and b->variable_msgs are
 * set here. Returns 0, or -1 (the buffers' contents are then undefined). */
int zap_ed25519_gen_into(const zap_ed25519_gen_params_t *p, zap_ed25519_batch_t *b);

/* libsodium verdicts for every item of b on `threads` threads (0: all CPUs);
 * malformed records get 2. Returns the wall time in seconds. */
double zap_ed25519_oracle(const zap_ed25519_batch_t *b, uint64_t first, uint64_t count,
                          uint8_t *verdicts, int threads);

int zap_ed25519_online_cpus(void);

#ifdef __cplusplus
}
#endif
#endif
