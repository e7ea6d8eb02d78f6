/* Shared-memory allreduce, for communicators whose ranks are processes on
 * one host (coll/shm/shm.h). Vectors up to a slot (ZAP_COLL_SHM_PAYLOAD
 * bytes) travel in the agreement itself: each rank's slot carries its vector
 * and every rank reduces the p of them in rank order, the direct allreduce on
 * the shared-memory form of the agreement (allreduce_direct.c,
 * agree/agree_shm.c): one cache line written and p - 1 read at 8 bytes, no
 * message. Larger vectors agree with the header alone and then move through
 * the segment's large area, round it when they are larger
 * (allreduce_shm_large.c). */
#include "coll/allreduce/allreduce.h"
#include "coll/shm/shm.h"

/* Beyond 8 ranks each rank reducing all p slots costs more than its 1/p of
 * the vector through the large area, with the area's two waits, from 2 KiB
 * (docs/collectives.md, the allreduce's shm row, has the figures). Up to 8
 * ranks the GPU path's rows apply, and their agreement counts on the slots'
 * bound (agrees_in_data). */
size_t zap_allreduce_shm_slot_bytes(int p) { return p > 8 ? (size_t)1024 : ZAP_COLL_SHM_PAYLOAD; }

zap_status_t zap_allreduce_shm_init(zap_coll_op_t *op)
{
    if (op->comm->shm == NULL)
        return ZAP_ERR_UNSUPPORTED;
    if (op->args.bytes > zap_allreduce_shm_slot_bytes(op->comm->size) || op->agreed)
        return zap_allreduce_shm_large_init(op);
    if (op->form != ZAP_COLL_FORM_SHM)
        return ZAP_ERR_UNSUPPORTED;
    return zap_allreduce_direct_init(op);
}
