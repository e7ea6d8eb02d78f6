/* Batch signature verification: the batch file format (docs/batch-format.md),
 * a CPU verifier (libsodium on all cores), the GPU verifier when zap has one,
 * and the distributed job that spreads a batch over the ranks of a
 * communicator, verifies each shard and makes every rank hold, and agree on,
 * the full verdict set (docs/verify.md).
 *
 * Scheme 1 is Ed25519 (RFC 8032, pure) with exactly libsodium 1.0.18's
 * acceptance rules: S < L, A and R canonical and not of small order,
 * cofactorless equation. Every verifier zap runs for scheme 1 applies that
 * rule set, so ranks using different verifiers still agree.
 *
 * Verdict bitmaps are arrays of uint32_t words: bit i % 32 of word i / 32 is
 * set when item i is valid (least significant bit first); bits at and past
 * the item count are zero. */
#ifndef ZAP_VERIFY_H
#define ZAP_VERIFY_H
#include <stddef.h>
#include <stdint.h>
#include "zap/common.h"
#include "zap/status.h"
#include "zap/coll.h"

/* ---- batch format -------------------------------------------------------- */

#define ZAP_BATCH_MAGIC "SVB1"           /* first four bytes of a batch */
#define ZAP_BATCH_VERSION 1
#define ZAP_BATCH_HEADER_SIZE 64u
#define ZAP_BATCH_RECORD_SIZE 128u       /* the stride zap writes for Ed25519 */
#define ZAP_BATCH_MAX_STRIDE 4096u       /* the parser's limit on record_stride */

/* Scheme ids (the header's scheme_id). Only ED25519_LIBSODIUM_1_0_18 is
 * implemented; the others are reserved so files stay unambiguous. */
typedef enum zap_batch_scheme {
    ZAP_SCHEME_ED25519_LIBSODIUM_1_0_18 = 1,
    ZAP_SCHEME_ED25519_ZIP215 = 2,
    ZAP_SCHEME_SECP256K1_ECDSA_LOWS = 3,
    ZAP_SCHEME_SECP256K1_ECRECOVER = 4,
    ZAP_SCHEME_BLS12381_MINPK_NUL = 5,
    ZAP_SCHEME_BLS12381_MINPK_POP = 6
} zap_batch_scheme_t;

/* Header flags. */
#define ZAP_BATCH_FLAG_FIXED_MSG 0x1u     /* records carry a fixed_msg_len message */
#define ZAP_BATCH_FLAG_MSG_IS_DIGEST 0x2u /* reserved for pre-hashed schemes */

/* Why zap_batch_parse refused a buffer. Each reason has its own message
 * (zap_batch_reason_string) and status (see zap_batch_parse). */
typedef enum zap_batch_reason {
    ZAP_BATCH_OK = 0,
    ZAP_BATCH_ERR_SHORT,     /* fewer bytes than a header */
    ZAP_BATCH_ERR_MAGIC,     /* the first four bytes are not "SVB1" */
    ZAP_BATCH_ERR_VERSION,   /* a version other than ZAP_BATCH_VERSION */
    ZAP_BATCH_ERR_SCHEME,    /* a scheme id zap does not verify */
    ZAP_BATCH_ERR_FLAGS,     /* unknown flag bits, or flags the scheme forbids */
    ZAP_BATCH_ERR_MSG_LEN,   /* fixed_msg_len not 32 (fixed) or not 0 (variable) */
    ZAP_BATCH_ERR_RESERVED,  /* the reserved header field is not zero */
    ZAP_BATCH_ERR_STRIDE,    /* record_stride too small, too large or not a multiple of 16 */
    ZAP_BATCH_ERR_COUNT,     /* n_items records do not fit in the buffer */
    ZAP_BATCH_ERR_OFFSETS,   /* records_off or the blob range is misplaced or past the end */
    ZAP_BATCH_ERR_CRC,       /* crc32c(records || blob) differs from the header */
    ZAP_BATCH_REASON_COUNT
} zap_batch_reason_t;

