/* MPI datatypes and ops in zap's terms, packing, and zap's statuses as MPI
 * error classes.
 *
 * A reduction goes to zap when its op and datatype have zap counterparts:
 *   - MPI's predefined arithmetic, bitwise and logical ops on a type
 *     signature of one basic type zap has (Open MPI records the basic types a
 *     datatype uses in bdt_used, for predefined and derived types alike):
 *     the integers, float, double and the C complex types; logical ops on C
 *     integers and C's bool, not on Fortran's LOGICAL (whose .TRUE. is the
 *     compiler's);
 *   - MPI_MINLOC and MPI_MAXLOC on the C pair types (MPI_FLOAT_INT,
 *     MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT,
 *     MPI_LONG_DOUBLE_INT) and MPI_2INTEGER where it is two C ints: zap's pair
 *     types have the same layout, so their buffers pass through as they are;
 *   - a C user op (MPI_Op_create) on a predefined datatype of those: zap
 *     calls it through coll_zap_bind_user_op's wrapper, with its
 *     commutativity, one element per MPI item.
 * All of these are parts of the type signature and the op, which MPI
 * requires every rank to match, so every rank decides alike; the memory
 * layout (contiguous or not) only decides whether this rank packs, never
 * where the call goes. Fortran, C++ and Java user ops, user ops on derived
 * datatypes, long double, Fortran's other pair types and mixed types stay
 * with the previous module. Data-movement collectives do not look at the
 * type at all: they move the signature's bytes (packed where the layout has
 * gaps). */
#include "coll_zap.h"
#include "opal/datatype/opal_convertor.h"
#include "ompi/op/op.h"

/* Open MPI's basic type ids (opal/datatype/opal_datatype_internal.h, which
 * is installed but not meant for components; the values are part of what the
 * gate checks through MPI_INT's bdt_used). */
enum {
    OPAL_ID_INT1 = 4,
    OPAL_ID_INT2 = 5,
    OPAL_ID_INT4 = 6,
    OPAL_ID_INT8 = 7,
    OPAL_ID_UINT1 = 9,
    OPAL_ID_UINT2 = 10,
    OPAL_ID_UINT4 = 11,
    OPAL_ID_UINT8 = 12,
    OPAL_ID_FLOAT4 = 15,
    OPAL_ID_FLOAT8 = 16,
    OPAL_ID_FLOAT_COMPLEX = 19,
    OPAL_ID_DOUBLE_COMPLEX = 20,
    OPAL_ID_BOOL = 22,
    OPAL_ID_LONG = 24,
    OPAL_ID_UNSIGNED_LONG = 25
};

static bool basic_type(uint32_t bdt_used, zap_dtype_t *dt_p, size_t *size_p)
{
    /* Exactly one basic type. */
    if (bdt_used == 0 || (bdt_used & (bdt_used - 1)) != 0)
        return false;
    int id = __builtin_ctz(bdt_used);
    switch (id) {
    case OPAL_ID_INT1: *dt_p = ZAP_DT_INT8; *size_p = 1; return true;
    case OPAL_ID_INT2: *dt_p = ZAP_DT_INT16; *size_p = 2; return true;
    case OPAL_ID_INT4: *dt_p = ZAP_DT_INT32; *size_p = 4; return true;
    case OPAL_ID_INT8: *dt_p = ZAP_DT_INT64; *size_p = 8; return true;
    case OPAL_ID_UINT1: *dt_p = ZAP_DT_UINT8; *size_p = 1; return true;
    case OPAL_ID_UINT2: *dt_p = ZAP_DT_UINT16; *size_p = 2; return true;
    case OPAL_ID_UINT4: *dt_p = ZAP_DT_UINT32; *size_p = 4; return true;
    case OPAL_ID_UINT8: *dt_p = ZAP_DT_UINT64; *size_p = 8; return true;
    case OPAL_ID_FLOAT4: *dt_p = ZAP_DT_FLOAT32; *size_p = 4; return true;
    case OPAL_ID_FLOAT8: *dt_p = ZAP_DT_FLOAT64; *size_p = 8; return true;
    case OPAL_ID_FLOAT_COMPLEX: *dt_p = ZAP_DT_COMPLEX64; *size_p = 8; return true;
    case OPAL_ID_DOUBLE_COMPLEX: *dt_p = ZAP_DT_COMPLEX128; *size_p = 16; return true;
    case OPAL_ID_BOOL: /* C's bool: one byte of 0 or 1, for the logical ops */
        if (sizeof(_Bool) != 1)
            return false;
        *dt_p = ZAP_DT_UINT8;
        *size_p = 1;
        return true;
    case OPAL_ID_LONG:
        *dt_p = sizeof(long) == 8 ? ZAP_DT_INT64 : ZAP_DT_INT32;
        *size_p = sizeof(long);
        return true;
    case OPAL_ID_UNSIGNED_LONG:
        *dt_p = sizeof(long) == 8 ? ZAP_DT_UINT64 : ZAP_DT_UINT32;
        *size_p = sizeof(long);
        return true;
    default:
        return false; /* wchar, float16/12/16, long double complex, 128-bit integers */
    }
}

