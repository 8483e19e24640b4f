/*
 * format.h - gcloud's output language (`gcloud topic formats`, `topic
 * projections`, `topic filters`) for the CLI: --format, --filter, the
 * resource keys both use, and the printers. Pure (no I/O): the caller
 * prints the strbuf; unit-tested in tests/unit/test_cli_format.c.
 *
 * A format is NAME[ATTRIBUTES](PROJECTION):
 *   json, yaml, default, none       the whole resource (json: 2-space indent,
 *                                   sorted keys; yaml: gcloud's ruamel style)
 *   value(KEYS)                     one line per resource, tab-separated
 *   table(KEYS)                     columns as wide as their longest cell
 *   csv(KEYS)                       comma-separated, with a heading
 *   ATTRIBUTES: no-heading, box (table), separator=S (value, csv)
 *   KEYS: key[.transform(args)...][:label=LABEL], comma-separated; a key is
 *   dotted (trainingInput.scaleTier), with [N] list indexes
 *   (jobSpec.workerPoolSpecs[0].machineSpec.machineType); snake_case
 *   names find camelCase fields.
 *   Transforms: date([FORMAT][, tz=LOCAL|UTC]), basename(), len(),
 *   upper(), lower().
 */
#ifndef TP_CLI_FORMAT_H
#define TP_CLI_FORMAT_H

#include <jansson.h>

#include "strbuf.h"

struct fmt;
struct filter;

/* Parses a --format value; NULL and *err (caller frees) on a bad one. */
struct fmt *fmt_parse(const char *spec, char **err);
void fmt_free(struct fmt *f);
/* Whether f prints a projection (value, table, csv) rather than the resource. */
int fmt_is_projection(const struct fmt *f);
/* Whether f is `default` (the command's own output). */
int fmt_is_default(const struct fmt *f);
/*
 * gcloud's merge of the command's default projection into the user's: a
 * column of f whose key is a column of defaults takes that column's label
 * and transforms where f gives none (`ai-platform jobs list --format
 * 'table(jobId,state)'` heads the state column STATUS, as gcloud does).
 */
void fmt_merge_defaults(struct fmt *f, const struct fmt *defaults);
/*
 * Appends items printed as f says: one resource when list is 0 (items is
 * the resource), else every element of the array items (yaml: each
 * preceded by ---; json: one array).
 */
void fmt_print(struct strbuf *out, const struct fmt *f, const json_t *items, int list);

/* JSON as gcloud prints it: 2-space indent, sorted keys, Python's float repr. */
void fmt_json(struct strbuf *out, const json_t *v);

/*
 * The value at a resource key ("labels.team", "a.b[0].c"); a name step
 * through a list maps over its elements. New reference, or NULL when absent
 * or the key is malformed (*err set when err is not NULL).
 */
json_t *fmt_key_get(const json_t *resource, const char *key, char **err);

/* An RFC 3339 time, or a date or zone-less time in local time, as seconds; 0 or -1. */
int fmt_parse_time(const char *s, double *t);

/* --filter: gcloud's filter expressions, applied client-side. */
struct filter *filter_parse(const char *expr, char **err);
int filter_match(const struct filter *f, const json_t *resource);
void filter_free(struct filter *f);

#endif
