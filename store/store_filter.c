#include "store_filter.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "vertex_types.h"

/* --- parameters ------------------------------------------------------------- */

int store_params_add(struct store_params *p, const char *value)
{
	p->v = xrealloc(p->v, (size_t)(p->n + 1) * sizeof(*p->v));
	p->v[p->n++] = value;
	return p->n;
}

int store_params_adopt(struct store_params *p, char *value)
{
	p->owned = xrealloc(p->owned, (size_t)(p->nowned + 1) * sizeof(*p->owned));
	p->owned[p->nowned++] = value;
	return store_params_add(p, value);
}

void store_params_release(struct store_params *p)
{
	for (int i = 0; i < p->nowned; i++)
		free(p->owned[i]);
	free(p->owned);
	free(p->v);
	memset(p, 0, sizeof(*p));
}

/* --- the columns of each collection ----------------------------------------- */

static const struct store_filter_column ml_job_columns[] = {
	{ "state", "state" },
	{ "jobId", "job_id" },
	{ "errorMessage", "error_message" },
	{ "trainingInput.region", "region" },
	{ "trainingInput.scaleTier", "COALESCE(spec->>'scaleTier', 'BASIC')" },
	{ "trainingInput.masterType", "COALESCE(spec->>'masterType', '')" },
	{ "createTime", "create_time" },
	{ "startTime", "start_time" },
	{ "endTime", "end_time" },
	{ "labels", "labels" },
};
const struct store_filter_collection store_filter_ml_jobs = {
	"ml jobs", &list_filter_ml_jobs, ml_job_columns, ARRAY_SIZE(ml_job_columns)
};

static const struct store_filter_column custom_job_columns[] = {
	{ "state", "state" },
	{ "display_name", "COALESCE(spec->>'displayName', '')" },
	{ "create_time", "create_time" },
	{ "labels", "labels" },
};
const struct store_filter_collection store_filter_custom_jobs = {
	"Vertex custom jobs", &list_filter_custom_jobs, custom_job_columns,
	ARRAY_SIZE(custom_job_columns)
};

/* A pipeline's own fields are under VERTEX_PIPELINE_KEY of its job's spec. */
static const struct store_filter_column pipeline_columns[] = {
	{ "state", "state" },
	{ "display_name", "COALESCE(spec->'" VERTEX_PIPELINE_KEY "'->>'displayName', '')" },
	{ "training_task_definition",
	  "COALESCE(spec->'" VERTEX_PIPELINE_KEY "'->>'trainingTaskDefinition', '')" },
	{ "create_time", "create_time" },
	{ "labels", "labels" },
};
const struct store_filter_collection store_filter_pipelines = {
	"Vertex training pipelines", &list_filter_pipelines, pipeline_columns,
	ARRAY_SIZE(pipeline_columns)
};

/* Over log_entries l JOIN jobs j (store_log.c). */
static const struct store_filter_column log_entry_columns[] = {
	{ "resource.type", "'ml_job'" },
	{ "resource.labels.job_id", "j.job_id" },
	{ "resource.labels.project_id", "j.project" },
	{ "resource.labels.task_name", "l.task" },
	{ "labels.task_name", "l.task" },
	{ "logName", "('projects/' || j.project || '/logs/' || l.task)" },
	{ "severity", "(CASE l.stream WHEN 'stderr' THEN 'ERROR' WHEN 'error' THEN 'ERROR' "
		      "WHEN 'warning' THEN 'WARNING' ELSE 'INFO' END)" },
	{ "textPayload", "l.text" },
	{ "timestamp", "l.time" },
	{ "receiveTimestamp", "coalesce(l.received, l.time)" },
};
const struct store_filter_collection store_filter_log_entries = {
	"log entries", &list_filter_log_entries, log_entry_columns, ARRAY_SIZE(log_entry_columns)
};

/* --- the compiler ------------------------------------------------------------ */

static const char *column_of(const struct store_filter_collection *c,
			     const struct list_filter_field *f)
{
	for (size_t i = 0; i < c->ncolumns; i++) {
		if (!strcmp(c->columns[i].field, f->name))
			return c->columns[i].sql;
	}
	return NULL;
}

