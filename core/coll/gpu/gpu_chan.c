/* The GPU path's shared parts (gpu_impl.h): whether a rank wants it, its
 * vote, the communicator's channel and its setup rounds, the launch order,
 * the small rounds, and the counts.
 *
 * The channel is set up by the first call whose vote passed, in two
 * all-to-all rounds of phase 7 (steps 16 and 17, apart from a call's own
 * round 1): every rank makes its channel and shows its region (round 1: "can"
 * and the region's ref), opens every peer's region where all could and all
 * are on this host, and says whether it succeeded (round 2). Every rank reads
 * the same messages, so all mark the channel ready, or failed for good (the
 * path is then never wanted on that communicator again), alike. Calls that
 * arrive while it is being set up wait for it. */
#include "coll/gpu/gpu_impl.h"
#include "coll/engine/step.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "base/log.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define GPU_MAGIC 0x5a475055u /* "ZGPU" */
#define CHAN_STEP_1 16
#define CHAN_STEP_2 17

static atomic_uint_fast64_t n_completed, n_fell_back;

void zap_coll_gpu_count(bool completed) { atomic_fetch_add(completed ? &n_completed : &n_fell_back, 1); }

void zap_coll_gpu_counts(uint64_t *completed, uint64_t *fell_back)
{
    *completed = atomic_load(&n_completed);
    *fell_back = atomic_load(&n_fell_back);
}

bool zap_gpu_vote(const zap_coll_op_t *op)
{
    /* The kernels read the input and write the output on the device. */
    if (!zap_gpu_can_move(op->args.src_mem) || !zap_gpu_can_move(op->args.dst_mem))
        return false;
    zap_comm_t *comm = op->comm;
    if (comm->gpu == NULL && (comm->gpu = calloc(1, sizeof(*comm->gpu))) == NULL)
        return false;
    if (comm->gpu->next == 0)
        comm->gpu->next = 1;
    return !comm->gpu_off;
}

void zap_coll_gpu_destroy(zap_comm_t *comm)
{
    if (comm->gpu == NULL)
        return;
    zap_gpu_chan_destroy(comm->gpu->ch);
    free(comm->gpu);
    comm->gpu = NULL;
}

void zap_coll_gpu_x_init(zap_coll_op_t *op, zap_coll_gpu_x_t *x)
{
    memset(x, 0, sizeof(*x));
    zap_coll_gpu_t *g = zap_coll_gpu_of(op);
    if (g == NULL)
        return; /* no vote was cast for it (this rank's buffers): it falls back at once */
    x->order = ++g->orders;
    x->ordered = true;
}

static void settle(zap_coll_gpu_t *g, zap_coll_gpu_x_t *x)
{
    if (!x->ordered || x->settled)
        return;
    x->settled = true;
    g->settled[x->order % ZAP_COLL_GPU_ORDER_RING] = 1;
    while (g->settled[g->next % ZAP_COLL_GPU_ORDER_RING]) {
        g->settled[g->next % ZAP_COLL_GPU_ORDER_RING] = 0;
        g->next++;
    }
}

/* The mail: p + 1 messages, then 2p pointers, in host scratch. */
static zap_status_t mail(zap_coll_op_t *op, zap_coll_gpu_x_t *x)
{
    if (x->mail != NULL)
        return ZAP_OK;
    size_t p = (size_t)op->comm->size, msgs = sizeof(zap_coll_gpu_msg_t) * (p + 1);
    zap_status_t st = zap_coll_host_scratch(op, &op->scratch2, msgs + 2 * p * sizeof(void *));
    if (st != ZAP_OK)
        return st;
    memset(op->scratch2.ptr, 0, msgs + 2 * p * sizeof(void *));
    x->mail = op->scratch2.ptr;
    x->in = (void **)((char *)op->scratch2.ptr + msgs);
    x->out = x->in + p;
    return ZAP_OK;
}

