/* Unit tests: partial-response masks and the JSON text writer
 * (server/fields.c): Google's mask syntax, selection through objects and
 * arrays, "*", and the pretty and compact layouts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fields.h"

static const char job[] =
	"{\"jobId\":\"j1\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\",\"region\":\"us-central1\","
	"\"args\":[\"--a\",\"1\"],\"masterConfig\":{\"imageUri\":\"x:1\"}},\"state\":\"QUEUED\","
	"\"labels\":{},\"n\":0.30000000000000004,\"ok\":true,\"none\":null,\"esc\":\"a\\\"b\\\\\"}";

/* The text rewritten under mask (NULL: none), pretty or not; caller frees. */
static char *rewrite(const char *text, const char *mask, bool pretty)
{
	struct fields *f = NULL;
	struct strbuf out = STRBUF_INIT;
	char err[160];

	if (mask)
		assert_int_equal(fields_parse(mask, &f, err, sizeof(err)), 0);
	assert_int_equal(json_rewrite(text, strlen(text), f, pretty, &out), 0);
	fields_free(f);
	return sb_detach(&out);
}

#define assert_rewrite(text, mask, pretty, want) \
	do { \
		char *got_ = rewrite(text, mask, pretty); \
		assert_string_equal(got_, want); \
		free(got_); \
	} while (0)

static void pretty_is_googles_layout(void **state)
{
	(void)state;
	assert_rewrite("{\"a\":1,\"b\":[1,{\"c\":\"x\"}],\"d\":{},\"e\":[]}", NULL, true,
		       "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    {\n      \"c\": \"x\"\n    }\n  ],\n"
		       "  \"d\": {},\n  \"e\": []\n}\n");
	assert_rewrite("{}", NULL, true, "{}\n");
	/* Whitespace in (jsonb's text) is laid out again; tokens are kept as they are. */
	assert_rewrite(" { \"a\" : [ 1 , 2.50 ] ,\n\"b\":\"x y\" } ", NULL, false, "{\"a\":[1,2.50],\"b\":\"x y\"}");
	assert_rewrite("{\"s\":\"q\\\"\\\\\",\"u\":\"\xc3\xa9\\u0001\"}", NULL, true,
		       "{\n  \"s\": \"q\\\"\\\\\",\n  \"u\": \"\xc3\xa9\\u0001\"\n}\n");
}

static void selects_top_level_nested_and_through_arrays(void **state)
{
	(void)state;
	assert_rewrite(job, "jobId,state", false, "{\"jobId\":\"j1\",\"state\":\"QUEUED\"}");
	assert_rewrite(job, "state,jobId", false, "{\"jobId\":\"j1\",\"state\":\"QUEUED\"}");
	assert_rewrite(job, "trainingInput/region", false, "{\"trainingInput\":{\"region\":\"us-central1\"}}");
	assert_rewrite(job, "trainingInput.masterConfig.imageUri", false,
		       "{\"trainingInput\":{\"masterConfig\":{\"imageUri\":\"x:1\"}}}");
	assert_rewrite(job, "trainingInput(region,args)", false,
		       "{\"trainingInput\":{\"region\":\"us-central1\",\"args\":[\"--a\",\"1\"]}}");
	assert_rewrite(job, "n,ok,none,esc", false,
		       "{\"n\":0.30000000000000004,\"ok\":true,\"none\":null,\"esc\":\"a\\\"b\\\\\"}");
	assert_rewrite(job, "labels,nothing", false, "{\"labels\":{}}");
	/* A path through a scalar selects nothing of it. */
	assert_rewrite(job, "jobId/x,trainingInput/args/y", false, "{\"trainingInput\":{\"args\":[]}}");
	assert_rewrite("{\"jobs\":[{\"jobId\":\"a\",\"state\":\"S\",\"x\":1},{\"jobId\":\"b\"}],"
		       "\"nextPageToken\":\"t\"}", "jobs(jobId,state),nextPageToken", false,
		       "{\"jobs\":[{\"jobId\":\"a\",\"state\":\"S\"},{\"jobId\":\"b\"}],\"nextPageToken\":\"t\"}");
	assert_rewrite("{\"jobs\":[{\"jobId\":\"a\",\"x\":1}]}", "jobs/jobId", true,
		       "{\n  \"jobs\": [\n    {\n      \"jobId\": \"a\"\n    }\n  ]\n}\n");
	/* An escaped key matches no name; a key is matched whole and by case. */
	assert_rewrite("{\"a\\u0062\":1,\"ab\":2,\"Ab\":3,\"abc\":4}", "ab", false, "{\"ab\":2}");
}