/* A LIKE pattern matching the literal prefix s. */
static char *like_prefix(const char *s)
{
	struct strbuf sb = STRBUF_INIT;
	for (; *s; s++) {
		if (*s == '%' || *s == '_' || *s == '\\')
			sb_addch(&sb, '\\');
		sb_addch(&sb, *s);
	}
	sb_addch(&sb, '%');
	return sb_detach(&sb);
}

/* ':' is equality for a scalar; '!=' is handled by the caller. */
static const char *sql_op(enum list_filter_op op)
{
	switch (op) {
	case LIST_FILTER_HAS:
	case LIST_FILTER_EQ:
		return "=";
	case LIST_FILTER_NE:
		return "<>";
	case LIST_FILTER_LT:
		return "<";
	case LIST_FILTER_LE:
		return "<=";
	case LIST_FILTER_GT:
		return ">";
	case LIST_FILTER_GE:
		return ">=";
	}
	return "=";
}

static int compile_comparison(const struct list_filter *f, const struct store_filter_collection *c,
			      struct strbuf *sql, struct store_params *p)
{
	const char *col = column_of(c, f->field);
	struct strbuf column = STRBUF_INIT;

	if (!col) {
		log_error("list filter: field '%s' has no column in %s", f->field->name, c->name);
		return -1;
	}
	if (f->field->type == LIST_FILTER_MAP)
		sb_addf(&column, "(%s->>$%d)", col, store_params_add(p, f->key));
	else
		sb_addstr(&column, col);

	if (f->match == LIST_FILTER_PRESENT) {
		sb_addf(sql, f->field->type == LIST_FILTER_TEXT ? "%s <> ''" : "%s IS NOT NULL",
			column.buf);
	} else if (f->field->type == LIST_FILTER_TIME) {
		sb_addf(sql, "%s %s $%d::timestamptz", column.buf, sql_op(f->op),
			store_params_add(p, f->value));
	} else if (f->match == LIST_FILTER_PREFIX) {
		sb_addf(sql, "%s LIKE $%d", column.buf, store_params_adopt(p, like_prefix(f->value)));
	} else if (f->op == LIST_FILTER_NE) {
		/* != also matches rows where a label is absent. */
		sb_addf(sql, "%s IS DISTINCT FROM $%d", column.buf, store_params_add(p, f->value));
	} else {
		sb_addf(sql, "%s %s $%d", column.buf, sql_op(f->op), store_params_add(p, f->value));
	}
	sb_release(&column);
	return 0;
}

static int compile(const struct list_filter *f, const struct store_filter_collection *c,
		   struct strbuf *sql, struct store_params *p)
{
	switch (f->kind) {
	case LIST_FILTER_AND:
	case LIST_FILTER_OR:
		if (f->kind == LIST_FILTER_OR)
			sb_addch(sql, '(');
		for (size_t i = 0; i < f->nkids; i++) {
			if (i)
				sb_addstr(sql, f->kind == LIST_FILTER_OR ? " OR " : " AND ");
			if (compile(f->kids[i], c, sql, p))
				return -1;
		}
		if (f->kind == LIST_FILTER_OR)
			sb_addch(sql, ')');
		return 0;
	case LIST_FILTER_NOT:
		/* A comparison on an absent label is NULL; NOT of it must be true. */
		sb_addstr(sql, "NOT COALESCE((");
		if (compile(f->kids[0], c, sql, p))
			return -1;
		sb_addstr(sql, "), false)");
		return 0;
	case LIST_FILTER_GROUP:
		sb_addch(sql, '(');
		if (compile(f->kids[0], c, sql, p))
			return -1;
		sb_addch(sql, ')');
		return 0;
	case LIST_FILTER_CONST:
		sb_addstr(sql, f->truth ? "true" : "false");
		return 0;
	case LIST_FILTER_CMP:
		return compile_comparison(f, c, sql, p);
	}
	return -1;
}

int store_filter_compile(const struct list_filter *filter, const struct store_filter_collection *c,
			 struct strbuf *sql, struct store_params *params)
{
	if (!filter)
		return 0;
	if (filter->fields != c->fields) {
		log_error("list filter: a tree of another list's fields given to %s", c->name);
		return -1;
	}
	return compile(filter, c, sql, params);
}
