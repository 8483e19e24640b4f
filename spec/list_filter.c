#include "list_filter.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_state.h"
#include "strbuf.h"
#include "wire.h"

#define FILTER_MAX_LEN 4096
#define FILTER_MAX_DEPTH 32
/* Values in one filter (a label's key counts as one): what a list
 * statement binds beside its own few parameters. */
#define FILTER_MAX_TERMS 64

/* --- the fields of each list ------------------------------------------------ */

/* A Vertex state as written ("JOB_STATE_PENDING") to the stored one. */
static const char *state_from_vertex_name(const char *name)
{
	enum job_state s = job_state_parse_vertex(name);
	return s ? job_state_name(s) : NULL;
}

/* A trainingPipeline's state ("PIPELINE_STATE_PENDING") to its job's stored one. */
static const char *state_from_pipeline_name(const char *name)
{
	enum job_state s = job_state_parse_pipeline(name);
	return s ? job_state_name(s) : NULL;
}

static const struct list_filter_field ml_job_fields[] = {
	{ "state", NULL, LIST_FILTER_TEXT, NULL },
	{ "jobId", "job_id", LIST_FILTER_TEXT, NULL },
	{ "errorMessage", "error_message", LIST_FILTER_TEXT, NULL },
	{ "trainingInput.region", "training_input.region", LIST_FILTER_TEXT, NULL },
	{ "trainingInput.scaleTier", "training_input.scale_tier", LIST_FILTER_TEXT, NULL },
	{ "trainingInput.masterType", "training_input.master_type", LIST_FILTER_TEXT, NULL },
	{ "createTime", "create_time", LIST_FILTER_TIME, NULL },
	{ "startTime", "start_time", LIST_FILTER_TIME, NULL },
	{ "endTime", "end_time", LIST_FILTER_TIME, NULL },
	{ "labels", NULL, LIST_FILTER_MAP, NULL },
};
const struct list_filter_fields list_filter_ml_jobs = { ml_job_fields, ARRAY_SIZE(ml_job_fields) };

static const struct list_filter_field custom_job_fields[] = {
	{ "state", NULL, LIST_FILTER_TEXT, state_from_vertex_name },
	{ "display_name", "displayName", LIST_FILTER_TEXT, NULL },
	{ "create_time", "createTime", LIST_FILTER_TIME, NULL },
	{ "labels", NULL, LIST_FILTER_MAP, NULL },
};
const struct list_filter_fields list_filter_custom_jobs = {
	custom_job_fields, ARRAY_SIZE(custom_job_fields)
};

static const struct list_filter_field pipeline_fields[] = {
	{ "state", NULL, LIST_FILTER_TEXT, state_from_pipeline_name },
	{ "display_name", "displayName", LIST_FILTER_TEXT, NULL },
	{ "training_task_definition", "trainingTaskDefinition", LIST_FILTER_TEXT, NULL },
	{ "create_time", "createTime", LIST_FILTER_TIME, NULL },
	{ "labels", NULL, LIST_FILTER_MAP, NULL },
};
const struct list_filter_fields list_filter_pipelines = { pipeline_fields, ARRAY_SIZE(pipeline_fields) };

/* What `gcloud ... stream-logs` filters by, and a few more of LogEntry. */
static const struct list_filter_field log_entry_fields[] = {
	{ "resource.type", NULL, LIST_FILTER_TEXT, NULL },
	{ "resource.labels.job_id", NULL, LIST_FILTER_TEXT, NULL },
	{ "resource.labels.project_id", NULL, LIST_FILTER_TEXT, NULL },
	{ "resource.labels.task_name", NULL, LIST_FILTER_TEXT, NULL },
	{ "labels.task_name", NULL, LIST_FILTER_TEXT, NULL },
	{ "logName", "log_name", LIST_FILTER_TEXT, NULL },
	{ "severity", NULL, LIST_FILTER_TEXT, NULL },
	{ "textPayload", NULL, LIST_FILTER_TEXT, NULL },
	{ "timestamp", NULL, LIST_FILTER_TIME, NULL },
	{ "receiveTimestamp", NULL, LIST_FILTER_TIME, NULL },
};
const struct list_filter_fields list_filter_log_entries = {
	log_entry_fields, ARRAY_SIZE(log_entry_fields)
};

/* --- the parser ------------------------------------------------------------- */

struct parser {
	const char *p;
	const struct list_filter_fields *fields;
	int nterms;
	int depth;
	char *err;
	size_t errlen;
	bool failed;
};

