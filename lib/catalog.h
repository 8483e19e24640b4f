/*
 * catalog.h - the rules the cloud enforces, as data loaded from YAML.
 *
 * Machine types (vCPU, memory), legacy machine types, which accelerators a
 * machine type takes and in which counts, regions and zones with the
 * accelerators each zone offers, TPU rules, runtime versions and scale
 * tiers. deploy/catalog.yaml holds the default (Google's public catalog of
 * the seeds and reference); an on-prem operator edits it to describe their
 * own hardware.
 *
 * A loaded catalog is immutable and may be read from any thread.
 */
#ifndef TP_CATALOG_H
#define TP_CATALOG_H

#include <jansson.h>
#include <stdbool.h>

#include "common.h"

struct catalog;

/*
 * Loads and checks the catalog at path. On any problem (YAML syntax, an
 * unknown accelerator in a zone, a table row for an unknown machine type, a
 * malformed count list, ...) writes "path:line:col: problem" into err and
 * returns -1. On success *out is a new catalog: free with catalog_free().
 */
int catalog_load(const char *path, struct catalog **out, char *err, size_t errlen) MUST_CHECK;
void catalog_free(struct catalog *cat);	/* NULL is a no-op */

/* Regions that offer TRAINING, sorted by name. */
size_t catalog_region_count(const struct catalog *cat);
const char *catalog_region_name(const struct catalog *cat, size_t i);
bool catalog_has_region(const struct catalog *cat, const char *region);

/*
 * The ml v1 Location resource for region, as a new JSON object:
 *   {"name":"projects/<project>/locations/<region>",
 *    "capabilities":[{"type":"TRAINING","availableAccelerators":[...]}]}
 * availableAccelerators is the union over the region's zones, in the
 * AcceleratorType enum order. NULL when the region is unknown.
 */
json_t *catalog_location_json(const struct catalog *cat, const char *project,
			      const char *region);

/* vCPU count and memory of a machine type (Compute Engine or legacy). */
struct machine_size {
	int vcpus;
	int64_t memory_mb;
};
int catalog_machine_size(const struct catalog *cat, const char *machine_type,
			 struct machine_size *out) MUST_CHECK;

#endif