zap_status_t zap_coll_gpu_round_post(zap_coll_op_t *op, zap_coll_gpu_x_t *x, int step, uint32_t flags,
                                     const zap_gpu_ref_t *r0, const zap_gpu_ref_t *r1)
{
    zap_status_t st = mail(op, x);
    if (st != ZAP_OK)
        return st;
    int p = op->comm->size, me = op->comm->rank;
    zap_coll_gpu_msg_t *own = &x->mail[0];
    memset(own, 0, sizeof(*own));
    own->magic = GPU_MAGIC;
    own->flags = flags;
    own->seq = op->seq;
    if (r0 != NULL)
        own->ref[0] = *r0;
    if (r1 != NULL)
        own->ref[1] = *r1;
    x->mail[1 + me] = *own;
    for (int q = 0; q < p; q++) {
        if (q == me)
            continue;
        x->rst[q] = ZAP_OK;
        st = zap_coll_recv(op, q, ZAP_COLL_GPU_PHASE, step, &x->mail[1 + q], sizeof(zap_coll_gpu_msg_t), NULL,
                           &x->rst[q]);
        if (st == ZAP_OK)
            st = zap_coll_send(op, q, ZAP_COLL_GPU_PHASE, step, own, sizeof(*own));
        if (st != ZAP_OK)
            return st;
    }
    return ZAP_OK;
}

zap_status_t zap_coll_gpu_round_all(zap_coll_op_t *op, zap_coll_gpu_x_t *x, uint32_t flag, bool *all)
{
    int p = op->comm->size, me = op->comm->rank;
    bool ok = (x->mail[0].flags & flag) != 0;
    for (int q = 0; q < p; q++) {
        if (q == me)
            continue;
        if (x->rst[q] != ZAP_OK)
            return x->rst[q];
        const zap_coll_gpu_msg_t *m = &x->mail[1 + q];
        if (m->magic != GPU_MAGIC || m->seq != op->seq) {
            zap_error("coll: rank %d: GPU path: malformed message from rank %d (magic %#x, seq %llu, want %llu)",
                      op->comm->rank, q, m->magic, (unsigned long long)m->seq, (unsigned long long)op->seq);
            return ZAP_ERR_CORRUPT;
        }
        ok = ok && (m->flags & flag) != 0;
    }
    *all = ok;
    return ZAP_OK;
}

/* The channel failed on every rank alike: the path is off on comm for good,
 * and the remembered candidates, which listed it, are read again. */
static zap_status_t chan_failed(zap_coll_op_t *op, zap_coll_gpu_x_t *x, const char *why)
{
    zap_comm_t *comm = op->comm;
    zap_coll_gpu_t *g = zap_coll_gpu_of(op);
    zap_gpu_chan_destroy(g->ch);
    g->ch = NULL;
    g->state = ZAP_GPU_CHAN_FAILED;
    comm->gpu_off = true;
    x->chan_step = 0;
    for (int k = 0; k < ZAP_COLL_KIND_MAX; k++)
        comm->memo[k].n = 0;
    zap_info("coll: rank %d: communicator %u: no GPU path (%s); GPU-resident buffers take the host algorithms",
             comm->rank, zap_coll_comm_id(comm), why);
    return ZAP_ERR_UNSUPPORTED;
}