static void fail(struct parser *ps, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void fail(struct parser *ps, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (ps->failed)
		return;
	ps->failed = true;
	n = snprintf(ps->err, ps->errlen, "Invalid filter: ");
	va_start(ap, fmt);
	vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

static void skip_ws(struct parser *ps)
{
	while (isspace((unsigned char)*ps->p))
		ps->p++;
}

/* Is the next token the keyword kw (followed by a space or parenthesis)? */
static bool keyword(struct parser *ps, const char *kw)
{
	size_t n = strlen(kw);
	skip_ws(ps);
	if (strncmp(ps->p, kw, n) || (ps->p[n] && !isspace((unsigned char)ps->p[n]) && ps->p[n] != '('))
		return false;
	ps->p += n;
	return true;
}

/* One more value in the filter; false (and failed) past the limit. */
static bool count_term(struct parser *ps)
{
	if (ps->nterms >= FILTER_MAX_TERMS) {
		fail(ps, "too many terms");
		return false;
	}
	ps->nterms++;
	return true;
}

static struct list_filter *node_new(enum list_filter_kind kind)
{
	struct list_filter *n = xcalloc(1, sizeof(*n));
	n->kind = kind;
	return n;
}

static void node_add(struct list_filter *n, struct list_filter *kid)
{
	n->kids = xrealloc(n->kids, (n->nkids + 1) * sizeof(*n->kids));
	n->kids[n->nkids++] = kid;
}

/* kind (NOT, GROUP) over kid; NULL when kid is (a failure). */
static struct list_filter *node_over(enum list_filter_kind kind, struct list_filter *kid)
{
	if (!kid)
		return NULL;
	struct list_filter *n = node_new(kind);
	node_add(n, kid);
	return n;
}

/* Label keys may hold international characters: UTF-8 bytes are name bytes. */
static bool name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-' ||
	       (unsigned char)c >= 0x80;
}

/* A bare word or a quoted string; returns a new string or NULL. */
static char *parse_value(struct parser *ps)
{
	struct strbuf sb = STRBUF_INIT;

	skip_ws(ps);
	if (*ps->p == '"' || *ps->p == '\'') {
		char q = *ps->p++;
		while (*ps->p && *ps->p != q) {
			if (*ps->p == '\\' && ps->p[1])
				ps->p++;
			sb_addch(&sb, *ps->p++);
		}
		if (*ps->p != q) {
			fail(ps, "unterminated string");
			sb_release(&sb);
			return NULL;
		}
		ps->p++;
		return sb_detach(&sb);
	}
	while (*ps->p && !isspace((unsigned char)*ps->p) && *ps->p != '(' && *ps->p != ')')
		sb_addch(&sb, *ps->p++);
	if (!sb.len) {
		fail(ps, "expected a value");
		sb_release(&sb);
		return NULL;
	}
	return sb_detach(&sb);
}

static const struct list_filter_field *find_field(struct parser *ps, const char *name,
						  const char **map_key)
{
	*map_key = NULL;
	for (size_t i = 0; i < ps->fields->n; i++) {
		const struct list_filter_field *f = &ps->fields->v[i];
		const char *names[2] = { f->name, f->alias };
		for (int k = 0; k < 2; k++) {
			size_t n = names[k] ? strlen(names[k]) : 0;
			if (!n || strncmp(name, names[k], n))
				continue;
			if (f->type == LIST_FILTER_MAP && name[n] == '.' && name[n + 1]) {
				*map_key = name + n + 1;
				return f;
			}
			if (f->type != LIST_FILTER_MAP && !name[n])
				return f;
		}
	}
	return NULL;
}

/* Longest first: "<=" before "<". */
static const struct {
	const char *text;
	enum list_filter_op op;
} ops[] = {
	{ "<=", LIST_FILTER_LE }, { ">=", LIST_FILTER_GE }, { "!=", LIST_FILTER_NE },
	{ ":", LIST_FILTER_HAS }, { "=", LIST_FILTER_EQ },  { "<", LIST_FILTER_LT },
	{ ">", LIST_FILTER_GT },
};

static struct list_filter *parse_comparison(struct parser *ps)
{
	char name[256];
	size_t n = 0;
	const char *key;
	char *value;
	struct list_filter *node;
	bool has_op = false;
	enum list_filter_op op = LIST_FILTER_EQ;

	skip_ws(ps);
	while (name_char(*ps->p) && n + 1 < sizeof(name))
		name[n++] = *ps->p++;
	name[n] = '\0';
	if (!n) {
		fail(ps, *ps->p ? "unexpected '%c'" : "unexpected end of filter", *ps->p);
		return NULL;
	}
	skip_ws(ps);
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
		size_t len = strlen(ops[i].text);
		if (!strncmp(ps->p, ops[i].text, len)) {
			op = ops[i].op;
			has_op = true;
			ps->p += len;
			break;
		}
	}
	if (!has_op) {
		fail(ps, "expected an operator after '%s'", name);
		return NULL;
	}
	const struct list_filter_field *f = find_field(ps, name, &key);
	if (!f) {
		fail(ps, "unknown field '%s'", name);
		return NULL;
	}
	value = parse_value(ps);
	if (!value)
		return NULL;
	node = node_new(LIST_FILTER_CMP);
	node->field = f;
	node->op = op;
	if (f->type == LIST_FILTER_MAP) {
		node->key = xstrdup(key);
		if (!count_term(ps))
			goto failed;
	}

	/* x:* : the field is set. */
	if (op == LIST_FILTER_HAS && !strcmp(value, "*")) {
		free(value);
		node->match = LIST_FILTER_PRESENT;
		return node;
	}
	if (f->type == LIST_FILTER_TIME) {
		if (wire_time_parse(value, &node->time_us)) {
			fail(ps, "'%s' is not an RFC 3339 timestamp", value);
			goto failed;
		}
		if (!count_term(ps))
			goto failed;
		node->value = value;
		return node;
	}
	if (f->map_value) {
		const char *mapped = f->map_value(value);
		free(value);
		if (!mapped) {
			/* Names nothing: no job has it. */
			list_filter_free(node);
			node = node_new(LIST_FILTER_CONST);
			node->truth = op == LIST_FILTER_NE;
			return node;
		}
		value = xstrdup(mapped);
	}
	size_t len = strlen(value);
	if (op == LIST_FILTER_HAS && len && value[len - 1] == '*') {
		value[len - 1] = '\0';
		node->match = LIST_FILTER_PREFIX;
	}
	if (!count_term(ps))
		goto failed;
	node->value = value;
	return node;
failed:
	free(value);
	list_filter_free(node);
	return NULL;
}

