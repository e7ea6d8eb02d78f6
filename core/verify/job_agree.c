/* Phase 5 of the job, agree (docs/verify.md): each rank hashes its verdict
 * set (BLAKE2b-256 of "zap-verdicts-v1" || n || batch_id || the bitmap words,
 * little endian) and an allgatherv brings every rank's row (range verified,
 * verifier, time, peak memory, digest) to every rank. Any digest that
 * differs from rank 0's, or counts that do not add up, fail the job with
 * ZAP_ERR_MISMATCH on every rank, since every rank compares the same
 * gathered table; the result is handed over either way, for the report. */
#include "verify/job_state.h"
#include "verify/verify_impl.h"
#include "base/log.h"
#include <sodium.h>
#include <stdio.h>
#include <string.h>

static zap_status_t digest_of(const zap_verify_result_t *r, uint8_t out[32])
{
    crypto_generichash_state h;
    uint8_t le[8];
    static const char domain[] = "zap-verdicts-v1";
    if (crypto_generichash_init(&h, NULL, 0, 32) != 0)
        return ZAP_ERR_UNSUPPORTED;
    crypto_generichash_update(&h, (const uint8_t *)domain, sizeof(domain) - 1);
    zap_put_le64(le, r->n_items);
    crypto_generichash_update(&h, le, 8);
    zap_put_le64(le, r->batch_id);
    crypto_generichash_update(&h, le, 8);
    for (size_t w = 0; w < r->bitmap_words; w++) {
        uint8_t b[4];
        zap_put_le32(b, r->bitmap[w]);
        crypto_generichash_update(&h, b, 4);
    }
    crypto_generichash_final(&h, out, 32);
    return ZAP_OK;
}

/* This rank's row, gathered from every rank into j->rows. */
static zap_status_t gather_rows(zap_verify_job_state_t *j)
{
    zap_verify_row_t me;
    memset(&me, 0, sizeof(me));
    me.first = j->vfirst;
    me.items = j->vcount;
    me.used = (uint32_t)j->st.used;
    me.verify_seconds = j->st.seconds;
    me.peak_rss_kb = zap_verify_peak_rss_kb();
    me.in_place_seconds = j->t_in_place - j->t0;
    memcpy(me.digest, j->res.digest, 32);
    for (int r = 0; r < j->nranks; r++) {
        j->counts[r] = sizeof(zap_verify_row_t);
        j->displs[r] = (ptrdiff_t)((size_t)r * sizeof(zap_verify_row_t));
    }
    return zap_allgatherv(j->comm, &me, sizeof(me), j->rows, j->counts, j->displs, ZAP_DT_UINT8);
}

/* The gathered rows into the result's table; how many digests differ from
 * rank 0's. */
static int fill_table(zap_verify_job_state_t *j)
{
    int disagree = 0;
    for (int r = 0; r < j->nranks; r++) {
        const zap_verify_row_t *row = &j->rows[r];
        zap_verify_rank_info_t *ri = &j->res.ranks[r];
        ri->first = row->first;
        ri->items = row->items;
        ri->used = (zap_verifier_t)row->used;
        ri->verify_seconds = row->verify_seconds;
        ri->peak_rss_kb = row->peak_rss_kb;
        ri->in_place_seconds = row->in_place_seconds;
        memcpy(ri->digest, row->digest, 32);
        if (memcmp(row->digest, j->rows[0].digest, 32) != 0)
            disagree++;
    }
    return disagree;
}

static void log_disagreement(const zap_verify_job_state_t *j)
{
    char hex[2][17];
    for (int r = 0; r < j->nranks; r++) {
        if (memcmp(j->rows[r].digest, j->rows[0].digest, 32) == 0)
            continue;
        for (int k = 0; k < 8; k++) {
            snprintf(hex[0] + 2 * k, 3, "%02x", j->rows[0].digest[k]);
            snprintf(hex[1] + 2 * k, 3, "%02x", j->rows[r].digest[k]);
        }
        zap_error("verify: job: VERDICT MISMATCH: rank %d digest %s... differs from rank 0's %s...", r, hex[1],
                  hex[0]);
    }
}

zap_status_t zap_verify_job_agree(zap_verify_job_state_t *j, zap_verify_result_t *result_p)
{
    zap_verify_result_t *res = &j->res;
    const uint64_t n = j->plan.n_items, *sums = j->sums;
    if (j->hooks.flip && j->rank == j->hooks.flip_rank && res->bitmap_words > 0)
        res->bitmap[0] ^= 1u;
    digest_of(res, res->digest);
    zap_status_t s = gather_rows(j);
    if (s != ZAP_OK)
        return s;
    int disagree = fill_table(j);
    res->agree_seconds = zap_clock_now() - j->t3;
    if (disagree) {
        log_disagreement(j);
        s = ZAP_ERR_MISMATCH;
    } else if (sums[0] != n || res->valid != n - (sums[1] <= n ? sums[1] : 0) || sums[1] > n) {
        zap_error("verify: job: VERDICT MISMATCH: %llu of %llu items checked, %llu invalid, but %llu bits set "
                  "(expected %llu)",
                  (unsigned long long)sums[0], (unsigned long long)n, (unsigned long long)sums[1],
                  (unsigned long long)res->valid, (unsigned long long)(n - sums[1]));
        s = ZAP_ERR_MISMATCH;
    }
    *result_p = *res;
    memset(res, 0, sizeof(*res)); /* ownership moved to the caller */
    return s;
}
