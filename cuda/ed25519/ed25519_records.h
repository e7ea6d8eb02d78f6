/* Batch record layouts for Ed25519 verification (little endian, fixed stride,
 * the stride usually 128) and the one decoder the host and the GPU share.
 *
 *   fixed message:    pk[32] R[32] S[32] msg[32]
 *   variable message: pk[32] sig[64] msg_off u32 msg_len u32 pad[24]
 *                     the message is blob[msg_off, msg_off + msg_len)
 *
 * A variable record whose message range does not lie inside the blob is
 * malformed (verdict 2); nothing is read outside the blob. */
#ifndef ZAP_ED25519_RECORDS_H
#define ZAP_ED25519_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "base/le.h"
#include "ed25519_sha512.h" /* ZAP_HD_INLINE */

#define ZAP_ED25519_VERDICT_INVALID 0
#define ZAP_ED25519_VERDICT_VALID 1
#define ZAP_ED25519_VERDICT_MALFORMED 2

/* Smallest legal stride of each layout. */
#define ZAP_ED25519_FIXED_RECORD_MIN 128u
#define ZAP_ED25519_VAR_RECORD_MIN 104u

/* Where the message of record rec is: *msg_p, *len_p. Returns 1 if the record
 * is well formed, 0 if its message range lies outside the blob. */
ZAP_HD_INLINE int zap_ed25519_record_msg(const uint8_t *rec, int variable_msgs,
                                         const uint8_t *blob, uint64_t blob_len,
                                         const uint8_t **msg_p, uint64_t *len_p)
{
    if (!variable_msgs) {
        *msg_p = rec + 96;
        *len_p = 32;
        return 1;
    }
    uint64_t off = zap_get_le32(rec + 96);
    uint64_t len = zap_get_le32(rec + 100);
    if (off > blob_len || len > blob_len - off)
        return 0;
    *msg_p = blob + off;
    *len_p = len;
    return 1;
}
#endif
