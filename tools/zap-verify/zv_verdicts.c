/* Verdict files (docs/verify.md, "zap-verify"):
 *   bitmap:  "SVV1" u32 0 | u64 n_items | u64 batch_id | ceil(n/8) bytes, bit
 *            i%8 of byte i/8 set when item i is valid (little endian words);
 *   indices: text; a '#' header line, then each invalid item's index, one a
 *            line. */
#include "zv.h"
#include "base/le.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int bit(const uint32_t *bm, uint64_t i)
{
    return (bm[i / 32] >> (i % 32)) & 1;
}

static void write_indices(FILE *f, const uint32_t *bm, uint64_t n, uint64_t batch_id)
{
    uint64_t invalid = 0;
    for (uint64_t i = 0; i < n; i++)
        invalid += !bit(bm, i);
    fprintf(f, "# zap-verify invalid item indices: n_items %llu batch_id %llu invalid %llu\n", (unsigned long long)n,
            (unsigned long long)batch_id, (unsigned long long)invalid);
    for (uint64_t i = 0; i < n; i++)
        if (!bit(bm, i))
            fprintf(f, "%llu\n", (unsigned long long)i);
}

int zv_write_verdicts(const char *path, int indices, const uint32_t *bm, uint64_t n, uint64_t batch_id)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "zap-verify: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (indices) {
        write_indices(f, bm, n, batch_id);
    } else {
        uint8_t h[24];
        memcpy(h, "SVV1", 4);
        zap_put_le32(h + 4, 0);
        zap_put_le64(h + 8, n);
        zap_put_le64(h + 16, batch_id);
        fwrite(h, 1, 24, f);
        for (uint64_t b = 0; b < (n + 7) / 8; b++)
            fputc((int)((bm[b / 4] >> (8 * (b % 4))) & 0xff), f);
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "zap-verify: error writing %s\n", path);
        return -1;
    }
    return 0;
}

/* The bitmap form after its 24-byte header h. */
static int read_bitmap(FILE *f, const char *path, const uint8_t *h, uint64_t n, uint32_t *bm)
{
    uint64_t fn = zap_get_le64(h + 8);
    if (fn != n) {
        fprintf(stderr, "zap-verify: %s holds %llu verdicts, the batch has %llu items\n", path,
                (unsigned long long)fn, (unsigned long long)n);
        return -1;
    }
    for (uint64_t b = 0; b < (n + 7) / 8; b++) {
        int c = fgetc(f);
        if (c == EOF) {
            fprintf(stderr, "zap-verify: %s is truncated\n", path);
            return -1;
        }
        bm[b / 4] |= (uint32_t)c << (8 * (b % 4));
    }
    return 0;
}

/* The indices form: everything valid except the listed items. */
static int read_indices(FILE *f, const char *path, uint64_t n, uint32_t *bm)
{
    rewind(f);
    for (uint64_t i = 0; i < n; i++)
        bm[i / 32] |= 1u << (i % 32);
    char line[128];
    while (fgets(line, sizeof(line), f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        uint64_t idx;
        line[strcspn(line, "\r\n")] = 0;
        if (zv_parse_u64(line, &idx) || idx >= n) {
            fprintf(stderr, "zap-verify: %s: bad index line '%s'\n", path, line);
            return -1;
        }
        bm[idx / 32] &= ~(1u << (idx % 32));
    }
    return 0;
}

int zv_read_verdicts(const char *path, uint64_t n, uint32_t **bm_p)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "zap-verify: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    uint32_t *bm = calloc((size_t)((n + 31) / 32) + 1, 4);
    uint8_t h[24];
    int rc = -1;
    if (!bm)
        fprintf(stderr, "zap-verify: no memory for the %llu verdicts of %s\n", (unsigned long long)n, path);
    else if (fread(h, 1, 24, f) == 24 && !memcmp(h, "SVV1", 4))
        rc = read_bitmap(f, path, h, n, bm);
    else
        rc = read_indices(f, path, n, bm);
    fclose(f);
    if (rc)
        free(bm);
    else
        *bm_p = bm;
    return rc;
}
