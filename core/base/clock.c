/* One monotonic clock for every deadline, and the process-wide timeout. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "zap/transport.h"
#include "base/config_table.h"

double zap_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Every blocking wait asks for the timeout, and parsing the environment
 * each time cost ~600 ns, three times a small UCX message. The parsed value is
 * kept per thread next to the text it came from, so a changed ZAP_TIMEOUT
 * (tests set it at run time) is still seen, for the price of a getenv and a
 * short compare. */
double zap_timeout_seconds(void)
{
    static _Thread_local char cached_text[64];
    static _Thread_local double cached_value;
    static _Thread_local int cached;
    const char *text = getenv("ZAP_TIMEOUT");
    if (text == NULL)
        text = "";
    if (cached && strcmp(text, cached_text) == 0)
        return cached_value;
    double t = 30.0;
    /* A malformed ZAP_TIMEOUT was already reported when the transport was
     * created (it validates the table); keep the default here. */
    if (zap_cfg_get_seconds(ZAP_CFG_TIMEOUT, &t) != ZAP_OK)
        t = 30.0;
    if (strlen(text) < sizeof(cached_text)) {
        strcpy(cached_text, text);
        cached_value = t;
        cached = 1;
    }
    return t;
}
