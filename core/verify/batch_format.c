/* The batch codec: a 64-byte little-endian header, fixed-stride records and,
 * for variable-length messages, a message blob (docs/batch-format.md).
 *
 * The parser trusts nothing: every header field is checked against the buffer
 * length before any record is touched, with overflow-safe arithmetic, and the
 * checks run in a fixed order so a buffer with several faults always reports
 * the same (first) reason. It never reads outside [buf, buf + len). Records
 * themselves are not inspected here: a variable record whose message range
 * lies outside the blob is a per-item "malformed" verdict, not a broken batch,
 * so one bad item cannot veto the other items of the batch. */
#include "verify/verify_impl.h"
#include "base/log.h"
#include <stdio.h>

static const char *const reason_text[ZAP_BATCH_REASON_COUNT] = {
    [ZAP_BATCH_OK] = "ok",
    [ZAP_BATCH_ERR_SHORT] = "shorter than a batch header",
    [ZAP_BATCH_ERR_MAGIC] = "bad magic (not a zap batch)",
    [ZAP_BATCH_ERR_VERSION] = "unsupported batch format version",
    [ZAP_BATCH_ERR_SCHEME] = "unsupported signature scheme",
    [ZAP_BATCH_ERR_FLAGS] = "bad flags",
    [ZAP_BATCH_ERR_MSG_LEN] = "bad fixed message length",
    [ZAP_BATCH_ERR_RESERVED] = "reserved header field is not zero",
    [ZAP_BATCH_ERR_STRIDE] = "bad record stride",
    [ZAP_BATCH_ERR_COUNT] = "item count does not fit in the batch",
    [ZAP_BATCH_ERR_OFFSETS] = "records or blob offsets out of range",
    [ZAP_BATCH_ERR_CRC] = "crc32c mismatch",
};

const char *zap_batch_reason_string(zap_batch_reason_t reason)
{
    if ((int)reason < 0 || reason >= ZAP_BATCH_REASON_COUNT)
        return "unknown reason";
    return reason_text[reason];
}

static const char *scheme_name(unsigned s)
{
    switch (s) {
    case ZAP_SCHEME_ED25519_LIBSODIUM_1_0_18: return "ed25519-libsodium-1.0.18";
    case ZAP_SCHEME_ED25519_ZIP215: return "ed25519-zip215";
    case ZAP_SCHEME_SECP256K1_ECDSA_LOWS: return "secp256k1-ecdsa-lows";
    case ZAP_SCHEME_SECP256K1_ECRECOVER: return "secp256k1-ecrecover";
    case ZAP_SCHEME_BLS12381_MINPK_NUL: return "bls12381-minpk-nul";
    case ZAP_SCHEME_BLS12381_MINPK_POP: return "bls12381-minpk-pop";
    default: return "unknown";
    }
}

static zap_status_t reason_status(zap_batch_reason_t r)
{
    switch (r) {
    case ZAP_BATCH_OK: return ZAP_OK;
    case ZAP_BATCH_ERR_VERSION: return ZAP_ERR_VERSION;
    case ZAP_BATCH_ERR_SCHEME: return ZAP_ERR_UNSUPPORTED;
    default: return ZAP_ERR_CORRUPT;
    }
}

/* Checks the header fields that do not depend on the buffer length; shared by
 * the parser and the writer. */
static zap_batch_reason_t check_fields(uint16_t scheme, uint32_t flags, uint32_t stride, uint32_t fixed_len,
                                       char *d, size_t dcap)
{
    if (scheme != ZAP_SCHEME_ED25519_LIBSODIUM_1_0_18) {
        snprintf(d, dcap, "scheme %u (%s) is not supported; zap verifies scheme 1 (%s)", scheme,
                 scheme_name(scheme), scheme_name(ZAP_SCHEME_ED25519_LIBSODIUM_1_0_18));
        return ZAP_BATCH_ERR_SCHEME;
    }
    if (flags & ~(ZAP_BATCH_FLAG_FIXED_MSG | ZAP_BATCH_FLAG_MSG_IS_DIGEST)) {
        snprintf(d, dcap, "flags 0x%x has unknown bits 0x%x", flags,
                 flags & ~(ZAP_BATCH_FLAG_FIXED_MSG | ZAP_BATCH_FLAG_MSG_IS_DIGEST));
        return ZAP_BATCH_ERR_FLAGS;
    }
    if (flags & ZAP_BATCH_FLAG_MSG_IS_DIGEST) {
        snprintf(d, dcap, "flags 0x%x: msg_is_digest is not allowed for pure ed25519", flags);
        return ZAP_BATCH_ERR_FLAGS;
    }
    int fixed = (flags & ZAP_BATCH_FLAG_FIXED_MSG) != 0;
    if (fixed && fixed_len != 32) {
        snprintf(d, dcap, "fixed_msg_len %u, the ed25519 fixed layout needs 32", fixed_len);
        return ZAP_BATCH_ERR_MSG_LEN;
    }
    if (!fixed && fixed_len != 0) {
        snprintf(d, dcap, "fixed_msg_len %u in a variable-message batch (must be 0)", fixed_len);
        return ZAP_BATCH_ERR_MSG_LEN;
    }
    uint32_t min = fixed ? ZAP_BATCH_RECORD_SIZE : ZAP_VAR_RECORD_MIN;
    if (stride < min || stride > ZAP_BATCH_MAX_STRIDE || stride % 16) {
        snprintf(d, dcap, "record_stride %u; the %s layout needs a multiple of 16 in [%u, %u]", stride,
                 fixed ? "fixed" : "variable", min, ZAP_BATCH_MAX_STRIDE);
        return ZAP_BATCH_ERR_STRIDE;
    }
    return ZAP_BATCH_OK;
}

