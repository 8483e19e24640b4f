/*
 * list_filter.h - list filters (the AIP-160 subset Google's list methods
 * take) parsed into a tree, and the fields each API's list accepts.
 *
 *   jobId:census*  AND  state:FAILED
 *   labels.owner=alice OR NOT labels.team:*
 *   createTime>"2026-01-01T00:00:00Z" (state=RUNNING OR state=QUEUED)
 *
 * Operators: ':' (has; a trailing '*' makes it a prefix match; 'x:*' means
 * x is set), '=', '!=', '<', '<=', '>', '>='. AND, OR, NOT, '-', parentheses,
 * juxtaposition is AND; as in AIP-160, OR binds tighter than AND, so
 * 'a AND b OR c' means 'a AND (b OR c)'. Values are bare words or
 * "quoted strings".
 *
 * The syntax and the fields are the API's, so they live here, where the
 * server, a console or an emulator can use them: a field table names each
 * field a list takes, its spelling in snake_case, its type and how a value
 * as written maps to the stored one (Vertex's JOB_STATE_FAILED is the
 * stored FAILED). No SQL: store/store_filter.h compiles a tree over the
 * columns of the collection it lists, every value a parameter.
 */
#ifndef TP_LIST_FILTER_H
#define TP_LIST_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

enum list_filter_type {
	LIST_FILTER_TEXT,	/* compared as text */
	LIST_FILTER_TIME,	/* an RFC 3339 timestamp */
	LIST_FILTER_MAP,	/* "name.KEY": a key of a map of strings (labels) */
};

struct list_filter_field {
	const char *name;	/* as written in filters: "state", "labels"; what
				 * store/'s column tables name the field by */
	const char *alias;	/* another accepted spelling (snake_case), or NULL */
	enum list_filter_type type;
	/* Optional: maps a value as written to the stored one (e.g. enum
	 * names); returns NULL for a value that can match nothing valid. */
	const char *(*map_value)(const char *value);
};

/* The fields one list method accepts. */
struct list_filter_fields {
	const struct list_filter_field *v;
	size_t n;
};

extern const struct list_filter_fields list_filter_ml_jobs;	/* ml v1 projects.jobs.list */
extern const struct list_filter_fields list_filter_custom_jobs;	/* Vertex customJobs.list */
extern const struct list_filter_fields list_filter_pipelines;	/* Vertex trainingPipelines.list */
extern const struct list_filter_fields list_filter_log_entries;	/* Logging entries.list */

enum list_filter_kind {
	LIST_FILTER_AND,	/* every kid holds: "a AND b", and "a b" */
	LIST_FILTER_OR,		/* some kid holds: "a OR b" */
	LIST_FILTER_NOT,	/* kids[0] does not hold: "NOT a", "-a" (a comparison of
				 * an absent label does not hold, so its NOT does) */
	LIST_FILTER_GROUP,	/* "(a)" as written: kids[0] */
	LIST_FILTER_CMP,	/* a field compared with a value */
	LIST_FILTER_CONST,	/* always `truth`: a mapped field compared with a value
				 * that names nothing ("state=JOB_STATE_NOPE" is false,
				 * "state!=JOB_STATE_NOPE" true) */
};

enum list_filter_op {
	LIST_FILTER_HAS,	/* ':' */
	LIST_FILTER_EQ,		/* '=' */
	LIST_FILTER_NE,		/* '!=': also holds where a label is absent */
	LIST_FILTER_LT,		/* '<' */
	LIST_FILTER_LE,		/* '<=' */
	LIST_FILTER_GT,		/* '>' */
	LIST_FILTER_GE,		/* '>=' */
};

enum list_filter_match {
	LIST_FILTER_VALUE,	/* the field against value (':' is equality) */
	LIST_FILTER_PREFIX,	/* "x:abc*": value ("abc") is a prefix of the field; TEXT and MAP */
	LIST_FILTER_PRESENT,	/* "x:*": the field is set (TEXT: not empty); value is NULL */
};

/* A node of the tree; list_filter_free() frees it and everything under it. */
struct list_filter {
	enum list_filter_kind kind;
	/* AND, OR: two or more; NOT, GROUP: one. */
	struct list_filter **kids;
	size_t nkids;
	/* CMP: */
	const struct list_filter_field *field;
	char *key;			/* a MAP field's key ("owner" of labels.owner); else NULL */
	enum list_filter_op op;
	enum list_filter_match match;
	char *value;			/* as stored (through field->map_value); a TIME
					 * field's as written, and checked */
	int64_t time_us;		/* a TIME field's value, parsed */
	/* CONST: */
	bool truth;
	/* The root's: the table it was parsed against. */
	const struct list_filter_fields *fields;
};

/*
 * Parses text (NULL or blank: *out = NULL, no condition) against the
 * fields one list takes. Returns 0, or -1 with a message for the user in
 * err ("Invalid filter: unknown field 'foo'") and *out = NULL.
 */
int list_filter_parse(const char *text, const struct list_filter_fields *fields,
		      struct list_filter **out, char *err, size_t errlen) MUST_CHECK;
void list_filter_free(struct list_filter *f);	/* NULL is a no-op */

#endif
