/* The one settings table. Rows are in zap_cfg_id_t order (config_table.h); a
 * static assertion keeps the two the same length. Parsers are strict: the
 * whole value must parse and be in range, or the caller gets
 * ZAP_ERR_INVALID_PARAM and a log line naming the variable, the value and the
 * accepted form (the seed silently fell back to defaults). */
#include "zap/config.h"
#include "base/config_table.h"
#include "base/log.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum { CFG_SIZE, CFG_UINT, CFG_SECONDS, CFG_CHOICE } cfg_kind_t;

typedef struct {
    zap_config_entry_t pub;
    cfg_kind_t kind;
    const char *choices; /* "a|b|c" for CFG_CHOICE; for CFG_SECONDS, "none" when that word means no limit */
    uint64_t min, max;   /* inclusive range: sizes and integers; seconds in milliseconds */
} cfg_row_t;

#define GiB (1024ull * 1024 * 1024)
#define MiB (1024ull * 1024)

static const cfg_row_t rows[] = {
    [ZAP_CFG_LOG_LEVEL] = {{"ZAP_LOG_LEVEL", "warn", "error|warn|info|debug|trace",
                            "Least severe log level printed to stderr."},
                           CFG_CHOICE, "error|warn|info|debug|trace", 0, 0},
    [ZAP_CFG_UMA_POOL_BYTES] = {{"ZAP_UMA_POOL_BYTES", "4294967296", "bytes (K/M/G/T suffix allowed); 0 = unlimited",
                                 "Budget of a pool: chunks plus cold-path buffers. Allocations beyond it fail "
                                 "with ZAP_ERR_NO_MEMORY after wholly free chunks are returned. Managed pools "
                                 "are further capped at the device's free memory."},
                                CFG_SIZE, NULL, 0, UINT64_MAX},
    [ZAP_CFG_POOL_BACKEND] = {{"ZAP_POOL_BACKEND", "auto", "auto|managed|pinned|host",
                               "Pool backing memory. auto: CUDA managed where a CUDA device exists, else "
                               "page-aligned host memory."},
                              CFG_CHOICE, "auto|managed|pinned|host", 0, 0},
    [ZAP_CFG_POOL_CHUNK_BYTES] = {{"ZAP_POOL_CHUNK_BYTES", "8M", "power of two bytes, 2M to 1G",
                                   "Size of the chunks slabs are carved from; each chunk is registered with "
                                   "the network once."},
                                  CFG_SIZE, NULL, 2 * MiB, GiB},
    [ZAP_CFG_TIMEOUT] = {{"ZAP_TIMEOUT", "none",
                          "none, or seconds: digits with an optional decimal fraction (30, 0.25), 0.001 to "
                          "10000000",
                          "An opt-in deadline of every blocking wait; when it passes the call returns "
                          "ZAP_ERR_TIMED_OUT naming the peer it waited for (and, in a collective, every "
                          "other rank fails that operation too). none: no deadline, as in MPI: a live peer "
                          "is waited for however late it is, while a dead one is still detected within "
                          "about a second (docs/faults.md). A transport or communicator reads it when it "
                          "is created and keeps the value."},
                         CFG_SECONDS, "none", 1, 10000000000ull},
    [ZAP_CFG_INPROC_EAGER_BYTES] = {{"ZAP_INPROC_EAGER_BYTES", "8K", "bytes, 0 to 1M",
                                     "In-process transport: messages up to this size are copied into a pool "
                                     "buffer so the send completes at once; larger ones wait for the receive "
                                     "(rendezvous, no copy)."},
                                    CFG_SIZE, NULL, 0, MiB},
    [ZAP_CFG_UCP_STAGING] = {{"ZAP_UCP_STAGING", "auto", "auto|prefetch|none",
                              "UCX transport and managed buffers: prefetch pages to the host before UCX "
                              "touches them (auto and prefetch), or let them migrate one fault at a time "
                              "(none)."},
                             CFG_CHOICE, "auto|prefetch|none", 0, 0},
    [ZAP_CFG_ALLREDUCE_ALG] = {{"ZAP_ALLREDUCE_ALG", "auto", "auto|rd|rabenseifner|ring|direct|shm|cma|hier",
                                "Allreduce algorithm of communicators made from now on "
                                "(zap_comm_params_t.allreduce_alg overrides); auto chooses by the selection "
                                "table (zap-info prints it)."},
                               CFG_CHOICE, "auto|rd|rabenseifner|ring|direct|shm|cma|hier", 0, 0},
    [ZAP_CFG_BCAST_ALG] = {{"ZAP_BCAST_ALG", "auto", "auto|binomial|scatter_allgather|chain|rd|shm|hier",
                            "Broadcast algorithm of communicators made from now on "
                            "(zap_comm_params_t.bcast_alg overrides); auto chooses by the selection table."},
                           CFG_CHOICE, "auto|binomial|scatter_allgather|chain|rd|shm|hier", 0, 0},
    [ZAP_CFG_COLL_PIPELINE_BYTES] = {{"ZAP_COLL_PIPELINE_BYTES", "256K", "bytes, 4K to 64M",
                                      "Segment size of pipelined collectives (ring allreduce, chain "
                                      "broadcast, the hierarchical allreduce's chunks). Unset: chosen per "
                                      "message size, at most 256K (the hierarchical allreduce: whole up "
                                      "to 128K, then 64K to 4M) (docs/collectives.md)."},
                                     CFG_SIZE, NULL, 4096, 64 * MiB},
    [ZAP_CFG_CHECKSUM] = {{"ZAP_CHECKSUM", "0", "0 or 1",
                           "1: collective payloads carry a CRC32C per chunk; a corrupted payload is "
                           "reported with the sending rank."},
                          CFG_UINT, NULL, 0, 1},
    [ZAP_CFG_VERIFIER] = {{"ZAP_VERIFIER", "auto", "auto|cpu|gpu",
                           "Signature verifier: gpu needs a CUDA device; auto uses the GPU for shards of "
                           "at least ZAP_GPU_MIN_ITEMS items."},
                          CFG_CHOICE, "auto|cpu|gpu", 0, 0},
    [ZAP_CFG_VERIFY_THREADS] = {{"ZAP_VERIFY_THREADS", "0", "integer 0 to 1024; 0 = all cores",
                                 "Threads of the CPU verifier on each rank."},
                                CFG_UINT, NULL, 0, 1024},
    [ZAP_CFG_GPU_MIN_ITEMS] = {{"ZAP_GPU_MIN_ITEMS", "64", "integer",
                                "With ZAP_VERIFIER=auto, shards smaller than this stay on the CPU. On an "
                                "H200 host the GPU passes 16-core libsodium from 16 items and is 1.8x "
                                "faster at 64 (docs/ed25519.md, Crossover)."},
                               CFG_UINT, NULL, 0, UINT64_MAX},
    [ZAP_CFG_COLL_GPU_PATH] = {{"ZAP_COLL_GPU_PATH", "auto", "auto|ipc|off",
                                "Allreduce and broadcast on managed or device buffers of ranks on one host: "
                                "kernels move the data GPU to GPU through peer-mapped memory (CUDA IPC; auto: "
                                "from ZAP_COLL_GPU_MIN_BYTES, ipc: at every size), or the host algorithms run "
                                "on host copies (off). A call whose ranks do not all pass GPU-resident buffers "
                                "runs on the host; a small one, whose agreement carries its data, is a "
                                "mismatch."},
                               CFG_CHOICE, "auto|ipc|off", 0, 0},
    [ZAP_CFG_COLL_GPU_MIN_BYTES] = {{"ZAP_COLL_GPU_MIN_BYTES", "64K", "bytes, 0 to 1T",
                                     "Smallest allreduce or broadcast on managed memory that takes the GPU path "
                                     "under ZAP_COLL_GPU_PATH=auto; smaller ones are moved by the CPU where the "
                                     "data lies. Device memory takes the path at every size."},
                                    CFG_SIZE, NULL, 0, 1024 * GiB},
    [ZAP_CFG_COLL_SHM] = {{"ZAP_COLL_SHM", "auto", "auto|off",
                           "Communicators whose ranks are processes on one host: allreduces and broadcasts "
                           "agree, and move their data (larger than ZAP_COLL_SHM_LARGE_BYTES round the area "
                           "in chunks), through a shared-memory segment instead of the transport (auto), or "
                           "always use the transport (off). Off where any rank says off, and under "
                           "ZAP_CHECKSUM=1."},
                          CFG_CHOICE, "auto|off", 0, 0},
    [ZAP_CFG_COLL_SHM_LARGE_BYTES] = {{"ZAP_COLL_SHM_LARGE_BYTES", "16M", "bytes, 0 to 64M",
                                       "Size per rank of the shared-memory segment's large area (ranks on "
                                       "one host): the largest reduce, reduce-scatter or alltoall it carries; "
                                       "larger allreduces and broadcasts go round it in chunks. Each "
                                       "communicator reserves up to this per rank "
                                       "plus one more in /dev/shm as its large calls need, at most 64M in all, "
                                       "and at most 512K per rank above 4 ranks (where the single-copy "
                                       "allreduce, ZAP_COLL_CMA, or else the ring measured faster beyond). 0: "
                                       "4032 bytes only, and no single-copy allreduce. Rank 0's value holds "
                                       "for all."},
                                      CFG_SIZE, NULL, 0, 64 * MiB},
    [ZAP_CFG_COLL_CMA] = {{"ZAP_COLL_CMA", "auto", "auto|on|off",
                           "Communicators with a shared-memory segment: large allreduces, reduces and "
                           "reduce-scatters on host memory read the other ranks' buffers directly "
                           "(process_vm_readv, one copy) where the system permits it: auto, in preference to "
                           "the shared area where a probe at the first setup finds such reads fast on this "
                           "host, else only for reduces and reduce-scatters beyond the area (allreduces go "
                           "round it); on, in preference wherever permitted; off, never. "
                           "Off where any rank says off; the area is preferred where any rank's probe finds "
                           "reads dear."},
                          CFG_CHOICE, "auto|on|off", 0, 0},
    [ZAP_CFG_REDUCE_ALG] = {{"ZAP_REDUCE_ALG", "auto", "auto|binomial|rabenseifner|shm|hier|cma",
                             "Reduce (rooted) algorithm of communicators made from now on "
                             "(zap_comm_params_t.reduce_alg overrides); auto chooses by the selection table."},
                            CFG_CHOICE, "auto|binomial|rabenseifner|shm|hier|cma", 0, 0},
    [ZAP_CFG_REDUCE_SCATTER_ALG] = {{"ZAP_REDUCE_SCATTER_ALG", "auto", "auto|rhalving|ring|shm|cma|hier",
                                     "Reduce_scatter and reduce_scatter_block algorithm of communicators made "
                                     "from now on (zap_comm_params_t.reduce_scatter_alg overrides)."},
                                    CFG_CHOICE, "auto|rhalving|ring|shm|cma|hier", 0, 0},
    [ZAP_CFG_GATHER_ALG] = {{"ZAP_GATHER_ALG", "auto", "auto|linear|binomial|shm|hier",
                             "Gather and gatherv algorithm of communicators made from now on "
                             "(zap_comm_params_t.gather_alg overrides; binomial and shm serve gather only)."},
                            CFG_CHOICE, "auto|linear|binomial|shm|hier", 0, 0},
    [ZAP_CFG_ALLTOALL_ALG] = {{"ZAP_ALLTOALL_ALG", "auto", "auto|pairwise|bruck|linear|shm|cma",
                               "Alltoall and alltoallv algorithm of communicators made from now on "
                               "(zap_comm_params_t.alltoall_alg overrides; bruck and cma serve alltoall only)."},
                              CFG_CHOICE, "auto|pairwise|bruck|linear|shm|cma", 0, 0},
    [ZAP_CFG_SCAN_ALG] = {{"ZAP_SCAN_ALG", "auto", "auto|rd|linear|shm|blocks|chain",
                           "Scan (inclusive prefix) algorithm of communicators made from now on "
                           "(zap_comm_params_t.scan_alg overrides)."},
                          CFG_CHOICE, "auto|rd|linear|shm|blocks|chain", 0, 0},
    [ZAP_CFG_EXSCAN_ALG] = {{"ZAP_EXSCAN_ALG", "auto", "auto|rd|linear|shm|blocks|chain",
                             "Exscan (exclusive prefix) algorithm of communicators made from now on "
                             "(zap_comm_params_t.exscan_alg overrides)."},
                            CFG_CHOICE, "auto|rd|linear|shm|blocks|chain", 0, 0},
    [ZAP_CFG_COLL_HIER] = {{"ZAP_COLL_HIER", "auto", "auto|off",
                            "Communicators whose ranks are on several hosts with more than one rank on some "
                            "host: collectives agree and move data through the hosts' hierarchy (a host's ranks "
                            "among themselves, then one or more ranks per host across hosts; auto), or treat "
                            "every rank alike (off). Hosts are told apart by host name and boot id. Every rank "
                            "must say the same."},
                           CFG_CHOICE, "auto|off", 0, 0},
    [ZAP_CFG_UCP_PRECONNECT] = {{"ZAP_UCP_PRECONNECT", "auto", "auto|on|off",
                                 "UCX transport: connect to every peer UCX reaches over TCP (another host's, or "
                                 "every one where shared memory is not allowed) while the transport is created, "
                                 "so that a peer that dies or leaves later is never met halfway through a "
                                 "connection (on; auto: in worlds of at most 257 ranks), or at the first message "
                                 "to each (off) (docs/transport.md, \"Connections\")."},
                                CFG_CHOICE, "auto|on|off", 0, 0},
};

