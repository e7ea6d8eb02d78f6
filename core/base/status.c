/* Status codes and their strings share one table, so a new code cannot be
 * added without its text; tests/base walks the table. */
#include "zap/status.h"
#include <stddef.h>

static const struct {
    zap_status_t code;
    const char *text;
} status_table[] = {
    {ZAP_OK, "success"},
    {ZAP_INPROGRESS, "operation in progress"},
    {ZAP_ERR_INVALID_PARAM, "invalid parameter"},
    {ZAP_ERR_NO_MEMORY, "out of memory"},
    {ZAP_ERR_NO_RESOURCE, "resource temporarily unavailable"},
    {ZAP_ERR_BUSY, "object busy"},
    {ZAP_ERR_UNSUPPORTED, "unsupported"},
    {ZAP_ERR_NOT_FOUND, "not found"},
    {ZAP_ERR_TIMED_OUT, "timed out"},
    {ZAP_ERR_PEER_FAILED, "peer failed"},
    {ZAP_ERR_TRANSPORT, "transport error"},
    {ZAP_ERR_CUDA, "CUDA error"},
    {ZAP_ERR_VERSION, "incompatible version"},
    {ZAP_ERR_TRUNCATED, "message truncated"},
    {ZAP_ERR_CLOSED, "closed"},
    {ZAP_ERR_MISMATCH, "ranks disagree"},
    {ZAP_ERR_CORRUPT, "corrupt data"},
    {ZAP_ERR_CANCELED, "canceled"},
    {ZAP_ERR_REVOKED, "revoked: another rank failed the operation"},
};

const char *zap_status_string(zap_status_t status)
{
    for (size_t i = 0; i < sizeof(status_table) / sizeof(status_table[0]); i++) {
        if (status_table[i].code == status)
            return status_table[i].text;
    }
    return "unknown status";
}
