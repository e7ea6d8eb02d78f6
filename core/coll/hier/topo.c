/* The topology of a communicator (topo.h): ranks grouped by host identity.
 * One allocation holds every array; hosts are numbered by their lowest rank
 * so that every rank numbers them alike whatever the identities' values. */
#include "coll/hier/topo.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t id;
    int rank;
} id_rank_t;

static int by_id_then_rank(const void *a, const void *b)
{
    const id_rank_t *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->rank - y->rank;
}

zap_status_t zap_coll_topo_build(const uint64_t *ids, int size, zap_coll_topo_t **topo_p)
{
    if (ids == NULL || topo_p == NULL || size < 1)
        return ZAP_ERR_INVALID_PARAM;
    size_t n = (size_t)size;
    id_rank_t *sorted = malloc(n * sizeof(*sorted));
    /* host, local, members, then host_size and host_first at their largest
     * (one host per rank). */
    zap_coll_topo_t *t = calloc(1, sizeof(*t) + (5 * n + 1) * sizeof(int));
    if (sorted == NULL || t == NULL) {
        free(sorted);
        free(t);
        return ZAP_ERR_NO_MEMORY;
    }
    int *space = (int *)(t + 1);
    t->size = size;
    t->host = space;
    t->local = space + n;
    t->members = space + 2 * n;
    t->host_size = space + 3 * n;
    t->host_first = space + 4 * n;
    for (int r = 0; r < size; r++)
        sorted[r] = (id_rank_t){ids[r], r};
    qsort(sorted, n, sizeof(*sorted), by_id_then_rank);
    /* Each group of equal ids is one host; its first entry is its lowest
     * rank. Mark every rank with its group's lowest rank, then number the
     * groups in the order of those lowest ranks. */
    int *lowest = t->members; /* scratch until the members are written */
    for (size_t i = 0; i < n; i++) {
        int low = (i > 0 && sorted[i].id == sorted[i - 1].id) ? lowest[sorted[i - 1].rank] : sorted[i].rank;
        lowest[sorted[i].rank] = low;
    }
    int nh = 0;
    for (int r = 0; r < size; r++) {
        if (lowest[r] == r)
            t->host[r] = nh++;
        else
            t->host[r] = t->host[lowest[r]];
    }
    free(sorted);
    t->nhosts = nh;
    memset(t->host_size, 0, (size_t)nh * sizeof(int));
    for (int r = 0; r < size; r++)
        t->local[r] = t->host_size[t->host[r]]++;
    t->host_first[0] = 0;
    for (int h = 0; h < nh; h++)
        t->host_first[h + 1] = t->host_first[h] + t->host_size[h];
    for (int r = 0; r < size; r++)
        t->members[t->host_first[t->host[r]] + t->local[r]] = r;
    t->min_host_size = t->max_host_size = t->host_size[0];
    for (int h = 1; h < nh; h++) {
        t->min_host_size = t->host_size[h] < t->min_host_size ? t->host_size[h] : t->min_host_size;
        t->max_host_size = t->host_size[h] > t->max_host_size ? t->host_size[h] : t->max_host_size;
    }
    *topo_p = t;
    return ZAP_OK;
}

void zap_coll_topo_free(zap_coll_topo_t *topo) { free(topo); }