static void star_and_unions(void **state)
{
	struct fields *f = (struct fields *)1;
	char err[160];

	(void)state;
	assert_int_equal(fields_parse("*", &f, err, sizeof(err)), 0);
	assert_null(f);
	assert_int_equal(fields_parse("", &f, err, sizeof(err)), 0);
	assert_null(f);
	assert_int_equal(fields_parse("jobId,*", &f, err, sizeof(err)), 0);
	assert_null(f);
	assert_rewrite(job, "trainingInput/*", false,
		       "{\"trainingInput\":{\"scaleTier\":\"CUSTOM\",\"region\":\"us-central1\","
		       "\"args\":[\"--a\",\"1\"],\"masterConfig\":{\"imageUri\":\"x:1\"}}}");
	assert_rewrite("{\"a\":{\"x\":1,\"y\":2},\"b\":{\"x\":3,\"z\":4}}", "*/x", false,
		       "{\"a\":{\"x\":1},\"b\":{\"x\":3}}");
	assert_rewrite("{\"a\":{\"x\":1,\"y\":2},\"b\":{\"x\":3,\"z\":4}}", "*(x),a/y", false,
		       "{\"a\":{\"x\":1,\"y\":2},\"b\":{\"x\":3}}");
	assert_rewrite("{\"a\":{\"x\":1,\"y\":2},\"b\":{\"x\":3}}", "a/x,a", false, "{\"a\":{\"x\":1,\"y\":2}}");
	assert_rewrite("{\"a\":{\"x\":1,\"y\":2},\"b\":{\"x\":3}}", "a(x),a(y)", false, "{\"a\":{\"x\":1,\"y\":2}}");
	assert_rewrite(job, "jobId,", false, "{\"jobId\":\"j1\"}");
}

static void syntax_errors_say_where(void **state)
{
	static const struct {
		const char *mask, *err;
	} bad[] = {
		{ "jobs(", "expected a field name at the end" },
		{ "jobs(a", "expected ',' or ')' at the end" },
		{ "a)", "expected ',' at character 2 (')')" },
		{ "a,,b", "expected a field name at character 3 (',')" },
		{ ",a", "expected a field name at character 1 (',')" },
		{ "a//b", "expected a field name at character 3 ('/')" },
		{ "a/", "expected a field name at the end" },
		{ "a()", "expected a field name at character 3 (')')" },
		{ "a b", "expected ',' at character 2 (byte 0x20)" },
		{ "a*", "expected ',' at character 2 ('*')" },
		{ "*a", "'*' stands for a whole name: unexpected character at character 2 ('a')" },
		{ "a(b)c", "expected ',' at character 5 ('c')" },
		{ "a\tb", "expected ',' at character 2 (byte 0x09)" },
	};
	char err[160];
	struct fields *f;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(fields_parse(bad[i].mask, &f, err, sizeof(err)), -1);
		assert_null(f);
		assert_string_equal(err, bad[i].err);
	}
}

static void limits_hold(void **state)
{
	struct strbuf m = STRBUF_INIT;
	struct fields *f;
	char err[160];

	(void)state;
	for (int i = 0; i < FIELDS_MAX_DEPTH; i++)
		sb_addstr(&m, "a(");
	sb_addstr(&m, "b");
	for (int i = 0; i < FIELDS_MAX_DEPTH; i++)
		sb_addch(&m, ')');
	assert_int_equal(fields_parse(sb_str(&m), &f, err, sizeof(err)), 0);
	fields_free(f);
	sb_reset(&m);
	for (int i = 0; i <= FIELDS_MAX_DEPTH; i++)
		sb_addstr(&m, "a(");
	assert_int_equal(fields_parse(sb_str(&m), &f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "nest too deep"));
	/* "*" merged into many names, many levels deep: bounded, not exponential. */
	sb_reset(&m);
	for (int i = 0; i < 300; i++)
		sb_addf(&m, "n%d/x,", i);
	sb_addstr(&m, "*/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u");
	assert_int_equal(fields_parse(sb_str(&m), &f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "more than 4096 fields"));
	sb_release(&m);
}

static void bad_text_is_refused(void **state)
{
	static const char *const bad[] = { "", "{", "{\"a\"}", "{\"a\":}", "[1,]x", "{\"a\":1}}", "\"open",
					   "{\"a\":1,}", "[1 2]" };
	struct strbuf out = STRBUF_INIT;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sb_reset(&out);
		assert_int_equal(json_rewrite(bad[i], strlen(bad[i]), NULL, true, &out), -1);
	}
	sb_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pretty_is_googles_layout),
		cmocka_unit_test(selects_top_level_nested_and_through_arrays),
		cmocka_unit_test(star_and_unions),
		cmocka_unit_test(syntax_errors_say_where),
		cmocka_unit_test(limits_hold),
		cmocka_unit_test(bad_text_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
