/*
 * test_cli_format.c - the CLI's gcloud output language (cli/format.c,
 * cli/filter.c, cli/yaml_emit.c): YAML and JSON byte for byte as gcloud 528
 * prints them (the expected texts were printed by gcloud's own emitter,
 * ruamel.yaml, and Python's json.dumps), projections, transforms, tables,
 * --filter expressions, and the errors of bad formats and filters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli.h"
#include "format.h"

static const char yaml_in[] =
		"{\"args\":[\"--x\",\"1\",\"- y\",\"a: b\",\"#c\",\"x #y\",\"yes\",\"null\",\"\",\"~\",\"1.5\",\"0x1F"
		"\",\"2026-01-01\",\"2026-11-26T19:19:53Z\",\"t\\tab\",\"caf\\u00e9\",\"it's\",\"multi\\nline\\n\",\""
		"lead\\nx\",\"=\",\"<<\",\" sp\",\"sp \",\"a,b\",\"[x]\",\"@x\",\"%x\"],\"long\":\"The replica master"
		" 0 could not be started: the process runtime needs a command: the replica has none (an image's defau"
		"lt entrypoint needs a container runtime)\",\"longplain\":\"aaaa bbbb cccc dddd eeee ffff gggg hhhh i"
		"iii jjjj kkkk llll mmmm nnnn oooo pppp qqqq rrrr ssss tttt\",\"nested\":{\"deep\":{\"k\":\"The repli"
		"ca master 0 could not be started: the process runtime needs a command\"}},\"pools\":[{\"a\":1,\"b\":"
		"[1,2],\"c\":{}},[1,[]]],\"n\":3,\"f\":0.5,\"b\":true,\"z\":null,\"e\":[]}";
static const char yaml_want[] =
		"args:\n"
		"- --x\n"
		"- '1'\n"
		"- '- y'\n"
		"- 'a: b'\n"
		"- '#c'\n"
		"- 'x #y'\n"
		"- yes\n"
		"- 'null'\n"
		"- ''\n"
		"- '~'\n"
		"- '1.5'\n"
		"- '0x1F'\n"
		"- '2026-01-01'\n"
		"- '2026-11-26T19:19:53Z'\n"
		"- \"t\\tab\"\n"
		"- café\n"
		"- it's\n"
		"- |\n"
		"  multi\n"
		"  line\n"
		"- |-\n"
		"  lead\n"
		"  x\n"
		"- '='\n"
		"- '<<'\n"
		"- ' sp'\n"
		"- 'sp '\n"
		"- a,b\n"
		"- '[x]'\n"
		"- '@x'\n"
		"- '%x'\n"
		"b: true\n"
		"e: []\n"
		"f: 0.5\n"
		"long: \"The replica master 0 could not be started: the process runtime needs a command:\\\n"
		"  \\ the replica has none (an image's default entrypoint needs a container runtime)\"\n"
		"longplain: aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm nnnn oooo\n"
		"  pppp qqqq rrrr ssss tttt\n"
		"n: 3\n"
		"nested:\n"
		"  deep:\n"
		"    k: 'The replica master 0 could not be started: the process runtime needs a command'\n"
		"pools:\n"
		"- a: 1\n"
		"  b:\n"
		"  - 1\n"
		"  - 2\n"
		"  c: {}\n"
		"- - 1\n"
		"  - []\n"
		"z: null\n";

/* cli_yaml() of the JSON text in prints want. */
static void assert_yaml(const char *in, const char *want)
{
	json_error_t e;
	json_t *j = json_loads(in, 0, &e);
	if (!j)
		fail_msg("%s", e.text);
	struct strbuf sb = STRBUF_INIT;
	cli_yaml(&sb, j);
	assert_string_equal(sb_str(&sb), want);
	sb_release(&sb);
	json_decref(j);
}

static void yaml_is_gclouds(void **state)
{
	(void)state;
	assert_yaml(yaml_in, yaml_want);
}

/*
 * A double-quoted string folded right after an escape (a shell command
 * line's \"): ruamel computes the column with Python's ints there (the
 * text before the fold is empty); gcloud's own emitter printed the text.
 */
