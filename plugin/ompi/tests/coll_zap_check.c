/* coll_zap_check: an ordinary MPI program (no zap header) that calls every
 * collective the zap coll component routes, on every predefined type and op,
 * and checks each result against a reference computed here. Run it once with
 * the component and once without: each run writes one digest line per case
 * and rank (DIGEST_FILE.<rank>), and coll_zap_test.sh compares the two runs'
 * files, so the component's results are compared bit for bit with Open MPI's
 * own. Inputs are chosen so that every reduction order gives the same bits
 * (small integers, products of powers of two), except in the "order" cases:
 * random floats, checked against the reduction order zap documents for ranks
 * sharing a host (((x0 op x1) op x2) ... in rank order, docs/collectives.md)
 * bit for bit when CHECK_ZAP_ORDER=1 (else within a rounding tolerance), and
 * left out of the digests.
 *
 *   coll_zap_check MODE DIGEST_FILE
 *
 * MODE: all (every case below), fallback (only calls zap cannot take:
 * run_fallback),
 * errors (argument mismatches reported through
 * the communicator's error handler; with the component only), peer-exit (the
 * last rank exits before a collective; the others must get an error, not
 * hang; with the component only). Exit status 0: every check held on this
 * rank. */
#include <mpi.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int g_rank, g_size, g_failures, g_cases;
static FILE *g_digest;

static void fail(const char *kase, const char *what)
{
    fprintf(stderr, "[rank %d] FAIL %s: %s\n", g_rank, kase, what);
    g_failures++;
}

static uint64_t fnv(const void *p, size_t n)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * UINT64_C(1099511628211);
    return h;
}

static void digest(const char *kase, const void *p, size_t n)
{
    g_cases++;
    fprintf(g_digest, "%s %d %016llx\n", kase, g_rank, (unsigned long long)fnv(p, n));
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n > 0 ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "[rank %d] out of memory\n", g_rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

static void check_rc(const char *kase, int rc)
{
    if (rc != MPI_SUCCESS)
        fail(kase, "an MPI call returned an error");
}

/* --- types and ops ------------------------------------------------------------ */

typedef enum { K_SINT, K_UINT, K_FINT, K_FLOAT, K_BYTE, K_BOOL, K_COMPLEX, K_LDOUBLE } kind_t;
typedef struct {
    const char *name;
    MPI_Datatype dt;
    kind_t kind;
    size_t size;
} type_t;

static type_t g_types[] = {
    {"signed_char", MPI_SIGNED_CHAR, K_SINT, 1},
    {"unsigned_char", MPI_UNSIGNED_CHAR, K_UINT, 1},
    {"short", MPI_SHORT, K_SINT, sizeof(short)},
    {"unsigned_short", MPI_UNSIGNED_SHORT, K_UINT, sizeof(short)},
    {"int", MPI_INT, K_SINT, sizeof(int)},
    {"unsigned", MPI_UNSIGNED, K_UINT, sizeof(int)},
    {"long", MPI_LONG, K_SINT, sizeof(long)},
    {"unsigned_long", MPI_UNSIGNED_LONG, K_UINT, sizeof(long)},
    {"long_long", MPI_LONG_LONG, K_SINT, sizeof(long long)},
    {"unsigned_long_long", MPI_UNSIGNED_LONG_LONG, K_UINT, sizeof(long long)},
    {"int8", MPI_INT8_T, K_SINT, 1},
    {"int16", MPI_INT16_T, K_SINT, 2},
    {"int32", MPI_INT32_T, K_SINT, 4},
    {"int64", MPI_INT64_T, K_SINT, 8},
    {"uint8", MPI_UINT8_T, K_UINT, 1},
    {"uint16", MPI_UINT16_T, K_UINT, 2},
    {"uint32", MPI_UINT32_T, K_UINT, 4},
    {"uint64", MPI_UINT64_T, K_UINT, 8},
    {"integer", MPI_INTEGER, K_FINT, 0}, /* Fortran's, from C: size asked at run time */
    {"float", MPI_FLOAT, K_FLOAT, sizeof(float)},
    {"double", MPI_DOUBLE, K_FLOAT, sizeof(double)},
    {"real", MPI_REAL, K_FLOAT, 0},
    {"double_precision", MPI_DOUBLE_PRECISION, K_FLOAT, 0},
    {"byte", MPI_BYTE, K_BYTE, 1},
    {"c_bool", MPI_C_BOOL, K_BOOL, sizeof(_Bool)},
    {"c_float_complex", MPI_C_FLOAT_COMPLEX, K_COMPLEX, 2 * sizeof(float)},
    {"c_double_complex", MPI_C_DOUBLE_COMPLEX, K_COMPLEX, 2 * sizeof(double)},
    {"long_double", MPI_LONG_DOUBLE, K_LDOUBLE, sizeof(long double)},
};
#define NTYPES (sizeof(g_types) / sizeof(g_types[0]))

typedef struct {
    const char *name;
    MPI_Op op;
} op_t;
static op_t g_ops[] = {{"sum", MPI_SUM},   {"prod", MPI_PROD}, {"min", MPI_MIN},   {"max", MPI_MAX},
                       {"band", MPI_BAND}, {"bor", MPI_BOR},   {"bxor", MPI_BXOR}, {"land", MPI_LAND},
                       {"lor", MPI_LOR},   {"lxor", MPI_LXOR}};
#define NOPS (sizeof(g_ops) / sizeof(g_ops[0]))

/* MPI's table of which op applies to which type group (MPI 3.1, 5.9.2). */
static int valid(kind_t k, const char *op)
{
    int arith = !strcmp(op, "sum") || !strcmp(op, "prod");
    int minmax = !strcmp(op, "min") || !strcmp(op, "max");
    switch (k) {
    case K_SINT:
    case K_UINT: return 1;
    case K_FINT: return op[0] != 'l'; /* logical ops: C integers and logicals only */
    case K_FLOAT:
    case K_LDOUBLE: return arith || minmax;
    case K_BYTE: return op[0] == 'b';
    case K_BOOL: return op[0] == 'l';
    case K_COMPLEX: return arith;
    }
    return 0;
}

/* Element i of rank r's input: small integers (exact in every type and
 * every order), 1s and 2s for products (0.5s and 2s in floats), 0/1 for
 * logical ops. */
static double value(const type_t *t, const char *op, size_t i, int r)
{
    unsigned h = (unsigned)((i * 13 + (size_t)r * 7) % 50);
    if (!strcmp(op, "prod"))
        return t->kind == K_FLOAT ? ((i + (size_t)r) % 3 == 0 ? 0.5 : 2.0) : ((i + (size_t)r) % 3 == 0 ? 2 : 1);
    if (op[0] == 'l')
        return (i + (size_t)r) % 3 == 0;
    if (op[0] == 'b' || t->kind == K_UINT || t->kind == K_BYTE)
        return h;
    return (double)h - 25;
}

static void store(const type_t *t, void *buf, size_t i, double v, double imag)
{
    char *p = (char *)buf + i * t->size;
    switch (t->kind) {
    case K_SINT:
    case K_UINT:
    case K_FINT:
    case K_BYTE:
        if (t->size == 1) *(int8_t *)p = (int8_t)(int64_t)v;
        else if (t->size == 2) *(int16_t *)p = (int16_t)(int64_t)v;
        else if (t->size == 4) *(int32_t *)p = (int32_t)(int64_t)v;
        else *(int64_t *)p = (int64_t)v;
        break;
    case K_FLOAT:
        if (t->size == 4) *(float *)p = (float)v;
        else *(double *)p = v;
        break;
    case K_BOOL: *(_Bool *)p = v != 0; break;
    case K_COMPLEX:
        if (t->size == 2 * sizeof(float)) {
            ((float *)p)[0] = (float)v;
            ((float *)p)[1] = (float)imag;
        } else {
            ((double *)p)[0] = v;
            ((double *)p)[1] = imag;
        }
        break;
    case K_LDOUBLE: *(long double *)p = (long double)v; break;
    }
}

static void fill(const type_t *t, const char *op, void *buf, size_t n, int r)
{
    memset(buf, 0, n * t->size);
    for (size_t i = 0; i < n; i++)
        store(t, buf, i, value(t, op, i, r), t->kind == K_COMPLEX && strcmp(op, "prod") ? (double)(i % 5) : 0);
}

static double combine(const char *op, double a, double b)
{
    long long x = (long long)a, y = (long long)b;
    if (!strcmp(op, "sum")) return a + b;
    if (!strcmp(op, "prod")) return a * b;
    if (!strcmp(op, "min")) return a < b ? a : b;
    if (!strcmp(op, "max")) return a > b ? a : b;
    if (!strcmp(op, "band")) return (double)(x & y);
    if (!strcmp(op, "bor")) return (double)(x | y);
    if (!strcmp(op, "bxor")) return (double)(x ^ y);
    if (!strcmp(op, "land")) return (double)(x && y);
    if (!strcmp(op, "lor")) return (double)(x || y);
    return (double)(!x != !y); /* lxor */
}

/* The reduction over ranks lo .. hi of the inputs value() gives. */
static void reference_range(const type_t *t, const char *op, void *out, size_t n, int lo, int hi)
{
    memset(out, 0, n * t->size);
    for (size_t i = 0; i < n; i++) {
        double v = value(t, op, i, lo);
        for (int r = lo + 1; r <= hi; r++)
            v = combine(op, v, value(t, op, i, r));
        /* Complex: the imaginary parts are i % 5 on every rank (sums) or 0. */
        double imag = t->kind == K_COMPLEX && strcmp(op, "prod") ? (double)(i % 5) * (hi - lo + 1) : 0;
        store(t, out, i, v, imag);
    }
}

static void reference(const type_t *t, const char *op, void *out, size_t n, int size)
{
    reference_range(t, op, out, n, 0, size - 1);
}

/* --- allreduce ------------------------------------------------------------- */

static void allreduce_case(MPI_Comm comm, const char *cname, const type_t *t, const op_t *op, size_t n, int in_place)
{
    char kase[160];
    snprintf(kase, sizeof(kase), "allreduce.%s.%s.%s.n%zu%s", cname, t->name, op->name, n, in_place ? ".inplace" : "");
    size_t bytes = n * t->size;
    void *in = xmalloc(bytes), *out = xmalloc(bytes), *ref = xmalloc(bytes);
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    fill(t, op->name, in, n, rank);
    int rc;
    if (in_place) {
        memcpy(out, in, bytes);
        rc = MPI_Allreduce(MPI_IN_PLACE, out, (int)n, t->dt, op->op, comm);
    } else {
        rc = MPI_Allreduce(in, out, (int)n, t->dt, op->op, comm);
    }
    check_rc(kase, rc);
    reference(t, op->name, ref, n, size);
    if (memcmp(out, ref, bytes) != 0)
        fail(kase, "result differs from the reference");
    digest(kase, out, bytes);
    free(in);
    free(out);
    free(ref);
}

static void allreduce_all(MPI_Comm comm, const char *cname)
{
    static const size_t counts[] = {1, 7, 1000, 70001};
    for (size_t ti = 0; ti < NTYPES; ti++) {
        for (size_t oi = 0; oi < NOPS; oi++) {
            if (!valid(g_types[ti].kind, g_ops[oi].name))
                continue;
            for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
                allreduce_case(comm, cname, &g_types[ti], &g_ops[oi], counts[ci], ci % 2);
        }
    }
}

/* Random floats: the order shows in the bits. zap's documented order on one
 * host is rank order, left to right. */
static void allreduce_order(MPI_Comm comm, int check_order)
{
    static const size_t counts[] = {100, 1000, 300000};
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
        size_t n = counts[ci];
        double *in = xmalloc(n * sizeof(double)), *out = xmalloc(n * sizeof(double));
        float *fin = xmalloc(n * sizeof(float)), *fout = xmalloc(n * sizeof(float));
        char kase[96];
        snprintf(kase, sizeof(kase), "order.allreduce.n%zu", n);
        for (size_t i = 0; i < n; i++) {
            unsigned s = (unsigned)(i * 2654435761u + (unsigned)rank * 40503u);
            in[i] = (double)(s % 100003) / 977.0 - 50.0;
            fin[i] = (float)in[i];
        }
        check_rc(kase, MPI_Allreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, comm));
        check_rc(kase, MPI_Allreduce(fin, fout, (int)n, MPI_FLOAT, MPI_SUM, comm));
        for (size_t i = 0; i < n; i++) {
            double ref = 0;
            float fref = 0;
            for (int r = 0; r < size; r++) {
                unsigned s = (unsigned)(i * 2654435761u + (unsigned)r * 40503u);
                double x = (double)(s % 100003) / 977.0 - 50.0;
                ref = r == 0 ? x : ref + x;
                fref = r == 0 ? (float)x : fref + (float)x;
            }
            int bad = check_order ? (out[i] != ref || fout[i] != fref)
                                  : (fabs(out[i] - ref) > 1e-9 * (1 + fabs(ref)) ||
                                     fabsf(fout[i] - fref) > 1e-4f * (1 + fabsf(fref)));
            if (bad) {
                char what[160];
                snprintf(what, sizeof(what), "element %zu: %.17g / %.9g against %.17g / %.9g", i, out[i],
                         (double)fout[i], ref, (double)fref);
                fail(kase, what);
                break;
            }
        }
        free(in);
        free(out);
        free(fin);
        free(fout);
    }
}

