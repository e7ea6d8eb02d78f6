/* zap-verify's options: one table for every subcommand, each option marked
 * with the subcommands it applies to, so an option of another subcommand is
 * refused by name (exit status 2) instead of being ignored. Conditions
 * within a subcommand (gen options with --batch, --format without
 * --verdicts-out, ...) are the subcommand's to check, with zv_refuse. */
#include "zv.h"
#include "zap/config.h"
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct zv_opt_def {
    const char *name;
    int has_arg;
    int cmds; /* ZV_GEN | ZV_RUN | ZV_BENCH where it applies */
} zv_opt_def_t;

static const zv_opt_def_t defs[ZV_O_COUNT] = {
    [ZV_O_ITEMS] = {"items", 1, ZV_GEN | ZV_RUN},
    [ZV_O_KEYS] = {"keys", 1, ZV_GEN | ZV_RUN | ZV_BENCH},
    [ZV_O_INVALID] = {"invalid-fraction", 1, ZV_GEN | ZV_RUN | ZV_BENCH},
    [ZV_O_SEED] = {"seed", 1, ZV_GEN | ZV_RUN | ZV_BENCH},
    [ZV_O_OUT] = {"out", 1, ZV_GEN},
    [ZV_O_EXPECT] = {"expect", 1, ZV_GEN | ZV_RUN},
    [ZV_O_MSGLEN] = {"msg-len", 1, ZV_GEN | ZV_RUN | ZV_BENCH},
    [ZV_O_BATCH] = {"batch", 1, ZV_RUN},
    [ZV_O_GEN] = {"gen", 1, ZV_RUN},
    [ZV_O_MODE] = {"mode", 1, ZV_RUN | ZV_BENCH},
    [ZV_O_VERIFIER] = {"verifier", 1, ZV_RUN | ZV_BENCH},
    [ZV_O_VOUT] = {"verdicts-out", 1, ZV_RUN},
    [ZV_O_FORMAT] = {"format", 1, ZV_RUN},
    [ZV_O_INPROC] = {"inproc-ranks", 1, ZV_RUN},
    [ZV_O_COMBINE] = {"combine", 1, ZV_RUN | ZV_BENCH},
    [ZV_O_THREADS] = {"threads", 1, ZV_GEN | ZV_RUN | ZV_BENCH},
    [ZV_O_ROOT] = {"root", 1, ZV_RUN | ZV_BENCH},
    [ZV_O_QUIET] = {"quiet", 0, ZV_RUN},
    [ZV_O_RANKSTATUS] = {"rank-status", 0, ZV_RUN},
    [ZV_O_BATCHID] = {"batch-id", 1, ZV_GEN | ZV_RUN | ZV_BENCH},
    [ZV_O_MAXLOG2] = {"max-log2", 1, ZV_BENCH},
    [ZV_O_RANKS] = {"ranks", 1, ZV_BENCH},
    [ZV_O_SEGMENT] = {"segment-bytes", 1, ZV_RUN | ZV_BENCH},
    [ZV_O_HELP] = {"help", 0, ZV_GEN | ZV_RUN | ZV_BENCH},
};

const char *zv_opt_name(int opt)
{
    static char names[ZV_O_COUNT][24];
    if (opt < 0 || opt >= ZV_O_COUNT)
        return "?";
    if (!names[opt][0])
        snprintf(names[opt], sizeof(names[opt]), "--%s", defs[opt].name);
    return names[opt];
}

int zv_refuse(const zv_opts_t *o, const int *opts, int n, const char *why)
{
    for (int i = 0; i < n; i++)
        if (o->given[opts[i]]) {
            fprintf(stderr, "zap-verify %s: %s %s\n", o->cmd_name, zv_opt_name(opts[i]), why);
            return -1;
        }
    return 0;
}

