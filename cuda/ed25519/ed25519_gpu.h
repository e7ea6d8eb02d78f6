/* GPU batch verification of Ed25519 signatures under libsodium 1.0.18's rule
 * (docs/ed25519.md). Internal to zap: the verify layer and the tests include
 * it. Built from ed25519_kernel.cu when zap has CUDA, and from
 * ed25519_gpu_none.c otherwise, where every call reports ZAP_ERR_UNSUPPORTED,
 * so callers link either way.
 *
 * Records are the batch records of ed25519_records.h. One verification kernel
 * does everything for an item on the GPU (SHA-512, decoding, the double
 * scalar multiplication, the comparison, the verdict and the bitmap word);
 * there is no host round trip between stages. */
#ifndef ZAP_ED25519_GPU_H
#define ZAP_ED25519_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "zap/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a buffer was found to live (cudaPointerGetAttributes). */
typedef enum zap_ed25519_mem_kind {
    ZAP_ED25519_MEM_PAGEABLE = 0, /* plain host memory: copied */
    ZAP_ED25519_MEM_PINNED = 1,   /* page-locked host memory: copied */
    ZAP_ED25519_MEM_DEVICE = 2,   /* device memory of the current device: used in place */
    ZAP_ED25519_MEM_MANAGED = 3   /* managed memory: prefetched to the device, used in place */
} zap_ed25519_mem_kind_t;

/* Timings of one zap_ed25519_gpu_verify call (CUDA events on its streams,
 * wall clock for total_ms). Host records of 2^18 items or more are copied in
 * chunks that overlap verification: then h2d_ms is the first chunk's copy,
 * kernel_ms runs from the first kernel to the last chunk's verdicts back
 * (the other copies overlap it), and d2h_ms is ~0. */
typedef struct zap_ed25519_gpu_stats {
    double h2d_ms;    /* records and blob to the GPU (copy or prefetch); ~0 if resident */
    double kernel_ms; /* the verification kernel, verdicts and bitmap included */
    double d2h_ms;    /* verdicts and bitmap back to host memory; ~0 if written in place */
    double total_ms;  /* the whole call, argument checks to return */
    int device;       /* the CUDA device that ran it */
    zap_ed25519_mem_kind_t records_kind;
} zap_ed25519_gpu_stats_t;

/* 1 if zap was built with CUDA and at least one device is usable, else 0.
 * Never fails; thread-safe. */
int zap_ed25519_gpu_available(void);

/* Number of CUDA devices (0 without CUDA or when the driver reports an
 * error). Thread-safe. */
int zap_ed25519_gpu_device_count(void);

/* Makes device dev (0 <= dev < zap_ed25519_gpu_device_count()) the calling
 * thread's current device, so that ranks sharing a host each use their own
 * GPU (a launcher passes its local rank modulo the device count).
 * ZAP_ERR_NOT_FOUND for a device out of range, ZAP_ERR_UNSUPPORTED without
 * CUDA, ZAP_ERR_CUDA when cudaSetDevice fails. */
zap_status_t zap_ed25519_gpu_use_device(int dev);

/* Verify n records on the calling thread's current CUDA device. Batches of
 * at most 8,192 items run the four-lane kernel (lowest latency), larger ones
 * the one-lane kernel (highest throughput); ZAP_ED25519_GPU_LANES=1 or 4
 * forces one of them, for tests and measurements.
 *
 * records: n * stride bytes (borrowed). stride >= 128 for fixed-message
 *   records, >= 104 for variable ones. Host (pageable or pinned), device or
 *   managed memory: device memory of the current device is read in place,
 *   managed memory is prefetched to the device and read in place, host memory
 *   is copied into a device buffer zap keeps between calls.
 * variable_msgs: 0 for pk|R|S|msg[32] records, 1 for pk|sig|msg_off|msg_len.
 * blob, blob_len: the message blob for variable records (borrowed; any memory
 *   kind, handled as records are); ignored for fixed records.
 * verdicts: out, n bytes, 1 valid, 0 invalid, 2 malformed (message range
 *   outside the blob). Host, device or managed memory.
 * bitmap: optional out, ceil(n / 32) words; bit i % 32 of word i / 32 is set
 *   when item i is valid (LSB first); bits past n are zero.
 * stats: optional out, timings of this call.
 *
 * Blocks until the verdicts are in place. Calls from several threads are
 * serialised (one process-wide lock guards the cached device buffers).
 * Returns ZAP_OK; ZAP_ERR_INVALID_PARAM for a NULL records or verdicts pointer
 * with n > 0, a stride below the layout's size, or a NULL blob with
 * blob_len > 0 (nothing written); ZAP_ERR_UNSUPPORTED without CUDA;
 * ZAP_ERR_NOT_FOUND when no device is usable; ZAP_ERR_NO_MEMORY when device
 * buffers cannot be allocated; ZAP_ERR_CUDA for any other CUDA failure (the
 * log line carries CUDA's text). On an error the verdicts are unspecified. */
zap_status_t zap_ed25519_gpu_verify(const void *records, size_t stride, uint64_t n,
                                    int variable_msgs, const void *blob, uint64_t blob_len,
                                    uint8_t *verdicts, uint32_t *bitmap,
                                    zap_ed25519_gpu_stats_t *stats);

/* Readies the calling thread's current device for calls of up to n items
 * before they come: its stream and base-point table, the kernel loaded, and
 * the cached verdict and bitmap buffers grown to n items (growing later
 * frees the old buffer, which waits for all work on the device, copies of
 * other threads included). Optional: calls do all this themselves. Returns
 * ZAP_OK, ZAP_ERR_UNSUPPORTED without CUDA, or the error of the failed step
 * (the log says which). */
zap_status_t zap_ed25519_gpu_prepare(uint64_t n);

#ifdef __cplusplus
}
#endif
#endif
