/* Little-endian loads and stores of 16, 32 and 64-bit values at any byte
 * address: the one set of helpers for zap's byte formats (the batch header
 * and records, the segment stream's tokens, verdict files). They work byte
 * by byte, so the host's byte order and the pointer's alignment do not
 * matter; compilers turn them into plain loads and stores on x86-64.
 *
 * Plain C11, and also usable in CUDA device code (cuda/ed25519 decodes batch
 * records on the GPU with them), where they are host-and-device functions. */
#ifndef ZAP_BASE_LE_H
#define ZAP_BASE_LE_H
#include <stdint.h>

#if defined(__CUDACC__)
#define ZAP_LE_FN static inline __host__ __device__
#else
#define ZAP_LE_FN static inline
#endif

ZAP_LE_FN uint16_t zap_get_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

ZAP_LE_FN uint32_t zap_get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

ZAP_LE_FN uint64_t zap_get_le64(const uint8_t *p)
{
    return (uint64_t)zap_get_le32(p) | ((uint64_t)zap_get_le32(p + 4) << 32);
}

ZAP_LE_FN void zap_put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

ZAP_LE_FN void zap_put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

ZAP_LE_FN void zap_put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

#undef ZAP_LE_FN
#endif