_Static_assert(sizeof(rows) / sizeof(rows[0]) == ZAP_CFG_COUNT, "one row per zap_cfg_id_t");

static void warn_unknown_once(void);

size_t zap_config_count(void) { return ZAP_CFG_COUNT; }

const zap_config_entry_t *zap_config_entry(size_t index)
{
    return index < ZAP_CFG_COUNT ? &rows[index].pub : NULL;
}

const char *zap_config_value(size_t index)
{
    if (index >= ZAP_CFG_COUNT)
        return NULL;
    const char *env = getenv(rows[index].pub.name);
    return env != NULL ? env : rows[index].pub.default_value;
}

const char *zap_cfg_name(zap_cfg_id_t id) { return id < ZAP_CFG_COUNT ? rows[id].pub.name : "?"; }

static zap_status_t reject(zap_cfg_id_t id, const char *text)
{
    zap_error("config: %s has invalid value '%s' (accepted: %s)", rows[id].pub.name, text,
              rows[id].pub.accepted);
    return ZAP_ERR_INVALID_PARAM;
}

/* Digits, then (sizes) an optional suffix: nothing before the digits and
 * nothing after, so no sign, space, "0x" or exponent gets past strtoull's
 * own leniency. */
static int parse_size_text(const char *text, int allow_suffix, uint64_t *value_p)
{
    if (!isdigit((unsigned char)text[0]))
        return -1; /* rejects "", " 5", "-1", "+5", "x" */
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno == ERANGE)
        return -1;
    uint64_t mult = 1;
    if (*end != '\0') {
        if (!allow_suffix)
            return -1;
        static const struct { const char *s; uint64_t m; } suffixes[] = {
            {"K", 1ull << 10}, {"KiB", 1ull << 10}, {"KB", 1ull << 10}, {"M", 1ull << 20},
            {"MiB", 1ull << 20}, {"MB", 1ull << 20}, {"G", 1ull << 30}, {"GiB", 1ull << 30},
            {"GB", 1ull << 30}, {"T", 1ull << 40}, {"TiB", 1ull << 40}, {"TB", 1ull << 40},
        };
        mult = 0;
        for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
            if (strcasecmp(end, suffixes[i].s) == 0)
                mult = suffixes[i].m;
        }
        if (mult == 0)
            return -1;
    }
    if (v != 0 && mult > UINT64_MAX / v)
        return -1;
    *value_p = (uint64_t)v * mult;
    return 0;
}

