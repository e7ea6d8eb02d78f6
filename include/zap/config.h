/* Read-only view of zap's settings table. Every setting is a ZAP_* environment
 * variable; precedence is: explicit create-time parameters, then the
 * environment, then the table default. docs/config.md is generated from this
 * table (zap-info --config-markdown) and a test keeps the two equal. */
#ifndef ZAP_CONFIG_H
#define ZAP_CONFIG_H
#include <stddef.h>
#include "zap/common.h"
#include "zap/status.h"

typedef struct zap_config_entry {
    const char *name;          /* e.g. "ZAP_UMA_POOL_BYTES" */
    const char *default_value; /* the default, as text */
    const char *accepted;      /* the accepted form, e.g. "bytes, optional K/M/G suffix" */
    const char *help;          /* one paragraph */
} zap_config_entry_t;

ZAP_BEGIN_DECLS
/* Number of settings in the table. */
ZAP_API size_t zap_config_count(void);

/* The index-th entry (0 <= index < zap_config_count()); NULL when out of range.
 * The entry is static: never freed, valid for the life of the process. */
ZAP_API const zap_config_entry_t *zap_config_entry(size_t index);

/* The value in force for the index-th setting: the environment's text when set,
 * else the default. Returns a pointer into the environment or the table (not to
 * be freed), or NULL when index is out of range. */
ZAP_API const char *zap_config_value(size_t index);

/* Validates the current value of every setting. On the first malformed or
 * out-of-range value, logs the variable, its value and the accepted form and
 * returns ZAP_ERR_INVALID_PARAM; bad_name_p (optional) receives the variable's
 * name. Unknown ZAP_* variables are warned about with the closest known name but
 * are not an error. Thread-safe. */
ZAP_API zap_status_t zap_config_check(const char **bad_name_p);
ZAP_END_DECLS
#endif