static void user_sum_int(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

/* Composition of affine maps x -> a x + b, on (a, b) pairs: associative, not
 * commutative, so the result shows the order the operands met in. */
static void user_compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        int a = x[2 * i] * y[2 * i], b = x[2 * i] * y[2 * i + 1] + x[2 * i + 1];
        y[2 * i] = a;
        y[2 * i + 1] = b;
    }
}

/* User ops (zap has none): the previous component runs them. */
static void allreduce_user_ops(MPI_Comm comm, const char *cname)
{
    MPI_Op sum, compose;
    MPI_Op_create(user_sum_int, 1, &sum);
    MPI_Op_create(user_compose, 0, &compose);
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int in[64], out[64];
    for (int i = 0; i < 64; i++)
        in[i] = rank + i;
    char kase[96];
    snprintf(kase, sizeof(kase), "userop.sum.%s", cname);
    check_rc(kase, MPI_Allreduce(in, out, 64, MPI_INT, sum, comm));
    for (int i = 0; i < 64; i++)
        if (out[i] != size * i + size * (size - 1) / 2) {
            fail(kase, "wrong sum");
            break;
        }
    digest(kase, out, sizeof(out));
    for (int i = 0; i < 32; i++) {
        in[2 * i] = 2;
        in[2 * i + 1] = rank + 1 + i;
    }
    snprintf(kase, sizeof(kase), "userop.noncommutative.%s", cname);
    check_rc(kase, MPI_Allreduce(in, out, 32, MPI_2INT, compose, comm));
    for (int i = 0; i < 32; i++) {
        /* x0 o x1 o ... o x(p-1), left to right: in rank order. */
        int a = 2, b = 1 + i;
        for (int r = 1; r < size; r++) {
            int na = a * 2, nb = a * (r + 1 + i) + b;
            a = na;
            b = nb;
        }
        if (out[2 * i] != a || out[2 * i + 1] != b) {
            fail(kase, "non-commutative op not applied in rank order");
            break;
        }
    }
    digest(kase, out, sizeof(out));
    MPI_Op_free(&sum);
    MPI_Op_free(&compose);
}

/* MINLOC/MAXLOC on pair types (zap has none yet). */
static void allreduce_pairs(MPI_Comm comm, const char *cname)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    struct {
        double v;
        int i;
    } din[16], dout[16];
    struct {
        int v, i;
    } iin[16], iout[16];
    memset(din, 0, sizeof(din)); /* the padding too: the digests cover it */
    memset(dout, 0, sizeof(dout));
    for (int k = 0; k < 16; k++) {
        din[k].v = (double)((k + rank) % size);
        din[k].i = rank;
        iin[k].v = (k * 3 + rank) % size;
        iin[k].i = rank;
    }
    char kase[96];
    snprintf(kase, sizeof(kase), "minloc.double_int.%s", cname);
    check_rc(kase, MPI_Allreduce(din, dout, 16, MPI_DOUBLE_INT, MPI_MINLOC, comm));
    for (int k = 0; k < 16; k++)
        if (dout[k].v != 0 || dout[k].i != (size - k % size) % size)
            fail(kase, "wrong minloc");
    digest(kase, dout, sizeof(dout));
    snprintf(kase, sizeof(kase), "maxloc.2int.%s", cname);
    check_rc(kase, MPI_Allreduce(iin, iout, 16, MPI_2INT, MPI_MAXLOC, comm));
    digest(kase, iout, sizeof(iout));
}

/* --- reduce, reduce_scatter(_block), scan, exscan ------------------------------ */

/* Every valid (type, op): reduce to a root that moves with the case (in
 * place on every other case), both reduce_scatter forms (the v-form's parts
 * uneven, some empty), scan and exscan; each checked against the reference
 * and digested. */
