/*
 * store_filter.h - list filters (spec/list_filter.h: a tree checked
 * against the API's fields) compiled into SQL conditions over the columns
 * of the collection listed. store/'s own: the list calls (store_job_list,
 * store_log_list) use it; nothing above store/ includes it.
 *
 * Every value of the tree (a label's key included) becomes a parameter;
 * only the column expressions of the tables below, and the operators,
 * reach the SQL text. The tree's shape is kept: "a b OR c" compiles to
 * "a AND (b OR c)", "(a)" to "(a)", "NOT a" to "NOT COALESCE((a), false)"
 * (a comparison of an absent label is NULL in SQL; its NOT must hold).
 */
#ifndef TP_STORE_FILTER_H
#define TP_STORE_FILTER_H

#include "list_filter.h"
#include "strbuf.h"

/* The values of a statement's $1..$n, in order; what it made itself is freed with it. */
struct store_params {
	const char **v;
	int n;
	char **owned;
	int nowned;
};
#define STORE_PARAMS_INIT { NULL, 0, NULL, 0 }

/* Appends value (borrowed: it must outlive the statement); returns its number ($n). */
int store_params_add(struct store_params *p, const char *value);
/* The same for a value the params free. */
int store_params_adopt(struct store_params *p, char *value);
void store_params_release(struct store_params *p);

/* A field of the API's table (by its name) and its SQL expression in a collection. */
struct store_filter_column {
	const char *field;
	const char *sql;
};

/* What one list statement filters: the API's fields, and their columns. */
struct store_filter_collection {
	const char *name;				/* for the log: "ml jobs" */
	const struct list_filter_fields *fields;	/* the trees it compiles */
	const struct store_filter_column *columns;	/* one per field */
	size_t ncolumns;
};

/* The jobs table (ml v1 jobs, Vertex CustomJobs, TrainingPipelines' jobs). */
extern const struct store_filter_collection store_filter_ml_jobs;
extern const struct store_filter_collection store_filter_custom_jobs;
extern const struct store_filter_collection store_filter_pipelines;
/* log_entries l JOIN jobs j. */
extern const struct store_filter_collection store_filter_log_entries;

/*
 * Appends filter's condition over c's columns to sql, and its values to
 * params (numbered on from those already there). NULL: appends nothing.
 * -1 (logged: a bug of the caller) for a tree parsed against another
 * table than c's, or a field without a column.
 */
int store_filter_compile(const struct list_filter *filter, const struct store_filter_collection *c,
			 struct strbuf *sql, struct store_params *params) MUST_CHECK;

#endif
