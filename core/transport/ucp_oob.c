/* The UCX transport's bootstrap over a caller's out-of-band allgather
 * (ucp_oob.h): the blocking exchange and agreement built on the callbacks, and
 * the worker address exchange that the MPI bootstrap does with
 * MPI_Allgather(v) (ucp_worker.c). Addresses differ in length from rank to
 * rank while the allgather moves a fixed size, so the lengths go first and the
 * addresses follow padded to the longest. */
#include "transport/ucp_oob.h"
#include "transport/peer_class.h"
#include "transport/ucp_worker.h"
#include "base/log.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

zap_status_t zap_ucp_oob_allgather(const zap_ucp_oob_t *oob, const void *send, void *recv, size_t len)
{
    void *req = NULL;
    zap_status_t st = oob->allgather(oob->ctx, send, recv, len, &req);
    if (st != ZAP_OK) {
        zap_error("ucp: rank %d: the out-of-band allgather failed to start: %s", oob->rank, zap_status_string(st));
        return st;
    }
    while ((st = oob->test(oob->ctx, req)) == ZAP_INPROGRESS)
        ;
    oob->free(oob->ctx, req);
    if (st != ZAP_OK)
        zap_error("ucp: rank %d: the out-of-band allgather failed: %s", oob->rank, zap_status_string(st));
    return st;
}

zap_status_t zap_ucp_oob_agree(const zap_ucp_oob_t *oob, zap_status_t local)
{
    int32_t mine = (int32_t)local;
    int32_t *all = calloc((size_t)oob->size, sizeof(int32_t));
    if (all == NULL) {
        /* A rank that cannot allocate 4 bytes per rank cannot take part;
         * the callback's own failure handling must end the others' wait. */
        zap_error("ucp: rank %d: no memory for the out-of-band agreement", oob->rank);
        return ZAP_ERR_NO_MEMORY;
    }
    zap_status_t worst = local;
    if (zap_ucp_oob_allgather(oob, &mine, all, sizeof(mine)) != ZAP_OK)
        worst = ZAP_ERR_TRANSPORT;
    else
        for (int r = 0; r < oob->size; r++)
            if (all[r] < (int32_t)worst)
                worst = (zap_status_t)all[r];
    free(all);
    if (worst != ZAP_OK && local == ZAP_OK)
        zap_debug("ucp: another rank failed to set up UCX (status %d)", (int)worst);
    return worst;
}

zap_status_t zap_ucp_oob_exchange(zap_ucp_worker_t *w, const void *addr, size_t len)
{
    const zap_ucp_oob_t *oob = &w->oob;
    uint64_t mine = len;
    uint64_t *lens = calloc((size_t)w->size, sizeof(uint64_t));
    zap_status_t st = zap_ucp_oob_agree(oob, lens == NULL ? ZAP_ERR_NO_MEMORY : ZAP_OK);
    if (st != ZAP_OK)
        goto free_lens;
    st = zap_ucp_oob_allgather(oob, &mine, lens, sizeof(mine));
    if (st != ZAP_OK)
        goto free_lens;
    size_t longest = 0, total = 0;
    for (int r = 0; r < w->size; r++) {
        longest = lens[r] > longest ? (size_t)lens[r] : longest;
        total += (size_t)lens[r];
    }
    char *padded = calloc(longest > 0 ? longest : 1, 1);
    char *all = malloc(longest * (size_t)w->size + 1);
    w->addrs = malloc(total > 0 ? total : 1);
    st = zap_ucp_oob_agree(oob, padded == NULL || all == NULL || w->addrs == NULL ? ZAP_ERR_NO_MEMORY : ZAP_OK);
    if (st == ZAP_OK) {
        memcpy(padded, addr, len);
        st = zap_ucp_oob_allgather(oob, padded, all, longest);
    }
    if (st == ZAP_OK) {
        size_t off = 0;
        for (int r = 0; r < w->size; r++) {
            w->addr_len[r] = (int)lens[r];
            w->addr_off[r] = (int)off;
            memcpy(w->addrs + off, all + (size_t)r * longest, (size_t)lens[r]);
            off += (size_t)lens[r];
        }
    }
    free(all);
    free(padded);
free_lens:
    free(lens);
    return st;
}

zap_status_t zap_ucp_oob_hosts(zap_ucp_worker_t *w)
{
    uint64_t h = zap_host_id();
    w->host = calloc((size_t)w->size, sizeof(uint64_t));
    zap_status_t st = zap_ucp_oob_agree(&w->oob, w->host == NULL ? ZAP_ERR_NO_MEMORY : ZAP_OK);
    if (st == ZAP_OK)
        st = zap_ucp_oob_allgather(&w->oob, &h, w->host, sizeof(h));
    return st;
}