static void reductions_all(MPI_Comm comm, const char *cname, int full)
{
    static const size_t counts[] = {1, 7, 1000};
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *rcounts = xmalloc((size_t)size * sizeof(int));
    for (size_t ti = 0; ti < NTYPES; ti++) {
        for (size_t oi = 0; oi < NOPS; oi++) {
            const type_t *t = &g_types[ti];
            const op_t *op = &g_ops[oi];
            if (!valid(t->kind, op->name) || (!full && (ti % 5 != 0 || oi > 1)))
                continue;
            for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
                size_t n = counts[ci], bytes = n * t->size;
                int root = (int)((ti + oi + ci) % (size_t)size), in_place = (int)(ci % 2);
                char kase[192];
                /* reduce */
                void *in = xmalloc(bytes), *out = xmalloc(bytes), *ref = xmalloc(bytes);
                fill(t, op->name, in, n, rank);
                memset(out, 0, bytes);
                snprintf(kase, sizeof(kase), "reduce.%s.%s.%s.n%zu.root%d%s", cname, t->name, op->name, n, root,
                         in_place ? ".inplace" : "");
                int rc;
                if (in_place && rank == root) {
                    memcpy(out, in, bytes);
                    rc = MPI_Reduce(MPI_IN_PLACE, out, (int)n, t->dt, op->op, root, comm);
                } else {
                    rc = MPI_Reduce(in, out, (int)n, t->dt, op->op, root, comm);
                }
                check_rc(kase, rc);
                if (rank == root) {
                    reference(t, op->name, ref, n, size);
                    if (memcmp(out, ref, bytes) != 0)
                        fail(kase, "result differs from the reference");
                    digest(kase, out, bytes);
                }
                /* scan and exscan */
                snprintf(kase, sizeof(kase), "scan.%s.%s.%s.n%zu%s", cname, t->name, op->name, n,
                         in_place ? ".inplace" : "");
                if (in_place) {
                    memcpy(out, in, bytes);
                    rc = MPI_Scan(MPI_IN_PLACE, out, (int)n, t->dt, op->op, comm);
                } else {
                    rc = MPI_Scan(in, out, (int)n, t->dt, op->op, comm);
                }
                check_rc(kase, rc);
                reference_range(t, op->name, ref, n, 0, rank);
                if (memcmp(out, ref, bytes) != 0)
                    fail(kase, "result differs from the reference");
                digest(kase, out, bytes);
                snprintf(kase, sizeof(kase), "exscan.%s.%s.%s.n%zu", cname, t->name, op->name, n);
                check_rc(kase, MPI_Exscan(in, out, (int)n, t->dt, op->op, comm));
                if (rank > 0) {
                    reference_range(t, op->name, ref, n, 0, rank - 1);
                    if (memcmp(out, ref, bytes) != 0)
                        fail(kase, "result differs from the reference");
                    digest(kase, out, bytes);
                }
                free(in);
                free(out);
                free(ref);
                /* reduce_scatter_block: n per rank; reduce_scatter: uneven */
                for (int form = 0; form < 2; form++) {
                    size_t total = 0;
                    for (int r = 0; r < size; r++) {
                        rcounts[r] = form == 0 ? (int)n : r % 3 == 1 ? 0 : (int)(n + (size_t)r);
                        total += (size_t)rcounts[r];
                    }
                    void *vin = xmalloc(total * t->size), *vout = xmalloc(total * t->size),
                         *vref = xmalloc(total * t->size);
                    fill(t, op->name, vin, total, rank);
                    memset(vout, 0, total * t->size);
                    snprintf(kase, sizeof(kase), "%s.%s.%s.%s.n%zu%s", form == 0 ? "reduce_scatter_block" : "reduce_scatter",
                             cname, t->name, op->name, n, in_place ? ".inplace" : "");
                    const void *send = vin;
                    if (in_place) {
                        memcpy(vout, vin, total * t->size);
                        send = MPI_IN_PLACE;
                    }
                    rc = form == 0 ? MPI_Reduce_scatter_block(send, vout, (int)n, t->dt, op->op, comm)
                                   : MPI_Reduce_scatter(send, vout, rcounts, t->dt, op->op, comm);
                    check_rc(kase, rc);
                    reference(t, op->name, vref, total, size);
                    size_t off = 0;
                    for (int r = 0; r < rank; r++)
                        off += (size_t)rcounts[r];
                    size_t mine = (size_t)rcounts[rank] * t->size;
                    if (memcmp(vout, (char *)vref + off * t->size, mine) != 0)
                        fail(kase, "this rank's part differs from the reference");
                    digest(kase, vout, mine);
                    free(vin);
                    free(vout);
                    free(vref);
                }
            }
        }
    }
    free(rcounts);
}

/* MINLOC and MAXLOC on every C pair type: ties (the lowest index wins),
 * through allreduce, reduce and scan; the padding zeroed so the digests are
 * defined. */
static void pairs_all(MPI_Comm comm, const char *cname)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    struct pair_t {
        const char *name;
        MPI_Datatype dt;
        size_t size, koff;
    } pairs[] = {
        {"float_int", MPI_FLOAT_INT, sizeof(struct { float v; int k; }), offsetof(struct { float v; int k; }, k)},
        {"double_int", MPI_DOUBLE_INT, sizeof(struct { double v; int k; }), offsetof(struct { double v; int k; }, k)},
        {"long_int", MPI_LONG_INT, sizeof(struct { long v; int k; }), offsetof(struct { long v; int k; }, k)},
        {"2int", MPI_2INT, 2 * sizeof(int), sizeof(int)},
        {"short_int", MPI_SHORT_INT, sizeof(struct { short v; int k; }), offsetof(struct { short v; int k; }, k)},
        {"long_double_int", MPI_LONG_DOUBLE_INT, sizeof(struct { long double v; int k; }),
         offsetof(struct { long double v; int k; }, k)},
    };
    enum { N = 300 };
    for (size_t pi = 0; pi < sizeof(pairs) / sizeof(pairs[0]); pi++) {
        const struct pair_t *pt = &pairs[pi];
        char *in = xmalloc(N * pt->size), *out = xmalloc(N * pt->size);
        memset(in, 0, N * pt->size);
        for (int i = 0; i < N; i++) {
            int v = (i * 7 + rank * 3) % 5, k = (i + 11 * rank) % 17 - 3; /* ties, indices out of rank order */
            char *e = in + (size_t)i * pt->size;
            if (!strcmp(pt->name, "float_int")) *(float *)e = (float)v;
            else if (!strcmp(pt->name, "double_int")) *(double *)e = v;
            else if (!strcmp(pt->name, "long_int")) *(long *)e = v;
            else if (!strcmp(pt->name, "2int")) *(int *)e = v;
            else if (!strcmp(pt->name, "short_int")) *(short *)e = (short)v;
            else { long double x = v; memcpy(e, &x, 10); }
            memcpy(e + pt->koff, &k, sizeof(int));
        }
        for (int which = 0; which < 6; which++) {
            MPI_Op op = which % 2 ? MPI_MAXLOC : MPI_MINLOC;
            const char *coll = which < 2 ? "allreduce" : which < 4 ? "reduce" : "scan";
            char kase[128];
            snprintf(kase, sizeof(kase), "%s.%s.%s.%s", which % 2 ? "maxloc" : "minloc", coll, pt->name, cname);
            memset(out, 0, N * pt->size);
            int rc = which < 2 ? MPI_Allreduce(in, out, N, pt->dt, op, comm)
                     : which < 4 ? MPI_Reduce(in, out, N, pt->dt, op, size - 1, comm)
                                 : MPI_Scan(in, out, N, pt->dt, op, comm);
            check_rc(kase, rc);
            if (which < 2 || which >= 4 || rank == size - 1) {
                /* Check the index of element 0: the lowest index among the extreme values. */
                int last = which >= 4 ? rank : size - 1, best_v = 0, best_k = 0;
                for (int r = 0; r <= last; r++) { /* the extreme value */
                    int v = (r * 3) % 5;
                    if (r == 0 || (which % 2 ? v > best_v : v < best_v))
                        best_v = v;
                }
                for (int r = 0, first = 1; r <= last; r++) { /* the lowest index holding it */
                    int v = (r * 3) % 5, k = (11 * r) % 17 - 3;
                    if (v == best_v && (first || k < best_k)) {
                        best_k = k;
                        first = 0;
                    }
                }
                int got_k;
                memcpy(&got_k, out + pt->koff, sizeof(int));
                if (got_k != best_k)
                    fail(kase, "wrong index for element 0");
                digest(kase, out, N * pt->size);
            }
        }
        free(in);
        free(out);
    }
}

/* --- gather(v), alltoall(v) --------------------------------------------------- */

