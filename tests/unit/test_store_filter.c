/* Unit tests, without a database: list filter trees (spec/list_filter.h)
 * compiled into SQL over a collection's columns (store/store_filter.c), and
 * the whole statements store_job_list() and store_log_list() send, taken
 * from store_exec_sql() (a mock here). Every value is a parameter; only
 * column expressions reach the text. The parser itself: test_list_filter.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "list_filter.h"
#include "store_filter.h"
#include "store_job.h"
#include "store_log.h"
#include "store_pg.h"

/* A small collection of the test's own. */
static const struct list_filter_field test_fields[] = {
	{ "state", NULL, LIST_FILTER_TEXT, NULL },
	{ "jobId", "job_id", LIST_FILTER_TEXT, NULL },
	{ "createTime", "create_time", LIST_FILTER_TIME, NULL },
	{ "labels", NULL, LIST_FILTER_MAP, NULL },
};
static const struct list_filter_fields fields = { test_fields, 4 };
static const struct store_filter_column test_columns[] = {
	{ "state", "state" },
	{ "jobId", "job_id" },
	{ "createTime", "create_time" },
	{ "labels", "labels" },
};
static const struct store_filter_collection jobs = { "test jobs", &fields, test_columns, 4 };

/* The condition of filter over c, with parameters from $4 (a list statement
 * binds three of its own first). */
static void expect_sql_of(const struct store_filter_collection *c, const char *filter,
			  const char *where, int nparams, const char **params)
{
	struct list_filter *f;
	struct strbuf sql = STRBUF_INIT;
	struct store_params p = STORE_PARAMS_INIT;
	char err[256];

	if (list_filter_parse(filter, c->fields, &f, err, sizeof(err)))
		fail_msg("\"%s\": %s", filter, err);
	for (int i = 0; i < 3; i++)
		store_params_add(&p, "(the statement's)");
	assert_int_equal(store_filter_compile(f, c, &sql, &p), 0);
	if (strcmp(sb_str(&sql), where))
		fail_msg("\"%s\"\n  gives %s\n  want  %s", filter, sb_str(&sql), where);
	assert_int_equal(p.n - 3, nparams);
	for (int i = 0; i < nparams; i++)
		assert_string_equal(p.v[3 + i], params[i]);
	store_params_release(&p);
	sb_release(&sql);
	list_filter_free(f);
}

static void expect_sql(const char *filter, const char *where, int nparams, const char **params)
{
	expect_sql_of(&jobs, filter, where, nparams, params);
}

/* --- the compiler (the cases server/filter.c's test had, unchanged) ------------ */

static void reference_examples_compile(void **state)
{
	(void)state;
	expect_sql("jobId:census*", "job_id LIKE $4", 1, (const char *[]){ "census%" });
	expect_sql("jobId:rnn* AND state:FAILED", "job_id LIKE $4 AND state = $5", 2,
		   (const char *[]){ "rnn%", "FAILED" });
}