void zv_usage(FILE *f)
{
    fprintf(f,
            "usage:\n"
            "  zap-verify gen --items N [--keys M] [--invalid-fraction F] [--seed S] [--msg-len 32|var]\n"
            "                 [--batch-id B] [--threads T] --out batch.svb [--expect expected.bits]\n"
            "  zap-verify run [--batch FILE | --gen N [gen options]] [--mode scatter|bcast]\n"
            "                 [--combine or|allgather] [--verifier cpu|gpu|auto] [--threads T] [--root R]\n"
            "                 [--expect FILE] [--verdicts-out FILE [--format bitmap|indices]]\n"
            "                 [--inproc-ranks K] [--segment-bytes B|all] [--quiet] [--rank-status]\n"
            "  zap-verify bench [--max-log2 L] [--ranks 1,2,4] [gen options but --items] [--mode scatter|bcast]\n"
            "                   [--combine or|allgather] [--verifier cpu|gpu|auto] [--threads T] [--root R]\n"
            "                   [--segment-bytes B|all]\n"
            "gen options: --keys M (default 1024) --invalid-fraction F (default 0.05) --seed S (default 1)\n"
            "             --msg-len 32|var (default 32) --batch-id B (default 1)\n"
            "run: under mpirun over UCX, or K threads as ranks with --inproc-ranks K (not under mpirun).\n"
            "An option that does not apply to what was asked is refused (exit status 2).\n");
}

int zv_parse_u64(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *v = x;
    return 0;
}

double zv_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

unsigned zv_default_threads(int local_ranks)
{
    if (getenv("ZAP_VERIFY_THREADS"))
        return 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        cores = 1;
    long t = cores / (local_ranks > 0 ? local_ranks : 1);
    return t < 1 ? 1 : (unsigned)t;
}

/* One of names[0..n) (its index), or -1. */
static int pick(const char *a, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(a, names[i]))
            return i;
    return -1;
}

/* --segment-bytes: bytes with an optional K/M/G (powers of 1024), or "all"
 * (one segment per rank). */
static int parse_segment(const char *a, uint64_t *v)
{
    if (!strcmp(a, "all")) {
        *v = UINT64_MAX;
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long x = strtoull(a, &end, 10);
    unsigned shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (errno || end == a || a[0] == '-' || x == 0 || (shift && end[1]) || (!shift && *end) ||
        x > (UINT64_MAX >> shift))
        return -1;
    *v = (uint64_t)x << shift;
    return 0;
}

/* --ranks 1,2,4: up to 16 rank counts of 1 to 64. */
static int parse_ranks(const char *a, zv_opts_t *o)
{
    char buf[128];
    if (strlen(a) >= sizeof(buf))
        return -1;
    strcpy(buf, a);
    o->nranks = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        uint64_t v;
        if (o->nranks == 16 || zv_parse_u64(tok, &v) || v < 1 || v > 64)
            return -1;
        o->ranks[o->nranks++] = (int)v;
    }
    return o->nranks > 0 ? 0 : -1;
}

/* The generation options. 0, or -1 for a bad value. */
static int set_gen(zv_opts_t *o, int opt, const char *a)
{
    static const char *const msg_lens[] = {"32", "var"};
    uint64_t v;
    char *end;
    switch (opt) {
    case ZV_O_ITEMS:
    case ZV_O_GEN: return zv_parse_u64(a, &o->gen.items);
    case ZV_O_KEYS:
        if (zv_parse_u64(a, &v) || v == 0 || v > UINT32_MAX - 1)
            return -1;
        o->gen.keys = (uint32_t)v;
        return 0;
    case ZV_O_INVALID:
        o->gen.invalid_fraction = strtod(a, &end);
        return *end || end == a || !(o->gen.invalid_fraction >= 0 && o->gen.invalid_fraction <= 1) ? -1 : 0;
    case ZV_O_SEED: return zv_parse_u64(a, &o->gen.seed);
    case ZV_O_BATCHID: return zv_parse_u64(a, &o->gen.batch_id);
    case ZV_O_MSGLEN: return (o->gen.variable = pick(a, msg_lens, 2)) < 0 ? -1 : 0;
    default: return -1;
    }
}

