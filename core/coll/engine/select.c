/* Posting a collective and choosing its algorithm (select.h): the
 * predicates of a call, the candidate list, the first init and the fallback
 * to the next candidate; the public view of the tables. */
#include "coll/engine/select.h"
#include "coll/engine/mem.h"
#include "coll/reduce/reduce.h"
#include "coll/shm/shm.h"
#include "coll/hier/hier.h"
#include "base/log.h"
#include "cuda_coll.h"
#include <stdatomic.h>
#include <string.h>

const zap_coll_desc_t *const zap_coll_descs[] = {
    &zap_allreduce_desc, &zap_bcast_desc, &zap_scatterv_desc, &zap_allgatherv_desc, &zap_barrier_desc,
    &zap_reduce_desc,    &zap_reduce_scatter_desc, &zap_gather_desc, &zap_alltoall_desc, &zap_scan_desc,
    &zap_exscan_desc};
const int zap_coll_ndescs = (int)(sizeof(zap_coll_descs) / sizeof(zap_coll_descs[0]));

/* Votes are decided by the agreement, not by the call's predicates. */
#define VOTED (ZAP_COLL_PRED_HOST_MEMORY | ZAP_COLL_PRED_GPU_MEMORY)
/* The GPU path moves data between the channels of at most this many ranks. */
#define GPU_PATH_MAX_RANKS ZAP_GPU_MAX_RANKS

/* Whether this rank wants the GPU path for a call of bytes on buffers of kind
 * mem: the setting allows the size, a device is visible, its buffers are
 * GPU-resident and the communicator's channel has not failed. Local: another
 * rank may say otherwise, and the path's vote settles it. */
static bool gpu_path_wanted(const zap_comm_t *comm, size_t bytes, zap_mem_kind_t mem)
{
    const zap_coll_settings_t *set = &comm->set;
    if (bytes == 0 || set->gpu_path == ZAP_COLL_GPU_OFF || comm->size < 2 || comm->size > GPU_PATH_MAX_RANKS ||
        comm->gpu_off || !zap_gpu_can_move(mem))
        return false;
    /* Device memory has no cheaper road (the host algorithms would copy it
     * through host memory); managed memory below gpu_min_bytes is moved by
     * the CPU where it lies, without a call that waits for the GPU. */
    return (set->gpu_path == ZAP_COLL_GPU_IPC || mem == ZAP_MEM_DEVICE || bytes >= set->gpu_min_bytes) &&
           zap_gpu_device_present();
}

/* The flags of built-in (datatype, op) pairs, plus 0x80 once known: they never
 * change, and every small reducing call asks (a user op's are asked each
 * time: its commutativity is its own). */
static _Atomic uint8_t flags_memo[ZAP_DT_COUNT][ZAP_OP_COUNT];

uint8_t zap_coll_call_flags(zap_dtype_t dt, zap_op_t op)
{
    bool builtin = (unsigned)dt < ZAP_DT_COUNT && (unsigned)op < ZAP_OP_COUNT;
    if (builtin) {
        uint8_t m = atomic_load_explicit(&flags_memo[dt][op], memory_order_relaxed);
        if (m & 0x80)
            return (uint8_t)(m & 0x7f);
    }
    uint8_t f = (uint8_t)((zap_op_commutative(op) ? 0 : ZAP_COLL_CALL_NONCOMMUTATIVE) |
                          (zap_reduce_gpu_capable(dt, op) && zap_gpu_path_combines(dt, op) ? 0 : ZAP_COLL_CALL_NO_GPU));
    if (builtin)
        atomic_store_explicit(&flags_memo[dt][op], (uint8_t)(f | 0x80), memory_order_relaxed);
    return f;
}

static uint32_t call_predicates(const zap_comm_t *comm, size_t bytes, zap_mem_kind_t mem, zap_coll_form_t form,
                                unsigned call_flags)
{
    uint32_t preds = call_flags & ZAP_COLL_CALL_NONCOMMUTATIVE ? 0 : ZAP_COLL_PRED_COMMUTATIVE;
    if (comm->shm != NULL) {
        if (form == ZAP_COLL_FORM_SHM)
            preds |= ZAP_COLL_PRED_SAME_HOST;
        if (bytes <= comm->shm_bytes)
            preds |= ZAP_COLL_PRED_FITS_SHM;
        if (comm->shm->cma)
            preds |= ZAP_COLL_PRED_SINGLE_COPY;
        if (comm->shm->cma_slow)
            preds |= ZAP_COLL_PRED_SLOW_READS;
    }
    if (comm->oversubscribed)
        preds |= ZAP_COLL_PRED_OVERSUBSCRIBED;
    if (form == ZAP_COLL_FORM_FLAT)
        preds |= ZAP_COLL_PRED_FLAT;
    if (form == ZAP_COLL_FORM_HIER)
        preds |= ZAP_COLL_PRED_HOSTS;
    if (!(call_flags & ZAP_COLL_CALL_NO_GPU) && gpu_path_wanted(comm, bytes, mem))
        preds |= ZAP_COLL_PRED_GPU_PATH;
    return preds;
}

