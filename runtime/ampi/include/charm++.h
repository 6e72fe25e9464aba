/* charm++.h for AMPI programs. Charm++'s AMPI examples include it (under #ifdef AMPI) for
 * PUP::er in the pup() of their own classes; here it is ucharm's PUP (ucharm/pup.h). The rest of
 * Charm++'s API is ucharm's core (<ucharm/charm.h>), which MPI programs do not use. */
#ifndef UCHARM_AMPI_CHARMXX_H
#define UCHARM_AMPI_CHARMXX_H
#ifdef __cplusplus
#if __cplusplus < 202002L
#error "charm++.h: ucharm's PUP::er (ucharm/pup.h) needs C++20: compile with -std=c++20 (ampicxx keeps the compiler's default standard)"
#endif
#include "ucharm/pup.h"
#endif
#endif
