/* The driver conformance suite (test_conformance.c): what every registered driver must do.
 * A driver gets it by registering; it needs a sample: tests/data/conformance/<name>/ holding a
 * file with the driver's extension (and whatever that file names), or, for a driver that
 * writes, nothing (the sample is the driver's own write of a small model). */
#ifndef CONFORMANCE_H
#define CONFORMANCE_H

#include "fmt/registry.h"
#include "fmt/table.h"

/* Every check on a model driver, with the sample at path: probe chooses it, open, verify, every
 * tensor readable, write and read back identical, truncation at every byte and every
 * single-byte flip (XOR 0x01 and 0x80) never crash and never give FMT_INTERNAL. */
void conform_model_driver(const fmt_driver *d, const char *path);

/* The sample of a model driver (path, size bytes): its folder in tests/data/conformance, else
 * its own write of a small model into dir. 0 when it has neither. */
int conform_model_sample(const fmt_driver *d, const char *dir, char *path, size_t size);

/* The same for a table driver: probe, open, every batch, write and read back identical (same
 * schema and values), truncations and flips. */
void conform_table_driver(const fmt_table_driver *d, const char *path);

#endif
