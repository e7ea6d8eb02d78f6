/* The segment plan of a scatter stream and the cut of a segment into chunks
 * (stream.h): pure arithmetic that the root and every rank compute alike,
 * so both ends agree on every message without exchanging the plan. */
#include "verify/stream.h"
#include "verify/verify_impl.h"
#include "verify_device.h"

void zap_verify_seg_rebase(uint8_t *records, uint32_t stride, uint64_t count, uint64_t lo, uint64_t hi)
{
    for (uint64_t i = 0; i < count; i++) {
        uint8_t *rec = records + i * stride;
        uint64_t off = zap_get_le32(rec + ZAP_REC_MSG_OFF), len = zap_get_le32(rec + ZAP_REC_MSG_LEN);
        if (off < lo || off + len > hi) {
            zap_put_le32(rec + ZAP_REC_MSG_OFF, UINT32_MAX); /* outside any slice: stays malformed */
            zap_put_le32(rec + ZAP_REC_MSG_LEN, UINT32_MAX);
        } else {
            zap_put_le32(rec + ZAP_REC_MSG_OFF, (uint32_t)(off - lo));
        }
    }
}

uint64_t zap_verify_seg_chunk(const zap_verify_seg_t *g, uint32_t stride, uint64_t cap)
{
    uint64_t c = ZAP_VERIFY_RING_SLOT_BYTES;
    if (cap > 0 && cap < c)
        c = cap;
    if (!g->blob && stride > 0)
        c = c >= stride ? c - c % stride : stride; /* whole records, so each chunk can be rebased alone */
    return c;
}

/* A record segment's description. */
static zap_verify_seg_t record_seg(uint64_t off, uint64_t items, uint32_t stride)
{
    return (zap_verify_seg_t){.src_off = off * stride, .len = items * stride, .item_off = off, .items = items,
                              .blob = 0};
}

/* The items of the first record segment: first_bytes of records, at least
 * 32 and a multiple of 32. */
static uint64_t first_items(uint64_t first_bytes, uint32_t stride)
{
    uint64_t per = first_bytes / (stride ? stride : 1);
    return per < 32 ? 32 : per & ~(uint64_t)31;
}

size_t zap_verify_seg_plan(uint64_t count, uint32_t stride, uint64_t blob_len, uint64_t first_bytes,
                           zap_verify_seg_t *out)
{
    size_t n = 0;
    if (blob_len > 0) {
        if (out)
            out[n] = (zap_verify_seg_t){.src_off = 0, .len = blob_len, .item_off = 0, .items = 0, .blob = 1};
        n++;
    }
    uint64_t per = first_items(first_bytes, stride);
    for (uint64_t off = 0; off < count;) {
        uint64_t items = count - off < per ? count - off : per;
        if (count - off - items < items / 2)
            items = count - off; /* a short tail rides with this segment, not in a call of its own */
        if (out)
            out[n] = record_seg(off, items, stride);
        n++;
        off += items;
        if (per < UINT64_MAX / 2)
            per *= 2;
    }
    return n;
}

size_t zap_verify_seg_plan_far(uint64_t count, uint32_t stride, uint64_t blob_len, uint64_t first_bytes,
                               int from_top, zap_verify_seg_t *out)
{
    size_t n = 0;
    if (blob_len > 0) {
        if (out)
            out[n] = (zap_verify_seg_t){.src_off = 0, .len = blob_len, .item_off = 0, .items = 0, .blob = 1};
        n++;
    }
    uint64_t per0 = first_items(first_bytes, stride);
    uint64_t per = per0, lo = 0, hi = count; /* [lo, hi): not yet planned */
    while (lo < hi) {
        uint64_t rem = hi - lo, half = (rem / 2) & ~(uint64_t)31;
        uint64_t items = per < half ? per : half > per0 ? half : per0;
        if (items >= rem || rem - items < per0 / 2)
            items = rem; /* a short rest rides with this segment */
        uint64_t off;
        if (from_top) {
            off = hi - items;
            if (off > lo)
                off &= ~(uint64_t)31; /* lo is word-aligned, so the boundary stays so */
            items = hi - off;
            hi = off;
        } else {
            off = lo;
            lo += items;
        }
        if (out)
            out[n] = record_seg(off, items, stride);
        n++;
        if (per < UINT64_MAX / 2)
            per *= 2;
    }
    return n;
}
