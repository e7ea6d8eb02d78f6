/* zap-verify gen: a seeded batch file (batch_gen.h) and, with --expect, the
 * file of its expected verdicts (bitmap form), exact by construction. */
#include "zv.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int write_batch(const char *path, const uint8_t *buf, uint64_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "zap-verify gen: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

int zv_gen_main(zv_opts_t *o)
{
    if (!o->given[ZV_O_ITEMS] || !o->out) {
        fprintf(stderr, "zap-verify gen: --items and --out are required\n");
        return ZV_EXIT_USAGE;
    }
    zap_batch_layout_t l;
    if (zap_gen_layout(&o->gen, &l) != ZAP_OK)
        return ZV_EXIT_USAGE;
    uint8_t *buf = malloc(l.total_bytes ? l.total_bytes : 1);
    uint32_t *exp = malloc(((o->gen.items + 31) / 32 + 1) * 4);
    int code = 0;
    double t0 = zv_now(), t1 = 0;
    if (!buf || !exp) {
        fprintf(stderr, "zap-verify gen: no memory for %llu bytes\n", (unsigned long long)l.total_bytes);
        code = ZV_EXIT_ERROR;
    } else if (zap_gen_batch(&o->gen, buf, l.total_bytes, exp, NULL) != ZAP_OK) {
        code = ZV_EXIT_ERROR;
    } else {
        t1 = zv_now();
        if (write_batch(o->out, buf, l.total_bytes) ||
            (o->expect && zv_write_verdicts(o->expect, 0, exp, o->gen.items, o->gen.batch_id)))
            code = ZV_EXIT_ERROR;
    }
    if (code == 0) {
        uint64_t valid = 0;
        for (uint64_t w = 0; w < (o->gen.items + 31) / 32; w++)
            valid += (uint64_t)__builtin_popcount(exp[w]);
        printf("zap-verify gen: %llu items (%llu valid, %llu invalid), %u keys, %s messages, seed %llu: %s "
               "(%llu bytes) in %.2f s (%.0f items/s)\n",
               (unsigned long long)o->gen.items, (unsigned long long)valid,
               (unsigned long long)(o->gen.items - valid), o->gen.keys, o->gen.variable ? "variable" : "32-byte",
               (unsigned long long)o->gen.seed, o->out, (unsigned long long)l.total_bytes, t1 - t0,
               (t1 - t0) > 0 ? o->gen.items / (t1 - t0) : 0.0);
    }
    free(buf);
    free(exp);
    return code;
}
