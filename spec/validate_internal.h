/*
 * validate_internal.h - what the rule files share (validate.c): the checks
 * both APIs make the same way. Not a contract outside spec/validate*.c.
 */
#ifndef TP_VALIDATE_INTERNAL_H
#define TP_VALIDATE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "catalog.h"
#include "strbuf.h"
#include "violation.h"

#define FIELD_MAX 256
#define BASE_MAX 96	/* a path prefix that FIELD_MAX always has room to extend */

/* Limits of the API itself (not the catalog's). */
#define MAX_PACKAGE_URIS 100

struct ctx {
	const struct catalog *cat;
	struct violations *out;
	unsigned api;		/* CATALOG_API_ML or CATALOG_API_VERTEX */
};

/* "a, b, c": the runtime versions of the catalog (only the TPU ones). */
void add_runtime_list(const struct catalog *cat, struct strbuf *sb, bool tpu_only);

/* The catalog's name of accelerator index a. */
const char *acc_name(const struct ctx *c, int a);

/* Whether a hostile value can be repeated in a message: printable ASCII, short. */
bool quotable(const char *s);

/*
 * An image reference (lib/imageref.h) a container engine can be given;
 * NULL passes. The field to blame is base + sfx (made only for a violation,
 * as in check_boot_disk).
 */
void check_image(struct ctx *c, const char *image, const char *base, const char *sfx);

/*
 * acc_type x acc_count on machine m (either may be unset), as both APIs
 * check them; fields name where to blame the type, the count and the
 * machine. On success *acc and *count are the accelerator the replica uses
 * (-1 / 0 for none), including the GPUs built into the type (a2, g2) when
 * none is asked for.
 */
void check_machine_accelerator(struct ctx *c, const struct catalog_machine *m,
			       const char *acc_type, int64_t acc_count, const char *type_field,
			       const char *count_field, const char *machine_field, int *acc,
			       int64_t *count);

/* A boot disk's type (NULL: unset) and size (bad: reported by the parse), at base + sfx. */
void check_boot_disk(struct ctx *c, const char *type, int64_t size_gb, bool size_bad,
		     const char *base, const char *sfx);

/* A google-duration as given (NULL: unset); *nanos 0 when unset or bad. Returns true when set and valid. */
bool check_duration(struct ctx *c, const char *s, const char *field, int64_t *nanos);

/*
 * The accelerators of a job in region r: each must be offered there, and a
 * job using more than one needs one zone offering them all. blame[a] is the
 * field to name when accelerator a is missing; where is "region" or
 * "location".
 */
void check_region_accelerators(struct ctx *c, const struct catalog_region *r,
			       catalog_accset used, const char *const *blame,
			       const char *zone_field, const char *where);

#endif