zap_status_t zap_batch_parse(const void *buf, size_t len, unsigned flags, zap_batch_view_t *view_p,
                             zap_batch_reason_t *reason_p, char *detail, size_t detail_cap)
{
    char scratch[200];
    char *d = detail && detail_cap ? detail : scratch;
    size_t dcap = detail && detail_cap ? detail_cap : sizeof(scratch);
    d[0] = '\0';
    if (!view_p || (!buf && len > 0)) {
        zap_error("batch: parse: NULL %s", view_p ? "buffer" : "view");
        return ZAP_ERR_INVALID_PARAM;
    }
    const uint8_t *p = buf;
    zap_batch_reason_t r = ZAP_BATCH_OK;
    zap_batch_view_t v;
    memset(&v, 0, sizeof(v));

    if (len < ZAP_BATCH_HEADER_SIZE) {
        snprintf(d, dcap, "%zu bytes, a header is %u", len, ZAP_BATCH_HEADER_SIZE);
        r = ZAP_BATCH_ERR_SHORT;
        goto refused;
    }
    if (memcmp(p, ZAP_BATCH_MAGIC, 4) != 0) {
        snprintf(d, dcap, "magic %02x %02x %02x %02x, expected \"SVB1\"", p[0], p[1], p[2], p[3]);
        r = ZAP_BATCH_ERR_MAGIC;
        goto refused;
    }
    v.version = zap_get_le16(p + ZAP_BH_VERSION);
    if (v.version != ZAP_BATCH_VERSION) {
        snprintf(d, dcap, "version %u, this zap reads version %u", v.version, ZAP_BATCH_VERSION);
        r = ZAP_BATCH_ERR_VERSION;
        goto refused;
    }
    v.scheme = zap_get_le16(p + ZAP_BH_SCHEME);
    v.flags = zap_get_le32(p + ZAP_BH_FLAGS);
    v.stride = zap_get_le32(p + ZAP_BH_STRIDE);
    v.n_items = zap_get_le64(p + ZAP_BH_N_ITEMS);
    v.fixed_msg_len = zap_get_le32(p + ZAP_BH_FIXED_MSG_LEN);
    v.batch_id = zap_get_le64(p + ZAP_BH_BATCH_ID);
    uint64_t records_off = zap_get_le64(p + ZAP_BH_RECORDS_OFF);
    uint64_t blob_off = zap_get_le64(p + ZAP_BH_BLOB_OFF);
    v.blob_len = zap_get_le32(p + ZAP_BH_BLOB_LEN);
    v.crc32c = zap_get_le32(p + ZAP_BH_CRC);

    r = check_fields(v.scheme, v.flags, v.stride, v.fixed_msg_len, d, dcap);
    if (r != ZAP_BATCH_OK)
        goto refused;
    if (zap_get_le32(p + ZAP_BH_RESERVED) != 0) {
        snprintf(d, dcap, "reserved field at offset 28 is 0x%x", zap_get_le32(p + ZAP_BH_RESERVED));
        r = ZAP_BATCH_ERR_RESERVED;
        goto refused;
    }
    if (records_off < ZAP_BATCH_HEADER_SIZE || records_off % 16 || records_off > len) {
        snprintf(d, dcap, "records_off %llu: must be a multiple of 16 in [%u, %zu]",
                 (unsigned long long)records_off, ZAP_BATCH_HEADER_SIZE, len);
        r = ZAP_BATCH_ERR_OFFSETS;
        goto refused;
    }
    uint64_t room = len - records_off;
    if (v.n_items > room / v.stride) {
        snprintf(d, dcap, "n_items %llu of %u bytes need more than the %llu bytes after records_off",
                 (unsigned long long)v.n_items, v.stride, (unsigned long long)room);
        r = ZAP_BATCH_ERR_COUNT;
        goto refused;
    }
    uint64_t records_end = records_off + v.n_items * v.stride;
    int fixed = (v.flags & ZAP_BATCH_FLAG_FIXED_MSG) != 0;
    if (fixed && v.blob_len != 0) {
        snprintf(d, dcap, "blob_len %llu in a fixed-message batch (must be 0)", (unsigned long long)v.blob_len);
        r = ZAP_BATCH_ERR_OFFSETS;
        goto refused;
    }
    if (v.blob_len > 0 && (blob_off < records_end || blob_off > len || v.blob_len > len - blob_off)) {
        snprintf(d, dcap, "blob [%llu, +%llu) must lie between the records' end %llu and the batch end %zu",
                 (unsigned long long)blob_off, (unsigned long long)v.blob_len,
                 (unsigned long long)records_end, len);
        r = ZAP_BATCH_ERR_OFFSETS;
        goto refused;
    }
    v.records = p + records_off;
    v.blob = v.blob_len ? p + blob_off : NULL;
    if (!(flags & ZAP_BATCH_PARSE_SKIP_CRC)) {
        uint32_t c = zap_crc32c_parallel(0, v.records, (size_t)(v.n_items * v.stride));
        c = zap_crc32c_parallel(c, v.blob, (size_t)v.blob_len);
        if (c != v.crc32c) {
            snprintf(d, dcap, "crc32c of records and blob is 0x%08x, header says 0x%08x", c, v.crc32c);
            r = ZAP_BATCH_ERR_CRC;
            goto refused;
        }
    }
    *view_p = v;
    if (reason_p)
        *reason_p = ZAP_BATCH_OK;
    return ZAP_OK;

refused:
    zap_error("batch: refused: %s: %s", reason_text[r], d);
    if (reason_p)
        *reason_p = r;
    return reason_status(r);
}

