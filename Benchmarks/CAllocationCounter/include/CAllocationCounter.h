// Counts heap allocations of the whole process, for benchmark executables only.
// Linking this target into an executable replaces malloc & co. with counting wrappers around glibc's.
#ifndef YEDI_CALLOCATIONCOUNTER_H
#define YEDI_CALLOCATIONCOUNTER_H

#include <stdint.h>

/// Starts counting from zero.
void yedi_allocations_start(void);
/// Stops counting and returns the number of allocations (malloc, calloc, realloc, aligned) since start.
int64_t yedi_allocations_stop(void);

#endif
