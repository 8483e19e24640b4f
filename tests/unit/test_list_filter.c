/* Unit tests: list filters parsed into trees against each API's fields
 * (spec/list_filter.c): the tree's shape (AIP-160 precedence, grouping,
 * NOT), field names and aliases, value mappings (Vertex and pipeline state
 * names), and every error as the user reads it. The SQL a tree compiles to:
 * test_store_filter.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "list_filter.h"
#include "strbuf.h"

/* The tree as text: (and ...), (or ...), (not x), (group x), (true), (false),
 * and comparisons as (op field[key] match "value"). */
static void show(struct strbuf *sb, const struct list_filter *f)
{
	static const char *const ops[] = { "has", "eq", "ne", "lt", "le", "gt", "ge" };
	static const char *const kinds[] = { "and", "or", "not", "group" };

	switch (f->kind) {
	case LIST_FILTER_AND:
	case LIST_FILTER_OR:
	case LIST_FILTER_NOT:
	case LIST_FILTER_GROUP:
		sb_addf(sb, "(%s", kinds[f->kind]);
		for (size_t i = 0; i < f->nkids; i++) {
			sb_addch(sb, ' ');
			show(sb, f->kids[i]);
		}
		sb_addch(sb, ')');
		return;
	case LIST_FILTER_CONST:
		sb_addstr(sb, f->truth ? "(true)" : "(false)");
		return;
	case LIST_FILTER_CMP:
		sb_addf(sb, "(%s %s", ops[f->op], f->field->name);
		if (f->key)
			sb_addf(sb, "[%s]", f->key);
		if (f->match == LIST_FILTER_PRESENT)
			sb_addstr(sb, " present");
		else
			sb_addf(sb, "%s \"%s\"", f->match == LIST_FILTER_PREFIX ? " prefix" : "", f->value);
		sb_addch(sb, ')');
		return;
	}
	fail_msg("a node of kind %d", (int)f->kind);
}

static void expect_tree_of(const struct list_filter_fields *fields, const char *filter,
			   const char *want)
{
	struct list_filter *f;
	struct strbuf sb = STRBUF_INIT;
	char err[256];

	if (list_filter_parse(filter, fields, &f, err, sizeof(err)))
		fail_msg("\"%s\": %s", filter, err);
	assert_non_null(f);
	assert_ptr_equal(f->fields, fields);
	show(&sb, f);
	if (strcmp(sb.buf, want))
		fail_msg("\"%s\"\n  gives %s\n  want  %s", filter, sb.buf, want);
	sb_release(&sb);
	list_filter_free(f);
}

static void expect_tree(const char *filter, const char *want)
{
	expect_tree_of(&list_filter_ml_jobs, filter, want);
}

static void expect_error_of(const struct list_filter_fields *fields, const char *filter,
			    const char *want)
{
	struct list_filter *f = (struct list_filter *)&f;	/* set to NULL on failure */
	char err[256];

	if (!list_filter_parse(filter, fields, &f, err, sizeof(err)))
		fail_msg("\"%s\" parsed; want %s", filter, want);
	assert_null(f);
	if (strcmp(err, want))
		fail_msg("\"%s\"\n  says %s\n  want %s", filter, err, want);
}

static void reference_examples_parse(void **state)
{
	(void)state;
	expect_tree("jobId:census*", "(has jobId prefix \"census\")");
	expect_tree("jobId:rnn* AND state:FAILED",
		    "(and (has jobId prefix \"rnn\") (has state \"FAILED\"))");
	expect_tree("labels.owner=alice OR NOT labels.team:*",
		    "(or (eq labels[owner] \"alice\") (not (has labels[team] present)))");
}

