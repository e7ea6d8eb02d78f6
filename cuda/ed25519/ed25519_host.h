/* Host side of the Ed25519 verifier: the reference verifier built from the
 * same arithmetic the GPU runs (ed25519_arith.h), and the base-point table
 * both use. Internal to zap (the verify layer and the tests include it). */
#ifndef ZAP_ED25519_HOST_H
#define ZAP_ED25519_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "zap/status.h"

#include "ed25519_arith.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fill out[0..64] with the affine multiples jB of the base point in
 * (y+x, y-x, 2dxy) form, canonical limbs, out[0] the identity (1, 1, 0).
 * Pure computation; thread-safe. */
void zap_ed25519_btab_build(zap_ge_niels_t out[ZAP_ED25519_BTAB_N]);

/* The process-wide table, built on first use (pthread_once). Never NULL. */
const zap_ge_niels_t *zap_ed25519_btab(void);

/* Verify one signature under libsodium 1.0.18's rule (docs/ed25519.md).
 * pk: 32 bytes, sig: 64 bytes (R || S), msg: len bytes (may be NULL when len
 * is 0); all borrowed for the call. Returns 1 if valid, 0 if invalid.
 * Thread-safe, non-blocking (about 100 us of CPU). */
int zap_ed25519_verify_host(const uint8_t pk[32], const uint8_t sig[64], const uint8_t *msg,
                            size_t len);

/* Verify n records (layouts in ed25519_records.h) on the calling thread and
 * write one verdict per item into verdicts[0..n-1] (1 valid, 0 invalid,
 * 2 malformed). records (n * stride bytes), blob (blob_len bytes, variable
 * messages only, may be NULL otherwise) and verdicts are borrowed.
 * Returns ZAP_OK, or ZAP_ERR_INVALID_PARAM (stride below the layout's size,
 * a NULL pointer with n > 0) with verdicts untouched. Thread-safe. */
zap_status_t zap_ed25519_verify_host_batch(const void *records, size_t stride, uint64_t n,
                                           int variable_msgs, const void *blob,
                                           uint64_t blob_len, uint8_t *verdicts);

#ifdef __cplusplus
}
#endif
#endif
