/* Fuzz target: the record decoder of the CPU verifier (core/verify/verifier.c)
 * behind the parser: message offsets and lengths read from each record of a
 * variable-message batch, fixed-message records, and the verdict bitmap.
 *
 * The input is parsed without the CRC (a fuzzer cannot be expected to fix
 * checksums) and batches of at most 8 items are verified on one thread.
 * Properties: verdicts are 0, 1 or 2; the bitmap bit of item i is set exactly
 * when its verdict is 1 and bits past n_items are zero; the counts in the
 * stats add up; a malformed verdict appears exactly when the message range
 * lies outside the blob; every verdict equals libsodium's
 * (zap_verify_ed25519_one) on the same bytes. */
#include "fuzz_target.h"
#include "zap/verify.h"
#include "base/le.h"
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zap_batch_view_t v;
    if (zap_batch_parse(data, size, ZAP_BATCH_PARSE_SKIP_CRC, &v, NULL, NULL, 0) != ZAP_OK)
        return 0;
    if (v.n_items > 8)
        return 0;
    uint32_t bitmap[1] = {0xdeadbeefu};
    uint8_t verdicts[8];
    memset(verdicts, 0xee, sizeof(verdicts));
    zap_verify_params_t p;
    memset(&p, 0, sizeof(p));
    p.verifier = ZAP_VERIFIER_CPU;
    p.threads = 1;
    zap_verify_stats_t st;
    zap_status_t s = zap_verify_batch(&v, &p, bitmap, verdicts, &st);
    FUZZ_CHECK(s == ZAP_OK);
    FUZZ_CHECK(st.checked == v.n_items);
    uint64_t invalid = 0, malformed = 0;
    for (uint64_t i = 0; i < v.n_items; i++) {
        FUZZ_CHECK(verdicts[i] <= 2);
        FUZZ_CHECK(((bitmap[0] >> i) & 1u) == (verdicts[i] == 1));
        invalid += verdicts[i] != 1;
        malformed += verdicts[i] == 2;
        const uint8_t *rec = v.records + i * v.stride;
        const uint8_t *msg;
        uint64_t mlen;
        if (v.flags & ZAP_BATCH_FLAG_FIXED_MSG) {
            msg = rec + 96;
            mlen = 32;
        } else {
            uint64_t off = zap_get_le32(rec + 96), len = zap_get_le32(rec + 100);
            int outside = off > v.blob_len || len > v.blob_len - off;
            FUZZ_CHECK((verdicts[i] == 2) == outside);
            if (outside)
                continue;
            msg = len ? v.blob + off : rec;
            mlen = len;
        }
        FUZZ_CHECK(verdicts[i] == zap_verify_ed25519_one(rec, rec + 32, msg, mlen));
    }
    if (v.n_items > 0 && v.n_items < 32)
        FUZZ_CHECK((bitmap[0] >> v.n_items) == 0);
    FUZZ_CHECK(st.invalid == invalid && st.malformed == malformed);
    return 0;
}