static struct list_filter *parse_expression(struct parser *ps);

static struct list_filter *parse_unary(struct parser *ps)
{
	struct list_filter *n;

	if (ps->failed)
		return NULL;
	if (++ps->depth > FILTER_MAX_DEPTH) {
		fail(ps, "nested too deeply");
		return NULL;
	}
	skip_ws(ps);
	if (keyword(ps, "NOT") || (*ps->p == '-' && ps->p++)) {
		n = node_over(LIST_FILTER_NOT, parse_unary(ps));
	} else if (*ps->p == '(') {
		ps->p++;
		n = node_over(LIST_FILTER_GROUP, parse_expression(ps));
		skip_ws(ps);
		if (*ps->p != ')')
			fail(ps, "missing ')'");
		else
			ps->p++;
	} else {
		n = parse_comparison(ps);
	}
	ps->depth--;
	if (ps->failed) {
		list_filter_free(n);
		return NULL;
	}
	return n;
}

/* At the end of a sequence: end of input, ')', or the keyword AND. */
static bool at_sequence_end(struct parser *ps)
{
	skip_ws(ps);
	if (!*ps->p || *ps->p == ')')
		return true;
	const char *save = ps->p;
	bool is_and = keyword(ps, "AND");
	ps->p = save;
	return is_and;
}

/* factor: term {OR term}. OR binds tightest (AIP-160). */
static struct list_filter *parse_factor(struct parser *ps)
{
	struct list_filter *first = parse_unary(ps), *or = NULL;

	while (first && !ps->failed && keyword(ps, "OR")) {
		struct list_filter *next = parse_unary(ps);
		if (!next)
			break;
		if (!or) {
			or = node_new(LIST_FILTER_OR);
			node_add(or, first);
		}
		node_add(or, next);
	}
	if (ps->failed) {
		list_filter_free(or ? or : first);
		return NULL;
	}
	return or ? or : first;
}

/* sequence: factor {factor}: juxtaposition is AND. Adds its factors to and. */
static void parse_sequence(struct parser *ps, struct list_filter *and)
{
	struct list_filter *f = parse_factor(ps);

	if (f)
		node_add(and, f);
	while (!ps->failed && !at_sequence_end(ps)) {
		f = parse_factor(ps);
		if (f)
			node_add(and, f);
	}
}

/* expression: sequence {AND sequence}; one AND of every factor. */
static struct list_filter *parse_expression(struct parser *ps)
{
	struct list_filter *and = node_new(LIST_FILTER_AND), *only;

	parse_sequence(ps, and);
	while (!ps->failed && keyword(ps, "AND"))
		parse_sequence(ps, and);
	if (ps->failed || !and->nkids) {
		list_filter_free(and);
		return NULL;
	}
	if (and->nkids > 1)
		return and;
	only = and->kids[0];
	and->nkids = 0;
	list_filter_free(and);
	return only;
}

int list_filter_parse(const char *text, const struct list_filter_fields *fields,
		      struct list_filter **out, char *err, size_t errlen)
{
	struct parser ps = { .p = text ? text : "", .fields = fields, .err = err, .errlen = errlen };
	struct list_filter *tree = NULL;

	*out = NULL;
	skip_ws(&ps);
	if (strlen(ps.p) > FILTER_MAX_LEN) {
		snprintf(err, errlen, "Invalid filter: longer than %d characters", FILTER_MAX_LEN);
		return -1;
	}
	if (!*ps.p)
		return 0;
	tree = parse_expression(&ps);
	skip_ws(&ps);
	if (!ps.failed && *ps.p)
		fail(&ps, "unexpected '%c'", *ps.p);
	if (!ps.failed && !tree)
		fail(&ps, "unexpected end of filter");
	if (ps.failed) {
		list_filter_free(tree);
		return -1;
	}
	tree->fields = fields;
	*out = tree;
	return 0;
}

void list_filter_free(struct list_filter *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nkids; i++)
		list_filter_free(f->kids[i]);
	free(f->kids);
	free(f->key);
	free(f->value);
	free(f);
}