static void gather_all(MPI_Comm comm, const char *cname, int full)
{
    static const size_t counts[] = {1, 100, 40000};
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int root = 0; root < size; root++) {
        if (!full && root != size - 1)
            continue;
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
            size_t n = counts[ci];
            for (int in_place = 0; in_place < 2; in_place++) {
                char kase[96];
                snprintf(kase, sizeof(kase), "gather.%s.root%d.n%zu%s", cname, root, n, in_place ? ".inplace" : "");
                int *send = xmalloc(n * sizeof(int)), *recv = xmalloc(n * (size_t)size * sizeof(int));
                for (size_t i = 0; i < n; i++)
                    send[i] = (int)(i * 5) + rank * 100000;
                for (size_t i = 0; i < n * (size_t)size; i++)
                    recv[i] = -1;
                if (in_place && rank == root) {
                    memcpy(recv + (size_t)root * n, send, n * sizeof(int));
                    check_rc(kase, MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, (int)n, MPI_INT, root, comm));
                } else {
                    check_rc(kase, MPI_Gather(send, (int)n, MPI_INT, recv, (int)n, MPI_INT, root, comm));
                }
                if (rank == root) {
                    for (int r = 0; r < size; r++)
                        for (size_t i = 0; i < n; i++)
                            if (recv[(size_t)r * n + i] != (int)(i * 5) + r * 100000) {
                                fail(kase, "wrong data");
                                r = size;
                                break;
                            }
                    digest(kase, recv, n * (size_t)size * sizeof(int));
                }
                free(send);
                free(recv);
            }
        }
        /* gatherv: uneven counts (rank 1's 0), blocks reversed with gaps,
         * the buffer pointer in the middle: negative displacements. */
        for (int in_place = 0; in_place < 2; in_place++) {
            int *rc_ = xmalloc((size_t)size * sizeof(int)), *displs = xmalloc((size_t)size * sizeof(int));
            int total = 0;
            for (int r = 0; r < size; r++) {
                rc_[r] = r == 1 ? 0 : (r + 1) * 700;
                total += rc_[r] + 2;
            }
            int *base = xmalloc((size_t)total * sizeof(int)), off = 0;
            for (int r = size - 1; r >= 0; r--) {
                displs[r] = off - total / 2;
                off += rc_[r] + 2;
            }
            int *recv = base + total / 2, *send = xmalloc((size_t)(rc_[rank] + 1) * sizeof(int));
            for (int i = 0; i < total; i++)
                base[i] = -3;
            for (int i = 0; i < rc_[rank]; i++)
                send[i] = rank * 1000 + i;
            char kase[96];
            snprintf(kase, sizeof(kase), "gatherv.%s.root%d%s", cname, root, in_place ? ".inplace" : "");
            if (in_place && rank == root) {
                memcpy(recv + displs[root], send, (size_t)rc_[root] * sizeof(int));
                check_rc(kase, MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, rc_, displs, MPI_INT, root, comm));
            } else {
                check_rc(kase, MPI_Gatherv(send, rc_[rank], MPI_INT, recv, rc_, displs, MPI_INT, root, comm));
            }
            if (rank == root) {
                for (int r = 0; r < size; r++)
                    for (int i = 0; i < rc_[r]; i++)
                        if (recv[displs[r] + i] != r * 1000 + i) {
                            fail(kase, "wrong data");
                            r = size;
                            break;
                        }
                digest(kase, base, (size_t)total * sizeof(int));
            }
            free(rc_);
            free(displs);
            free(base);
            free(send);
        }
    }
    /* A receive type with gaps (every other int). */
    char kase[96];
    snprintf(kase, sizeof(kase), "gather.%s.gappy", cname);
    MPI_Datatype gap;
    MPI_Type_vector(16, 1, 2, MPI_INT, &gap);
    MPI_Type_commit(&gap);
    int send[16], *recv = xmalloc((size_t)size * 32 * sizeof(int));
    for (int i = 0; i < 16; i++)
        send[i] = rank * 100 + i;
    for (int i = 0; i < size * 32; i++)
        recv[i] = -1;
    check_rc(kase, MPI_Gather(send, 16, MPI_INT, recv, 1, gap, 0, comm));
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            for (int i = 0; i < 16; i++)
                if (recv[31 * r + 2 * i] != r * 100 + i)
                    fail(kase, "wrong data");
        digest(kase, recv, (size_t)size * 32 * sizeof(int));
    }
    free(recv);
    MPI_Type_free(&gap);
}

static void alltoall_all(MPI_Comm comm, const char *cname)
{
    static const size_t counts[] = {1, 100, 20000};
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
        size_t n = counts[ci];
        for (int in_place = 0; in_place < 2; in_place++) {
            char kase[96];
            snprintf(kase, sizeof(kase), "alltoall.%s.n%zu%s", cname, n, in_place ? ".inplace" : "");
            int *send = xmalloc(n * (size_t)size * sizeof(int)), *recv = xmalloc(n * (size_t)size * sizeof(int));
            for (int j = 0; j < size; j++)
                for (size_t i = 0; i < n; i++)
                    send[(size_t)j * n + i] = rank * 1000000 + j * 10000 + (int)(i % 10000);
            if (in_place) {
                memcpy(recv, send, n * (size_t)size * sizeof(int));
                check_rc(kase, MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, (int)n, MPI_INT, comm));
            } else {
                check_rc(kase, MPI_Alltoall(send, (int)n, MPI_INT, recv, (int)n, MPI_INT, comm));
            }
            for (int j = 0; j < size; j++)
                for (size_t i = 0; i < n; i++)
                    if (recv[(size_t)j * n + i] != j * 1000000 + rank * 10000 + (int)(i % 10000)) {
                        fail(kase, "wrong data");
                        j = size;
                        break;
                    }
            digest(kase, recv, n * (size_t)size * sizeof(int));
            free(send);
            free(recv);
        }
    }
    /* alltoallv: rank r sends (r + 2j) % 4 * 333 ints to j; both layouts
     * reversed with gaps, the pointers in the middle: negative displacements. */
    int *sc = xmalloc((size_t)size * sizeof(int)), *rc_ = xmalloc((size_t)size * sizeof(int));
    int *sd = xmalloc((size_t)size * sizeof(int)), *rd = xmalloc((size_t)size * sizeof(int));
    int stot = 0, rtot = 0;
    for (int j = 0; j < size; j++) {
        sc[j] = ((rank + 2 * j) % 4) * 333;
        rc_[j] = ((j + 2 * rank) % 4) * 333;
        stot += sc[j] + 1;
        rtot += rc_[j] + 1;
    }
    int sat = 0, rat = 0;
    for (int j = size - 1; j >= 0; j--) {
        sd[j] = sat - stot / 2;
        rd[j] = rat - rtot / 2;
        sat += sc[j] + 1;
        rat += rc_[j] + 1;
    }
    int *sbase = xmalloc((size_t)stot * sizeof(int)), *rbase = xmalloc((size_t)rtot * sizeof(int));
    for (int j = 0; j < size; j++)
        for (int i = 0; i < sc[j]; i++)
            sbase[stot / 2 + sd[j] + i] = rank * 100000 + j * 1000 + i;
    for (int i = 0; i < rtot; i++)
        rbase[i] = -4;
    char kase[96];
    snprintf(kase, sizeof(kase), "alltoallv.%s", cname);
    check_rc(kase, MPI_Alltoallv(sbase + stot / 2, sc, sd, MPI_INT, rbase + rtot / 2, rc_, rd, MPI_INT, comm));
    for (int j = 0; j < size; j++)
        for (int i = 0; i < rc_[j]; i++)
            if (rbase[rtot / 2 + rd[j] + i] != j * 100000 + rank * 1000 + i) {
                fail(kase, "wrong data");
                j = size;
                break;
            }
    digest(kase, rbase, (size_t)rtot * sizeof(int));
    free(sc);
    free(rc_);
    free(sd);
    free(rd);
    free(sbase);
    free(rbase);
}

/* --- bcast ------------------------------------------------------------------ */

static void bcast_all(MPI_Comm comm, const char *cname)
{
    static const size_t counts[] = {1, 100, 5000, 300001};
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int root = 0; root < size; root++) {
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
            size_t n = counts[ci];
            char kase[96];
            snprintf(kase, sizeof(kase), "bcast.%s.root%d.n%zu", cname, root, n);
            int *buf = xmalloc(n * sizeof(int));
            for (size_t i = 0; i < n; i++)
                buf[i] = rank == root ? (int)(i * 31 + (size_t)root) : -7;
            check_rc(kase, MPI_Bcast(buf, (int)n, MPI_INT, root, comm));
            for (size_t i = 0; i < n; i++)
                if (buf[i] != (int)(i * 31 + (size_t)root)) {
                    fail(kase, "wrong data");
                    break;
                }
            digest(kase, buf, n * sizeof(int));
            free(buf);
        }
        /* Root a strided vector type, the others plain doubles: same
         * signature, different layouts. */
        char kase[96];
        snprintf(kase, sizeof(kase), "bcast.%s.root%d.mixedtypes", cname, root);
        MPI_Datatype vec;
        MPI_Type_vector(500, 1, 3, MPI_DOUBLE, &vec);
        MPI_Type_commit(&vec);
        double *buf = xmalloc(1500 * sizeof(double));
        for (int i = 0; i < 1500; i++)
            buf[i] = rank == root ? i : -1;
        if (rank == root)
            check_rc(kase, MPI_Bcast(buf, 1, vec, root, comm));
        else
            check_rc(kase, MPI_Bcast(buf, 500, MPI_DOUBLE, root, comm));
        if (rank != root)
            for (int i = 0; i < 500; i++)
                if (buf[i] != 3.0 * i) {
                    fail(kase, "wrong data");
                    break;
                }
        digest(kase, buf, 1500 * sizeof(double));
        free(buf);
        MPI_Type_free(&vec);
    }
}

