/* Phase 4 of the job, combine (docs/verify.md): every rank's verdict words
 * into the full bitmap on every rank, either an OR-allreduce of the bitmaps
 * (each rank set only its own words) or an allgatherv of each rank's words
 * at the ranges exchanged after verification; then a SUM-allreduce of
 * (checked, invalid, malformed), which agree checks against the bitmap. */
#include "verify/job_state.h"
#include <string.h>

static uint64_t popcount_words(const uint32_t *w, size_t n)
{
    uint64_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += (uint64_t)__builtin_popcount(w[i]);
    return c;
}

static zap_status_t combine_bitmaps(zap_verify_job_state_t *j)
{
    zap_verify_result_t *res = &j->res;
    if (j->plan.combine == ZAP_COMBINE_OR_ALLREDUCE)
        return zap_allreduce(j->comm, ZAP_IN_PLACE, res->bitmap, res->bitmap_words, ZAP_DT_UINT32, ZAP_OP_BOR);
    size_t my_words = (size_t)((j->vcount + 31) / 32);
    memcpy(j->mine, res->bitmap + j->vfirst / 32, my_words * sizeof(uint32_t));
    for (int r = 0; r < j->nranks; r++) {
        j->counts[r] = (size_t)((j->ranges[3 * r + 2] + 31) / 32);
        j->displs[r] = (ptrdiff_t)(j->ranges[3 * r + 1] / 32);
    }
    return zap_allgatherv(j->comm, j->mine, my_words, res->bitmap, j->counts, j->displs, ZAP_DT_UINT32);
}

zap_status_t zap_verify_job_combine(zap_verify_job_state_t *j)
{
    zap_verify_result_t *res = &j->res;
    zap_status_t s;
    if (res->bitmap_words > 0 && (s = combine_bitmaps(j)) != ZAP_OK)
        return s;
    uint64_t *sums = j->sums;
    sums[0] = j->st.checked;
    sums[1] = j->st.invalid;
    sums[2] = j->st.malformed;
    s = zap_allreduce(j->comm, ZAP_IN_PLACE, sums, 3, ZAP_DT_UINT64, ZAP_OP_SUM);
    if (s != ZAP_OK)
        return s;
    res->invalid = sums[1];
    res->malformed = sums[2];
    res->valid = popcount_words(res->bitmap, res->bitmap_words);
    j->t3 = zap_clock_now();
    res->combine_seconds = j->t3 - j->t2;
    return ZAP_OK;
}