static void operators_and_grouping(void **state)
{
	struct list_filter *f = (struct list_filter *)&f;
	char err[256];
	(void)state;

	assert_int_equal(list_filter_parse("", &list_filter_ml_jobs, &f, err, sizeof(err)), 0);
	assert_null(f);
	f = (struct list_filter *)&f;
	assert_int_equal(list_filter_parse(" \t ", &list_filter_ml_jobs, &f, err, sizeof(err)), 0);
	assert_null(f);
	f = (struct list_filter *)&f;
	assert_int_equal(list_filter_parse(NULL, &list_filter_ml_jobs, &f, err, sizeof(err)), 0);
	assert_null(f);

	expect_tree("state=QUEUED OR state = \"RUNNING\"",
		    "(or (eq state \"QUEUED\") (eq state \"RUNNING\"))");
	expect_tree("NOT state:FAILED", "(not (has state \"FAILED\"))");
	expect_tree("-state:FAILED", "(not (has state \"FAILED\"))");
	expect_tree("NOT NOT state:A", "(not (not (has state \"A\")))");
	expect_tree("(state:A OR state:B) jobId:x",
		    "(and (group (or (has state \"A\") (has state \"B\"))) (has jobId \"x\"))");
	/* AIP-160: OR binds tighter than AND and than juxtaposition. */
	expect_tree("state:A AND state:B OR jobId:c",
		    "(and (has state \"A\") (or (has state \"B\") (has jobId \"c\")))");
	expect_tree("state:A jobId:b OR jobId:c",
		    "(and (has state \"A\") (or (has jobId \"b\") (has jobId \"c\")))");
	/* AND and juxtaposition make one conjunction. */
	expect_tree("state:A AND state:B state:C AND (state:D)",
		    "(and (has state \"A\") (has state \"B\") (has state \"C\") (group (has state \"D\")))");
	expect_tree("state!=A", "(ne state \"A\")");
	expect_tree("state<A state<=B state>C state>=D",
		    "(and (lt state \"A\") (le state \"B\") (gt state \"C\") (ge state \"D\"))");
	expect_tree("createTime>=\"2021-05-18T10:00:00Z\"", "(ge createTime \"2021-05-18T10:00:00Z\")");
	expect_tree("job_id:*", "(has jobId present)");
	expect_tree("jobId=*", "(eq jobId \"*\")");	/* only ':' makes '*' a wildcard */
	expect_tree("createTime:*", "(has createTime present)");
	/* Keywords are words: ANDROID and NOTE are values, not operators. */
	expect_tree("jobId=ANDROID jobId=NOTED", "(and (eq jobId \"ANDROID\") (eq jobId \"NOTED\"))");
	expect_error_of(&list_filter_ml_jobs, "state:A ORDER:x", "Invalid filter: unknown field 'ORDER'");
	expect_error_of(&list_filter_ml_jobs, "NOTE:x", "Invalid filter: unknown field 'NOTE'");
}

static void times_are_checked_and_parsed(void **state)
{
	struct list_filter *f;
	char err[256];
	(void)state;

	assert_int_equal(list_filter_parse("createTime>\"1970-01-01T00:00:01.5Z\"", &list_filter_ml_jobs,
					   &f, err, sizeof(err)), 0);
	assert_int_equal(f->kind, LIST_FILTER_CMP);
	assert_int_equal(f->field->type, LIST_FILTER_TIME);
	assert_string_equal(f->value, "1970-01-01T00:00:01.5Z");	/* as written */
	assert_true(f->time_us == 1500000);
	list_filter_free(f);
}

static void names_aliases_and_labels(void **state)
{
	(void)state;
	expect_tree("job_id=a error_message=b training_input.region=c training_input.scale_tier=d "
		    "training_input.master_type=e create_time<\"2030-01-01T00:00:00Z\"",
		    "(and (eq jobId \"a\") (eq errorMessage \"b\") (eq trainingInput.region \"c\") "
		    "(eq trainingInput.scaleTier \"d\") (eq trainingInput.masterType \"e\") "
		    "(lt createTime \"2030-01-01T00:00:00Z\"))");
	expect_tree("labels.owner=alice", "(eq labels[owner] \"alice\")");
	expect_tree("labels.team:*", "(has labels[team] present)");
	expect_tree("labels.a.b:x*", "(has labels[a.b] prefix \"x\")");
	expect_tree("labels.ключ=\"'\"", "(eq labels[ключ] \"'\")");
	expect_tree("jobId=\"x'; DROP TABLE jobs; --\"", "(eq jobId \"x'; DROP TABLE jobs; --\")");
	expect_tree("jobId:50%_*", "(has jobId prefix \"50%_\")");
	expect_tree("jobId=\"a\\\"b\"", "(eq jobId \"a\"b\")");	/* \" inside quotes */
	expect_tree("jobId='a b'", "(eq jobId \"a b\")");
}

/* Vertex's and pipelines' states are written JOB_STATE_* / PIPELINE_STATE_*
 * and stored as ml v1 names; a name of nothing matches nothing. */