static void operators_and_grouping(void **state)
{
	(void)state;
	expect_sql("", "", 0, NULL);
	expect_sql("   ", "", 0, NULL);
	expect_sql("state=QUEUED OR state = \"RUNNING\"", "(state = $4 OR state = $5)", 2,
		   (const char *[]){ "QUEUED", "RUNNING" });
	expect_sql("NOT state:FAILED", "NOT COALESCE((state = $4), false)", 1, (const char *[]){ "FAILED" });
	expect_sql("-state:FAILED", "NOT COALESCE((state = $4), false)", 1, (const char *[]){ "FAILED" });
	expect_sql("(state:A OR state:B) jobId:x", "((state = $4 OR state = $5)) AND job_id = $6", 3,
		   (const char *[]){ "A", "B", "x" });
	/* AIP-160: OR binds tighter than AND and than juxtaposition. */
	expect_sql("state:A AND state:B OR jobId:c", "state = $4 AND (state = $5 OR job_id = $6)", 3,
		   (const char *[]){ "A", "B", "c" });
	expect_sql("state:A jobId:b OR jobId:c", "state = $4 AND (job_id = $5 OR job_id = $6)", 3,
		   (const char *[]){ "A", "b", "c" });
	expect_sql("state!=A", "state IS DISTINCT FROM $4", 1, (const char *[]){ "A" });
	expect_sql("createTime>=\"2021-05-18T10:00:00Z\"", "create_time >= $4::timestamptz", 1,
		   (const char *[]){ "2021-05-18T10:00:00Z" });
	expect_sql("job_id:*", "job_id <> ''", 0, NULL);
	/* and the rest of the operators */
	expect_sql("state<a state<=b state>c state>=d",
		   "state < $4 AND state <= $5 AND state > $6 AND state >= $7", 4,
		   (const char *[]){ "a", "b", "c", "d" });
	expect_sql("createTime!=\"2021-05-18T10:00:00Z\" OR createTime:\"2021-05-18T10:00:00Z\"",
		   "(create_time <> $4::timestamptz OR create_time = $5::timestamptz)", 2,
		   (const char *[]){ "2021-05-18T10:00:00Z", "2021-05-18T10:00:00Z" });
	expect_sql("createTime:*", "create_time IS NOT NULL", 0, NULL);
	expect_sql("NOT (state:A)", "NOT COALESCE(((state = $4)), false)", 1, (const char *[]){ "A" });
}

static void labels_take_the_key_as_a_parameter(void **state)
{
	(void)state;
	expect_sql("labels.owner=alice", "(labels->>$4) = $5", 2,
		   (const char *[]){ "owner", "alice" });
	expect_sql("labels.team:*", "(labels->>$4) IS NOT NULL", 1, (const char *[]){ "team" });
	expect_sql("labels.owner!=alice", "(labels->>$4) IS DISTINCT FROM $5", 2,
		   (const char *[]){ "owner", "alice" });
	expect_sql("labels.owner:al*", "(labels->>$4) LIKE $5", 2, (const char *[]){ "owner", "al%" });
}

static void sql_metacharacters_stay_in_parameters(void **state)
{
	(void)state;
	expect_sql("jobId=\"x'; DROP TABLE jobs; --\"", "job_id = $4", 1,
		   (const char *[]){ "x'; DROP TABLE jobs; --" });
	expect_sql("jobId:50%_*", "job_id LIKE $4", 1, (const char *[]){ "50\\%\\_%" });
	expect_sql("jobId:a\\b*", "job_id LIKE $4", 1, (const char *[]){ "a\\\\b%" });
	expect_sql("labels.ключ=\"'\"", "(labels->>$4) = $5", 2, (const char *[]){ "ключ", "'" });
	expect_sql("labels.x=\"$1) OR (true\"", "(labels->>$4) = $5", 2,
		   (const char *[]){ "x", "$1) OR (true" });
}

/* A tree made by hand (as a console or an emulator might): no parser needed. */
static void a_tree_made_by_hand_compiles(void **state)
{
	struct list_filter cmp = { .kind = LIST_FILTER_CMP, .field = &test_fields[3], .key = (char *)"team",
				   .op = LIST_FILTER_HAS, .match = LIST_FILTER_PRESENT };
	struct list_filter nothing = { .kind = LIST_FILTER_CONST, .truth = false };
	struct list_filter *not_kids[] = { &cmp }, *or_kids[2];
	struct list_filter not = { .kind = LIST_FILTER_NOT, .kids = not_kids, .nkids = 1 };
	struct list_filter or = { .kind = LIST_FILTER_OR, .kids = or_kids, .nkids = 2, .fields = &fields };
	struct strbuf sql = STRBUF_INIT;
	struct store_params p = STORE_PARAMS_INIT;
	(void)state;

	or_kids[0] = &not;
	or_kids[1] = &nothing;
	assert_int_equal(store_filter_compile(&or, &jobs, &sql, &p), 0);
	assert_string_equal(sql.buf, "(NOT COALESCE(((labels->>$1) IS NOT NULL), false) OR false)");
	assert_int_equal(p.n, 1);
	assert_string_equal(p.v[0], "team");
	store_params_release(&p);
	sb_reset(&sql);
	/* NULL: no condition. */
	assert_int_equal(store_filter_compile(NULL, &jobs, &sql, &p), 0);
	assert_string_equal(sb_str(&sql), "");
	assert_int_equal(p.n, 0);
	sb_release(&sql);
}