static bool holds(uint32_t require, uint32_t forbid, uint32_t preds)
{
    return (require & ~VOTED & ~preds) == 0 && (forbid & preds) == 0;
}

static bool row_holds(const zap_coll_desc_t *desc, const zap_coll_row_t *row, int ranks, size_t bytes, uint32_t preds)
{
    return ranks >= row->min_ranks && ranks <= row->max_ranks && bytes >= row->min_bytes &&
           (bytes < row->max_bytes || row->max_bytes == SIZE_MAX) &&
           holds(row->require | desc->algs[row->alg].require, row->forbid, preds);
}

static bool listed(const uint8_t *cand, int n, int alg)
{
    for (int i = 0; i < n; i++)
        if (cand[i] == alg)
            return true;
    return false;
}

int zap_coll_candidates(const zap_coll_desc_t *desc, const zap_comm_t *comm, size_t bytes, zap_mem_kind_t mem,
                        zap_coll_form_t form, int force, uint8_t *cand)
{
    return zap_coll_candidates_flags(desc, comm, bytes, mem, form, force, 0, cand);
}

int zap_coll_candidates_flags(const zap_coll_desc_t *desc, const zap_comm_t *comm, size_t bytes, zap_mem_kind_t mem,
                              zap_coll_form_t form, int force, unsigned call_flags, uint8_t *cand)
{
    uint32_t preds = call_predicates(comm, bytes, mem, form, call_flags);
    int n = 0, p = comm->size, gpu = -1;
    if (force >= 0 && holds(desc->algs[force].require, 0, preds))
        cand[n++] = (uint8_t)force;
    for (int i = 0; i < desc->nrows && n < ZAP_COLL_MAX_CANDS - 1; i++) {
        const zap_coll_row_t *row = &desc->rows[i];
        const zap_coll_alg_t *a = &desc->algs[row->alg];
        if ((force >= 0 && (a->require & ZAP_COLL_PRED_SINGLE_COPY)) || !row_holds(desc, row, p, bytes, preds))
            continue;
        if (a->local) {
            gpu = gpu < 0 ? row->alg : gpu;
            continue;
        }
        if (!listed(cand, n, row->alg))
            cand[n++] = row->alg;
        /* An algorithm that needs nothing of the communicator never declines:
         * the rows after it could not be reached. */
        if (a->require == 0 && a->vote_lane == 0 && !a->declines)
            break;
    }
    /* The GPU path goes first unless an algorithm is forced; ahead of a
     * candidate that carries the agreement in this call's data the header
     * names it (header_alg). */
    if (gpu >= 0 && n > 0 && (force < 0 || cand[0] != force)) {
        memmove(cand + 1, cand, (size_t)n);
        cand[0] = (uint8_t)gpu;
        n++;
    }
    return n;
}

int zap_coll_alg_find(const zap_coll_desc_t *desc, const char *name)
{
    for (int a = 0; a < desc->nalgs; a++)
        if (desc->algs[a].by_name && strcmp(desc->algs[a].name, name) == 0)
            return a;
    return -1;
}

/* The algorithm the header names when candidate i runs: the first from i on
 * whose choice every rank with these arguments makes alike; but a local
 * candidate (the GPU path) ahead of one that would carry the agreement in
 * this call's data names itself, since a rank without it agrees differently
 * (with its data) and must see a mismatch, not reduce an empty slot. */
static int header_alg(const zap_coll_op_t *op, int i)
{
    for (int j = i; j < op->ncand; j++) {
        const zap_coll_alg_t *a = &op->desc->algs[op->cand[j]];
        if (!a->local)
            return j > i && op->args.bytes <= a->agrees_in_data ? op->cand[i] : op->cand[j];
    }
    return op->cand[i];
}

static void no_candidate(const zap_coll_op_t *op)
{
    zap_error("coll: rank %d: %s: no algorithm can run this call (communicator %u, sequence %llu)", op->comm->rank,
              op->desc->name, zap_coll_comm_id(op->comm), (unsigned long long)op->seq);
}

/* op's candidates: the memo of its collective's last call when the size is
 * the same, else the table's (remembered for the next call). */
