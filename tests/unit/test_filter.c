/* Unit tests: list filters compiled to SQL, page tokens and sizes (server/filter.c, paging.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "filter.h"
#include "paging.h"

static const struct filter_field fields[] = {
	{ "state", NULL, "state", FILTER_TEXT, NULL },
	{ "jobId", "job_id", "job_id", FILTER_TEXT, NULL },
	{ "createTime", "create_time", "create_time", FILTER_TIME, NULL },
	{ "labels", NULL, "labels", FILTER_MAP, NULL },
};
#define NF (sizeof(fields) / sizeof(fields[0]))

static void expect_sql(const char *filter, const char *where, int nparams, const char **params)
{
	struct filter_sql f;
	char err[256];

	if (filter_compile(filter, fields, NF, 4, &f, err, sizeof(err)))
		fail_msg("\"%s\": %s", filter, err);
	assert_string_equal(f.where, where);
	assert_int_equal(f.nparams, nparams);
	for (int i = 0; i < nparams; i++)
		assert_string_equal(f.params[i], params[i]);
	filter_sql_release(&f);
}

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
}

static void labels_take_the_key_as_a_parameter(void **state)
{
	(void)state;
	expect_sql("labels.owner=alice", "(labels->>$4) = $5", 2,
		   (const char *[]){ "owner", "alice" });
	expect_sql("labels.team:*", "(labels->>$4) IS NOT NULL", 1, (const char *[]){ "team" });
}

static void sql_metacharacters_stay_in_parameters(void **state)
{
	(void)state;
	expect_sql("jobId=\"x'; DROP TABLE jobs; --\"", "job_id = $4", 1,
		   (const char *[]){ "x'; DROP TABLE jobs; --" });
	expect_sql("jobId:50%_*", "job_id LIKE $4", 1, (const char *[]){ "50\\%\\_%" });
	expect_sql("labels.ключ=\"'\"", "(labels->>$4) = $5", 2, (const char *[]){ "ключ", "'" });
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
		{ "AND", "Invalid filter: expected an operator after 'AND'" },
		{ "labels.a'b=c", "Invalid filter: expected an operator after 'labels.a'" },
	};
	struct filter_sql f;
	char err[256];
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(filter_compile(cases[i].filter, fields, NF, 4, &f, err, sizeof(err)), -1);
		assert_string_equal(err, cases[i].want);
	}
	char deep[200];
	memset(deep, '(', 100);
	strcpy(deep + 100, "state:A");
	assert_int_equal(filter_compile(deep, fields, NF, 4, &f, err, sizeof(err)), -1);
	assert_string_equal(err, "Invalid filter: nested too deeply");
}

static void page_size_defaults_clamps_and_refuses(void **state)
{
	int n;
	(void)state;
	assert_int_equal(paging_size(NULL, &n), 0);
	assert_int_equal(n, 20);
	assert_int_equal(paging_size("0", &n), 0);
	assert_int_equal(n, 20);
	assert_int_equal(paging_size("7", &n), 0);
	assert_int_equal(n, 7);
	assert_int_equal(paging_size("1000", &n), 0);
	assert_int_equal(n, 100);
	assert_int_equal(paging_size("-1", &n), -1);
	assert_int_equal(paging_size("ten", &n), -1);
}

static void page_tokens_are_bound_to_their_filter(void **state)
{
	int64_t pos;
	char *t = paging_token_make(12345, "state:FAILED");
	(void)state;
	assert_null(strpbrk(t, "+/="));	/* url-safe as a query value */
	assert_int_equal(paging_token_read(t, "state:FAILED", &pos), 0);
	assert_true(pos == 12345);
	assert_int_equal(paging_token_read(t, "state:QUEUED", &pos), -1);
	assert_int_equal(paging_token_read(t, NULL, &pos), -1);
	free(t);
	t = paging_token_make(7, NULL);
	assert_int_equal(paging_token_read(t, NULL, &pos), 0);
	assert_int_equal(paging_token_read(t, "", &pos), 0);	/* no filter = empty filter */
	free(t);
	assert_int_equal(paging_token_read("garbage!", NULL, &pos), -1);
	assert_int_equal(paging_token_read("dHAxLi0xLjgxMWM5ZGM1", NULL, &pos), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reference_examples_compile),
		cmocka_unit_test(operators_and_grouping),
		cmocka_unit_test(labels_take_the_key_as_a_parameter),
		cmocka_unit_test(sql_metacharacters_stay_in_parameters),
		cmocka_unit_test(errors_say_what_is_wrong),
		cmocka_unit_test(page_size_defaults_clamps_and_refuses),
		cmocka_unit_test(page_tokens_are_bound_to_their_filter),
	};
	return cmocka_run_group_tests_name("filter", tests, NULL, NULL);
}