/* A tree of another list's fields, or a field without a column, is refused. */
static void another_lists_tree_is_refused(void **state)
{
	static const struct store_filter_collection short_of_a_column = {
		"test jobs without labels", &fields, test_columns, 3
	};
	struct list_filter *f;
	struct strbuf sql = STRBUF_INIT;
	struct store_params p = STORE_PARAMS_INIT;
	char err[256];
	(void)state;

	assert_int_equal(list_filter_parse("state=x", &list_filter_custom_jobs, &f, err, sizeof(err)), 0);
	assert_int_equal(store_filter_compile(f, &store_filter_ml_jobs, &sql, &p), -1);
	assert_int_equal(store_filter_compile(f, &store_filter_pipelines, &sql, &p), -1);
	list_filter_free(f);
	assert_int_equal(list_filter_parse("state=x labels.a=b", &fields, &f, err, sizeof(err)), 0);
	assert_int_equal(store_filter_compile(f, &short_of_a_column, &sql, &p), -1);
	list_filter_free(f);
	store_params_release(&p);
	sb_release(&sql);
}

/* Each collection has a column for every field its API's list takes, and no other. */
static void every_field_has_a_column(void **state)
{
	const struct store_filter_collection *all[] = { &store_filter_ml_jobs, &store_filter_custom_jobs,
							&store_filter_pipelines, &store_filter_log_entries };
	(void)state;
	assert_ptr_equal(store_filter_ml_jobs.fields, &list_filter_ml_jobs);
	assert_ptr_equal(store_filter_custom_jobs.fields, &list_filter_custom_jobs);
	assert_ptr_equal(store_filter_pipelines.fields, &list_filter_pipelines);
	assert_ptr_equal(store_filter_log_entries.fields, &list_filter_log_entries);
	for (size_t c = 0; c < sizeof(all) / sizeof(all[0]); c++) {
		const struct store_filter_collection *col = all[c];
		assert_int_equal(col->ncolumns, col->fields->n);
		for (size_t i = 0; i < col->fields->n; i++) {
			size_t found = 0;
			for (size_t j = 0; j < col->ncolumns; j++)
				found += !strcmp(col->columns[j].field, col->fields->v[i].name);
			if (found != 1)
				fail_msg("%s: field %s has %zu columns", col->name, col->fields->v[i].name, found);
		}
	}
}

/* The real collections' columns (the same text as before the compiler moved to store/). */
static void the_collections_columns(void **state)
{
	(void)state;
	expect_sql_of(&store_filter_ml_jobs,
		      "trainingInput.scaleTier=BASIC training_input.master_type:* errorMessage:x* "
		      "trainingInput.region=r startTime<\"2030-01-01T00:00:00Z\" "
		      "endTime>\"2000-01-01T00:00:00Z\" labels.a=b",
		      "COALESCE(spec->>'scaleTier', 'BASIC') = $4 AND COALESCE(spec->>'masterType', '') <> '' "
		      "AND error_message LIKE $5 AND region = $6 AND start_time < $7::timestamptz "
		      "AND end_time > $8::timestamptz AND (labels->>$9) = $10", 7,
		      (const char *[]){ "BASIC", "x%", "r", "2030-01-01T00:00:00Z", "2000-01-01T00:00:00Z",
					"a", "b" });
	expect_sql_of(&store_filter_custom_jobs, "state=JOB_STATE_FAILED displayName:\"list_b*\"",
		      "state = $4 AND COALESCE(spec->>'displayName', '') LIKE $5", 2,
		      (const char *[]){ "FAILED", "list\\_b%" });
	expect_sql_of(&store_filter_custom_jobs, "state=JOB_STATE_NOPE OR state!=JOB_STATE_NOPE",
		      "(false OR true)", 0, NULL);
	expect_sql_of(&store_filter_pipelines,
		      "state=PIPELINE_STATE_QUEUED display_name=d training_task_definition:gs*",
		      "state = $4 AND COALESCE(spec->'_pipeline'->>'displayName', '') = $5 AND "
		      "COALESCE(spec->'_pipeline'->>'trainingTaskDefinition', '') LIKE $6", 3,
		      (const char *[]){ "QUEUED", "d", "gs%" });
	expect_sql_of(&store_filter_log_entries,
		      "resource.type=\"ml_job\" AND resource.labels.job_id=\"j1\" AND "
		      "timestamp>=\"2021-05-18T10:00:00Z\" labels.task_name:master* severity=ERROR "
		      "logName:x resource.labels.project_id=p textPayload:* resource.labels.task_name=t",
		      "'ml_job' = $4 AND j.job_id = $5 AND l.time >= $6::timestamptz AND l.task LIKE $7 AND "
		      "(CASE l.stream WHEN 'stderr' THEN 'ERROR' WHEN 'error' THEN 'ERROR' "
		      "WHEN 'warning' THEN 'WARNING' ELSE 'INFO' END) = $8 AND "
		      "('projects/' || j.project || '/logs/' || l.task) = $9 AND j.project = $10 AND "
		      "l.text <> '' AND l.task = $11", 8,
		      (const char *[]){ "ml_job", "j1", "2021-05-18T10:00:00Z", "master%", "ERROR", "x", "p",
					"t" });
}