/* --- allgather(v) --------------------------------------------------------- */

static void allgather_all(MPI_Comm comm, const char *cname)
{
    static const size_t counts[] = {1, 10, 3000, 70000};
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
        size_t n = counts[ci];
        for (int in_place = 0; in_place < 2; in_place++) {
            char kase[96];
            snprintf(kase, sizeof(kase), "allgather.%s.n%zu%s", cname, n, in_place ? ".inplace" : "");
            int *send = xmalloc(n * sizeof(int)), *recv = xmalloc(n * (size_t)size * sizeof(int));
            for (size_t i = 0; i < n; i++)
                send[i] = (int)(i * 7) + rank * 1000;
            for (size_t i = 0; i < n * (size_t)size; i++)
                recv[i] = -1;
            if (in_place) {
                memcpy(recv + (size_t)rank * n, send, n * sizeof(int));
                check_rc(kase, MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, (int)n, MPI_INT, comm));
            } else {
                check_rc(kase, MPI_Allgather(send, (int)n, MPI_INT, recv, (int)n, MPI_INT, comm));
            }
            for (int r = 0; r < size; r++)
                for (size_t i = 0; i < n; i++)
                    if (recv[(size_t)r * n + i] != (int)(i * 7) + r * 1000) {
                        fail(kase, "wrong data");
                        r = size;
                        break;
                    }
            digest(kase, recv, n * (size_t)size * sizeof(int));
            free(send);
            free(recv);
        }
    }
    /* A receive type with gaps (every other int). */
    char kase[96];
    snprintf(kase, sizeof(kase), "allgather.%s.gappy", cname);
    MPI_Datatype gap;
    MPI_Type_vector(16, 1, 2, MPI_INT, &gap);
    MPI_Type_commit(&gap);
    int send[16], *recv = xmalloc((size_t)size * 32 * sizeof(int));
    for (int i = 0; i < 16; i++)
        send[i] = rank * 100 + i;
    for (int i = 0; i < size * 32; i++)
        recv[i] = -1;
    /* extent of gap is 31 ints: block r starts at int 31 * r */
    check_rc(kase, MPI_Allgather(send, 16, MPI_INT, recv, 1, gap, comm));
    for (int r = 0; r < size; r++)
        for (int i = 0; i < 16; i++)
            if (recv[31 * r + 2 * i] != r * 100 + i)
                fail(kase, "wrong data");
    digest(kase, recv, (size_t)size * 32 * sizeof(int));
    free(recv);
    MPI_Type_free(&gap);
}

static void allgatherv_all(MPI_Comm comm, const char *cname)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int scale = 1; scale <= 3000; scale *= 30) {
        for (int in_place = 0; in_place < 2; in_place++) {
            /* Uneven counts, rank 1's zero; blocks in reverse rank order,
             * with a gap, and the buffer pointer in the middle so that the
             * displacements are negative. */
            int *counts = xmalloc((size_t)size * sizeof(int)), *displs = xmalloc((size_t)size * sizeof(int));
            int total = 0;
            for (int r = 0; r < size; r++) {
                counts[r] = r == 1 ? 0 : (r + 1) * scale;
                total += counts[r] + 3;
            }
            int *base = xmalloc((size_t)total * sizeof(int)), off = 0;
            for (int r = size - 1; r >= 0; r--) {
                displs[r] = off - total / 2;
                off += counts[r] + 3;
            }
            int *recv = base + total / 2;
            for (int i = 0; i < total; i++)
                base[i] = -1;
            int *send = xmalloc((size_t)(counts[rank] + 1) * sizeof(int));
            for (int i = 0; i < counts[rank]; i++)
                send[i] = rank * 100000 + i;
            char kase[96];
            snprintf(kase, sizeof(kase), "allgatherv.%s.scale%d%s", cname, scale, in_place ? ".inplace" : "");
            if (in_place) {
                memcpy(recv + displs[rank], send, (size_t)counts[rank] * sizeof(int));
                check_rc(kase, MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, counts, displs, MPI_INT, comm));
            } else {
                check_rc(kase, MPI_Allgatherv(send, counts[rank], MPI_INT, recv, counts, displs, MPI_INT, comm));
            }
            for (int r = 0; r < size; r++)
                for (int i = 0; i < counts[r]; i++)
                    if (recv[displs[r] + i] != r * 100000 + i) {
                        fail(kase, "wrong data");
                        r = size;
                        break;
                    }
            digest(kase, base, (size_t)total * sizeof(int));
            free(counts);
            free(displs);
            free(base);
            free(send);
        }
    }
}

/* --- scatter(v) ------------------------------------------------------------- */

static void scatter_all(MPI_Comm comm, const char *cname)
{
    static const size_t counts[] = {1, 100, 40000};
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int root = 0; root < size; root++) {
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
            size_t n = counts[ci];
            for (int in_place = 0; in_place < 2; in_place++) {
                char kase[96];
                snprintf(kase, sizeof(kase), "scatter.%s.root%d.n%zu%s", cname, root, n, in_place ? ".inplace" : "");
                int *send = xmalloc(n * (size_t)size * sizeof(int)), *recv = xmalloc(n * sizeof(int));
                for (size_t i = 0; i < n * (size_t)size; i++)
                    send[i] = rank == root ? (int)i * 3 + root : -5;
                for (size_t i = 0; i < n; i++)
                    recv[i] = -1;
                int *check = recv;
                if (in_place && rank == root) {
                    check_rc(kase, MPI_Scatter(send, (int)n, MPI_INT, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, root, comm));
                    check = send + (size_t)root * n;
                } else {
                    check_rc(kase, MPI_Scatter(send, (int)n, MPI_INT, recv, (int)n, MPI_INT, root, comm));
                }
                for (size_t i = 0; i < n; i++)
                    if (check[i] != (int)((size_t)rank * n + i) * 3 + root) {
                        fail(kase, "wrong data");
                        break;
                    }
                digest(kase, check, n * sizeof(int));
                free(send);
                free(recv);
            }
        }
    }
}

/* The root's send type with gaps (every other int: its blocks are packed),
 * the others plain ints; and the same in place on the root. */
static void scatter_gappy(MPI_Comm comm, const char *cname)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Datatype gap;
    MPI_Type_vector(16, 1, 2, MPI_INT, &gap);
    MPI_Type_commit(&gap);
    for (int in_place = 0; in_place < 2; in_place++) {
        char kase[96];
        snprintf(kase, sizeof(kase), "scatter.%s.gappy%s", cname, in_place ? ".inplace" : "");
        size_t len = 31 * (size_t)size + 1; /* extent of gap is 31 ints: block r starts at int 31 * r */
        int *send = xmalloc(len * sizeof(int)), recv[16];
        for (size_t i = 0; i < len; i++)
            send[i] = rank == 0 ? (int)i * 7 + 1 : -5;
        for (int i = 0; i < 16; i++)
            recv[i] = -1;
        if (in_place && rank == 0) {
            check_rc(kase, MPI_Scatter(send, 1, gap, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, 0, comm));
            for (size_t i = 0; i < len; i++)
                if (send[i] != (int)i * 7 + 1) {
                    fail(kase, "the root's send buffer changed");
                    break;
                }
        } else {
            check_rc(kase, MPI_Scatter(send, 1, gap, recv, 16, MPI_INT, 0, comm));
            for (int i = 0; i < 16; i++)
                if (recv[i] != (31 * rank + 2 * i) * 7 + 1) {
                    fail(kase, "wrong data");
                    break;
                }
            digest(kase, recv, sizeof(recv));
        }
        free(send);
    }
    MPI_Type_free(&gap);
}

