/* The monotonic clock, and ZAP_TIMEOUT read for a creator to keep
 * (zap/clock.h). Nothing here caches: the objects that wait keep their own
 * copy, taken when they are created. */
#include <math.h>
#include <time.h>
#include "zap/clock.h"
#include "base/config_table.h"

double zap_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

zap_status_t zap_timeout_from_env(double *seconds_p)
{
    if (seconds_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    return zap_cfg_get_seconds(ZAP_CFG_TIMEOUT, seconds_p);
}

double zap_timeout_seconds(void)
{
    double t = INFINITY;
    if (zap_cfg_peek_seconds(ZAP_CFG_TIMEOUT, &t) != ZAP_OK)
        t = INFINITY;
    return t;
}
