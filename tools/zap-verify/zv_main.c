/* zap-verify: generate Ed25519 batches, verify them across ranks, benchmark;
 * one subcommand per file, dispatched on the first argument here.
 *
 *   zap-verify gen   ...   a seeded batch file and its expected verdicts (zv_gen.c)
 *   zap-verify run   ...   the distributed job (zv_run.c: under mpirun over
 *                          UCX, or threads over inproc)
 *   zap-verify bench ...   verifiers and the job in one process (zv_bench.c)
 *
 * Exit status: 0 when every rank verified, all digests agree and the
 * expected verdicts match; 1 for a verdict mismatch; 2 for a usage error
 * (an option that does not apply included); 3 for any other failure.
 * docs/verify.md describes the output and the verdict files. */
#include "zv.h"
#include "zap/config.h"
#include <string.h>

typedef struct zv_cmd {
    const char *name;
    int bit;
} zv_cmd_t;

static const zv_cmd_t cmds[] = {{"gen", ZV_GEN}, {"run", ZV_RUN}, {"bench", ZV_BENCH}};

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        zv_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? ZV_EXIT_USAGE : 0;
    }
    const zv_cmd_t *cmd = NULL;
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (!strcmp(argv[1], cmds[i].name))
            cmd = &cmds[i];
    if (!cmd) {
        fprintf(stderr, "zap-verify: unknown command '%s'\n", argv[1]);
        zv_usage(stderr);
        return ZV_EXIT_USAGE;
    }
    zv_opts_t o;
    if (zv_parse(argc, argv, cmd->bit, &o))
        return ZV_EXIT_USAGE;
    if (zap_config_check(NULL) != ZAP_OK)
        return ZV_EXIT_USAGE;
    switch (cmd->bit) {
    case ZV_GEN: return zv_gen_main(&o);
    case ZV_RUN: return zv_run_main(&o, &argc, &argv);
    default: return zv_bench_main(&o);
    }
}