static void scatterv_all(MPI_Comm comm, const char *cname)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int root = 0; root < size; root++) {
        for (int in_place = 0; in_place < 2; in_place++) {
            int *counts = xmalloc((size_t)size * sizeof(int)), *displs = xmalloc((size_t)size * sizeof(int));
            int total = 0;
            for (int r = 0; r < size; r++) {
                counts[r] = (r == size - 1) ? 0 : (r + 2) * 500;
                total += counts[r] + 1;
            }
            int *base = xmalloc((size_t)total * sizeof(int)), off = 0;
            for (int r = size - 1; r >= 0; r--) {
                displs[r] = off - total / 2;
                off += counts[r] + 1;
            }
            int *send = base + total / 2;
            for (int i = 0; i < total; i++)
                base[i] = rank == root ? i : -5;
            int *recv = xmalloc((size_t)(counts[rank] + 1) * sizeof(int));
            char kase[96];
            snprintf(kase, sizeof(kase), "scatterv.%s.root%d%s", cname, root, in_place ? ".inplace" : "");
            int *check = recv;
            if (in_place && rank == root) {
                check_rc(kase, MPI_Scatterv(send, counts, displs, MPI_INT, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, root,
                                            comm));
                check = send + displs[root];
            } else {
                check_rc(kase, MPI_Scatterv(send, rank == root ? counts : NULL, rank == root ? displs : NULL, MPI_INT,
                                            recv, counts[rank], MPI_INT, root, comm));
            }
            for (int i = 0; i < counts[rank]; i++)
                if (check[i] != displs[rank] + total / 2 + i) {
                    fail(kase, "wrong data");
                    break;
                }
            digest(kase, check, (size_t)counts[rank] * sizeof(int));
            free(counts);
            free(displs);
            free(base);
            free(recv);
        }
    }
}

/* --- non-blocking, interleaved with point-to-point ------------------------- */

static void nonblocking_mix(MPI_Comm comm, MPI_Comm other, const char *cname)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    enum { N = 5000 };
    int *a = xmalloc(N * sizeof(int)), *asum = xmalloc(N * sizeof(int));
    double *b = xmalloc(N * sizeof(double));
    int *g = xmalloc((size_t)size * 64 * sizeof(int)), mine[64];
    int *ring_out = xmalloc(N * sizeof(int)), *ring_in = xmalloc(N * sizeof(int));
    int csum[10];
    for (int i = 0; i < N; i++) {
        a[i] = i + rank;
        b[i] = rank == 0 ? i * 0.5 : -1;
        ring_out[i] = rank * N + i;
    }
    for (int i = 0; i < 64; i++)
        mine[i] = rank * 64 + i;
    for (int i = 0; i < 10; i++)
        csum[i] = i;
    int *rsum = xmalloc(N * sizeof(int)), *scn = xmalloc(N * sizeof(int)), *a2a = xmalloc(64 * sizeof(int));
    MPI_Request req[12];
    int n = 0;
    char kase[96];
    snprintf(kase, sizeof(kase), "nonblocking.%s", cname);
    check_rc(kase, MPI_Iallreduce(a, asum, N, MPI_INT, MPI_SUM, comm, &req[n++]));
    check_rc(kase, MPI_Ibcast(b, N, MPI_DOUBLE, 0, comm, &req[n++]));
    check_rc(kase, MPI_Iallgather(mine, 64, MPI_INT, g, 64, MPI_INT, comm, &req[n++]));
    /* Point-to-point in a ring while the collectives are outstanding. */
    check_rc(kase, MPI_Irecv(ring_in, N, MPI_INT, (rank + size - 1) % size, 7, comm, &req[n++]));
    check_rc(kase, MPI_Isend(ring_out, N, MPI_INT, (rank + 1) % size, 7, comm, &req[n++]));
    check_rc(kase, MPI_Iallreduce(MPI_IN_PLACE, csum, 10, MPI_INT, MPI_MAX, other, &req[n++]));
    check_rc(kase, MPI_Ibarrier(comm, &req[n++]));
    check_rc(kase, MPI_Ireduce(a, rsum, N, MPI_INT, MPI_SUM, size - 1, comm, &req[n++]));
    check_rc(kase, MPI_Iscan(a, scn, N, MPI_INT, MPI_SUM, comm, &req[n++]));
    check_rc(kase, MPI_Ialltoall(mine, 64 / size > 0 ? 64 / size : 1, MPI_INT, a2a, 64 / size > 0 ? 64 / size : 1,
                                 MPI_INT, comm, &req[n++]));
    /* Complete in reverse order, one at a time (each wait drives all). */
    for (int k = n - 1; k >= 0; k--)
        check_rc(kase, MPI_Wait(&req[k], MPI_STATUS_IGNORE));
    for (int i = 0; i < N; i++) {
        if (asum[i] != size * i + size * (size - 1) / 2 || b[i] != i * 0.5 ||
            ring_in[i] != ((rank + size - 1) % size) * N + i) {
            fail(kase, "wrong data");
            break;
        }
    }
    for (int i = 0; i < size * 64; i++)
        if (g[i] != i)
            fail(kase, "wrong allgather");
    for (int i = 0; i < N; i++)
        if ((rank == size - 1 && rsum[i] != size * i + size * (size - 1) / 2) ||
            scn[i] != (rank + 1) * i + rank * (rank + 1) / 2) {
            fail(kase, "wrong ireduce or iscan");
            break;
        }
    int per = 64 / size > 0 ? 64 / size : 1;
    for (int j = 0; j < size && per * size <= 64; j++)
        if (a2a[j * per] != j * 64 + rank * per)
            fail(kase, "wrong ialltoall");
    digest(kase, asum, N * sizeof(int));
    free(rsum);
    free(scn);
    free(a2a);
    /* A blocking collective on one communicator while a non-blocking one is
     * pending on another, finished by MPI_Test polling. */
    int x = rank, y = 0, flag = 0;
    MPI_Request r1;
    check_rc(kase, MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, other, &r1));
    int z = 0;
    check_rc(kase, MPI_Allreduce(&x, &z, 1, MPI_INT, MPI_MAX, comm));
    while (!flag)
        check_rc(kase, MPI_Test(&r1, &flag, MPI_STATUS_IGNORE));
    if (z != size - 1 || y != size * (size - 1) / 2)
        fail(kase, "wrong max or sum");
    free(a);
    free(asum);
    free(b);
    free(g);
    free(ring_out);
    free(ring_in);
}

/* A user op and derived datatypes freed between the post and the wait, as
 * MPI allows: Open MPI's MPI layer keeps them alive by writing into the
 * request the component returned (ompi_coll_base_retain_op/_datatypes), so
 * that request must have the room and the calls must still complete and be
 * right. Sizes inside every default window. */
static void nonblocking_freed_objects(MPI_Comm comm, const char *cname)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    enum { N = 2048 };
    int *a = xmalloc(N * sizeof(int)), *ar = xmalloc(N * sizeof(int)), *rd = xmalloc(N * sizeof(int));
    int *sc = xmalloc(N * sizeof(int)), *bc = xmalloc(N * sizeof(int)), *rs = xmalloc(N * sizeof(int));
    int *g = xmalloc((size_t)size * N * sizeof(int)), *sa = xmalloc((size_t)size * N * sizeof(int));
    int *ra = xmalloc((size_t)size * N * sizeof(int)), *rsb = xmalloc((size_t)size * N * sizeof(int));
    for (int i = 0; i < N; i++) {
        a[i] = rank + i;
        bc[i] = rank == 0 ? 3 * i : -1;
    }
    for (int i = 0; i < size * N; i++) {
        sa[i] = rank * size * N + i;
        rsb[i] = i + rank;
    }
    MPI_Op sum;
    MPI_Datatype dup, block;
    MPI_Request req[8];
    int n = 0;
    char kase[96];
    snprintf(kase, sizeof(kase), "nonblocking.freed.%s", cname);
    MPI_Op_create(user_sum_int, 1, &sum);
    MPI_Type_dup(MPI_INT, &dup);
    MPI_Type_contiguous(N, MPI_INT, &block);
    MPI_Type_commit(&block);
    check_rc(kase, MPI_Iallreduce(a, ar, N, MPI_INT, sum, comm, &req[n++]));
    check_rc(kase, MPI_Ireduce(a, rd, N, MPI_INT, sum, 0, comm, &req[n++]));
    check_rc(kase, MPI_Iscan(a, sc, N, MPI_INT, sum, comm, &req[n++]));
    check_rc(kase, MPI_Ireduce_scatter_block(rsb, rs, N, dup, sum, comm, &req[n++]));
    check_rc(kase, MPI_Ibcast(bc, N, dup, 0, comm, &req[n++]));
    check_rc(kase, MPI_Iallgather(a, 1, block, g, 1, block, comm, &req[n++]));
    check_rc(kase, MPI_Ialltoall(sa, N, dup, ra, 1, block, comm, &req[n++]));
    MPI_Op_free(&sum);
    MPI_Type_free(&dup);
    MPI_Type_free(&block);
    for (int k = 0; k < n; k++)
        check_rc(kase, MPI_Wait(&req[k], MPI_STATUS_IGNORE));
    int bad = 0;
    for (int i = 0; i < N && !bad; i++) {
        int total = size * i + size * (size - 1) / 2, prefix = (rank + 1) * i + rank * (rank + 1) / 2;
        bad = ar[i] != total || (rank == 0 && rd[i] != total) || sc[i] != prefix || bc[i] != 3 * i ||
              rs[i] != size * (rank * N + i) + size * (size - 1) / 2;
    }
    for (int q = 0; q < size && !bad; q++)
        for (int i = 0; i < N && !bad; i++)
            bad = g[q * N + i] != q + i || ra[q * N + i] != q * size * N + rank * N + i;
    if (bad)
        fail(kase, "wrong data");
    free(a), free(ar), free(rd), free(sc), free(bc), free(rs), free(g), free(sa), free(ra), free(rsb);
}

