/* One monotonic clock for every deadline, and the process-wide timeout. */
#include <time.h>
#include "zap/transport.h"
#include "base/config_table.h"

double zap_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double zap_timeout_seconds(void)
{
    double t = 30.0;
    /* A malformed ZAP_TIMEOUT was already reported when the transport was
     * created (it validates the table); keep the default here. */
    if (zap_cfg_get_seconds(ZAP_CFG_TIMEOUT, &t) != ZAP_OK)
        t = 30.0;
    return t;
}