static void state_names_map_to_the_stored_state(void **state)
{
	(void)state;
	expect_tree_of(&list_filter_custom_jobs, "state=JOB_STATE_PENDING", "(eq state \"PREPARING\")");
	expect_tree_of(&list_filter_custom_jobs, "state:\"JOB_STATE_FAILED\"", "(has state \"FAILED\")");
	expect_tree_of(&list_filter_custom_jobs, "state=JOB_STATE_NOPE", "(false)");
	expect_tree_of(&list_filter_custom_jobs, "state!=JOB_STATE_NOPE", "(true)");
	expect_tree_of(&list_filter_custom_jobs, "state<JOB_STATE_NOPE", "(false)");
	expect_tree_of(&list_filter_custom_jobs, "state=FAILED", "(false)");	/* not a Vertex name */
	expect_tree_of(&list_filter_custom_jobs, "state:JOB_STATE_*", "(false)");
	expect_tree_of(&list_filter_custom_jobs, "state:*", "(has state present)");
	expect_tree_of(&list_filter_custom_jobs, "NOT state=JOB_STATE_NOPE", "(not (false))");
	expect_tree_of(&list_filter_custom_jobs, "displayName:\"list_b*\" labels.kind=list",
		       "(and (has display_name prefix \"list_b\") (eq labels[kind] \"list\"))");
	expect_tree_of(&list_filter_pipelines, "state=\"PIPELINE_STATE_QUEUED\" AND labels.seed=\"001\"",
		       "(and (eq state \"QUEUED\") (eq labels[seed] \"001\"))");
	expect_tree_of(&list_filter_pipelines, "state=JOB_STATE_QUEUED", "(false)");
	expect_tree_of(&list_filter_pipelines, "trainingTaskDefinition:gs://x*",
		       "(has training_task_definition prefix \"gs://x\")");
	/* ml v1 names its states as stored: no mapping. */
	expect_tree("state=JOB_STATE_PENDING", "(eq state \"JOB_STATE_PENDING\")");
	expect_error_of(&list_filter_custom_jobs, "jobId=x", "Invalid filter: unknown field 'jobId'");
}

/* What `gcloud ai-platform jobs stream-logs` sends, and the rest of LogEntry's fields. */
static void log_entry_fields(void **state)
{
	(void)state;
	expect_tree_of(&list_filter_log_entries,
		       "resource.type=\"ml_job\" AND resource.labels.job_id=\"j1\" AND "
		       "timestamp>=\"2021-05-18T10:00:00Z\" AND labels.task_name:master*",
		       "(and (eq resource.type \"ml_job\") (eq resource.labels.job_id \"j1\") "
		       "(ge timestamp \"2021-05-18T10:00:00Z\") (has labels.task_name prefix \"master\"))");
	expect_tree_of(&list_filter_log_entries,
		       "log_name:x severity=ERROR textPayload:*done* resource.labels.project_id=p "
		       "resource.labels.task_name=t",
		       "(and (has logName \"x\") (eq severity \"ERROR\") (has textPayload prefix \"*done\") "
		       "(eq resource.labels.project_id \"p\") (eq resource.labels.task_name \"t\"))");
	/* labels.task_name is a field of its own, not a map. */
	expect_error_of(&list_filter_log_entries, "labels.x=1", "Invalid filter: unknown field 'labels.x'");
	expect_error_of(&list_filter_log_entries, "timestamp>now",
			"Invalid filter: 'now' is not an RFC 3339 timestamp");
}