zap_status_t zap_coll_gpu_chan_ready(zap_coll_op_t *op, zap_coll_gpu_x_t *x)
{
    zap_coll_gpu_t *g = zap_coll_gpu_of(op);
    int p = op->comm->size, me = op->comm->rank;
    zap_status_t st;
    bool all = false;
    if (g == NULL || g->state == ZAP_GPU_CHAN_FAILED)
        return ZAP_ERR_UNSUPPORTED;
    if (g->state == ZAP_GPU_CHAN_READY)
        return ZAP_OK;
    if (g->state == ZAP_GPU_CHAN_SETUP && x->chan_step == 0)
        return ZAP_INPROGRESS; /* an earlier call is setting it up */
    if (g->state == ZAP_GPU_CHAN_NONE) {
        g->state = ZAP_GPU_CHAN_SETUP;
        x->chan_step = 1;
        zap_gpu_ref_t ref;
        memset(&ref, 0, sizeof(ref));
        bool can = zap_gpu_chan_create(me, p, &g->ch, &ref) == ZAP_OK;
        return (st = zap_coll_gpu_round_post(op, x, CHAN_STEP_1, can ? ZAP_GPU_MSG_CAN : 0, &ref, NULL)) == ZAP_OK
                   ? ZAP_INPROGRESS
                   : st;
    }
    if ((st = zap_coll_step_test(op)) != ZAP_OK)
        return st;
    if (x->chan_step == 1) {
        if ((st = zap_coll_gpu_round_all(op, x, ZAP_GPU_MSG_CAN, &all)) != ZAP_OK)
            return st;
        if (!all)
            return chan_failed(op, x, "some rank could not make its channel");
        zap_gpu_ref_t refs[ZAP_COLL_GPU_MAX_RANKS];
        bool ok = true;
        for (int q = 0; q < p; q++) {
            refs[q] = x->mail[1 + q].ref[0];
            ok = ok && refs[q].host == x->mail[0].ref[0].host;
        }
        if (!ok)
            zap_info("coll: rank %d: GPU path: the ranks are not all on this host", me);
        ok = ok && zap_gpu_chan_connect(g->ch, refs) == ZAP_OK;
        x->chan_step = 2;
        return (st = zap_coll_gpu_round_post(op, x, CHAN_STEP_2, ok ? ZAP_GPU_MSG_OK : 0, NULL, NULL)) == ZAP_OK
                   ? ZAP_INPROGRESS
                   : st;
    }
    if ((st = zap_coll_gpu_round_all(op, x, ZAP_GPU_MSG_OK, &all)) != ZAP_OK)
        return st;
    if (!all)
        return chan_failed(op, x, "some rank could not open its peers' channels (CUDA IPC, one host)");
    g->state = ZAP_GPU_CHAN_READY;
    x->chan_step = 0;
    zap_info("coll: rank %d: communicator %u: GPU path ready (%d ranks)", me, zap_coll_comm_id(op->comm), p);
    return ZAP_OK;
}

zap_status_t zap_coll_gpu_launch(zap_coll_op_t *op, zap_coll_gpu_x_t *x, zap_gpu_launch_t *l)
{
    zap_coll_gpu_t *g = zap_coll_gpu_of(op);
    if (g->next != x->order)
        return ZAP_INPROGRESS; /* an earlier call launches first, on every rank */
    double t = op->comm->set.timeout;
    l->timeout_s = t;
    zap_status_t st = zap_gpu_launch(g->ch, l, &x->ticket);
    if (st == ZAP_ERR_BUSY)
        return ZAP_INPROGRESS;
    if (st != ZAP_OK)
        return st; /* the peers' kernels will wait for this rank's flags until their timeout */
    x->launched = true;
    settle(g, x);
    return ZAP_OK;
}

zap_status_t zap_coll_gpu_wait(zap_coll_op_t *op, zap_coll_gpu_x_t *x)
{
    zap_status_t st = zap_gpu_test(zap_coll_gpu_of(op)->ch, x->ticket);
    if (st != ZAP_INPROGRESS)
        x->launched = false;
    return st;
}

void zap_coll_gpu_release(zap_coll_op_t *op)
{
    zap_coll_gpu_x_t *x = (zap_coll_gpu_x_t *)op->alg_state;
    zap_coll_gpu_t *g = zap_coll_gpu_of(op);
    if (g == NULL)
        return;
    if (x->chan_step != 0 && g->state == ZAP_GPU_CHAN_SETUP) {
        /* Cancelled halfway through the channel's setup: the other ranks'
         * setup cannot finish either, so no later call waits for it. */
        zap_gpu_chan_destroy(g->ch);
        g->ch = NULL;
        g->state = ZAP_GPU_CHAN_FAILED;
        op->comm->gpu_off = true;
        x->chan_step = 0;
    }
    /* A kernel still running reads and writes the user's buffers: it ends
     * (done, or at its own timeout) before the call lets go of them. */
    while (x->launched && zap_coll_gpu_wait(op, x) == ZAP_INPROGRESS)
        ;
    settle(g, x);
    if (x->holds_stage) {
        zap_gpu_stage_release(g->ch);
        x->holds_stage = false;
    }
}

zap_status_t zap_coll_gpu_fall_back(zap_coll_op_t *op)
{
    zap_coll_gpu_count(false);
    return zap_coll_fall_back(op);
}
