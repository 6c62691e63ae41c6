#include "strata_build.h"

// Defined by Package.swift from the environment variable of the same name; a plain `swift build` leaves it out.
#ifndef STRATA_BUILD_COMMIT
#define STRATA_BUILD_COMMIT ""
#endif

const char *strata_build_commit(void) { return STRATA_BUILD_COMMIT; }
