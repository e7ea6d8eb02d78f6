/* Stand-in for Open MPI's ompi/mpi/fortran/base/fint_2_int.h, which
 * ompi/op/op.h includes but Debian's and Ubuntu's libopenmpi-dev do not
 * install. The component reads an MPI_Op's flags and C function
 * (coll_zap_types.c) and never calls op.h's Fortran paths; op.h compiles
 * with the one conversion it names. The include path lists this directory
 * after Open MPI's own, so an installed original wins. */
#ifndef ZAP_OMPI_COMPAT_FINT_2_INT_H
#define ZAP_OMPI_COMPAT_FINT_2_INT_H
#include "mpi.h"
#ifndef OMPI_INT_2_FINT
#define OMPI_INT_2_FINT(a) ((MPI_Fint)(a))
#endif
#endif