/* A parsed batch: pointers into the caller's buffer (borrowed from it, valid
 * while it is). */
typedef struct zap_batch_view {
    uint16_t version;
    uint16_t scheme;           /* zap_batch_scheme_t */
    uint32_t flags;            /* ZAP_BATCH_FLAG_* */
    uint32_t stride;           /* record_stride in bytes */
    uint32_t fixed_msg_len;    /* 32 for fixed-message batches, else 0 */
    uint64_t n_items;
    uint64_t batch_id;
    const uint8_t *records;    /* n_items * stride bytes */
    const uint8_t *blob;       /* message blob of variable batches; NULL when blob_len is 0 */
    uint64_t blob_len;
    uint32_t crc32c;           /* the header's checksum, verified */
} zap_batch_view_t;

/* Parse options (zap_batch_parse's flags argument). */
#define ZAP_BATCH_PARSE_SKIP_CRC 0x1u /* trust the payload; do not recompute the CRC */

/* Where the parts of a batch go in a buffer zap_batch_write fills. */
typedef struct zap_batch_layout {
    uint64_t records_off;  /* always ZAP_BATCH_HEADER_SIZE */
    uint64_t blob_off;     /* records_off + n * stride, 16-byte aligned */
    uint64_t total_bytes;  /* blob_off + blob_len */
} zap_batch_layout_t;

/* ---- verifiers ----------------------------------------------------------- */

typedef enum zap_verifier {
    ZAP_VERIFIER_DEFAULT = 0, /* what ZAP_VERIFIER says (default auto) */
    ZAP_VERIFIER_AUTO = 1,    /* the GPU for shards of >= ZAP_GPU_MIN_ITEMS, else the CPU */
    ZAP_VERIFIER_CPU = 2,     /* libsodium on ZAP_VERIFY_THREADS threads */
    ZAP_VERIFIER_GPU = 3      /* the CUDA kernel; ZAP_ERR_UNSUPPORTED without a device */
} zap_verifier_t;

typedef enum zap_verify_mode {
    ZAP_VERIFY_SCATTER = 0,   /* each rank receives only its shard (default) */
    ZAP_VERIFY_BCAST = 1      /* every rank receives the whole batch */
} zap_verify_mode_t;

typedef enum zap_verify_combine {
    ZAP_COMBINE_OR_ALLREDUCE = 0, /* OR-allreduce of full-length bitmaps (default) */
    ZAP_COMBINE_ALLGATHERV = 1    /* allgatherv of each rank's own bitmap words */
} zap_verify_combine_t;

/* Options of the verifier and of the job. All-zero means defaults; new
 * fields are appended. */
typedef struct zap_verify_params {
    zap_verifier_t verifier;      /* 0: ZAP_VERIFIER */
    unsigned threads;             /* CPU verifier threads; 0: ZAP_VERIFY_THREADS (0 = all cores) */
    zap_verify_mode_t mode;       /* job only */
    zap_verify_combine_t combine; /* job only */
    int root;                     /* job only: the rank holding the batch */
    /* Optional progress counter (borrowed): the verifier adds the number of
     * items it has finished, in chunks, with relaxed atomic adds, so another
     * thread may read it (atomically) for a progress display. */
    uint64_t *progress_items;
    /* Job only, scatter mode: bytes of the first segment of records the root
     * streams to each rank; each next segment doubles, so a rank verifies one
     * while the next arrives (docs/verify.md). 0: 16 MiB; UINT64_MAX: one
     * segment per rank. The root's value is used on every rank. */
    uint64_t segment_bytes;
} zap_verify_params_t;

/* What one verification call did. */
typedef struct zap_verify_stats {
    uint64_t checked;      /* items looked at */
    uint64_t invalid;      /* items not valid (malformed included) */
    uint64_t malformed;    /* items whose message range lies outside the blob */
    zap_verifier_t used;   /* ZAP_VERIFIER_CPU or ZAP_VERIFIER_GPU */
    unsigned threads;      /* CPU threads used (0 for the GPU) */
    double seconds;        /* wall time of the call */
} zap_verify_stats_t;