/* MPI's predefined pair types that are zap's pair types (same C struct). */
static bool pair_type(ompi_datatype_t *dtype, zap_dtype_t *dt_p)
{
    if (dtype == MPI_FLOAT_INT)
        *dt_p = ZAP_DT_FLOAT_INT;
    else if (dtype == MPI_DOUBLE_INT)
        *dt_p = ZAP_DT_DOUBLE_INT;
    else if (dtype == MPI_LONG_INT)
        *dt_p = ZAP_DT_LONG_INT;
    else if (dtype == MPI_2INT || (dtype == MPI_2INTEGER && dtype->super.size == sizeof(zap_2int_t)))
        *dt_p = ZAP_DT_2INT;
    else if (dtype == MPI_SHORT_INT)
        *dt_p = ZAP_DT_SHORT_INT;
    else if (dtype == MPI_LONG_DOUBLE_INT)
        *dt_p = ZAP_DT_LONG_DOUBLE_INT;
    else
        return false;
    /* Open MPI's type must lie as the C struct does (it is built from one). */
    ptrdiff_t extent = dtype->super.ub - dtype->super.lb;
    return dtype->super.true_lb == 0 && extent == (ptrdiff_t)zap_dtype_size(*dt_p);
}

bool coll_zap_pair_layout(ompi_datatype_t *dtype)
{
    zap_dtype_t dt;
    return pair_type(dtype, &dt);
}

static bool predefined_op(struct ompi_op_t *op, zap_op_t *zop_p)
{
    if (op == MPI_SUM)
        *zop_p = ZAP_OP_SUM;
    else if (op == MPI_PROD)
        *zop_p = ZAP_OP_PROD;
    else if (op == MPI_MIN)
        *zop_p = ZAP_OP_MIN;
    else if (op == MPI_MAX)
        *zop_p = ZAP_OP_MAX;
    else if (op == MPI_BAND)
        *zop_p = ZAP_OP_BAND;
    else if (op == MPI_BOR)
        *zop_p = ZAP_OP_BOR;
    else if (op == MPI_BXOR)
        *zop_p = ZAP_OP_BXOR;
    else if (op == MPI_LAND)
        *zop_p = ZAP_OP_LAND;
    else if (op == MPI_LOR)
        *zop_p = ZAP_OP_LOR;
    else if (op == MPI_LXOR)
        *zop_p = ZAP_OP_LXOR;
    else if (op == MPI_MINLOC)
        *zop_p = ZAP_OP_MINLOC;
    else if (op == MPI_MAXLOC)
        *zop_p = ZAP_OP_MAXLOC;
    else
        return false;
    return true;
}

static bool fortran_data(ompi_datatype_t *dtype)
{
    return (dtype->super.flags & OMPI_DATATYPE_FLAG_DATA_LANGUAGE) == OMPI_DATATYPE_FLAG_DATA_FORTRAN;
}

bool coll_zap_reduction_type(ompi_datatype_t *dtype, int count, struct ompi_op_t *op, zap_dtype_t *dt_p,
                             zap_op_t *zop_p, size_t *nelems_p)
{
    zap_dtype_t dt;
    size_t esize = 0;
    bool pair = pair_type(dtype, &dt);
    if (pair)
        esize = zap_dtype_size(dt);
    else if (!basic_type(dtype->super.bdt_used, &dt, &esize))
        return false;
    size_t items = (size_t)(count > 0 ? count : 0);
    if (!ompi_op_is_intrinsic(op)) {
        /* A user op: a C function, on a predefined type whose one item is one
         * zap element (what the function's count counts). */
        if ((op->o_flags & (OMPI_OP_FLAGS_FORTRAN_FUNC | OMPI_OP_FLAGS_CXX_FUNC | OMPI_OP_FLAGS_JAVA_FUNC)) != 0 ||
            op->o_func.c_fn == NULL)
            return false;
        if (!pair && (!ompi_datatype_is_predefined(dtype) || dtype->super.size != esize))
            return false;
        *dt_p = dt;
        *zop_p = COLL_ZAP_USER_OP;
        *nelems_p = items;
        return true;
    }
    zap_op_t zop;
    if (!predefined_op(op, &zop) || !zap_op_supported(dt, zop))
        return false;
    bool logical = zop == ZAP_OP_LAND || zop == ZAP_OP_LOR || zop == ZAP_OP_LXOR;
    if (logical && fortran_data(dtype))
        return false;
    if (!logical && dtype->super.bdt_used == ((uint32_t)1 << OPAL_ID_BOOL))
        return false; /* bool has only the logical ops */
    if (!pair && dtype->super.size % esize != 0)
        return false;
    *dt_p = dt;
    *zop_p = zop;
    *nelems_p = pair ? items : items * (dtype->super.size / esize);
    return true;
}

