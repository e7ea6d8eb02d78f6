/* Shared by the fuzz targets: property failures and quiet logging. */
#include "fuzz_target.h"
#include "base/log.h"
#include <stdio.h>
#include <stdlib.h>

void fuzz_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "fuzz: property failed at %s:%d: %s\n", file, line, what);
    abort();
}

/* The decoders log every refusal at error level, which would dominate a run
 * of millions of refused inputs. A level below "error" makes every log macro
 * a no-op; the level test in ZAP_LOG compares integers, so -1 is safe. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    zap_log_set_level((zap_log_level_t)-1);
    return 0;
}