/* --- the whole statements, taken from the runner ------------------------------- */

static char *sent_sql;
static char *sent_params[128];
static int sent_n;

static void forget_sent(void)
{
	free(sent_sql);
	sent_sql = NULL;
	for (int i = 0; i < sent_n; i++)
		free(sent_params[i]);
	sent_n = 0;
}

/* The runner, mocked: the list calls link store/ (archive) with these
 * (-Wl,--wrap): what would go to PostgreSQL is kept, and the database is
 * "unavailable". */
struct store_conn *__wrap_store_acquire(struct store *st);
void __wrap_store_release(struct store *st, struct store_conn *c);
PGresult *__wrap_store_exec_sql(struct store_conn *c, const char *sql, bool readonly, int nparams,
				const char *const *params, enum store_rc *rc);

struct store_conn *__wrap_store_acquire(struct store *st)
{
	assert_ptr_equal(st, (struct store *)&sent_sql);
	return (struct store_conn *)&sent_n;
}

void __wrap_store_release(struct store *st, struct store_conn *c)
{
	assert_ptr_equal(st, (struct store *)&sent_sql);
	assert_ptr_equal(c, (struct store_conn *)&sent_n);
}

PGresult *__wrap_store_exec_sql(struct store_conn *c, const char *sql, bool readonly, int nparams,
				const char *const *params, enum store_rc *rc)
{
	assert_ptr_equal(c, (struct store_conn *)&sent_n);
	assert_true(readonly);
	assert_true(nparams <= 128);
	forget_sent();
	sent_sql = strdup(sql);
	for (int i = 0; i < nparams; i++)
		sent_params[i] = strdup(params[i]);
	sent_n = nparams;
	*rc = STORE_UNAVAILABLE;
	return NULL;
}

#define ST ((struct store *)&sent_sql)

/* The statement sent, from " FROM jobs WHERE " on (the columns are store_job.c's). */
static const char *jobs_where(void)
{
	assert_non_null(sent_sql);
	assert_memory_equal(sent_sql, "SELECT id, project, api, job_id", 31);
	const char *w = strstr(sent_sql, " FROM jobs WHERE ");
	assert_non_null(w);
	return w;
}

static void expect_params(int n, const char **want)
{
	assert_int_equal(sent_n, n);
	for (int i = 0; i < n; i++)
		assert_string_equal(sent_params[i], want[i]);
}

static struct list_filter *parse(const char *text, const struct list_filter_fields *fs)
{
	struct list_filter *f;
	char err[256];
	if (list_filter_parse(text, fs, &f, err, sizeof(err)))
		fail_msg("\"%s\": %s", text, err);
	return f;
}