/* The user op's wrapper: MPI's C user functions take (in, inout, len,
 * datatype) with inout = in op inout, zap's convention too. */
static void call_user_op(const void *in, void *inout, size_t count, void *ctx)
{
    coll_zap_req_t *r = ctx;
    int len = (int)count; /* at most the call's count, an int */
    ompi_datatype_t *dt = r->uop_dtype;
    r->uop_fn((void *)in, inout, &len, &dt);
}

int coll_zap_bind_user_op(coll_zap_req_t *r, struct ompi_op_t *op, ompi_datatype_t *dtype, zap_op_t *zop_p)
{
    r->uop_fn = op->o_func.c_fn;
    r->uop_dtype = dtype;
    zap_status_t st = zap_op_create(call_user_op, ompi_op_is_commute(op) ? 1 : 0, r, &r->uop);
    if (st != ZAP_OK)
        return MPI_ERR_NO_MEM;
    r->has_uop = true;
    *zop_p = r->uop;
    return MPI_SUCCESS;
}

int coll_zap_pack(void *dst, const void *buf, int count, ompi_datatype_t *dtype)
{
    size_t bytes = coll_zap_bytes(dtype, count);
    if (bytes == 0)
        return OMPI_SUCCESS;
    opal_convertor_t conv;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    int rc = opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dtype->super, (size_t)count, buf,
                                                      0, &conv);
    if (rc == OPAL_SUCCESS) {
        struct iovec iov = {.iov_base = dst, .iov_len = bytes};
        uint32_t niov = 1;
        size_t max = bytes;
        rc = opal_convertor_pack(&conv, &iov, &niov, &max) < 0 ? OMPI_ERROR : OMPI_SUCCESS;
    }
    OBJ_DESTRUCT(&conv);
    return rc == OPAL_SUCCESS ? OMPI_SUCCESS : OMPI_ERROR;
}

int coll_zap_unpack(void *buf, int count, ompi_datatype_t *dtype, const void *src)
{
    size_t bytes = coll_zap_bytes(dtype, count);
    if (bytes == 0)
        return OMPI_SUCCESS;
    opal_convertor_t conv;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    int rc = opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &dtype->super, (size_t)count, buf,
                                                      0, &conv);
    if (rc == OPAL_SUCCESS) {
        struct iovec iov = {.iov_base = (void *)src, .iov_len = bytes};
        uint32_t niov = 1;
        size_t max = bytes;
        rc = opal_convertor_unpack(&conv, &iov, &niov, &max) < 0 ? OMPI_ERROR : OMPI_SUCCESS;
    }
    OBJ_DESTRUCT(&conv);
    return rc == OPAL_SUCCESS ? OMPI_SUCCESS : OMPI_ERROR;
}

int coll_zap_error_class(zap_status_t st)
{
    switch (st) {
    case ZAP_OK:
        return MPI_SUCCESS;
    case ZAP_ERR_INVALID_PARAM:
    case ZAP_ERR_MISMATCH: /* another rank's arguments differ: an argument error somewhere */
        return MPI_ERR_ARG;
    case ZAP_ERR_NO_MEMORY:
        return MPI_ERR_NO_MEM;
    case ZAP_ERR_UNSUPPORTED:
        return MPI_ERR_UNSUPPORTED_OPERATION;
    case ZAP_ERR_TRUNCATED:
        return MPI_ERR_TRUNCATE;
    default:
        /* Peer failed, timed out, transport, closed, CUDA, ...: Open MPI 4.1
         * has no process-failure class outside its ULFM builds. */
        return MPI_ERR_OTHER;
    }
}
