/* The GPU verifier of a zap built without CUDA: every call says so, so the
 * verify layer links and chooses the CPU. */
#include "ed25519_gpu.h"

int zap_ed25519_gpu_available(void)
{
    return 0;
}

int zap_ed25519_gpu_device_count(void)
{
    return 0;
}

zap_status_t zap_ed25519_gpu_verify(const void *records, size_t stride, uint64_t n,
                                    int variable_msgs, const void *blob, uint64_t blob_len,
                                    uint8_t *verdicts, uint32_t *bitmap,
                                    zap_ed25519_gpu_stats_t *stats)
{
    (void)records;
    (void)stride;
    (void)n;
    (void)variable_msgs;
    (void)blob;
    (void)blob_len;
    (void)verdicts;
    (void)bitmap;
    (void)stats;
    return ZAP_ERR_UNSUPPORTED;
}

zap_status_t zap_ed25519_gpu_use_device(int dev)
{
    (void)dev;
    return ZAP_ERR_UNSUPPORTED;
}

zap_status_t zap_ed25519_gpu_prepare(uint64_t n)
{
    (void)n;
    return ZAP_ERR_UNSUPPORTED;
}