static void choose(zap_coll_op_t *op, const zap_coll_desc_t *desc, zap_comm_t *comm, bool *votes_p)
{
    zap_coll_cands_memo_t *m = &comm->memo[desc->kind];
    uint8_t gpu = zap_gpu_can_move(op->mem);
    if (m->n == 0 || m->bytes != op->args.bytes || m->gpu != gpu || m->call_flags != op->args.call_flags) {
        _Static_assert(sizeof(m->cand) == ZAP_COLL_MAX_CANDS, "the memo holds a whole list");
        m->n = (uint8_t)zap_coll_candidates_flags(desc, comm, op->args.bytes, op->mem, op->form,
                                                  comm->set.alg[desc->kind], op->args.call_flags, m->cand);
        m->bytes = op->args.bytes;
        m->gpu = gpu;
        m->call_flags = op->args.call_flags;
        m->votes = 0;
        for (int i = 0; i < m->n; i++)
            m->votes |= desc->algs[m->cand[i]].vote_lane != 0;
        m->fast = desc->fast_setup != NULL && m->n > 0 && m->cand[0] == desc->fast_alg && op->mem == ZAP_MEM_HOST &&
                  (m->votes == 0 || desc->fast_votes) && op->form == ZAP_COLL_FORM_SHM;
    }
    op->ncand = m->n;
    memcpy(op->cand, m->cand, sizeof(op->cand));
    *votes_p = m->votes != 0;
}

zap_coll_form_t zap_coll_form_of(const zap_coll_desc_t *desc, zap_comm_t *comm)
{
    zap_coll_form_t form = desc->form != NULL ? desc->form(comm) : ZAP_COLL_FORM_RD;
    /* Across hosts every call agrees through the hierarchy: whatever
     * algorithm a rank then runs, all exchange the same messages first. */
    return form == ZAP_COLL_FORM_RD && zap_coll_hier_layered(comm) ? ZAP_COLL_FORM_HIER : form;
}

void zap_coll_op_begin(zap_coll_op_t *op)
{
    const zap_coll_desc_t *desc = op->desc;
    zap_comm_t *comm = op->comm;
    const zap_coll_args_t *a = &op->args;
    op->form = zap_coll_form_of(desc, comm);
    if (op->local_error != ZAP_OK) {
        /* Take part in the argument exchange with the header marked bad, so
         * the other ranks learn of it instead of waiting. */
        op->alg = 0xff;
        zap_coll_agree_header(op, a->hdr_count, a->dt, a->op, a->root, 0, true);
        zap_coll_op_fail_local(op, op->local_error);
        return;
    }
    op->mem = a->mem;
    bool votes = false;
    choose(op, desc, comm, &votes);
    op->alg = op->ncand > 0 ? header_alg(op, 0) : 0;
    zap_coll_agree_header(op, a->hdr_count, a->dt, a->op, a->root, a->hdr_extra, false);
    for (int i = 0; votes && i < op->ncand; i++) {
        const zap_coll_alg_t *alg = &desc->algs[op->cand[i]];
        if (alg->vote_lane != 0)
            zap_coll_agree_vote(op, alg->vote_lane, alg->vote(op));
    }
    zap_status_t st = ZAP_ERR_UNSUPPORTED;
    for (int i = 0; i < op->ncand && st == ZAP_ERR_UNSUPPORTED; i++) {
        op->icand = (uint8_t)i;
        if (i > 0) /* the first declined: the header names what runs instead */
            zap_coll_agree_set_alg(op, header_alg(op, i));
        op->alg = op->cand[i];
        if (!desc->algs[op->alg].gpu_buffers && (st = zap_coll_host_stage(op)) != ZAP_OK)
            break;
        st = desc->algs[op->alg].init(op);
    }
    if (st == ZAP_ERR_UNSUPPORTED)
        no_candidate(op);
    if (st == ZAP_OK && !op->agreeing) {
        st = zap_coll_agrees_by_tree(op) ? zap_coll_agree_init_bcast_tree(op, 0, NULL, 0, a->root)
                                         : zap_coll_agree_init(op, op->form, 0, NULL, 0, a->dt, a->op);
        op->agreeing = st == ZAP_OK;
    }
    if (st != ZAP_OK)
        zap_coll_op_fail_local(op, st);
}

