/* Shared by zap-verify's subcommands (zv_main.c dispatches on the first
 * argument): the options and the rule of which apply where, verdict files,
 * loading a batch, one rank's run. Internal to the program. */
#ifndef ZAP_ZV_H
#define ZAP_ZV_H
#include <stdint.h>
#include <stdio.h>
#include "zap/verify.h"
#include "verify/batch_gen.h"

#define ZV_EXIT_MISMATCH 1
#define ZV_EXIT_USAGE 2
#define ZV_EXIT_ERROR 3

/* The subcommands, as bits of the options' applicability masks. */
enum { ZV_GEN = 1, ZV_RUN = 2, ZV_BENCH = 4 };

/* Every option of every subcommand. given[] records which were on the
 * command line, so a subcommand can refuse those that do not apply to what
 * it was asked to do. */
enum zv_opt {
    ZV_O_ITEMS, ZV_O_KEYS, ZV_O_INVALID, ZV_O_SEED, ZV_O_OUT, ZV_O_EXPECT, ZV_O_MSGLEN, ZV_O_BATCH, ZV_O_GEN,
    ZV_O_MODE, ZV_O_VERIFIER, ZV_O_VOUT, ZV_O_FORMAT, ZV_O_INPROC, ZV_O_COMBINE, ZV_O_THREADS, ZV_O_ROOT,
    ZV_O_QUIET, ZV_O_RANKSTATUS, ZV_O_BATCHID, ZV_O_MAXLOG2, ZV_O_RANKS, ZV_O_SEGMENT, ZV_O_HELP, ZV_O_COUNT
};

typedef struct zv_opts {
    int cmd;                          /* ZV_GEN, ZV_RUN or ZV_BENCH */
    const char *cmd_name;
    int given[ZV_O_COUNT];
    /* generation (gen, run --gen, bench) */
    zap_gen_params_t gen;
    const char *out;                  /* gen: the batch file */
    /* run */
    const char *batch, *expect, *verdicts_out; /* expect: gen writes it, run reads it */
    int indices;
    int inproc_ranks;
    int quiet;
    int rank_status; /* run --rank-status: each rank says how its job ended */
    zap_verify_params_t vp;           /* run and bench */
    /* bench */
    int max_log2;
    int ranks[16], nranks;
} zv_opts_t;

/* zv_opts.c: parses argv[2..] for the subcommand argv[1] into o (defaults
 * first). 0, or -1 after a message on stderr (a usage error: an unknown
 * option, a bad value, an option of another subcommand). */
int zv_parse(int argc, char **argv, int cmd, zv_opts_t *o);
/* The option's name as typed, "--seed". */
const char *zv_opt_name(int opt);
/* Refuses (message, -1) every given option in opts[0..n) with why (e.g.
 * "applies to --gen N, not to --batch FILE"). */
int zv_refuse(const zv_opts_t *o, const int *opts, int n, const char *why);
void zv_usage(FILE *f);
int zv_parse_u64(const char *s, uint64_t *v);
double zv_now(void);
/* CPU threads per rank when nobody said: the cores shared by the ranks on
 * this host (0 when ZAP_VERIFY_THREADS is set: the setting decides). */
unsigned zv_default_threads(int local_ranks);

/* zv_verdicts.c: verdict files (docs/verify.md). 0 or -1 after a message. */
int zv_write_verdicts(const char *path, int indices, const uint32_t *bm, uint64_t n, uint64_t batch_id);
int zv_read_verdicts(const char *path, uint64_t n, uint32_t **bm_p);

/* The subcommands; each returns the process's exit status. */
int zv_gen_main(zv_opts_t *o);
int zv_run_main(zv_opts_t *o, int *argc, char ***argv);
int zv_bench_main(zv_opts_t *o);
#endif
