/* Single-copy reads of a peer's memory (process_vm_readv) for the forms that
 * read other ranks' buffers directly (shm.h), and the per-segment scratch
 * they stage operands in. Permission was probed and agreed at setup
 * (zap_coll_shm_t.cma). */
#define _GNU_SOURCE
#include "coll/shm/shm.h"
#include "base/log.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

zap_status_t zap_coll_shm_read(zap_coll_op_t *op, int q, void *to, uint64_t from, size_t bytes)
{
    const zap_coll_shm_t *s = op->comm->shm;
    while (bytes > 0) {
        struct iovec local = {to, bytes}, remote = {(void *)(uintptr_t)from, bytes};
        ssize_t n = process_vm_readv(s->pids[q], &local, 1, &remote, 1, 0);
        if (n > 0) {
            to = (unsigned char *)to + n;
            from += (uint64_t)n;
            bytes -= (size_t)n;
            continue;
        }
        int err = n < 0 ? errno : EFAULT;
        int tr = zap_coll_transport_rank(op->comm, q);
        if (err == ESRCH) {
            op->culprit = tr;
            zap_error("coll: rank %d: peer rank %d (pid %d) failed: its process is gone (single-copy read on "
                      "communicator %u, sequence %llu)",
                      op->comm->rank, tr, (int)s->pids[q], zap_coll_comm_id(op->comm), (unsigned long long)op->seq);
            return ZAP_ERR_PEER_FAILED;
        }
        zap_error("coll: rank %d: single-copy read on communicator %u (sequence %llu): %zu bytes at 0x%llx of rank "
                  "%d (pid %d) failed: %s; that rank's buffer is shorter than the agreed counts, not host memory, "
                  "or no longer valid",
                  op->comm->rank, zap_coll_comm_id(op->comm), (unsigned long long)op->seq, bytes,
                  (unsigned long long)from, tr, (int)s->pids[q], strerror(err));
        return ZAP_ERR_TRANSPORT;
    }
    return ZAP_OK;
}

void *zap_coll_shm_cma_scratch(zap_coll_shm_t *s, size_t bytes)
{
    if (bytes > s->cma_scratch_bytes) {
        unsigned char *m = aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (m == NULL) {
            zap_error("coll: rank %d: no memory for %zu bytes of single-copy scratch", s->rank, bytes);
            return NULL;
        }
        free(s->cma_scratch);
        s->cma_scratch = m;
        s->cma_scratch_bytes = bytes;
    }
    return s->cma_scratch;
}
