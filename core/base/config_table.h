/* Typed access to the settings table (config.c). Each getter reads the
 * environment at call time, so create calls see the value in force then. A
 * malformed or out-of-range value logs the variable, its value and the accepted
 * form, and returns ZAP_ERR_INVALID_PARAM without writing the output.
 *
 * To add a setting: append an id here and a row in config.c (same order); the
 * table test and docs/config.md check keep the rest honest. */
#ifndef ZAP_BASE_CONFIG_TABLE_H
#define ZAP_BASE_CONFIG_TABLE_H
#include <stdint.h>
#include "zap/status.h"

typedef enum zap_cfg_id {
    ZAP_CFG_LOG_LEVEL,
    ZAP_CFG_UMA_POOL_BYTES,
    ZAP_CFG_POOL_BACKEND,
    ZAP_CFG_POOL_CHUNK_BYTES,
    ZAP_CFG_TIMEOUT,
    ZAP_CFG_INPROC_EAGER_BYTES,
    ZAP_CFG_UCP_STAGING,
    ZAP_CFG_ALLREDUCE_ALG,
    ZAP_CFG_BCAST_ALG,
    ZAP_CFG_COLL_PIPELINE_BYTES,
    ZAP_CFG_CHECKSUM,
    ZAP_CFG_VERIFIER,
    ZAP_CFG_VERIFY_THREADS,
    ZAP_CFG_GPU_MIN_ITEMS,
    ZAP_CFG_COLL_GPU_PATH,
    ZAP_CFG_COLL_GPU_MIN_BYTES,
    ZAP_CFG_COLL_SHM,
    ZAP_CFG_COLL_SHM_LARGE_BYTES,
    ZAP_CFG_COLL_CMA,
    ZAP_CFG_REDUCE_ALG,
    ZAP_CFG_REDUCE_SCATTER_ALG,
    ZAP_CFG_GATHER_ALG,
    ZAP_CFG_ALLTOALL_ALG,
    ZAP_CFG_SCAN_ALG,
    ZAP_CFG_EXSCAN_ALG,
    ZAP_CFG_COLL_HIER,
    ZAP_CFG_UCP_PRECONNECT,
    ZAP_CFG_COUNT
} zap_cfg_id_t;

/* Unsigned integer (sizes accept K/M/G/T and KiB/MiB/GiB/TiB suffixes, powers of 1024). */
zap_status_t zap_cfg_get_u64(zap_cfg_id_t id, uint64_t *value_p);
/* Seconds: digits with an optional decimal fraction ("30", "0.5"), within the
 * row's range; "none" gives INFINITY where the row allows it (ZAP_TIMEOUT). */
zap_status_t zap_cfg_get_seconds(zap_cfg_id_t id, double *value_p);
/* zap_cfg_get_seconds without the log line or the unknown-variable warning,
 * for a reader that falls back to the default by itself. */
zap_status_t zap_cfg_peek_seconds(zap_cfg_id_t id, double *value_p);
/* One of the names in the row's "a|b|c" choices; *index_p is its position. */
zap_status_t zap_cfg_get_choice(zap_cfg_id_t id, int *index_p);
/* Name of the id's variable, for messages. */
const char *zap_cfg_name(zap_cfg_id_t id);

/* Warns about each ZAP_* variable in the environment that is not a setting,
 * suggesting the closest name. Runs once by itself at the first lookup;
 * callable again (tests, zap-info). */
void zap_cfg_warn_unknown(void);

/* Parses text the way the id's row does (for values passed explicitly). */
zap_status_t zap_cfg_parse_u64(zap_cfg_id_t id, const char *text, uint64_t *value_p);
#endif
