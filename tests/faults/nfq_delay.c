/* zap-nfq-delay: holds every packet of a netfilter queue for a fixed time
 * before letting it go, as `tc qdisc ... netem delay` would on a kernel that
 * has sch_netem. netem.sh uses it where the kernel lacks netem (docs/faults.md,
 * "Link faults"): an iptables rule sends a host's outgoing packets to queue Q
 * (NFQUEUE), the kernel keeps each packet queued until this program gives its
 * verdict, and the verdict comes DELAY_MS after the packet was queued. The
 * packets themselves never leave the kernel (metadata copy mode); the delay
 * is the kernel holding them.
 *
 *   zap-nfq-delay QUEUE DELAY_MS     runs until SIGTERM/SIGINT; prints
 *                                    "nfq-delay: ready" once bound, and at
 *                                    exit the packet count and how late the
 *                                    verdicts came (a userspace program on a
 *                                    loaded machine is descheduled now and
 *                                    then: netem's kernel timer is not)
 *
 * Raw netlink (NETLINK_NETFILTER, nfnetlink_queue), no libnetfilter_queue.
 * The delay is constant, so packets are due in arrival order: a FIFO of
 * (packet id, due time), and one batch verdict (every id up to the newest
 * due one) per wake-up. GSO packets are queued whole (NFQA_CFG_F_GSO), so a
 * 64 KiB TCP burst is one entry, as it would be one skb in netem. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <linux/netlink.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FIFO_CAP (1u << 16)
#define QUEUE_MAXLEN 16384

static volatile sig_atomic_t g_stop;
static void on_signal(int s) { (void)s; g_stop = 1; }

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

typedef struct {
    char buf[256];
    struct nlmsghdr *nh;
} msg_t;

static void msg_start(msg_t *m, uint16_t type, uint16_t queue, int ack)
{
    memset(m->buf, 0, sizeof(m->buf));
    m->nh = (struct nlmsghdr *)m->buf;
    m->nh->nlmsg_len = NLMSG_LENGTH(sizeof(struct nfgenmsg));
    m->nh->nlmsg_type = (uint16_t)((NFNL_SUBSYS_QUEUE << 8) | type);
    m->nh->nlmsg_flags = (uint16_t)(NLM_F_REQUEST | (ack ? NLM_F_ACK : 0));
    struct nfgenmsg *g = NLMSG_DATA(m->nh);
    g->nfgen_family = AF_UNSPEC;
    g->version = NFNETLINK_V0;
    g->res_id = htons(queue);
}

static void msg_attr(msg_t *m, uint16_t type, const void *data, size_t len)
{
    struct nlattr *a = (struct nlattr *)(m->buf + NLMSG_ALIGN(m->nh->nlmsg_len));
    a->nla_type = type;
    a->nla_len = (uint16_t)(NLA_HDRLEN + len);
    memcpy((char *)a + NLA_HDRLEN, data, len);
    m->nh->nlmsg_len = NLMSG_ALIGN(m->nh->nlmsg_len) + NLA_ALIGN(a->nla_len);
}

static int msg_send(int fd, msg_t *m)
{
    struct sockaddr_nl to = {.nl_family = AF_NETLINK};
    return sendto(fd, m->buf, m->nh->nlmsg_len, 0, (struct sockaddr *)&to, sizeof(to)) < 0 ? -1 : 0;
}

/* Sends a config message and waits for its acknowledgement. */
static int config(int fd, uint16_t queue, uint16_t attr, const void *data, size_t len)
{
    msg_t m;
    msg_start(&m, NFQNL_MSG_CONFIG, queue, 1);
    msg_attr(&m, attr, data, len);
    if (msg_send(fd, &m) != 0)
        return -1;
    char rb[512];
    ssize_t n = recv(fd, rb, sizeof(rb), 0);
    if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)))
        return -1;
    struct nlmsghdr *nh = (struct nlmsghdr *)rb;
    if (nh->nlmsg_type != NLMSG_ERROR)
        return -1;
    struct nlmsgerr *e = NLMSG_DATA(nh);
    if (e->error != 0) {
        errno = -e->error;
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: zap-nfq-delay QUEUE DELAY_MS\n");
        return 2;
    }
    uint16_t queue = (uint16_t)atoi(argv[1]);
    double delay_ms = atof(argv[2]);
    if (delay_ms < 0 || delay_ms > 10000) {
        fprintf(stderr, "zap-nfq-delay: delay %s ms out of range\n", argv[2]);
        return 2;
    }
    uint64_t delay = (uint64_t)(delay_ms * 1e6);
    int fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER);
    if (fd < 0) {
        perror("zap-nfq-delay: socket(NETLINK_NETFILTER)");
        return 3;
    }
    /* Room for a burst of queued-packet notices; too small and the kernel
     * drops notices (ENOBUFS) and the packets they stand for stay queued. */
    int rcv = 8 << 20;
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv));
    struct sockaddr_nl self = {.nl_family = AF_NETLINK};
    if (bind(fd, (struct sockaddr *)&self, sizeof(self)) != 0) {
        perror("zap-nfq-delay: bind");
        return 3;
    }
    struct nfqnl_msg_config_cmd bind_cmd = {.command = NFQNL_CFG_CMD_BIND, .pf = htons(AF_INET)};
    struct nfqnl_msg_config_params params = {.copy_range = htonl(0), .copy_mode = NFQNL_COPY_META};
    uint32_t maxlen = htonl(QUEUE_MAXLEN);
    uint32_t flags[2] = {htonl(NFQA_CFG_F_GSO), htonl(NFQA_CFG_F_GSO)}; /* value, mask */
    if (config(fd, queue, NFQA_CFG_CMD, &bind_cmd, sizeof(bind_cmd)) != 0 ||
        config(fd, queue, NFQA_CFG_PARAMS, &params, sizeof(params)) != 0 ||
        config(fd, queue, NFQA_CFG_QUEUE_MAXLEN, &maxlen, sizeof(maxlen)) != 0) {
        perror("zap-nfq-delay: binding the queue");
        return 3;
    }
    {
        msg_t m;
        msg_start(&m, NFQNL_MSG_CONFIG, queue, 1);
        msg_attr(&m, NFQA_CFG_FLAGS, &flags[0], 4);
        msg_attr(&m, NFQA_CFG_MASK, &flags[1], 4);
        char rb[512];
        if (msg_send(fd, &m) != 0 || recv(fd, rb, sizeof(rb), 0) < 0)
            fprintf(stderr, "zap-nfq-delay: GSO flag not set (packets are segmented first)\n");
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    printf("nfq-delay: ready, queue %u, delay %.3f ms\n", queue, delay_ms);
    fflush(stdout);

    static uint32_t fifo_id[FIFO_CAP];
    static uint64_t fifo_due[FIFO_CAP];
    unsigned head = 0, tail = 0; /* entries [head, tail) */
    uint64_t packets = 0, late_max = 0, late_sum = 0, released = 0, over1ms = 0, overflow = 0, enobufs = 0;
    static char rb[1 << 16];
    while (!g_stop) {
        uint64_t t = now_ns();
        /* Release what is due: one batch verdict up to the newest due id. */
        if (head != tail && fifo_due[head % FIFO_CAP] <= t) {
            uint32_t last = 0;
            while (head != tail && fifo_due[head % FIFO_CAP] <= t) {
                uint64_t late = t - fifo_due[head % FIFO_CAP];
                if (late > late_max)
                    late_max = late;
                late_sum += late;
                released++;
                over1ms += late > 1000000;
                last = fifo_id[head % FIFO_CAP];
                head++;
            }
            msg_t m;
            msg_start(&m, NFQNL_MSG_VERDICT_BATCH, queue, 0);
            struct nfqnl_msg_verdict_hdr v = {.verdict = htonl(NF_ACCEPT), .id = htonl(last)};
            msg_attr(&m, NFQA_VERDICT_HDR, &v, sizeof(v));
            if (msg_send(fd, &m) != 0)
                perror("zap-nfq-delay: verdict");
            continue;
        }
        struct timespec to = {0, 50 * 1000 * 1000};
        if (head != tail) {
            uint64_t w = fifo_due[head % FIFO_CAP] - t;
            to.tv_sec = (time_t)(w / 1000000000ull);
            to.tv_nsec = (long)(w % 1000000000ull);
        }
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (ppoll(&pfd, 1, &to, NULL) <= 0)
            continue;
        ssize_t n = recv(fd, rb, sizeof(rb), MSG_DONTWAIT);
        if (n < 0) {
            if (errno == ENOBUFS)
                enobufs++;
            continue;
        }
        uint64_t arrived = now_ns();
        for (struct nlmsghdr *nh = (struct nlmsghdr *)rb; NLMSG_OK(nh, (unsigned)n); nh = NLMSG_NEXT(nh, n)) {
            if ((nh->nlmsg_type & 0xff) != NFQNL_MSG_PACKET || (nh->nlmsg_type >> 8) != NFNL_SUBSYS_QUEUE)
                continue;
            char *p = (char *)NLMSG_DATA(nh) + NLMSG_ALIGN(sizeof(struct nfgenmsg));
            char *end = (char *)nh + nh->nlmsg_len;
            while (p + NLA_HDRLEN <= end) {
                struct nlattr *a = (struct nlattr *)p;
                if (a->nla_len < NLA_HDRLEN || p + a->nla_len > end)
                    break;
                if ((a->nla_type & NLA_TYPE_MASK) == NFQA_PACKET_HDR) {
                    struct nfqnl_msg_packet_hdr *h = (struct nfqnl_msg_packet_hdr *)(p + NLA_HDRLEN);
                    if (tail - head == FIFO_CAP) {
                        overflow++; /* cannot happen below QUEUE_MAXLEN; the kernel's queue bounds it */
                        break;
                    }
                    fifo_id[tail % FIFO_CAP] = ntohl(h->packet_id);
                    fifo_due[tail % FIFO_CAP] = arrived + delay;
                    tail++;
                    packets++;
                    break;
                }
                p += NLA_ALIGN(a->nla_len);
            }
        }
    }
    /* Whatever is still held goes now (the rule is removed by the script). */
    if (head != tail) {
        msg_t m;
        msg_start(&m, NFQNL_MSG_VERDICT_BATCH, queue, 0);
        struct nfqnl_msg_verdict_hdr v = {.verdict = htonl(NF_ACCEPT), .id = htonl(fifo_id[(tail - 1) % FIFO_CAP])};
        msg_attr(&m, NFQA_VERDICT_HDR, &v, sizeof(v));
        (void)msg_send(fd, &m);
    }
    printf("nfq-delay: %llu packets held %.3f ms; verdicts late by %.3f ms on average, %.3f ms at worst, "
           "%llu more than 1 ms late; %llu lost notices, %llu fifo overflows\n",
           (unsigned long long)packets, delay_ms, released ? late_sum / 1e6 / (double)released : 0.0, late_max / 1e6,
           (unsigned long long)over1ms, (unsigned long long)enobufs, (unsigned long long)overflow);
    return 0;
}
