/* Unit tests: table-driven config from defaults, YAML and environment (lib/config.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"

struct cfg {
	char *listen;
	int threads;
	bool debug;
	char *url;
};

static const char *no_spaces(const char *v)
{
	return strchr(v, ' ') ? "must not contain spaces" : NULL;
}

static const struct config_key keys[] = {
	{ "debug", CONFIG_BOOL, offsetof(struct cfg, debug), "false", 0, 0, NULL },
	{ "database_url", CONFIG_STRING, offsetof(struct cfg, url), NULL, 0, 0, NULL },
	{ "http_threads", CONFIG_INT, offsetof(struct cfg, threads), "16", 1, 64, NULL },
	{ "listen", CONFIG_STRING, offsetof(struct cfg, listen), "127.0.0.1:8080", 0, 0, no_spaces },
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static char path[64];

static void write_file(const char *text)
{
	strcpy(path, "/tmp/tp-config-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static int teardown(void **state)
{
	(void)state;
	if (*path)
		unlink(path);
	*path = '\0';
	unsetenv("TP_TEST_HTTP_THREADS");
	unsetenv("TP_TEST_LISTEN");
	return 0;
}

static void defaults_apply_without_file(void **state)
{
	struct cfg c = { 0 };
	char err[256];
	(void)state;
	assert_int_equal(config_load(keys, NKEYS, &c, NULL, "TP_TEST_", err, sizeof(err)), 0);
	assert_string_equal(c.listen, "127.0.0.1:8080");
	assert_int_equal(c.threads, 16);
	assert_false(c.debug);
	assert_null(c.url);
	config_free(keys, NKEYS, &c);
}

static void file_then_environment_override(void **state)
{
	struct cfg c = { 0 };
	char err[256];
	(void)state;
	write_file("# comment\nlisten: 0.0.0.0:9000\nhttp_threads: 4\ndebug: yes\n"
		   "database_url: \"postgres://x@/db\"\n");
	setenv("TP_TEST_HTTP_THREADS", "8", 1);
	assert_int_equal(config_load(keys, NKEYS, &c, path, "TP_TEST_", err, sizeof(err)), 0);
	assert_string_equal(c.listen, "0.0.0.0:9000");
	assert_int_equal(c.threads, 8);
	assert_true(c.debug);
	assert_string_equal(c.url, "postgres://x@/db");
	config_free(keys, NKEYS, &c);
}

static void bad_file_names_file_line_and_key(void **state)
{
	static const struct { const char *text; const char *want; } cases[] = {
		{ "listen: a\nlisen: b\n", ":2:1: unknown key 'lisen'" },
		{ "http_threads: many\n", ":1:15: key 'http_threads': 'many' is not an integer" },
		{ "http_threads: 0\n", "key 'http_threads': 0 is out of range [1, 64]" },
		{ "debug: maybe\n", "key 'debug': 'maybe' is not a boolean" },
		{ "listen: [a, b]\n", ":1:9: key 'listen': expected a scalar value" },
		{ "listen: 'a b'\n", "key 'listen': must not contain spaces" },
		{ "listen: \"unterminated\n", "YAML syntax error" },
		{ "- a\n- b\n", "expected a scalar value" },
	};
	char err[256];
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cfg c = { 0 };
		write_file(cases[i].text);
		assert_int_equal(config_load(keys, NKEYS, &c, path, "TP_TEST_", err, sizeof(err)), -1);
		if (!strstr(err, cases[i].want) || strncmp(err, path, strlen(path)))
			fail_msg("case %zu: got \"%s\", want \"%s\"", i, err, cases[i].want);
		config_free(keys, NKEYS, &c);
		unlink(path);
	}
}

static void bad_environment_names_the_variable(void **state)
{
	struct cfg c = { 0 };
	char err[256];
	(void)state;
	setenv("TP_TEST_HTTP_THREADS", "1000", 1);
	assert_int_equal(config_load(keys, NKEYS, &c, NULL, "TP_TEST_", err, sizeof(err)), -1);
	assert_string_equal(err, "TP_TEST_HTTP_THREADS: 1000 is out of range [1, 64]");
	config_free(keys, NKEYS, &c);
}

static void missing_file_is_an_error(void **state)
{
	struct cfg c = { 0 };
	char err[256];
	(void)state;
	assert_int_equal(config_load(keys, NKEYS, &c, "/nonexistent/x.yaml", "TP_TEST_", err,
				     sizeof(err)), -1);
	assert_non_null(strstr(err, "/nonexistent/x.yaml: cannot open"));
	config_free(keys, NKEYS, &c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(defaults_apply_without_file, teardown),
		cmocka_unit_test_teardown(file_then_environment_override, teardown),
		cmocka_unit_test_teardown(bad_file_names_file_line_and_key, teardown),
		cmocka_unit_test_teardown(bad_environment_names_the_variable, teardown),
		cmocka_unit_test_teardown(missing_file_is_an_error, teardown),
	};
	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
