/*
 * filter.h - list filters (the AIP-160 subset Google's list methods take)
 * compiled into a parameterised SQL condition.
 *
 *   jobId:census*  AND  state:FAILED
 *   labels.owner=alice OR NOT labels.team:*
 *   createTime>"2026-01-01T00:00:00Z" (state=RUNNING OR state=QUEUED)
 *
 * Operators: ':' (has; a trailing '*' makes it a prefix match; 'x:*' means
 * x is set), '=', '!=', '<', '<=', '>', '>='. AND, OR, NOT, '-', parentheses,
 * juxtaposition is AND; as in AIP-160, OR binds tighter than AND, so
 * 'a AND b OR c' means 'a AND (b OR c)'. Values are bare words or
 * "quoted strings". Every
 * value becomes a SQL parameter; only column names from the field table
 * ever reach the SQL text.
 */
#ifndef TP_FILTER_H
#define TP_FILTER_H

#include "common.h"

enum filter_type {
	FILTER_TEXT,	/* compared as text */
	FILTER_TIME,	/* RFC 3339 timestamp */
	FILTER_MAP,	/* "name.KEY": a key of a jsonb object of strings */
};

struct filter_field {
	const char *name;	/* as written in filters: "state", "labels" */
	const char *alias;	/* another accepted spelling (snake_case), or NULL */
	const char *column;	/* SQL expression */
	enum filter_type type;
	/* Optional: maps a value as written to the stored one (e.g. enum
	 * names); returns NULL for a value that can match nothing valid. */
	const char *(*map_value)(const char *value);
};

struct filter_sql {
	char *where;		/* "" when the filter is empty */
	char **params;		/* values of $first.., owned */
	int nparams;
};

/*
 * Compiles filter (NULL or blank: no condition) with parameters numbered
 * from first_param. Returns 0, or -1 with a message for the user in err.
 */
int filter_compile(const char *filter, const struct filter_field *fields, size_t nfields,
		   int first_param, struct filter_sql *out, char *err, size_t errlen) MUST_CHECK;
void filter_sql_release(struct filter_sql *f);

#endif
