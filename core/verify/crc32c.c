/* CRC32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78), the
 * checksum of the batch format. A table-driven software path (slicing by 8,
 * about 1-2 GB/s) always exists; on x86-64 CPUs with SSE4.2 the crc32
 * instruction does 8 bytes per step instead. Both give identical values; a
 * test checks them against the standard check value and each other.
 *
 * The tables are built once, under pthread_once, so the first call from any
 * thread is safe. */
#include "zap/verify.h"
#include <pthread.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
#define ZAP_CRC_HAVE_SSE42 1
#endif

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int crc_use_hw;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
#ifdef ZAP_CRC_HAVE_SSE42
    __builtin_cpu_init();
    crc_use_hw = __builtin_cpu_supports("sse4.2");
#endif
}

/* Software path on the inverted running value. */
uint32_t zap_crc32c_sw(uint32_t crc, const void *buf, size_t len);
uint32_t zap_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&crc_once, crc_init);
    const uint8_t *p = buf;
    uint32_t c = ~crc;
    while (len && ((uintptr_t)p & 7)) {
        c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
        len--;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        uint32_t lo = (uint32_t)w ^ c, hi = (uint32_t)(w >> 32);
        c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^
            crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
            crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}

#ifdef ZAP_CRC_HAVE_SSE42
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    uint64_t c = ~crc;
    while (len && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        len--;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        len -= 8;
    }
    while (len--)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}
#endif

uint32_t zap_crc32c(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&crc_once, crc_init);
    if (len == 0)
        return crc;
#ifdef ZAP_CRC_HAVE_SSE42
    if (crc_use_hw)
        return crc32c_hw(crc, buf, len);
#endif
    return zap_crc32c_sw(crc, buf, len);
}
