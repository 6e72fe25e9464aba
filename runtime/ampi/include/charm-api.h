/* charm-api.h for AMPI programs: the linkage macros of Charm++'s API that MPI programs use
 * to declare C and Fortran entry points (CLINKAGE, FLINKAGE, FTN_NAME, CMI_EXPORT). */
#ifndef UCHARM_AMPI_CHARM_API_H
#define UCHARM_AMPI_CHARM_API_H

#ifdef __cplusplus
#define CLINKAGE extern "C"
#else
#define CLINKAGE
#endif
#define FLINKAGE CLINKAGE
#define CDECL CLINKAGE
#define FDECL FLINKAGE

/* A Fortran routine's name as the linker sees it: gfortran's convention (lower case, one
 * trailing underscore). */
#define FTN_NAME(caps, nocaps) nocaps##_

/* A symbol other objects (a program and its shared libraries) may see. */
#define CMI_EXPORT __attribute__((visibility("default")))
#define CMI_IMPORT

#endif
