/* Shared by zap-perf's modes: MPI start-up, option parsing helpers, timing,
 * medians and the result table (text on stdout from rank 0, CSV optional). */
#ifndef ZAP_PERF_COMMON_H
#define ZAP_PERF_COMMON_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Seconds on a monotonic clock. */
double perf_now(void);

/* Parses "64", "8K", "1M", "64MiB" (powers of 1024). Returns 0 on success. */
int perf_parse_size(const char *text, size_t *out);

/* Median of n values (sorts v in place). */
double perf_median(double *v, int n);

/* Result rows: each mode prints its own header, then rows; every row also goes
 * to the CSV file when one was opened (first line: the header). */
typedef struct perf_out {
    FILE *csv; /* NULL: no CSV */
    int rank;
} perf_out_t;

int perf_out_open(perf_out_t *o, const char *csv_path, const char *csv_header, int rank);
void perf_out_close(perf_out_t *o);

/* One mode: argv[0] is the mode name. Returns the process exit status. */
typedef int (*perf_mode_fn)(int argc, char **argv);
int perf_p2p_main(int argc, char **argv);
#ifdef ZAP_PERF_HAVE_COLL
int perf_coll_main(int argc, char **argv);
int perf_comm_main(int argc, char **argv);
#endif
#endif
