/*
 * config.h - table-driven configuration: defaults, a YAML file, then
 * environment variables, in that order of precedence (last wins).
 *
 * Each program describes its keys once in a static table:
 *
 *   static const struct config_key keys[] = {
 *       { "listen", CONFIG_STRING, offsetof(struct cfg, listen), "127.0.0.1:8080", 0, 0, NULL },
 *       ...
 *   };
 *
 * The YAML file is a flat mapping of those keys. Each key can be overridden
 * by <ENV_PREFIX><KEY in upper case>, e.g. TRAINPLANE_LISTEN. An unknown
 * key, a value of the wrong type or out of range, or a failed check stops
 * loading with a message naming the file, line and column (or the variable).
 */
#ifndef TP_CONFIG_H
#define TP_CONFIG_H

#include <stddef.h>

#include "common.h"

enum config_type {
	CONFIG_STRING,	/* char *, owned by the target; NULL when unset */
	CONFIG_INT,	/* int, bounded by min..max */
	CONFIG_BOOL,	/* bool: true/false/yes/no/on/off/1/0 */
};

struct config_key {
	const char *name;
	enum config_type type;
	size_t offset;		/* of the field in the target struct */
	const char *def;	/* default as text; NULL: unset */
	long min, max;		/* CONFIG_INT bounds */
	/* Optional extra check of the final text value: NULL if fine, else why. */
	const char *(*check)(const char *value);
};

/*
 * Fills target from defaults, then path (may be NULL: no file), then the
 * environment. On error writes a message into err and returns -1; the
 * target may then hold partial values and must still be config_free()d.
 */
int config_load(const struct config_key *keys, size_t nkeys, void *target,
		const char *path, const char *env_prefix, char *err, size_t errlen) MUST_CHECK;
/* Frees the strings config_load() set. */
void config_free(const struct config_key *keys, size_t nkeys, void *target);

#endif