zap_status_t zap_coll_post(zap_comm_t *comm, const zap_coll_desc_t *desc, const zap_coll_args_t *args,
                           zap_status_t local, zap_request_t **req_p)
{
    zap_coll_op_t *op = NULL;
    zap_status_t st = zap_coll_op_get(comm, desc->kind, &op);
    if (st != ZAP_OK)
        return st;
    op->desc = desc;
    op->args = *args;
    op->local_error = local;
    if (args->empty) {
        /* MPI lets a zero-count call complete locally: every rank of a correct
         * program passes zero too, so there is nothing to agree or move. It
         * still takes its sequence number, as on every other rank, so later
         * calls and failure notices name the same operations everywhere. */
        zap_coll_op_complete_local(op, local, req_p);
        return ZAP_OK;
    }
    /* Across hosts every collective waits for the setup: it agrees on the
     * ids of the hierarchy's communicators (a group communicator's). */
    bool needs = desc->needs_setup || (comm->child_ctx == 0 && zap_coll_hier_layered(comm));
    if (needs && comm->setup != ZAP_COLL_SETUP_DONE && comm->setup != ZAP_COLL_SETUP_FAILED) {
        /* The first call that reads what the setup agrees: the setup goes
         * ahead of it (every rank makes the same calls, so every rank's setup
         * takes the same place), and the call begins once it is done. */
        if (comm->setup == ZAP_COLL_SETUP_NEEDED && (st = zap_coll_setup_post(comm, NULL)) != ZAP_OK) {
            comm->setup = ZAP_COLL_SETUP_FAILED;
            comm->setup_status = st;
        }
        op->deferred = true;
    } else {
        if (comm->setup == ZAP_COLL_SETUP_FAILED && needs && op->local_error == ZAP_OK)
            op->local_error = comm->setup_status;
        zap_coll_op_begin(op);
    }
    zap_coll_op_start(op, req_p);
    return ZAP_OK;
}

/* The candidate after the running one that can run the agreed call. */
zap_status_t zap_coll_fall_back(zap_coll_op_t *op)
{
    const zap_coll_desc_t *desc = op->desc;
    if (op->scratch.handle != 0)
        zap_coll_scratch_free(op->comm, &op->scratch);
    if (op->scratch2.handle != 0)
        zap_coll_scratch_free(op->comm, &op->scratch2);
    if (op->release != NULL) {
        op->release(op);
        op->release = NULL;
    }
    for (;;) {
        if (op->icand + 1 >= op->ncand) {
            no_candidate(op);
            return ZAP_ERR_UNSUPPORTED;
        }
        op->icand++;
        op->alg = op->cand[op->icand];
        const zap_coll_alg_t *a = &desc->algs[op->alg];
        op->progress = NULL;
        zap_status_t st = a->gpu_buffers ? ZAP_OK : zap_coll_host_stage(op);
        if (st != ZAP_OK)
            return st;
        st = a->init(op);
        if (st == ZAP_ERR_UNSUPPORTED)
            continue;
        if (st != ZAP_OK)
            return st;
        return op->progress != NULL ? op->progress(op) : ZAP_OK;
    }
}

bool zap_coll_large_turn(zap_coll_op_t *op, size_t bytes, zap_status_t *st)
{
    *st = zap_coll_shm_large_turn(op, bytes);
    if (*st == ZAP_ERR_NO_MEMORY) /* no room for the area: every rank takes the next candidate */
        *st = zap_coll_fall_back(op);
    else if (*st == ZAP_OK)
        return true;
    return false;
}

/* --- the public view ------------------------------------------------------- */

size_t zap_coll_selection_table(zap_coll_selection_row_t *rows, size_t cap)
{
    size_t n = 0;
    for (int d = 0; d < zap_coll_ndescs; d++) {
        const zap_coll_desc_t *desc = zap_coll_descs[d];
        for (int i = 0; i < desc->nrows; i++, n++) {
            if (rows == NULL || n >= cap)
                continue;
            const zap_coll_row_t *r = &desc->rows[i];
            const zap_coll_alg_t *a = &desc->algs[r->alg];
            rows[n] = (zap_coll_selection_row_t){desc->name, a->name,   r->min_ranks, r->max_ranks, r->min_bytes,
                                                 r->max_bytes, r->require | a->require, r->forbid, r->rule};
        }
    }
    return n;
}

const char *zap_coll_auto_algorithm(const char *collective, size_t bytes, int ranks)
{
    if (collective == NULL || ranks < 1)
        return NULL;
    for (int d = 0; d < zap_coll_ndescs; d++) {
        const zap_coll_desc_t *desc = zap_coll_descs[d];
        if (strcmp(desc->name, collective) != 0)
            continue;
        for (int i = 0; i < desc->nrows; i++) {
            const zap_coll_row_t *r = &desc->rows[i];
            if (!desc->algs[r->alg].local && row_holds(desc, r, ranks, bytes, ZAP_COLL_PRED_COMMUTATIVE))
                return desc->algs[r->alg].name;
        }
        return NULL;
    }
    return NULL;
}