static void yaml_folds_after_an_escape(void **state)
{
	static const char in[] =
		"{\"shell\": \"x=0; for a in \\\"$@\\\"; do case \\\"$a\\\" in --x=*) x=${a#--x=};; esac; do"
		"ne; printf '{\\\"accuracy\\\": \\\"%s\\\", \\\"global_step\\\": \\\"1\\\", \\\"trial\\\": \\\"1\\\", \\\"t"
		"imestamp\\\": 1.0}\\\\n' \\\"$x\\\" > \\\"$CLOUD_ML_HP_METRIC_FILE\\\"\"}";
	static const char want[] =
		"shell: \"x=0; for a in \\\"$@\\\"; do case \\\"$a\\\" in --x=*) x=${a#--x=};; esac; done; printf\\\n"
		"  \\ '{\\\"accuracy\\\": \\\"%s\\\", \\\"global_step\\\": \\\"1\\\", \\\"trial\\\": \\\"1\\\", \\\"timestamp\\\"\\\n"
		"  : 1.0}\\\\n' \\\"$x\\\" > \\\"$CLOUD_ML_HP_METRIC_FILE\\\"\"\n";
	(void)state;
	assert_yaml(in, want);
}

static void json_is_pythons(void **state)
{
	(void)state;
	json_t *j = json_pack("{s:[f,f,f,f,f,f,f], s:s, s:{}, s:[]}", "f", 0.1, 1e16, 1e-5, 100.0, 2.5e-7,
			      123456789.0, 0.0, "s", "q\"b\\s\n\001\xc3\xa9", "e", "a");
	struct strbuf sb = STRBUF_INIT;
	fmt_json(&sb, j);
	assert_string_equal(sb_str(&sb),
			    "{\n  \"a\": [],\n  \"e\": {},\n  \"f\": [\n    0.1,\n    1e+16,\n    1e-05,\n"
			    "    100.0,\n    2.5e-07,\n    123456789.0,\n    0.0\n  ],\n"
			    "  \"s\": \"q\\\"b\\\\s\\n\\u0001\xc3\xa9\"\n}\n");
	sb_release(&sb);
	json_decref(j);
}

static const char job_json[] =
	"{\"jobId\":\"job_a\",\"state\":\"FAILED\",\"createTime\":\"2026-11-26T19:19:53.116169Z\","
	"\"errorMessage\":\"it broke\",\"labels\":{\"team\":\"x\",\"env\":\"dev\"},"
	"\"trainingInput\":{\"region\":\"us-central1\",\"args\":[\"--a\",\"1\"],"
	"\"masterConfig\":{\"imageUri\":\"localhost/t:1\"}},\"trainingOutput\":{\"consumedMLUnits\":0.0},"
	"\"name\":\"projects/demo/jobs/job_a\"}";

static char *render(const char *format, const json_t *v, int list)
{
	char *err = NULL;
	struct fmt *f = fmt_parse(format, &err);
	if (!f)
		fail_msg("%s: %s", format, err);
	struct strbuf sb = STRBUF_INIT;
	fmt_print(&sb, f, v, list);
	fmt_free(f);
	return sb_detach(&sb);
}

#define assert_format(format, v, list, want)                                                                 \
	do {                                                                                                 \
		char *got_ = render(format, v, list);                                                        \
		assert_string_equal(got_, want);                                                             \
		free(got_);                                                                                  \
	} while (0)