/* The job's options (run and bench). 0, or -1 for a bad value. */
static int set_job(zv_opts_t *o, int opt, const char *a)
{
    static const char *const modes[] = {"scatter", "bcast"}, *const combines[] = {"or", "allgather"},
                             *const verifiers[] = {"cpu", "gpu", "auto"};
    static const zap_verifier_t verifier_of[] = {ZAP_VERIFIER_CPU, ZAP_VERIFIER_GPU, ZAP_VERIFIER_AUTO};
    uint64_t v;
    int i;
    switch (opt) {
    case ZV_O_MODE:
        if ((i = pick(a, modes, 2)) < 0)
            return -1;
        o->vp.mode = i ? ZAP_VERIFY_BCAST : ZAP_VERIFY_SCATTER;
        return 0;
    case ZV_O_COMBINE:
        if ((i = pick(a, combines, 2)) < 0)
            return -1;
        o->vp.combine = i ? ZAP_COMBINE_ALLGATHERV : ZAP_COMBINE_OR_ALLREDUCE;
        return 0;
    case ZV_O_VERIFIER:
        if ((i = pick(a, verifiers, 3)) < 0)
            return -1;
        o->vp.verifier = verifier_of[i];
        return 0;
    case ZV_O_ROOT:
        if (zv_parse_u64(a, &v) || v > 1u << 20)
            return -1;
        o->vp.root = (int)v;
        return 0;
    case ZV_O_SEGMENT: return parse_segment(a, &o->vp.segment_bytes);
    default: return -1;
    }
}

/* Every other option taking a value. 0, or -1 for a bad value. */
static int set_other(zv_opts_t *o, int opt, const char *a)
{
    static const char *const formats[] = {"bitmap", "indices"};
    uint64_t v;
    switch (opt) {
    case ZV_O_OUT: o->out = a; return 0;
    case ZV_O_EXPECT: o->expect = a; return 0;
    case ZV_O_BATCH: o->batch = a; return 0;
    case ZV_O_VOUT: o->verdicts_out = a; return 0;
    case ZV_O_FORMAT: return (o->indices = pick(a, formats, 2)) < 0 ? -1 : 0;
    case ZV_O_INPROC:
        if (zv_parse_u64(a, &v) || v < 1 || v > 4096)
            return -1;
        o->inproc_ranks = (int)v;
        return 0;
    case ZV_O_THREADS:
        if (zv_parse_u64(a, &v) || v > 1024)
            return -1;
        o->vp.threads = (unsigned)v;
        o->gen.threads = (unsigned)v;
        return 0;
    case ZV_O_MAXLOG2:
        if (zv_parse_u64(a, &v) || v < 5 || v > 26)
            return -1;
        o->max_log2 = (int)v;
        return 0;
    case ZV_O_RANKS: return parse_ranks(a, o);
    case ZV_O_MODE:
    case ZV_O_COMBINE:
    case ZV_O_VERIFIER:
    case ZV_O_ROOT:
    case ZV_O_SEGMENT: return set_job(o, opt, a);
    default: return set_gen(o, opt, a);
    }
}

static void defaults(zv_opts_t *o, int cmd, const char *name)
{
    memset(o, 0, sizeof(*o));
    o->cmd = cmd;
    o->cmd_name = name;
    o->gen.keys = 1024;
    o->gen.invalid_fraction = 0.05;
    o->gen.seed = 1;
    o->gen.batch_id = 1;
    o->max_log2 = 18;
    o->ranks[0] = 1, o->ranks[1] = 2, o->ranks[2] = 4;
    o->nranks = 3;
}

int zv_parse(int argc, char **argv, int cmd, zv_opts_t *o)
{
    struct option lo[ZV_O_COUNT + 1];
    for (int i = 0; i < ZV_O_COUNT; i++)
        lo[i] = (struct option){defs[i].name, defs[i].has_arg, NULL, i};
    lo[ZV_O_COUNT] = (struct option){NULL, 0, NULL, 0};
    defaults(o, cmd, argv[1]);
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        if (c < 0 || c >= ZV_O_COUNT) {
            zv_usage(stderr);
            return -1; /* getopt named the option */
        }
        if (!(defs[c].cmds & cmd)) {
            fprintf(stderr, "zap-verify %s: %s does not apply to %s (see zap-verify --help)\n", argv[1],
                    zv_opt_name(c), argv[1]);
            return -1;
        }
        if (c == ZV_O_HELP) {
            zv_usage(stdout);
            exit(0);
        }
        o->given[c] = 1;
        if (c == ZV_O_QUIET) {
            o->quiet = 1;
        } else if (c == ZV_O_RANKSTATUS) {
            o->rank_status = 1;
        } else if (set_other(o, c, optarg) != 0) {
            fprintf(stderr, "zap-verify: bad value '%s' for %s\n", optarg, zv_opt_name(c));
            return -1;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "zap-verify: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    return 0;
}
