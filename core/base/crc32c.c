/* CRC32C (crc32c.h). A table-driven software path (slicing by 8: eight
 * 256-entry tables fold eight input bytes per step, about 1-2 GB/s) always
 * exists; on x86-64 CPUs with SSE4.2 the crc32 instruction does 8 bytes per
 * step instead. Both give identical values; a test checks them against the
 * standard check value and each other.
 *
 * The tables are built once, under pthread_once, so the first call from any
 * thread is safe. */
#include "base/crc32c.h"
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
#define ZAP_CRC_HAVE_SSE42 1
#endif

#define ZAP_CRC_POLY 0x82F63B78u

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int crc_use_hw;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (ZAP_CRC_POLY & (0u - (c & 1u)));
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
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        lo = __builtin_bswap32(lo);
        hi = __builtin_bswap32(hi);
#endif
        lo ^= c;
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

/* ---- combining and the parallel form ------------------------------------ */

/* a * b modulo the polynomial, both in the reflected representation (bit 31
 * is x^0), as zlib's multmodp does for its CRC-32. */
static uint32_t crc_multmodp(uint32_t a, uint32_t b)
{
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0)
                break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ ZAP_CRC_POLY : b >> 1;
    }
    return p;
}

uint32_t zap_crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2)
{
    /* x^(8 len2) by squaring: sq is x^(2^k) for k = 3, 4, ... (x^8 first). */
    uint32_t sq = 1u << 30; /* x^1 */
    for (int k = 0; k < 3; k++)
        sq = crc_multmodp(sq, sq);
    uint32_t p = 1u << 31; /* x^0 */
    for (; len2; len2 >>= 1) {
        if (len2 & 1)
            p = crc_multmodp(sq, p);
        sq = crc_multmodp(sq, sq);
    }
    return crc_multmodp(p, crc1) ^ crc2;
}

typedef struct crc_part {
    const uint8_t *p;
    size_t len;
    uint32_t crc;
} crc_part_t;

static void *crc_part_main(void *arg)
{
    crc_part_t *c = arg;
    c->crc = zap_crc32c(0, c->p, c->len);
    return NULL;
}

#define ZAP_CRC_PART_MIN ((size_t)16 << 20) /* below this a thread costs more than it saves */
#define ZAP_CRC_MAX_THREADS 16

uint32_t zap_crc32c_parallel(uint32_t crc, const void *buf, size_t len)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t t = len / ZAP_CRC_PART_MIN;
    if (cores > 0 && t > (size_t)cores)
        t = (size_t)cores;
    if (t > ZAP_CRC_MAX_THREADS)
        t = ZAP_CRC_MAX_THREADS;
    if (t < 2)
        return zap_crc32c(crc, buf, len);
    crc_part_t part[ZAP_CRC_MAX_THREADS];
    pthread_t tid[ZAP_CRC_MAX_THREADS];
    int started[ZAP_CRC_MAX_THREADS] = {0};
    size_t each = len / t, off = 0;
    for (size_t i = 0; i < t; i++) {
        part[i].p = (const uint8_t *)buf + off;
        part[i].len = i + 1 == t ? len - off : each;
        off += part[i].len;
        /* part 0 runs on the calling thread; a part whose thread cannot start does too */
        started[i] = i > 0 && pthread_create(&tid[i], NULL, crc_part_main, &part[i]) == 0;
    }
    for (size_t i = 0; i < t; i++)
        if (!started[i])
            crc_part_main(&part[i]);
    uint32_t c = crc;
    for (size_t i = 0; i < t; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        c = zap_crc32c_combine(c, part[i].crc, part[i].len);
    }
    return c;
}