static void errors_say_what_is_wrong(void **state)
{
	static const struct { const char *filter, *want; } cases[] = {
		{ "foo=bar", "Invalid filter: unknown field 'foo'" },
		{ "state", "Invalid filter: expected an operator after 'state'" },
		{ "state:", "Invalid filter: expected a value" },
		{ "(state:A", "Invalid filter: missing ')'" },
		{ "state:A)", "Invalid filter: unexpected ')'" },
		{ "jobId=\"abc", "Invalid filter: unterminated string" },
		{ "createTime>yesterday", "Invalid filter: 'yesterday' is not an RFC 3339 timestamp" },
		{ "labels=x", "Invalid filter: unknown field 'labels'" },
		{ "labels.=x", "Invalid filter: unknown field 'labels.'" },
		{ "AND", "Invalid filter: expected an operator after 'AND'" },
		{ "labels.a'b=c", "Invalid filter: expected an operator after 'labels.a'" },
		{ "state:QUEUED OR", "Invalid filter: unexpected end of filter" },
		{ "NOT", "Invalid filter: unexpected end of filter" },
		{ ")", "Invalid filter: unexpected ')'" },
		{ "state:A = b", "Invalid filter: unexpected '='" },
		/* The first error is the one reported. */
		{ "foo=1 AND (", "Invalid filter: unknown field 'foo'" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_error_of(&list_filter_ml_jobs, cases[i].filter, cases[i].want);

	char deep[200];
	memset(deep, '(', 100);
	strcpy(deep + 100, "state:A");
	expect_error_of(&list_filter_ml_jobs, deep, "Invalid filter: nested too deeply");
	memset(deep, '-', 100);
	strcpy(deep + 100, "state:A");
	expect_error_of(&list_filter_ml_jobs, deep, "Invalid filter: nested too deeply");
}

/* At most 64 values (a label's key counts as one), 4096 characters. */
static void limits(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct list_filter *f;
	char err[256];
	(void)state;

	for (int i = 0; i < 64; i++)
		sb_addf(&sb, "%sstate:s%d", i ? " " : "", i);
	assert_int_equal(list_filter_parse(sb.buf, &list_filter_ml_jobs, &f, err, sizeof(err)), 0);
	assert_int_equal(f->nkids, 64);
	list_filter_free(f);
	sb_addstr(&sb, " state:one_more");
	expect_error_of(&list_filter_ml_jobs, sb.buf, "Invalid filter: too many terms");
	sb_reset(&sb);
	for (int i = 0; i < 32; i++)
		sb_addf(&sb, "%slabels.k%d=v", i ? " OR " : "", i);
	assert_int_equal(list_filter_parse(sb.buf, &list_filter_ml_jobs, &f, err, sizeof(err)), 0);
	list_filter_free(f);
	sb_addstr(&sb, " OR labels.team:*");	/* its key is the 65th */
	expect_error_of(&list_filter_ml_jobs, sb.buf, "Invalid filter: too many terms");
	/* x:* and names of nothing bind no value. */
	sb_reset(&sb);
	for (int i = 0; i < 100; i++)
		sb_addf(&sb, "%sjobId:*", i ? " " : "");
	assert_int_equal(list_filter_parse(sb.buf, &list_filter_ml_jobs, &f, err, sizeof(err)), 0);
	list_filter_free(f);

	sb_reset(&sb);
	sb_addstr(&sb, "  jobId=");
	while (sb.len < 2 + 4096)
		sb_addch(&sb, 'x');
	assert_int_equal(list_filter_parse(sb.buf, &list_filter_ml_jobs, &f, err, sizeof(err)), 0);
	list_filter_free(f);
	sb_addch(&sb, 'x');
	expect_error_of(&list_filter_ml_jobs, sb.buf, "Invalid filter: longer than 4096 characters");
	sb_release(&sb);
}

/* Each table: names and aliases are unique, and a map's name is no other field's prefix. */
static void the_tables_are_unambiguous(void **state)
{
	const struct list_filter_fields *tables[] = { &list_filter_ml_jobs, &list_filter_custom_jobs,
						      &list_filter_pipelines, &list_filter_log_entries };
	(void)state;
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
		const struct list_filter_fields *fs = tables[t];
		assert_true(fs->n > 0);
		for (size_t i = 0; i < fs->n; i++) {
			const char *a[2] = { fs->v[i].name, fs->v[i].alias };
			assert_non_null(a[0]);
			for (size_t j = 0; j < fs->n; j++) {
				const char *b[2] = { fs->v[j].name, fs->v[j].alias };
				for (int x = 0; x < 2; x++) {
					for (int y = 0; y < 2; y++) {
						if ((i != j || x != y) && a[x] && b[y])
							assert_string_not_equal(a[x], b[y]);
					}
				}
			}
			/* Every spelling finds its own field. */
			for (int x = 0; x < 2; x++) {
				if (!a[x])
					continue;
				char text[128];
				struct list_filter *f;
				char err[256];
				snprintf(text, sizeof(text), "%s%s:*", a[x],
					 fs->v[i].type == LIST_FILTER_MAP ? ".k" : "");
				assert_int_equal(list_filter_parse(text, fs, &f, err, sizeof(err)), 0);
				assert_ptr_equal(f->field, &fs->v[i]);
				list_filter_free(f);
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reference_examples_parse),
		cmocka_unit_test(operators_and_grouping),
		cmocka_unit_test(times_are_checked_and_parsed),
		cmocka_unit_test(names_aliases_and_labels),
		cmocka_unit_test(state_names_map_to_the_stored_state),
		cmocka_unit_test(log_entry_fields),
		cmocka_unit_test(errors_say_what_is_wrong),
		cmocka_unit_test(limits),
		cmocka_unit_test(the_tables_are_unambiguous),
	};
	return cmocka_run_group_tests_name("list_filter", tests, NULL, NULL);
}
