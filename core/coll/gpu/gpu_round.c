/* The GPU-resident path's vote, counts and exchanges (gpu_round.h). */
#include "coll/gpu/gpu_round.h"
#include "coll/engine/step.h"
#include "base/log.h"
#include <stdatomic.h>
#include <string.h>

#define STAGE_MAGIC 0x5a535447u /* "ZSTG" */

static atomic_uint_fast64_t n_completed, n_fell_back;

void zap_stage_count(bool completed) { atomic_fetch_add(completed ? &n_completed : &n_fell_back, 1); }

void zap_stage_counts(uint64_t *completed, uint64_t *fell_back)
{
    *completed = atomic_load(&n_completed);
    *fell_back = atomic_load(&n_fell_back);
}

bool zap_gpu_vote(const zap_coll_op_t *op) { return zap_stage_can_move(op->mem); }

void zap_stage_x_init(zap_coll_op_t *op, zap_stage_x_t *x, size_t bytes, bool can)
{
    memset(x, 0, sizeof(*x));
    zap_stage_ref_t ref;
    if (can && zap_stage_acquire(bytes, &x->slot, &ref) == ZAP_OK)
        x->can = true;
    else if (zap_stage_acquire(0, &x->slot, &ref) != ZAP_OK)
        return;
    size_t mb = 0;
    unsigned char *mail = zap_stage_mailbox(x->slot, &mb);
    size_t need = sizeof(zap_stage_msg_t) * (size_t)(op->comm->size + 1);
    if (mail == NULL || mb < need) {
        zap_stage_release(x->slot);
        x->slot = NULL;
        x->can = false;
        return;
    }
    x->own = (zap_stage_msg_t *)mail;
    x->in = x->own + 1;
    memset(x->own, 0, need);
    x->own->ref = ref;
}

zap_status_t zap_stage_x_post(zap_coll_op_t *op, zap_stage_x_t *x, int round, uint32_t flags)
{
    int p = op->comm->size, me = op->comm->rank;
    const void *msg;
    size_t len;
    if (x->slot != NULL) {
        x->own->magic = STAGE_MAGIC;
        x->own->flags = flags;
        x->own->seq = op->seq;
        msg = x->own;
        len = round == 1 ? sizeof(zap_stage_msg_t) : ZAP_STAGE_MSG_SHORT;
    } else {
        uint32_t head[2] = {STAGE_MAGIC, 0};
        memcpy(&x->tiny[0], head, sizeof(head));
        x->tiny[1] = op->seq;
        msg = x->tiny;
        len = sizeof(x->tiny);
    }
    for (int q = 0; q < p; q++) {
        if (q == me)
            continue;
        x->rst[q] = ZAP_OK;
        void *dst = x->slot != NULL ? (void *)&x->in[q] : (void *)x->sink;
        size_t cap = x->slot != NULL ? sizeof(zap_stage_msg_t) : sizeof(x->sink);
        zap_status_t st = zap_coll_recv(op, q, ZAP_STAGE_PHASE, round, dst, cap, NULL, &x->rst[q]);
        if (st == ZAP_OK)
            st = zap_coll_send(op, q, ZAP_STAGE_PHASE, round, msg, len);
        if (st != ZAP_OK)
            return st;
    }
    return ZAP_OK;
}

zap_status_t zap_stage_x_all(zap_coll_op_t *op, zap_stage_x_t *x, uint32_t flag, bool *all)
{
    int p = op->comm->size, me = op->comm->rank;
    bool ok = x->slot != NULL && x->can && (x->own->flags & flag) != 0;
    for (int q = 0; q < p; q++) {
        if (q == me)
            continue;
        zap_status_t st = x->rst[q];
        if (st == ZAP_ERR_TRUNCATED && x->slot == NULL)
            continue; /* our sink is short on purpose */
        if (st != ZAP_OK)
            return st;
        if (x->slot == NULL)
            continue;
        const zap_stage_msg_t *m = &x->in[q];
        if (m->magic != STAGE_MAGIC || m->seq != op->seq) {
            zap_error("coll: rank %d: GPU path: malformed message from rank %d (magic %#x, seq %llu, want %llu)",
                      op->comm->rank, q, m->magic, (unsigned long long)m->seq, (unsigned long long)op->seq);
            return ZAP_ERR_CORRUPT;
        }
        if (!(m->flags & flag) || (flag == ZAP_STAGE_CAN && m->ref.host != x->own->ref.host))
            ok = false;
    }
    *all = ok;
    return ZAP_OK;
}

void zap_stage_x_release(zap_stage_x_t *x)
{
    zap_stage_release(x->slot);
    x->slot = NULL;
    x->can = false;
}

zap_status_t zap_stage_x_post_ready(zap_coll_op_t *op, zap_stage_x_t *x)
{
    uint32_t flags = 0;
    if (x->can) {
        zap_status_t st = zap_stage_test(x->slot);
        if (st == ZAP_INPROGRESS)
            return st;
        x->can = st == ZAP_OK;
        flags = x->can ? ZAP_STAGE_CAN : 0;
    }
    return zap_stage_x_post(op, x, 1, flags);
}