/* ---- the distributed job -------------------------------------------------- */

/* One rank's part, as every rank learns it in the agreement step. */
typedef struct zap_verify_rank_info {
    uint64_t first;            /* first item of the rank's shard */
    uint64_t items;            /* shard length (0 is allowed) */
    zap_verifier_t used;       /* verifier that ran the shard */
    double verify_seconds;     /* its verification time */
    uint64_t peak_rss_kb;      /* process peak resident set (VmHWM) after verifying */
    uint8_t digest[32];        /* BLAKE2b-256 of the rank's combined verdict set */
    double in_place_seconds;   /* job start until its shard was all in place (the root: until
                                  everything it sends was sent); verification overlaps this */
} zap_verify_rank_info_t;

/* The outcome of zap_verify_job on one rank. Caller storage; release what it
 * holds with zap_verify_result_cleanup. */
typedef struct zap_verify_result {
    uint64_t n_items;
    uint64_t batch_id;
    uint64_t valid;              /* popcount of the verdict set */
    uint64_t invalid;            /* SUM over ranks of invalid items */
    uint64_t malformed;          /* SUM over ranks of malformed items */
    uint32_t *bitmap;            /* returns: the full verdict set, ceil(n/32) words */
    size_t bitmap_words;
    int nranks;
    zap_verify_rank_info_t *ranks; /* returns: nranks entries, same on every rank */
    /* This rank's phases, wall clock, one after the other (their sum is the
     * job): distribute ends when this rank starts verifying (its first
     * segment is in place), verify when every rank has verified; the rest of
     * the transfer overlaps verify. */
    double distribute_seconds;
    double verify_seconds;
    double combine_seconds;
    double agree_seconds;
    uint8_t digest[32];          /* this rank's digest of the verdict set */
} zap_verify_result_t;

ZAP_BEGIN_DECLS

/* CRC32C (Castagnoli, reflected, as in iSCSI) of len bytes, continuing from
 * crc (0 to start). Uses SSE4.2 when the CPU has it. Thread-safe. */
ZAP_API uint32_t zap_crc32c(uint32_t crc, const void *buf, size_t len);

/* A constant message for reason ("unknown reason" for others). */
ZAP_API const char *zap_batch_reason_string(zap_batch_reason_t reason);

/* Validates the len bytes at buf (borrowed) as a batch and fills *view_p.
 * Never reads outside [buf, buf + len). flags: ZAP_BATCH_PARSE_*.
 * reason_p (optional) gets ZAP_BATCH_OK or why the buffer was refused;
 * detail/detail_cap (optional) get a message naming the offending values.
 * Returns ZAP_OK; ZAP_ERR_INVALID_PARAM for NULL buf (with len > 0) or view_p;
 * ZAP_ERR_VERSION for ZAP_BATCH_ERR_VERSION; ZAP_ERR_UNSUPPORTED for
 * ZAP_BATCH_ERR_SCHEME; ZAP_ERR_CORRUPT for every other reason. Logs the
 * refusal once at error level. *view_p is written only on success.
 * Thread-safe. Reads every byte once for the CRC (unless skipped). */
ZAP_API zap_status_t zap_batch_parse(const void *buf, size_t len, unsigned flags, zap_batch_view_t *view_p,
                                     zap_batch_reason_t *reason_p, char *detail, size_t detail_cap);

/* Where the parts of a batch of n records of stride bytes and a blob of
 * blob_len bytes go. ZAP_ERR_INVALID_PARAM when the sizes overflow or break
 * the format's limits (stride, blob_len < 2^32). */
ZAP_API zap_status_t zap_batch_layout(uint64_t n, uint32_t stride, uint64_t blob_len,
                                      zap_batch_layout_t *layout_p);

/* Writes the header of a batch whose records (and blob) the caller already
 * placed in buf at the offsets of zap_batch_layout, zeroes the padding
 * between records and blob, and computes the CRC. buf: len >= total_bytes
 * (borrowed). view supplies scheme, flags, stride, fixed_msg_len, n_items,
 * batch_id and blob_len (its pointers are ignored). ZAP_ERR_INVALID_PARAM for
 * a buffer too small or values the parser would refuse. Thread-safe. */