zap_status_t zap_batch_layout(uint64_t n, uint32_t stride, uint64_t blob_len, zap_batch_layout_t *layout_p)
{
    if (!layout_p || stride == 0 || stride > ZAP_BATCH_MAX_STRIDE || blob_len > UINT32_MAX ||
        n > (UINT64_MAX / 2 - blob_len) / stride) {
        zap_error("batch: layout: bad sizes (n %llu, stride %u, blob_len %llu)", (unsigned long long)n, stride,
                  (unsigned long long)blob_len);
        return ZAP_ERR_INVALID_PARAM;
    }
    zap_batch_layout_t l;
    l.records_off = ZAP_BATCH_HEADER_SIZE;
    l.blob_off = (l.records_off + n * stride + 15) & ~(uint64_t)15;
    l.total_bytes = l.blob_off + blob_len;
    *layout_p = l;
    return ZAP_OK;
}

zap_status_t zap_batch_write_header(void *buf, size_t len, const zap_batch_view_t *view)
{
    char d[200];
    if (!buf || !view) {
        zap_error("batch: write header: NULL %s", buf ? "view" : "buffer");
        return ZAP_ERR_INVALID_PARAM;
    }
    zap_batch_layout_t l;
    zap_status_t st = zap_batch_layout(view->n_items, view->stride, view->blob_len, &l);
    if (st != ZAP_OK)
        return st;
    if (check_fields(view->scheme, view->flags, view->stride, view->fixed_msg_len, d, sizeof(d)) != ZAP_BATCH_OK) {
        zap_error("batch: write header: %s", d);
        return ZAP_ERR_INVALID_PARAM;
    }
    if ((view->flags & ZAP_BATCH_FLAG_FIXED_MSG) && view->blob_len) {
        zap_error("batch: write header: a fixed-message batch has no blob (blob_len %llu)",
                  (unsigned long long)view->blob_len);
        return ZAP_ERR_INVALID_PARAM;
    }
    if (len < l.total_bytes) {
        zap_error("batch: write header: buffer of %zu bytes, the batch needs %llu", len,
                  (unsigned long long)l.total_bytes);
        return ZAP_ERR_INVALID_PARAM;
    }
    uint8_t *p = buf;
    uint64_t records_end = l.records_off + view->n_items * view->stride;
    memset(p + records_end, 0, (size_t)(l.blob_off - records_end));
    memset(p, 0, ZAP_BATCH_HEADER_SIZE);
    memcpy(p, ZAP_BATCH_MAGIC, 4);
    zap_put_le16(p + ZAP_BH_VERSION, ZAP_BATCH_VERSION);
    zap_put_le16(p + ZAP_BH_SCHEME, view->scheme);
    zap_put_le32(p + ZAP_BH_FLAGS, view->flags);
    zap_put_le32(p + ZAP_BH_STRIDE, view->stride);
    zap_put_le64(p + ZAP_BH_N_ITEMS, view->n_items);
    zap_put_le32(p + ZAP_BH_FIXED_MSG_LEN, view->fixed_msg_len);
    zap_put_le64(p + ZAP_BH_BATCH_ID, view->batch_id);
    zap_put_le64(p + ZAP_BH_RECORDS_OFF, l.records_off);
    zap_put_le64(p + ZAP_BH_BLOB_OFF, view->blob_len ? l.blob_off : 0);
    zap_put_le32(p + ZAP_BH_BLOB_LEN, (uint32_t)view->blob_len);
    uint32_t c = zap_crc32c_parallel(0, p + l.records_off, (size_t)(view->n_items * view->stride));
    c = zap_crc32c_parallel(c, p + l.blob_off, (size_t)view->blob_len);
    zap_put_le32(p + ZAP_BH_CRC, c);
    return ZAP_OK;
}
