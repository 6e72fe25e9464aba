/* ampi.h: Charm++'s AMPI programs may include it for mpi.h and the AMPI_ extensions
 * (AMPI_Migrate & co., declared in mpi.h). */
#ifndef UCHARM_AMPI_AMPI_H
#define UCHARM_AMPI_AMPI_H
#include "mpi.h"
#include "charm-api.h"
#endif
