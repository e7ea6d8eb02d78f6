/* zap-perf helpers: see perf_common.h. */
#include "perf_common.h"
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

double perf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int perf_parse_size(const char *text, size_t *out)
{
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text)
        return -1;
    unsigned long long mul = 1;
    if (*end == 'K' || *end == 'k')
        mul = 1ull << 10;
    else if (*end == 'M' || *end == 'm')
        mul = 1ull << 20;
    else if (*end == 'G' || *end == 'g')
        mul = 1ull << 30;
    else if (*end != '\0')
        return -1;
    if (*end != '\0') {
        end++;
        if (*end != '\0' && strcasecmp(end, "iB") != 0 && strcasecmp(end, "B") != 0)
            return -1;
    }
    *out = (size_t)(v * mul);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double perf_median(double *v, int n)
{
    if (n <= 0)
        return 0;
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int perf_out_open(perf_out_t *o, const char *csv_path, const char *csv_header, int rank)
{
    o->csv = NULL;
    o->rank = rank;
    if (csv_path == NULL || rank != 0)
        return 0;
    o->csv = fopen(csv_path, "w");
    if (o->csv == NULL) {
        perror(csv_path);
        return -1;
    }
    fprintf(o->csv, "%s\n", csv_header);
    return 0;
}

void perf_out_close(perf_out_t *o)
{
    if (o->csv != NULL)
        fclose(o->csv);
    o->csv = NULL;
}
