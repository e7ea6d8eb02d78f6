/* Internals of the verify layer shared by its files and its tests. */
#ifndef ZAP_VERIFY_IMPL_H
#define ZAP_VERIFY_IMPL_H
#include <stdint.h>
#include <string.h>
#include "zap/verify.h"

/* The table-driven CRC32C, always available (the tests compare it with the
 * hardware path). */
uint32_t zap_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* The CRC32C of a || b from crc1 = crc32c(a) and crc2 = crc32c(b) (b being
 * len2 bytes), as zlib's crc32_combine. */
uint32_t zap_crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);

/* zap_crc32c over several threads (pieces of >= 16 MiB, at most one per core),
 * combined; the same value as zap_crc32c. A 512 MiB batch takes one thread
 * ~90 ms, which the root of a job would spend before anything is sent. */
uint32_t zap_crc32c_parallel(uint32_t crc, const void *buf, size_t len);

static inline uint16_t zap_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t zap_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t zap_le64(const uint8_t *p) { return (uint64_t)zap_le32(p) | ((uint64_t)zap_le32(p + 4) << 32); }
static inline void zap_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void zap_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void zap_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Header field offsets (docs/batch-format.md). */
enum {
    ZAP_BH_MAGIC = 0,
    ZAP_BH_VERSION = 4,
    ZAP_BH_SCHEME = 6,
    ZAP_BH_FLAGS = 8,
    ZAP_BH_STRIDE = 12,
    ZAP_BH_N_ITEMS = 16,
    ZAP_BH_FIXED_MSG_LEN = 24,
    ZAP_BH_RESERVED = 28,
    ZAP_BH_BATCH_ID = 32,
    ZAP_BH_RECORDS_OFF = 40,
    ZAP_BH_BLOB_OFF = 48,
    ZAP_BH_BLOB_LEN = 56,
    ZAP_BH_CRC = 60
};

/* Record fields of the Ed25519 layouts. */
#define ZAP_REC_PK 0
#define ZAP_REC_SIG 32
#define ZAP_REC_MSG 96      /* fixed: the 32-byte message */
#define ZAP_REC_MSG_OFF 96  /* variable: u32 offset into the blob */
#define ZAP_REC_MSG_LEN 100 /* variable: u32 length */
#define ZAP_VAR_RECORD_MIN 104u

/* Test hook: the rank whose combined verdict set the job corrupts (one bit
 * flipped before hashing), to show that disagreement fails every rank; -1
 * (the default) disables it. Never set outside tests. */
extern int zap_verify_test_flip_rank;

/* Test hook: the rank that sleeps zap_verify_test_slow_seconds before each
 * verifier call (its shard, each segment, each segment the root takes), to
 * show the balancing of a scatter; -1 (the default) disables it. */
extern int zap_verify_test_slow_rank;
extern double zap_verify_test_slow_seconds;

/* zap_verify_batch on a piece of a shard of shard_items items: auto chooses
 * the GPU or the CPU by the shard's size, so every piece of a shard that
 * arrives in segments gets the verifier the whole shard would. */
zap_status_t zap_verify_piece(const zap_batch_view_t *view, const zap_verify_params_t *params, uint64_t shard_items,
                              uint32_t *bitmap, uint8_t *verdicts, zap_verify_stats_t *stats_p);

/* 1 when zap_verify_piece would run a shard of shard_items items on the GPU
 * (the verifier params or ZAP_VERIFIER ask for it, or auto and the shard
 * reaches ZAP_GPU_MIN_ITEMS, and a device is usable), else 0. */
int zap_verify_gpu_planned(const zap_verify_params_t *params, uint64_t shard_items);

/* Readies the calling thread's GPU for verifier calls of up to items items
 * (zap_ed25519_gpu_prepare) so the job's first call does not pay for it;
 * nothing without a GPU layer. A failure only costs that time later. */
void zap_verify_gpu_prepare(uint64_t items);

/* Test and job hook: the calling thread's verifier calls stop early (CPU
 * workers claim no more chunks, no further GPU call starts) and return
 * ZAP_ERR_CANCELED once *flag is nonzero (read atomically; NULL clears it).
 * The job sets its peer watch's flag (job_watch.h) while it verifies. */
void zap_verify_set_cancel(const int *flag);
/* 1 when the calling thread's cancel flag is set. */
int zap_verify_canceled(void);

/* Peak resident set of this process in KiB (VmHWM), 0 if unknown. */
uint64_t zap_verify_peak_rss_kb(void);
#endif