/* Communicators duplicated without blocking while the program goes on with
 * blocking calls on the parent (MPICH's comm_idup_comm does this): Open MPI
 * agrees on each new communicator's id with non-blocking collectives on the
 * parent that its progress engine posts whenever a rank's previous round is
 * done, so they fall among the program's own calls at different places on
 * different ranks. zap hands those below (coll_zap_route_cid); the
 * program's calls stay in order. */
static void idup_pending(MPI_Comm comm, const char *cname)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    enum { K = 5 };
    MPI_Comm dups[K], dup, split;
    MPI_Request req[K];
    char kase[96];
    snprintf(kase, sizeof(kase), "idup.pending.%s", cname);
    for (int k = 0; k < K; k++)
        check_rc(kase, MPI_Comm_idup(comm, &dups[k], &req[k]));
    check_rc(kase, MPI_Comm_dup(comm, &dup));
    check_rc(kase, MPI_Comm_split(comm, rank % 2, size - rank, &split));
    int mine[2] = {rank, 7 * rank}, *all = xmalloc((size_t)size * 2 * sizeof(int));
    check_rc(kase, MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, comm));
    check_rc(kase, MPI_Waitall(K, req, MPI_STATUSES_IGNORE));
    for (int q = 0; q < size; q++)
        if (all[2 * q] != q || all[2 * q + 1] != 7 * q)
            fail(kase, "wrong allgather");
    for (int k = 0; k < K; k++) {
        int sum = 0;
        check_rc(kase, MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, dups[k]));
        if (sum != size * (size - 1) / 2)
            fail(kase, "wrong sum on a duplicate");
        MPI_Comm_free(&dups[k]);
    }
    MPI_Comm_free(&dup);
    MPI_Comm_free(&split);
    free(all);
}

/* A blocking collective whose last rank comes late, stuck first in a
 * rendezvous send to rank 0: that send, and so the collective, can finish
 * only if rank 0's wait inside the collective drives Open MPI's
 * point-to-point (the zap communicator's wait hook). A hang here fails the
 * run at its time limit. */
static void blocking_progress(MPI_Comm comm, const char *cname)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (size < 2)
        return;
    enum { M = 1 << 18 }; /* 1 MiB of ints: past every eager limit */
    char kase[96];
    snprintf(kase, sizeof(kase), "blocking.progress.%s", cname);
    int *buf = xmalloc(M * sizeof(int));
    int x = rank + 1, sum = 0;
    if (rank == 0) {
        MPI_Request rq;
        check_rc(kase, MPI_Irecv(buf, M, MPI_INT, size - 1, 11, comm, &rq));
        check_rc(kase, MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, comm));
        check_rc(kase, MPI_Wait(&rq, MPI_STATUS_IGNORE));
        for (int i = 0; i < M; i++)
            if (buf[i] != i) {
                fail(kase, "wrong point-to-point data");
                break;
            }
    } else {
        if (rank == size - 1) {
            for (int i = 0; i < M; i++)
                buf[i] = i;
            check_rc(kase, MPI_Send(buf, M, MPI_INT, 0, 11, comm));
        }
        check_rc(kase, MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, comm));
    }
    if (sum != size * (size + 1) / 2)
        fail(kase, "wrong sum");
    /* A blocking call on a communicator with a non-blocking one of its own
     * still pending: the blocking wait completes both, in call order. */
    int y = 0, z = 0;
    MPI_Request r1;
    check_rc(kase, MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, comm, &r1));
    check_rc(kase, MPI_Allreduce(&x, &z, 1, MPI_INT, MPI_MAX, comm));
    check_rc(kase, MPI_Wait(&r1, MPI_STATUS_IGNORE));
    if (y != size * (size + 1) / 2 || z != size)
        fail(kase, "wrong sum or max with a non-blocking call pending");
    free(buf);
}

/* --- communicators ---------------------------------------------------------- */

static void suite(MPI_Comm comm, const char *cname, int full, int check_order)
{
    if (full) {
        allreduce_all(comm, cname);
        allreduce_user_ops(comm, cname);
        allreduce_pairs(comm, cname);
        allreduce_order(comm, check_order);
    } else {
        op_t *sum = &g_ops[0];
        allreduce_case(comm, cname, &g_types[4], sum, 1000, 0);   /* int */
        allreduce_case(comm, cname, &g_types[20], sum, 70001, 1); /* double */
        allreduce_user_ops(comm, cname);
    }
    reductions_all(comm, cname, full);
    if (full)
        pairs_all(comm, cname);
    bcast_all(comm, cname);
    allgather_all(comm, cname);
    allgatherv_all(comm, cname);
    scatter_all(comm, cname);
    scatter_gappy(comm, cname);
    scatterv_all(comm, cname);
    gather_all(comm, cname, full);
    alltoall_all(comm, cname);
    char kase[64];
    snprintf(kase, sizeof(kase), "barrier.%s", cname);
    check_rc(kase, MPI_Barrier(comm));
    MPI_Comm dup;
    MPI_Comm_dup(comm, &dup);
    nonblocking_mix(comm, dup, cname);
    MPI_Comm_free(&dup);
    nonblocking_freed_objects(comm, cname);
    idup_pending(comm, cname);
    blocking_progress(comm, cname);
}

static int run_all(int check_order)
{
    suite(MPI_COMM_WORLD, "world", 1, check_order);

    MPI_Comm dup, split, rsplit, group_comm, full_group, shared;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    suite(dup, "dup", 0, check_order);

    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &split); /* two halves */
    suite(split, g_rank % 2 ? "split_odd" : "split_even", 0, 0);

    /* An intercommunicator between the halves (the component declines it)
     * and MPI_COMM_SELF (likewise): Open MPI's components serve them. */
    MPI_Comm inter;
    MPI_Intercomm_create(split, 0, MPI_COMM_WORLD, g_rank % 2 ? 0 : 1, 99, &inter);
    int v = g_rank, remote_sum = 0, expect = 0, self_out = 0;
    check_rc("intercomm", MPI_Allreduce(&v, &remote_sum, 1, MPI_INT, MPI_SUM, inter));
    for (int r = 0; r < g_size; r++)
        if (r % 2 != g_rank % 2)
            expect += r;
    if (remote_sum != expect)
        fail("intercomm", "wrong sum over the remote group");
    digest("intercomm", &remote_sum, sizeof(remote_sum));
    MPI_Comm_free(&inter);
    check_rc("self", MPI_Allreduce(&v, &self_out, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF));
    if (self_out != g_rank)
        fail("self", "wrong sum");

    MPI_Comm_split(MPI_COMM_WORLD, 0, -g_rank, &rsplit); /* every rank, reversed */
    suite(rsplit, "split_reversed", 0, 0);

    MPI_Group world_group, first;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    int n_first = g_size > 2 ? g_size - 1 : g_size;
    int *ranks = xmalloc((size_t)g_size * sizeof(int));
    for (int i = 0; i < g_size; i++)
        ranks[i] = i;
    MPI_Group_incl(world_group, n_first, ranks, &first);
    group_comm = MPI_COMM_NULL;
    if (g_rank < n_first)
        MPI_Comm_create_group(MPI_COMM_WORLD, first, 5, &group_comm);
    if (group_comm != MPI_COMM_NULL)
        suite(group_comm, "create_group", 0, 0);
    MPI_Comm_create_group(MPI_COMM_WORLD, world_group, 6, &full_group);
    suite(full_group, "create_group_all", 0, check_order);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
    suite(shared, "split_type_shared", 0, check_order);

    MPI_Comm_free(&dup);
    MPI_Comm_free(&split);
    MPI_Comm_free(&rsplit);
    if (group_comm != MPI_COMM_NULL)
        MPI_Comm_free(&group_comm);
    MPI_Comm_free(&full_group);
    MPI_Comm_free(&shared);
    MPI_Group_free(&first);
    MPI_Group_free(&world_group);
    free(ranks);

    /* Many communicators made and freed, as libraries do. */
    for (int i = 0; i < 50; i++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        int v = 1, s = 0;
        check_rc("churn", MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, c));
        if (s != g_size)
            fail("churn", "wrong sum");
        MPI_Comm_free(&c);
    }
    return 0;
}