static void job_lists_send_their_statement(void **state)
{
	struct job_rows *rows = (struct job_rows *)&rows;
	struct list_filter *f;
	(void)state;

	/* ml: the project's jobs; the filter ANDed in parentheses. */
	assert_int_equal(store_job_list(ST, STORE_LIST_ML_JOBS, "p", NULL, 0, 21, NULL, &rows),
			 STORE_UNAVAILABLE);
	assert_null(rows);
	assert_string_equal(jobs_where(), " FROM jobs WHERE api = $1 AND project = $2 AND id < $3 "
					  "AND id > 0 AND parent IS NULL ORDER BY id DESC LIMIT 21");
	expect_params(3, (const char *[]){ "ml", "p", "9223372036854775807" });

	f = parse("jobId:census* AND state:FAILED", &list_filter_ml_jobs);
	assert_int_equal(store_job_list(ST, STORE_LIST_ML_JOBS, "p", NULL, 42, 3, f, &rows),
			 STORE_UNAVAILABLE);
	assert_string_equal(jobs_where(), " FROM jobs WHERE api = $1 AND project = $2 AND id < $3 "
					  "AND id > 0 AND parent IS NULL AND (job_id LIKE $4 AND state = $5) ORDER BY id DESC LIMIT 3");
	expect_params(5, (const char *[]){ "ml", "p", "42", "census%", "FAILED" });
	list_filter_free(f);

	/* Vertex: one location, no tuning job; its filter after it. */
	assert_int_equal(store_job_list(ST, STORE_LIST_CUSTOM_JOBS, "p", "us-central1", 0, 21, NULL, &rows),
			 STORE_UNAVAILABLE);
	assert_string_equal(jobs_where(), " FROM jobs WHERE api = $1 AND project = $2 AND id < $3 "
					  "AND id > 0 AND parent IS NULL AND (region = $4 AND NOT spec ? 'studySpec') "
					  "ORDER BY id DESC LIMIT 21");
	expect_params(4, (const char *[]){ "vertex", "p", "9223372036854775807", "us-central1" });

	f = parse("labels.kind=list AND state=\"JOB_STATE_CANCELLED\"", &list_filter_custom_jobs);
	assert_int_equal(store_job_list(ST, STORE_LIST_CUSTOM_JOBS, "p", "l", 7, 2, f, &rows),
			 STORE_UNAVAILABLE);
	assert_string_equal(jobs_where(), " FROM jobs WHERE api = $1 AND project = $2 AND id < $3 "
					  "AND id > 0 AND parent IS NULL AND (region = $4 AND NOT spec ? 'studySpec' AND "
					  "((labels->>$5) = $6 AND state = $7)) ORDER BY id DESC LIMIT 2");
	expect_params(7, (const char *[]){ "vertex", "p", "7", "l", "kind", "list", "CANCELLED" });

	/* Tuning jobs: the jobs with a study, filtered as custom jobs are. */
	assert_int_equal(store_job_list(ST, STORE_LIST_TUNING_JOBS, "p", "l", 7, 2, f, &rows),
			 STORE_UNAVAILABLE);
	assert_string_equal(jobs_where(), " FROM jobs WHERE api = $1 AND project = $2 AND id < $3 "
					  "AND id > 0 AND parent IS NULL AND (region = $4 AND spec ? 'studySpec' AND "
					  "((labels->>$5) = $6 AND state = $7)) ORDER BY id DESC LIMIT 2");
	expect_params(7, (const char *[]){ "vertex", "p", "7", "l", "kind", "list", "CANCELLED" });
	list_filter_free(f);

	/* Pipelines: the jobs that hold a pipeline's record. */
	assert_int_equal(store_job_list(ST, STORE_LIST_PIPELINES, "p", "l", 0, 21, NULL, &rows),
			 STORE_UNAVAILABLE);
	assert_string_equal(jobs_where(), " FROM jobs WHERE api = $1 AND project = $2 AND id < $3 "
					  "AND id > 0 AND parent IS NULL AND (region = $4 AND spec ? '_pipeline') "
					  "ORDER BY id DESC LIMIT 21");
	expect_params(4, (const char *[]){ "vertex", "p", "9223372036854775807", "l" });

	f = parse("display_name=\"nope\"", &list_filter_pipelines);
	assert_int_equal(store_job_list(ST, STORE_LIST_PIPELINES, "p", "l", 0, 21, f, &rows),
			 STORE_UNAVAILABLE);
	assert_string_equal(jobs_where(), " FROM jobs WHERE api = $1 AND project = $2 AND id < $3 "
					  "AND id > 0 AND parent IS NULL AND (region = $4 AND spec ? '_pipeline' AND "
					  "(COALESCE(spec->'_pipeline'->>'displayName', '') = $5)) ORDER BY id DESC LIMIT 21");
	expect_params(5, (const char *[]){ "vertex", "p", "9223372036854775807", "l", "nope" });

	/* A tree of another list: nothing is sent. */
	forget_sent();
	rows = (struct job_rows *)&rows;
	assert_int_equal(store_job_list(ST, STORE_LIST_CUSTOM_JOBS, "p", "l", 0, 21, f, &rows), STORE_ERROR);
	assert_null(rows);
	assert_null(sent_sql);
	list_filter_free(f);
}

