/* Writes the seed corpus of the batch fuzz targets (tests/fuzz/corpus/):
 * small valid batches from the seeded generator (fixed and variable
 * messages, empty, with invalid items) and, for each header field, a copy
 * with that field broken. Run once by hand (target fuzz_make_seeds, not
 * built by default); the output is committed.
 *   fuzz_make_seeds <out-dir> */
#include "verify/batch_gen.h"
#include "verify/verify_impl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int write_file(const char *dir, const char *name, const uint8_t *b, size_t n)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(b, 1, n, f) != n)) {
        perror(path);
        return -1;
    }
    return fclose(f);
}

static uint8_t *gen(uint64_t items, int variable, double bad, uint64_t seed, size_t *len_p)
{
    zap_gen_params_t p;
    memset(&p, 0, sizeof(p));
    p.items = items;
    p.keys = 2;
    p.invalid_fraction = bad;
    p.seed = seed;
    p.variable = variable;
    p.max_msg_len = 40;
    p.threads = 1;
    p.batch_id = seed;
    zap_batch_layout_t l;
    if (zap_gen_layout(&p, &l) != ZAP_OK)
        exit(1);
    uint8_t *b = calloc(1, (size_t)l.total_bytes);
    if (!b || zap_gen_batch(&p, b, (size_t)l.total_bytes, NULL, NULL) != ZAP_OK)
        exit(1);
    *len_p = (size_t)l.total_bytes;
    return b;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s <out-dir>\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    struct {
        const char *name;
        uint64_t items;
        int variable;
        double bad;
    } kinds[] = {{"fixed3", 3, 0, 0.0}, {"fixed5_bad", 5, 0, 0.6}, {"var3", 3, 1, 0.0},
                 {"var6_bad", 6, 1, 0.5}, {"empty_fixed", 0, 0, 0.0}, {"empty_var", 0, 1, 0.0}};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        size_t n;
        uint8_t *b = gen(kinds[k].items, kinds[k].variable, kinds[k].bad, 100 + k, &n);
        char name[128];
        snprintf(name, sizeof(name), "valid_%s", kinds[k].name);
        if (write_file(dir, name, b, n))
            return 1;
        if (k == 2) {
            /* One copy per broken header field, from the variable batch. */
            struct {
                const char *what;
                size_t off;
                int width;
                uint64_t value;
            } breaks[] = {{"magic", ZAP_BH_MAGIC, 4, 0x31425653u ^ 1},
                          {"version", ZAP_BH_VERSION, 2, 2},
                          {"scheme", ZAP_BH_SCHEME, 2, 3},
                          {"flags", ZAP_BH_FLAGS, 4, 0x10},
                          {"digestflag", ZAP_BH_FLAGS, 4, 2},
                          {"stride", ZAP_BH_STRIDE, 4, 120},
                          {"stride_big", ZAP_BH_STRIDE, 4, 8192},
                          {"count", ZAP_BH_N_ITEMS, 8, UINT64_MAX},
                          {"msglen", ZAP_BH_FIXED_MSG_LEN, 4, 32},
                          {"reserved", ZAP_BH_RESERVED, 4, 1},
                          {"records_off", ZAP_BH_RECORDS_OFF, 8, 72},
                          {"blob_off", ZAP_BH_BLOB_OFF, 8, 1u << 30},
                          {"blob_len", ZAP_BH_BLOB_LEN, 4, 0xffffffffu},
                          {"crc", ZAP_BH_CRC, 4, 0}};
            for (size_t i = 0; i < sizeof(breaks) / sizeof(breaks[0]); i++) {
                uint8_t *c = malloc(n);
                memcpy(c, b, n);
                for (int j = 0; j < breaks[i].width; j++)
                    c[breaks[i].off + j] = (uint8_t)(breaks[i].value >> (8 * j));
                snprintf(name, sizeof(name), "bad_%s", breaks[i].what);
                if (write_file(dir, name, c, n))
                    return 1;
                free(c);
            }
            /* A record whose message range lies outside the blob. */
            uint8_t *c = malloc(n);
            memcpy(c, b, n);
            zap_put_le32(c + ZAP_BATCH_HEADER_SIZE + ZAP_REC_MSG_OFF, 0xfffffff0u);
            if (write_file(dir, "bad_record_msg_off", c, n))
                return 1;
            free(c);
            if (write_file(dir, "short_header", b, 63) || write_file(dir, "truncated", b, n - 1))
                return 1;
        }
        free(b);
    }
    if (write_file(dir, "empty_file", (const uint8_t *)"", 0))
        return 1;
    return 0;
}
