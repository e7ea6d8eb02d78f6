/* CRC32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78, as in
 * iSCSI and ext4): the checksum of the batch format (docs/batch-format.md)
 * and of the transport's checksum mode. One implementation for every layer
 * (crc32c.c): SSE4.2's crc32 instruction where the CPU has it, a
 * slicing-by-8 table otherwise; both give the same values. */
#ifndef ZAP_BASE_CRC32C_H
#define ZAP_BASE_CRC32C_H
#include <stddef.h>
#include <stdint.h>
#include "zap/common.h"

ZAP_BEGIN_DECLS

/* The CRC32C of len bytes at buf (borrowed), continuing from crc (0 to
 * start): the value of a || b is zap_crc32c(zap_crc32c(0, a), b). Never
 * blocks; thread-safe (the tables are built once, under pthread_once).
 * Public: include/zap/verify.h declares it too. */
ZAP_API uint32_t zap_crc32c(uint32_t crc, const void *buf, size_t len);

/* The table-driven path alone, always available (the tests compare it with
 * the hardware path). */
uint32_t zap_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* The CRC32C of a || b from crc1 = crc32c(a) and crc2 = crc32c(b) (b being
 * len2 bytes), as zlib's crc32_combine. */
uint32_t zap_crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);

/* zap_crc32c over several threads (pieces of >= 16 MiB, at most one per core
 * and 16 in all), combined; the same value as zap_crc32c. Blocks until every
 * piece is done. The root of a verification job pays for the CRC of the
 * whole batch before anything is sent (docs/verify.md). */
uint32_t zap_crc32c_parallel(uint32_t crc, const void *buf, size_t len);

/* The name the transport's checksum mode calls (core/transport/checksum.c):
 * the same function. */
static inline uint32_t zap_base_crc32c(uint32_t crc, const void *buf, size_t len)
{
    return zap_crc32c(crc, buf, len);
}

ZAP_END_DECLS
#endif