static void log_lists_send_their_statement(void **state)
{
	json_t *entries = (json_t *)&entries;
	struct list_filter *f = parse("resource.labels.job_id=\"j1\" AND timestamp>=\"2021-05-18T10:00:00Z\"",
				      &list_filter_log_entries);
	(void)state;

	assert_int_equal(store_log_list(ST, "p", false, 0, 0, 51, NULL, &entries), STORE_UNAVAILABLE);
	assert_null(entries);
	const char *w = strstr(sent_sql, " FROM (SELECT l.*");
	assert_non_null(w);
	assert_string_equal(w, " FROM (SELECT l.*, j.project, j.job_id FROM log_entries l JOIN jobs j "
			       "ON j.id = l.job WHERE j.project = $1 AND ($3::int8 = 0 OR (l.time, l.id) > "
			       "(to_timestamp($2::int8 / 1000000.0), $3::int8)) ORDER BY l.time ASC, l.id ASC "
			       "LIMIT 51) l");
	expect_params(3, (const char *[]){ "p", "0", "0" });

	assert_int_equal(store_log_list(ST, "p", true, 1500000, 9, 2, f, &entries), STORE_UNAVAILABLE);
	w = strstr(sent_sql, " FROM (SELECT l.*");
	assert_non_null(w);
	assert_string_equal(w, " FROM (SELECT l.*, j.project, j.job_id FROM log_entries l JOIN jobs j "
			       "ON j.id = l.job WHERE j.project = $1 AND ($3::int8 = 0 OR (l.time, l.id) < "
			       "(to_timestamp($2::int8 / 1000000.0), $3::int8)) AND (j.job_id = $4 AND "
			       "l.time >= $5::timestamptz) ORDER BY l.time DESC, l.id DESC LIMIT 2) l");
	expect_params(5, (const char *[]){ "p", "1500000", "9", "j1", "2021-05-18T10:00:00Z" });
	list_filter_free(f);

	/* A tree of another list: nothing is sent. */
	forget_sent();
	f = parse("jobId=x", &list_filter_ml_jobs);
	assert_int_equal(store_log_list(ST, "p", false, 0, 0, 51, f, &entries), STORE_ERROR);
	assert_null(sent_sql);
	list_filter_free(f);
}

static int teardown(void **state)
{
	(void)state;
	forget_sent();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reference_examples_compile),
		cmocka_unit_test(operators_and_grouping),
		cmocka_unit_test(labels_take_the_key_as_a_parameter),
		cmocka_unit_test(sql_metacharacters_stay_in_parameters),
		cmocka_unit_test(a_tree_made_by_hand_compiles),
		cmocka_unit_test(another_lists_tree_is_refused),
		cmocka_unit_test(every_field_has_a_column),
		cmocka_unit_test(the_collections_columns),
		cmocka_unit_test(job_lists_send_their_statement),
		cmocka_unit_test(log_lists_send_their_statement),
	};
	return cmocka_run_group_tests_name("store_filter", tests, NULL, teardown);
}