static void projections(void **state)
{
	(void)state;
	json_t *j = json_loads(job_json, 0, NULL);
	assert_format("value(state)", j, 0, "FAILED\n");
	assert_format("value(state,errorMessage)", j, 0, "FAILED\tit broke\n");
	assert_format("value(trainingInput.region)", j, 0, "us-central1\n");
	assert_format("value(labels)", j, 0, "env=dev;team=x\n");
	assert_format("value(trainingInput.args)", j, 0, "--a;1\n");
	assert_format("value(trainingInput.args[1],trainingInput.args[-2])", j, 0, "1\t--a\n");
	assert_format("value(trainingInput)", j, 0,
		      "args=['--a', '1'];masterConfig={'imageUri': 'localhost/t:1'};region=us-central1\n");
	assert_format("value(trainingOutput.consumedMLUnits,nothere)", j, 0, "0.0\t\n");
	assert_format("value(training_input.master_config.image_uri)", j, 0, "localhost/t:1\n");
	assert_format("value[separator=','](jobId,state)", j, 0, "job_a,FAILED\n");
	assert_format("value(name.basename(),jobId.upper(),state.lower(),jobId.len(),labels.len())", j, 0,
		      "job_a\tJOB_A\tfailed\t5\t2\n");
	assert_format("value(createTime.date(), createTime.date('%Y-%m-%d %H:%M:%S.%f', tz=UTC))", j, 0,
		      "2026-11-26T19:19:53\t2026-11-26 19:19:53.116169\n");
	assert_format("value(createTime.date(format='%Y'),errorMessage.date())", j, 0, "2026\t\n");
	assert_format("table(jobId:label=ID,state)", j, 0, "ID     STATE\njob_a  FAILED\n");
	assert_format("table[no-heading](jobId,state)", j, 0, "job_a  FAILED\n");
	assert_format("csv(jobId:label=ID,errorMessage)", j, 0, "id,error_message\njob_a,it broke\n");
	assert_format("table[box](jobId,state)", j, 0,
		      "┌────────┬────────┐\n│ JOB_ID │ STATE  │\n"
		      "├────────┼────────┤\n"
		      "│ job_a  │ FAILED │\n└────────┴────────┘\n");
	assert_format("none", j, 0, "");
	json_decref(j);
}

static void tables_fit_their_cells(void **state)
{
	(void)state;
	json_t *l = json_loads("[{\"id\":\"a-very-long-identifier-of-a-job\",\"s\":\"OK\"},{\"id\":\"b\"},"
			       "{\"id\":\"c\",\"s\":\"RUNNING\",\"x\":\"1,2\"}]", 0, NULL);
	assert_format("table(id,s,x)", l, 1,
		      "ID                               S        X\n"
		      "a-very-long-identifier-of-a-job  OK\n"
		      "b\n"
		      "c                                RUNNING  1,2\n");
	assert_format("csv(id,x)", l, 1, "id,x\na-very-long-identifier-of-a-job,\nb,\nc,\"1,2\"\n");
	assert_format("yaml", l, 1, "---\nid: a-very-long-identifier-of-a-job\ns: OK\n---\nid: b\n---\nid: c\ns: RUNNING\nx: 1,2\n");
	json_t *none = json_array();
	assert_format("table(id)", none, 1, "");
	assert_format("json", none, 1, "[]\n");
	json_decref(none);
	json_decref(l);
}

static void merged_defaults_are_gclouds(void **state)
{
	(void)state;
	char *err = NULL;
	struct fmt *def = fmt_parse("table(jobId.basename(), state:label=STATUS, "
				    "createTime.date():label=CREATED)", &err);
	struct fmt *f = fmt_parse("table(jobId,state:label=S,createTime,endTime)", &err);
	assert_non_null(def);
	assert_non_null(f);
	fmt_merge_defaults(f, def);
	json_t *j = json_loads(job_json, 0, NULL);
	struct strbuf sb = STRBUF_INIT;
	fmt_print(&sb, f, j, 0);
	assert_string_equal(sb_str(&sb), "JOB_ID  S       CREATED              END_TIME\njob_a   FAILED  2026-11-26T19:19:53\n");
	sb_release(&sb);
	json_decref(j);
	fmt_free(f);
	fmt_free(def);
}

