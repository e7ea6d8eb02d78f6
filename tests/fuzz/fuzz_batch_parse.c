/* Fuzz target: the batch parser (core/verify/batch_format.c), the decoder of
 * every batch file and of every batch the root of a verification job sends.
 *
 * Properties checked on every input, beyond "no crash, no out-of-bounds read"
 * (AddressSanitizer and UBSan find those):
 *  - with and without the CRC check the parser agrees on every reason except
 *    the CRC itself, and refuses with a status matching its reason;
 *  - an accepted view points inside the input: records, n_items * stride
 *    bytes from records_off, and the blob after the records' end;
 *  - re-writing an accepted batch with zap_batch_layout and
 *    zap_batch_write_header yields a batch that parses to the same fields. */
#include "fuzz_target.h"
#include "zap/verify.h"
#include <stdlib.h>
#include <string.h>

static zap_status_t expected_status(zap_batch_reason_t r)
{
    switch (r) {
    case ZAP_BATCH_OK: return ZAP_OK;
    case ZAP_BATCH_ERR_VERSION: return ZAP_ERR_VERSION;
    case ZAP_BATCH_ERR_SCHEME: return ZAP_ERR_UNSUPPORTED;
    default: return ZAP_ERR_CORRUPT;
    }
}

static void check_view_inside(const zap_batch_view_t *v, const uint8_t *data, size_t size)
{
    const uint8_t *end = data + size;
    FUZZ_CHECK(v->records >= data + ZAP_BATCH_HEADER_SIZE && v->records <= end);
    FUZZ_CHECK(v->stride >= 16 && v->stride <= ZAP_BATCH_MAX_STRIDE && v->stride % 16 == 0);
    FUZZ_CHECK(v->n_items <= (uint64_t)(end - v->records) / v->stride);
    const uint8_t *rec_end = v->records + v->n_items * v->stride;
    if (v->blob_len) {
        FUZZ_CHECK(v->blob != NULL && v->blob >= rec_end && v->blob <= end);
        FUZZ_CHECK(v->blob_len <= (uint64_t)(end - v->blob));
        FUZZ_CHECK(!(v->flags & ZAP_BATCH_FLAG_FIXED_MSG));
    } else {
        FUZZ_CHECK(v->blob == NULL);
    }
    FUZZ_CHECK(v->scheme == ZAP_SCHEME_ED25519_LIBSODIUM_1_0_18);
    FUZZ_CHECK(v->version == ZAP_BATCH_VERSION);
}

/* Lays the accepted batch out afresh and checks it parses to the same view. */
static void check_rewrite(const zap_batch_view_t *v)
{
    zap_batch_layout_t l;
    if (zap_batch_layout(v->n_items, v->stride, v->blob_len, &l) != ZAP_OK)
        return; /* the parser accepts what the writer's stricter limits refuse: fine */
    if (l.total_bytes > (1u << 24))
        return;
    uint8_t *b = calloc(1, (size_t)l.total_bytes ? (size_t)l.total_bytes : 1);
    FUZZ_CHECK(b != NULL);
    memcpy(b + l.records_off, v->records, (size_t)(v->n_items * v->stride));
    if (v->blob_len)
        memcpy(b + l.blob_off, v->blob, (size_t)v->blob_len);
    FUZZ_CHECK(zap_batch_write_header(b, (size_t)l.total_bytes, v) == ZAP_OK);
    zap_batch_view_t w;
    zap_batch_reason_t r = ZAP_BATCH_REASON_COUNT;
    FUZZ_CHECK(zap_batch_parse(b, (size_t)l.total_bytes, 0, &w, &r, NULL, 0) == ZAP_OK);
    FUZZ_CHECK(r == ZAP_BATCH_OK);
    FUZZ_CHECK(w.n_items == v->n_items && w.stride == v->stride && w.flags == v->flags);
    FUZZ_CHECK(w.blob_len == v->blob_len && w.batch_id == v->batch_id);
    FUZZ_CHECK(w.fixed_msg_len == v->fixed_msg_len && w.scheme == v->scheme);
    FUZZ_CHECK(memcmp(w.records, v->records, (size_t)(v->n_items * v->stride)) == 0);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly size bytes, so any read past the end is caught even
     * when the driver's buffer is larger. */
    uint8_t *copy = malloc(size ? size : 1);
    FUZZ_CHECK(copy != NULL);
    if (size)
        memcpy(copy, data, size);

    zap_batch_view_t v1, v2;
    memset(&v1, 0xa5, sizeof(v1));
    zap_batch_view_t untouched = v1;
    zap_batch_reason_t r1 = ZAP_BATCH_REASON_COUNT, r2 = ZAP_BATCH_REASON_COUNT;
    char detail[96];
    zap_status_t s1 = zap_batch_parse(copy, size, 0, &v1, &r1, detail, sizeof(detail));
    zap_status_t s2 = zap_batch_parse(copy, size, ZAP_BATCH_PARSE_SKIP_CRC, &v2, &r2, NULL, 0);

    FUZZ_CHECK(r1 < ZAP_BATCH_REASON_COUNT && r2 < ZAP_BATCH_REASON_COUNT);
    FUZZ_CHECK(s1 == expected_status(r1) && s2 == expected_status(r2));
    FUZZ_CHECK(r2 != ZAP_BATCH_ERR_CRC);
    FUZZ_CHECK(memchr(detail, '\0', sizeof(detail)) != NULL);
    if (r1 == ZAP_BATCH_ERR_CRC)
        FUZZ_CHECK(s2 == ZAP_OK);
    else
        FUZZ_CHECK(r1 == r2);
    if (s1 != ZAP_OK)
        FUZZ_CHECK(memcmp(&v1, &untouched, sizeof(v1)) == 0); /* written only on success */
    if (s2 == ZAP_OK)
        check_view_inside(&v2, copy, size);
    if (s1 == ZAP_OK) {
        FUZZ_CHECK(memcmp(&v1, &v2, sizeof(v1)) == 0);
        check_rewrite(&v1);
    }
    free(copy);
    return 0;
}