/* Only calls zap cannot take, five allreduces: a user op on a derived
 * datatype, long double, long double complex, and MINLOC on Fortran's
 * MPI_2DOUBLE_PRECISION and MPI_2REAL (their index is a float). The component
 * must hand all five to the component below (and their results must be
 * right). */
static void user_sum_pair(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < 2 * *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

static int run_fallback(void)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    int size = g_size, rank = g_rank;
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Op sum;
    MPI_Op_create(user_sum_pair, 1, &sum);
    int in[8], out[8];
    for (int i = 0; i < 8; i++)
        in[i] = rank + i;
    check_rc("fallback.userop_derived", MPI_Allreduce(in, out, 4, pair, sum, comm));
    for (int i = 0; i < 8; i++)
        if (out[i] != size * i + size * (size - 1) / 2)
            fail("fallback.userop_derived", "wrong sum");
    digest("fallback.userop_derived", out, sizeof(out));
    long double ld = rank + 0.5L, lds = 0;
    check_rc("fallback.long_double", MPI_Allreduce(&ld, &lds, 1, MPI_LONG_DOUBLE, MPI_SUM, comm));
    if (lds != size * (size - 1) / 2.0L + size * 0.5L)
        fail("fallback.long_double", "wrong sum");
    long double _Complex lc = rank, lcs = 0;
    check_rc("fallback.long_double_complex", MPI_Allreduce(&lc, &lcs, 1, MPI_C_LONG_DOUBLE_COMPLEX, MPI_SUM, comm));
    double d2[2] = {(double)(rank % 2 + 1), (double)rank}, d2s[2];
    check_rc("fallback.2double_minloc", MPI_Allreduce(d2, d2s, 1, MPI_2DOUBLE_PRECISION, MPI_MINLOC, comm));
    if (d2s[0] != 1 || d2s[1] != 0)
        fail("fallback.2double_minloc", "wrong minloc");
    float r2[2] = {(float)(rank % 2), (float)rank}, r2s[2];
    check_rc("fallback.2real_minloc", MPI_Allreduce(r2, r2s, 1, MPI_2REAL, MPI_MINLOC, comm));
    if (r2s[0] != 0 || r2s[1] != 0)
        fail("fallback.2real_minloc", "wrong minloc");
    MPI_Type_free(&pair);
    MPI_Op_free(&sum);
    return 0;
}

/* --- errors ------------------------------------------------------------------ */

/* Arguments that differ across ranks (erroneous MPI): with the component,
 * every rank must get an MPI error class through the communicator's handler
 * (MPI_ERRORS_RETURN here), the blocking and the non-blocking form, and the
 * communicator must stay usable. */
static int run_errors(void)
{
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int in[64] = {0}, out[64];
    int n = g_rank == 0 ? 8 : 16; /* counts differ */
    int rc = MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, comm);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    printf("[rank %d] mismatched allreduce: %s (class %d)\n", g_rank, rc == MPI_SUCCESS ? "success" : "error", cls);
    if (rc == MPI_SUCCESS || cls != MPI_ERR_ARG)
        fail("errors.blocking", "expected MPI_ERR_ARG");
    MPI_Request req;
    rc = MPI_Iallreduce(in, out, n, MPI_INT, MPI_SUM, comm, &req);
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Error_class(rc, &cls);
    printf("[rank %d] mismatched iallreduce: %s (class %d)\n", g_rank, rc == MPI_SUCCESS ? "success" : "error", cls);
    if (rc == MPI_SUCCESS || cls != MPI_ERR_ARG)
        fail("errors.nonblocking", "expected MPI_ERR_ARG from MPI_Wait");
    int one = 1, sum = 0;
    rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
    if (rc != MPI_SUCCESS || sum != g_size)
        fail("errors.after", "the communicator is not usable after a mismatch");
    MPI_Comm_free(&comm);
    return 0;
}

/* The last rank leaves without MPI_Finalize while the others enter an
 * allreduce: they must return an error (not hang) within the deadline. */
static int run_peer_exit(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int v = 1, s = 0;
    MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* everyone is up */
    if (g_rank == g_size - 1) {
        fflush(stdout);
        _exit(0);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("[rank %d] allreduce with a departed rank: %s after %.2f s\n", g_rank,
           rc == MPI_SUCCESS ? "success" : "error", took);
    fflush(stdout);
    _exit(rc != MPI_SUCCESS ? 0 : 1); /* its peer is gone: no MPI_Finalize */
}

/* A broadcast zap takes, then the root waits in Open MPI's point-to-point
 * for every receiver's verdict. Run over TCP with segments that hold a
 * whole pipeline chunk and small socket buffers, the root (and each rank
 * forwarding down the chain) returns with part of its last chunk still in
 * its process; only progress calls push it out, so the root's MPI_Recv must
 * drive zap's transport though no zap request is pending, or the receivers
 * never finish. */
static void run_linger(void)
{
    const int n = 4 << 20;
    unsigned char *buf = malloc((size_t)n);
    if (buf == NULL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    int one = 1, bad = 0;
    MPI_Bcast(&one, 1, MPI_INT, 0, MPI_COMM_WORLD); /* connected down the chain */
    /* Whether the last chunk is cut short depends on timing: three rounds. */
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < n; i++)
            buf[i] = g_rank == 0 ? (unsigned char)(i * 131 + 7 + round) : 0;
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Bcast(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
        int mine = 0;
        for (int i = 0; i < n; i++)
            mine += buf[i] != (unsigned char)(i * 131 + 7 + round);
        g_cases++;
        if (g_rank != 0) {
            MPI_Send(&mine, 1, MPI_INT, 0, 77, MPI_COMM_WORLD);
        } else {
            for (int r = 1; r < g_size; r++) {
                int theirs = 0;
                MPI_Recv(&theirs, 1, MPI_INT, r, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                mine += theirs;
            }
        }
        bad += mine;
    }
    free(buf);
    if (g_rank == 0)
        printf("[rank 0] broadcast then point-to-point: %d wrong bytes over %d ranks\n", bad, g_size);
    g_failures += bad != 0;
}

int main(int argc, char **argv)
{
    /* CHECK_ZAP_THREADS=multiple: MPI_THREAD_MULTIPLE, where the component
     * posts blocking calls and waits for them itself. */
    const char *threads = getenv("CHECK_ZAP_THREADS");
    if (threads != NULL && !strcmp(threads, "multiple")) {
        int provided = MPI_THREAD_SINGLE;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided < MPI_THREAD_MULTIPLE) {
            printf("SKIP this Open MPI gives thread level %d, not MPI_THREAD_MULTIPLE\n", provided);
            MPI_Finalize();
            return 77;
        }
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (argc < 3) {
        if (g_rank == 0)
            fprintf(stderr, "usage: coll_zap_check all|fallback|errors|peer-exit|linger DIGEST_FILE\n");
        MPI_Finalize();
        return 2;
    }
    /* Fortran types' sizes, asked from MPI. */
    for (size_t i = 0; i < NTYPES; i++)
        if (g_types[i].size == 0) {
            int s = 0;
            MPI_Type_size(g_types[i].dt, &s);
            g_types[i].size = (size_t)s;
        }
    char path[512];
    snprintf(path, sizeof(path), "%s.%d", argv[2], g_rank);
    g_digest = fopen(path, "w");
    if (g_digest == NULL) {
        fprintf(stderr, "[rank %d] cannot write %s\n", g_rank, path);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *order = getenv("CHECK_ZAP_ORDER");
    if (!strcmp(argv[1], "all"))
        run_all(order != NULL && !strcmp(order, "1"));
    else if (!strcmp(argv[1], "errors"))
        run_errors();
    else if (!strcmp(argv[1], "peer-exit"))
        run_peer_exit();
    else if (!strcmp(argv[1], "fallback"))
        run_fallback();
    else if (!strcmp(argv[1], "linger"))
        run_linger();
    fclose(g_digest);
    /* MPI_Reduce: not a collective zap takes, so the verdict does not add
     * to the statistics the tests read. */
    int mine = g_failures, all = 0;
    MPI_Reduce(&mine, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (g_rank == 0)
        printf("coll_zap_check %s: %d ranks, %d cases on rank 0, %d failures\n", argv[1], g_size, g_cases, all);
    MPI_Finalize();
    return g_failures == 0 ? 0 : 1;
}
