/* MPI datatypes and ops in zap's terms, packing, and zap's statuses as MPI
 * error classes.
 *
 * A reduction goes to zap when its op is one of MPI's predefined arithmetic or
 * bitwise ops and its datatype's type signature holds one basic type zap can
 * reduce (Open MPI records the basic types a datatype uses in bdt_used, for
 * predefined and derived types alike). Both are parts of the type signature
 * and the op, which MPI requires every rank to match, so every rank decides
 * alike; the memory layout (contiguous or not) only decides whether this rank
 * packs, never where the call goes. Logical ops, MINLOC/MAXLOC, user ops,
 * bool, complex, long double and mixed types stay with the previous module
 * until zap has them. Data-movement collectives do not look at the type at
 * all: they move the signature's bytes (packed where the layout has gaps). */
#include "coll_zap.h"
#include "opal/datatype/opal_convertor.h"

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
    case OPAL_ID_LONG:
        *dt_p = sizeof(long) == 8 ? ZAP_DT_INT64 : ZAP_DT_INT32;
        *size_p = sizeof(long);
        return true;
    case OPAL_ID_UNSIGNED_LONG:
        *dt_p = sizeof(long) == 8 ? ZAP_DT_UINT64 : ZAP_DT_UINT32;
        *size_p = sizeof(long);
        return true;
    default:
        return false; /* bool, wchar, float16/12/16, complex, 128-bit integers */
    }
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
    else
        return false;
    return true;
}

bool coll_zap_reduction_type(ompi_datatype_t *dtype, int count, struct ompi_op_t *op, zap_dtype_t *dt_p,
                             zap_op_t *zop_p, size_t *nelems_p)
{
    zap_dtype_t dt;
    zap_op_t zop;
    size_t esize = 0;
    if (!predefined_op(op, &zop) || !basic_type(dtype->super.bdt_used, &dt, &esize))
        return false;
    if (!zap_op_supported(dt, zop) || dtype->super.size % esize != 0)
        return false;
    *dt_p = dt;
    *zop_p = zop;
    *nelems_p = (size_t)(count > 0 ? count : 0) * (dtype->super.size / esize);
    return true;
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
