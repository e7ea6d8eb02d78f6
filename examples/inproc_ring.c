/* inproc_ring: four threads act as four ranks of the in-process transport and
 * pass a token around a ring, each adding its rank; the transport contract is
 * the same one the UCX transport implements across nodes. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <zap/inproc.h>

enum { RANKS = 4, ROUNDS = 1000 };
static zap_inproc_world_t *world;
static int failed;

static void *rank_main(void *arg)
{
    int rank = (int)(intptr_t)arg;
    zap_transport_t *t = NULL;
    zap_inproc_transport(world, rank, &t);
    int next = (rank + 1) % RANKS, prev = (rank + RANKS - 1) % RANKS;
    uint64_t token = 0;
    for (int round = 0; round < ROUNDS; round++) {
        if (rank != 0 || round > 0) {
            if (zap_transport_recv(t, prev, 1, &token, sizeof(token), NULL) != ZAP_OK)
                failed = 1;
        }
        token += (uint64_t)rank;
        if (zap_transport_send(t, next, 1, &token, sizeof(token)) != ZAP_OK)
            failed = 1;
    }
    if (rank == 0) {
        zap_transport_recv(t, prev, 1, &token, sizeof(token), NULL);
        uint64_t want = (uint64_t)ROUNDS * (0 + 1 + 2 + 3);
        printf("token after %d rounds: %llu (expected %llu)\n", ROUNDS, (unsigned long long)token,
               (unsigned long long)want);
        if (token != want)
            failed = 1;
    }
    return NULL;
}

int main(void)
{
    zap_status_t st = zap_inproc_world_create(RANKS, NULL, &world);
    if (st != ZAP_OK) {
        fprintf(stderr, "inproc_ring: %s\n", zap_status_string(st));
        return 1;
    }
    pthread_t th[RANKS];
    for (int r = 0; r < RANKS; r++)
        pthread_create(&th[r], NULL, rank_main, (void *)(intptr_t)r);
    for (int r = 0; r < RANKS; r++)
        pthread_join(th[r], NULL);
    zap_inproc_world_destroy(world);
    return failed;
}
