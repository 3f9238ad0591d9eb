/*
 * FNV-1a, 64-bit: a fast hash for in-memory tables and line classes
 * (object sets, verdicts, metric series, diff lines). Not for anything an
 * adversary may aim collisions at where they would matter.
 */
#ifndef UTIL_FNV_H
#define UTIL_FNV_H

#include <stddef.h>
#include <stdint.h>

#define FNV1A_BASIS 0xcbf29ce484222325ull

/* h (FNV1A_BASIS to start) carried over the n bytes at data. */
uint64_t fnv1a(uint64_t h, const void *data, size_t n);

#endif
