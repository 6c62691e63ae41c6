#ifndef STRATA_BUILD_H
#define STRATA_BUILD_H

/// The commit `strata` was built from, as the build was told it through STRATA_BUILD_COMMIT (see Package.swift);
/// the empty string when it was not told.
const char *strata_build_commit(void);

#endif