zap_status_t zap_cfg_parse_u64(zap_cfg_id_t id, const char *text, uint64_t *value_p)
{
    if (id >= ZAP_CFG_COUNT || text == NULL || value_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    const cfg_row_t *row = &rows[id];
    uint64_t v;
    if ((row->kind != CFG_SIZE && row->kind != CFG_UINT) ||
        parse_size_text(text, row->kind == CFG_SIZE, &v) != 0 || v < row->min || v > row->max)
        return reject(id, text);
    if (id == ZAP_CFG_POOL_CHUNK_BYTES && (v & (v - 1)) != 0)
        return reject(id, text);
    *value_p = v;
    return ZAP_OK;
}

static const char *value_text(zap_cfg_id_t id)
{
    warn_unknown_once();
    return zap_config_value(id);
}

zap_status_t zap_cfg_get_u64(zap_cfg_id_t id, uint64_t *value_p)
{
    if (id >= ZAP_CFG_COUNT || value_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    return zap_cfg_parse_u64(id, value_text(id), value_p);
}

/* Digits with an optional fraction ("30", "0.25"): what the rows say, and
 * nothing strtod would take besides (hex, exponents, inf, nan, spaces,
 * signs). */
static int parse_seconds_text(const char *text, double *value_p)
{
    /* By hand rather than strtod, whose decimal point follows the locale:
     * all digits as one integer, then one division by a power of ten, which
     * gives the nearest double ("0.3" is 0.3) for up to 15 digits. */
    const char *p = text;
    double mant = 0, scale = 1;
    for (; isdigit((unsigned char)*p); p++)
        mant = mant * 10 + (*p - '0');
    if (p == text)
        return -1;
    if (*p == '.') {
        const char *frac = ++p;
        for (; isdigit((unsigned char)*p); p++) {
            mant = mant * 10 + (*p - '0');
            scale *= 10;
        }
        if (p == frac)
            return -1;
    }
    if (*p != '\0')
        return -1;
    *value_p = mant / scale;
    return 0;
}

/* The row's range is in milliseconds; a bound divided by 1000 is the very
 * double the parser gives for the same text ("0.001"). */
static int seconds_in_range(const cfg_row_t *row, double v)
{
    return v >= (double)row->min / 1000.0 && v <= (double)row->max / 1000.0;
}

/* A row's seconds: in range, or "none" (INFINITY) where the row allows it. */
static int parse_row_seconds(const cfg_row_t *row, const char *text, double *value_p)
{
    if (row->choices != NULL && strcmp(text, row->choices) == 0) {
        *value_p = INFINITY;
        return 0;
    }
    double v = 0;
    if (parse_seconds_text(text, &v) != 0 || !seconds_in_range(row, v))
        return -1;
    *value_p = v;
    return 0;
}

zap_status_t zap_cfg_get_seconds(zap_cfg_id_t id, double *value_p)
{
    if (id >= ZAP_CFG_COUNT || value_p == NULL || rows[id].kind != CFG_SECONDS)
        return ZAP_ERR_INVALID_PARAM;
    const char *text = value_text(id);
    return parse_row_seconds(&rows[id], text, value_p) == 0 ? ZAP_OK : reject(id, text);
}

zap_status_t zap_cfg_peek_seconds(zap_cfg_id_t id, double *value_p)
{
    if (id >= ZAP_CFG_COUNT || value_p == NULL || rows[id].kind != CFG_SECONDS)
        return ZAP_ERR_INVALID_PARAM;
    return parse_row_seconds(&rows[id], zap_config_value(id), value_p) == 0 ? ZAP_OK : ZAP_ERR_INVALID_PARAM;
}

zap_status_t zap_cfg_get_choice(zap_cfg_id_t id, int *index_p)
{
    if (id >= ZAP_CFG_COUNT || index_p == NULL || rows[id].kind != CFG_CHOICE)
        return ZAP_ERR_INVALID_PARAM;
    const char *text = value_text(id);
    const char *c = rows[id].choices;
    size_t tlen = strlen(text);
    for (int idx = 0; c != NULL && *c != '\0'; idx++) {
        const char *bar = strchr(c, '|');
        size_t n = bar ? (size_t)(bar - c) : strlen(c);
        if (n == tlen && strncasecmp(c, text, n) == 0) {
            *index_p = idx;
            return ZAP_OK;
        }
        c = bar ? bar + 1 : c + n;
    }
    return reject(id, text);
}

zap_status_t zap_config_check(const char **bad_name_p)
{
    for (int id = 0; id < ZAP_CFG_COUNT; id++) {
        zap_status_t st;
        uint64_t u;
        double d;
        int k;
        switch (rows[id].kind) {
        case CFG_SIZE:
        case CFG_UINT: st = zap_cfg_get_u64((zap_cfg_id_t)id, &u); break;
        case CFG_SECONDS: st = zap_cfg_get_seconds((zap_cfg_id_t)id, &d); break;
        default: st = zap_cfg_get_choice((zap_cfg_id_t)id, &k); break;
        }
        if (st != ZAP_OK) {
            if (bad_name_p != NULL)
                *bad_name_p = rows[id].pub.name;
            return st;
        }
    }
    return ZAP_OK;
}

/* Levenshtein distance, small strings only (variable names). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 64;
    size_t prev[64], cur[64];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof(size_t) * (lb + 1));
    }
    return prev[lb];
}

extern char **environ;

/* Names read elsewhere that are not settings of the table: the UCX plugin's
 * own switches, test and benchmark hooks, and the scripts' knobs
 * (the shell scripts: build directory, rank count). */
static int is_known_extra(const char *name)
{
    static const char *const extra[] = {"ZAP_UCX_PLUGIN", "ZAP_TEST_", "ZAP_BENCH_", "ZAP_BUILD_", "ZAP_FAULTS_", "ZAP_SOAK_",
                                        "ZAP_RANKS", "ZAP_ED25519_"};
    for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
        if (strncmp(name, extra[i], strlen(extra[i])) == 0)
            return 1;
    }
    return 0;
}

void zap_cfg_warn_unknown(void)
{
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        if (strncmp(*e, "ZAP_", 4) != 0)
            continue;
        char name[128];
        const char *eq = strchr(*e, '=');
        size_t n = eq ? (size_t)(eq - *e) : strlen(*e);
        if (n >= sizeof(name))
            n = sizeof(name) - 1;
        memcpy(name, *e, n);
        name[n] = '\0';
        if (is_known_extra(name))
            continue;
        size_t best = SIZE_MAX;
        const char *best_name = NULL;
        int known = 0;
        for (int id = 0; id < ZAP_CFG_COUNT; id++) {
            if (strcmp(name, rows[id].pub.name) == 0) {
                known = 1;
                break;
            }
            size_t d = edit_distance(name, rows[id].pub.name);
            if (d < best) {
                best = d;
                best_name = rows[id].pub.name;
            }
        }
        if (!known)
            zap_warn("config: unknown variable %s (did you mean %s?)", name, best_name);
    }
}

static pthread_once_t unknown_once = PTHREAD_ONCE_INIT;
static void warn_unknown_once(void) { pthread_once(&unknown_once, zap_cfg_warn_unknown); }
