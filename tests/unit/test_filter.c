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
#include "wire.h"

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

static const unsigned char key[PAGING_KEY_BYTES] = "0123456789abcdef0123456789abcdef";

/* A token for one position under (list method, project, filter). */
static char *make1(int64_t pos, const char *project, const char *filter)
{
	const char *scope[] = { "ml.projects.jobs.list", project, filter };
	return paging_token_make(key, scope, 3, &pos, 1);
}

static int read1(const char *t, const char *project, const char *filter, int64_t *pos)
{
	const char *scope[] = { "ml.projects.jobs.list", project, filter };
	return paging_token_read(key, scope, 3, t, pos, 1);
}

static void page_tokens_are_bound_to_their_filter(void **state)
{
	int64_t pos;
	char *t = make1(12345, "p", "state:FAILED");
	(void)state;
	assert_null(strpbrk(t, "+/="));	/* url-safe as a query value */
	assert_int_equal(read1(t, "p", "state:FAILED", &pos), 0);
	assert_true(pos == 12345);
	assert_int_equal(read1(t, "p", "state:QUEUED", &pos), -1);
	assert_int_equal(read1(t, "p", NULL, &pos), -1);
	free(t);
	t = make1(7, "p", NULL);
	assert_int_equal(read1(t, "p", NULL, &pos), 0);
	assert_int_equal(read1(t, "p", "", &pos), 0);	/* no filter = empty filter */
	free(t);
	assert_int_equal(read1("garbage!", "p", NULL, &pos), -1);
	assert_int_equal(read1("dHAxLi0xLjgxMWM5ZGM1", "p", NULL, &pos), -1);	/* tp1.-1.811c9dc5 */
	assert_int_equal(read1("", "p", NULL, &pos), -1);
	assert_int_equal(read1(NULL, "p", NULL, &pos), -1);
}

static void page_tokens_are_bound_to_their_scope_and_key(void **state)
{
	static const unsigned char other_key[PAGING_KEY_BYTES] = "0123456789abcdef0123456789abcdeF";
	int64_t pos = 42, got;
	char *t = make1(pos, "team-a", "x");
	(void)state;
	assert_int_equal(read1(t, "team-a", "x", &got), 0);
	assert_int_equal(read1(t, "team-b", "x", &got), -1);	/* another project */
	/* Parts are not run together: ("team-a", "x") is not ("team-ax", ""). */
	assert_int_equal(read1(t, "team-ax", "", &got), -1);
	const char *scope[] = { "ml.projects.jobs.list", "team-a", "x" };
	const char *other_method[] = { "ml.projects.locations.list", "team-a", "x" };
	assert_int_equal(paging_token_read(key, other_method, 3, t, &got, 1), -1);
	assert_int_equal(paging_token_read(key, scope, 2, t, &got, 1), -1);	/* a part left out */
	assert_int_equal(paging_token_read(other_key, scope, 3, t, &got, 1), -1);
	int64_t two[2];
	assert_int_equal(paging_token_read(key, scope, 3, t, two, 2), -1);	/* not a 2-position token */
	free(t);
}

/* Any one bit flipped, any cut or extension: refused; never a crash. */
static void page_tokens_are_tamper_evident(void **state)
{
	const int64_t pos[2] = { INT64_MAX, INT64_MIN };
	const char *scope[] = { "logging.entries.list", "p", "", "desc" };
	int64_t got[2];
	char *t = paging_token_make(key, scope, 4, pos, 2);
	(void)state;
	assert_int_equal(paging_token_read(key, scope, 4, t, got, 2), 0);
	assert_true(got[0] == INT64_MAX && got[1] == INT64_MIN);

	unsigned char raw[64];
	long n = wire_base64_decode(t, raw, sizeof(raw), true);
	assert_true(n > 16);
	for (long bit = 0; bit < n * 8; bit++) {
		raw[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		char *bad = wire_base64_encode(raw, (size_t)n, true);
		assert_int_equal(paging_token_read(key, scope, 4, bad, got, 2), -1);
		free(bad);
		raw[bit / 8] ^= (unsigned char)(1u << (bit % 8));
	}
	for (long len = 0; len < n; len++) {
		char *cut = wire_base64_encode(raw, (size_t)len, true);
		assert_int_equal(paging_token_read(key, scope, 4, cut, got, 2), -1);
		free(cut);
	}
	raw[n] = 0;
	char *longer = wire_base64_encode(raw, (size_t)n + 1, true);
	assert_int_equal(paging_token_read(key, scope, 4, longer, got, 2), -1);
	free(longer);
	free(t);
}

/* The position is not in the token in clear, in any byte order or as text;
 * one position and scope always make the same token. */
static void page_tokens_hide_the_position(void **state)
{
	const int64_t pos = 0x0102030405060708;
	char *t = make1(pos, "p", NULL), *again = make1(pos, "p", NULL), *next = make1(pos + 1, "p", NULL);
	unsigned char raw[64], be[8], le[8];
	(void)state;
	assert_string_equal(t, again);
	assert_string_not_equal(t, next);
	long n = wire_base64_decode(t, raw, sizeof(raw), true);
	assert_int_equal(n, 1 + 16 + 8);
	for (int i = 0; i < 8; i++) {
		be[i] = (unsigned char)(pos >> (56 - 8 * i));
		le[i] = (unsigned char)(pos >> (8 * i));
	}
	assert_null(memmem(raw, (size_t)n, be, 8));
	assert_null(memmem(raw, (size_t)n, le, 8));
	assert_null(memmem(raw, (size_t)n, "72623859790382856", 17));	/* pos in decimal */
	free(t);
	free(again);
	free(next);
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
		cmocka_unit_test(page_tokens_are_bound_to_their_scope_and_key),
		cmocka_unit_test(page_tokens_are_tamper_evident),
		cmocka_unit_test(page_tokens_hide_the_position),
	};
	return cmocka_run_group_tests_name("filter", tests, NULL, NULL);
}