static void bad_formats_say_what_is_wrong(void **state)
{
	(void)state;
	static const struct {
		const char *format, *want;
	} cases[] = {
		{ "bogus", "Format must be one of csv, default, json, none, table, value, yaml; received [bogus]." },
		{ "value(jobId", "Closing ) expected" },
		{ "value", "needs a projection" },
		{ "value()", NULL },
		{ "json(jobId)", "takes no projection" },
		{ "value(jobId.nosuch())", "Unknown transform function nosuch" },
		{ "value(jobId.date(tz=Mars/Base))", "Unknown time zone [Mars/Base]" },
		{ "value(jobId:width=3)", "Unknown column attribute [width]" },
		{ "table[fancy](jobId)", "Unknown format attribute [fancy]" },
		{ "value(a..b)", "Expected a key name after '.'" },
		{ "value(a[x])", "Expected a list index" },
		{ "value(a.date('%Y)", "Unterminated string" },
		{ "value(a) junk", "Unexpected [junk]" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *err = NULL;
		struct fmt *f = fmt_parse(cases[i].format, &err);
		if (!cases[i].want) {
			assert_non_null(f);
			fmt_free(f);
			continue;
		}
		if (f)
			fail_msg("%s: accepted", cases[i].format);
		if (!err || !strstr(err, cases[i].want))
			fail_msg("%s: %s (want %s)", cases[i].format, err ? err : "(none)", cases[i].want);
		free(err);
	}
}

static int matches(const char *expr, const json_t *v)
{
	char *err = NULL;
	struct filter *f = filter_parse(expr, &err);
	if (!f)
		fail_msg("%s: %s", expr, err);
	int r = filter_match(f, v);
	filter_free(f);
	return r;
}

static void filters_are_gclouds(void **state)
{
	(void)state;
	json_t *j = json_loads(job_json, 0, NULL);
	assert_true(matches("state=FAILED", j));
	assert_true(matches("state=failed", j));	/* = ignores case */
	assert_false(matches("state=FAIL", j));
	assert_true(matches("state:fail", j));		/* : is a substring */
	assert_true(matches("jobId:job_*", j));
	assert_true(matches("jobId:*_a", j));
	assert_false(matches("jobId:*_b", j));
	assert_true(matches("labels.team=x", j));
	assert_true(matches("labels:team", j));	/* a dict: its keys too */
	assert_true(matches("trainingInput.args=--a", j));	/* a list: any element */
	assert_true(matches("state=FAILED AND labels.team=x", j));
	assert_true(matches("state=RUNNING OR labels.team=x", j));
	assert_false(matches("NOT state=FAILED", j));
	assert_true(matches("-state=RUNNING", j));
	assert_true(matches("state!=RUNNING", j));
	assert_true(matches("(state=RUNNING OR state=FAILED) labels.env=dev", j));
	assert_true(matches("createTime>2026-01-01", j));
	assert_false(matches("createTime<2026-01-01", j));
	assert_true(matches("createTime>=2026-11-26T19:19:53Z", j));
	assert_true(matches("trainingOutput.consumedMLUnits<1", j));
	assert_true(matches("jobId~^job_[a-z]$", j));
	assert_true(matches("jobId!~^x", j));
	assert_true(matches("state:(RUNNING FAILED)", j));
	assert_true(matches("labels.team:*", j));
	assert_false(matches("labels.owner:*", j));
	assert_true(matches("errorMessage:\"it broke\"", j));
	json_decref(j);

	static const struct {
		const char *expr, *want;
	} bad[] = {
		{ "state=FAILED OR a=b AND c=d", "Parenthesis grouping is required when AND and OR are combined" },
		{ "state", "Operator expected" },
		{ "state=", "Term operand expected" },
		{ "(state=x", "Closing ) expected" },
		{ "state:a*b*c", "At most one * expected" },
		{ "jobId~(", "Invalid regular expression" },
		{ "=x", "Term expected" },
		{ "state=\"x", "Unterminated quoted string" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *err = NULL;
		struct filter *f = filter_parse(bad[i].expr, &err);
		if (f)
			fail_msg("%s: accepted", bad[i].expr);
		if (!err || !strstr(err, bad[i].want))
			fail_msg("%s: %s (want %s)", bad[i].expr, err ? err : "(none)", bad[i].want);
		free(err);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(yaml_is_gclouds),
		cmocka_unit_test(yaml_folds_after_an_escape),
		cmocka_unit_test(json_is_pythons),
		cmocka_unit_test(projections),
		cmocka_unit_test(tables_fit_their_cells),
		cmocka_unit_test(merged_defaults_are_gclouds),
		cmocka_unit_test(bad_formats_say_what_is_wrong),
		cmocka_unit_test(filters_are_gclouds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
