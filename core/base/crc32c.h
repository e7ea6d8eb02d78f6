/* CRC32C (Castagnoli, reflected, as in iSCSI and ext4) in software, for the
 * lower layers (the transport's checksum mode). The verify layer has its own
 * public zap_crc32c with an SSE4.2 path; both give the same values. */
#ifndef ZAP_BASE_CRC32C_H
#define ZAP_BASE_CRC32C_H
#include <stddef.h>
#include <stdint.h>

/* The CRC32C of len bytes at buf, continuing from crc (0 to start): the
 * value of the whole is crc32c(crc32c(0, a), b) for a buffer a || b.
 * Table-driven, slicing by 8 (about 1 byte per cycle). Thread-safe. */
uint32_t zap_base_crc32c(uint32_t crc, const void *buf, size_t len);
#endif