ZAP_API zap_status_t zap_batch_write_header(void *buf, size_t len, const zap_batch_view_t *view);

/* The shard of rank of nranks over n items: [first, first + count) with
 * first = floor(n * rank / nranks) rounded down to a multiple of 32 (and the
 * end likewise, the last rank ending at n), so bitmap words never straddle
 * ranks. Ranks may get empty shards. ZAP_ERR_INVALID_PARAM for rank outside
 * [0, nranks). */
ZAP_API zap_status_t zap_verify_shard(uint64_t n, int nranks, int rank, uint64_t *first_p, uint64_t *count_p);

/* Verifies every item of view on this process (the verifier chosen by
 * params, NULL for defaults) and writes ceil(n/32) bitmap words (out; bits
 * past n zero). verdicts (optional out) gets one byte per item: 1 valid,
 * 0 invalid, 2 malformed. Blocks until done; uses params->threads threads for
 * the CPU verifier. Returns ZAP_OK; ZAP_ERR_INVALID_PARAM for NULL view or
 * bitmap with items, or a bad setting; ZAP_ERR_UNSUPPORTED for a scheme other
 * than 1 or ZAP_VERIFIER_GPU without a device; ZAP_ERR_NO_MEMORY; GPU errors
 * as zap_ed25519_gpu_verify (with ZAP_VERIFIER_AUTO a GPU failure logs a
 * warning and the CPU verifies instead). Thread-safe. */
ZAP_API zap_status_t zap_verify_batch(const zap_batch_view_t *view, const zap_verify_params_t *params,
                                      uint32_t *bitmap, uint8_t *verdicts, zap_verify_stats_t *stats_p);

/* libsodium 1.0.18's verdict for one Ed25519 signature (1 valid, 0 not):
 * the CPU reference every other verifier is checked against. */
ZAP_API int zap_verify_ed25519_one(const uint8_t pk[32], const uint8_t sig[64], const uint8_t *msg,
                                   uint64_t msg_len);

/* The distributed job; collective over comm (borrowed). On params->root,
 * batch (borrowed until return) is the whole batch as zap_batch_parse
 * accepts it (len bytes, ideally pool memory of comm's transport so sends
 * need no copy); on other ranks batch and len are ignored.
 *
 * Steps: the root parses the batch and broadcasts a plan (or its refusal);
 * shards go out by scatter or broadcast; each rank verifies its shard;
 * bitmaps are combined so that every rank holds the whole verdict set; a
 * SUM-allreduce of (checked, invalid, malformed) checks checked == n and
 * popcount == n - invalid; every rank's digest of the verdict set is
 * allgathered and compared.
 *
 * Blocks until every step is done (each transport wait has ZAP_TIMEOUT).
 * Fills *result_p on every rank (release with zap_verify_result_cleanup).
 * Returns ZAP_OK when every rank verified and all digests agree;
 * ZAP_ERR_MISMATCH (logged loudly, with the ranks that differ) when the
 * counts or digests disagree, in which case *result_p is still filled so the
 * caller can report; the root's parse status on every rank when the batch is
 * refused; ZAP_ERR_INVALID_PARAM for a bad root or argument; any rank's
 * verifier error on every rank; transport and collective errors as they come.
 * Not thread-safe on one comm. */
ZAP_API zap_status_t zap_verify_job(zap_comm_t *comm, const void *batch, size_t len,
                                    const zap_verify_params_t *params, zap_verify_result_t *result_p);

/* Frees what a result holds and zeroes it. NULL is accepted. */
ZAP_API void zap_verify_result_cleanup(zap_verify_result_t *result);

/* Constant names: "cpu", "gpu", "auto", "default"; "scatter", "bcast". */
ZAP_API const char *zap_verifier_name(zap_verifier_t v);

ZAP_END_DECLS
#endif
