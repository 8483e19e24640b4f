/* Unit tests: int64, duration, timestamp and base64 encodings (lib/wire.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "wire.h"

static void int64_accepts_numbers_and_decimal_strings(void **state)
{
	int64_t v;
	json_t *n = json_integer(42), *s = json_string("-9223372036854775808"),
	       *r = json_real(4.0);
	(void)state;
	assert_int_equal(wire_int64_get(n, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(wire_int64_get(s, &v), 0);
	assert_true(v == INT64_MIN);
	assert_int_equal(wire_int64_get(r, &v), 0);
	assert_int_equal(v, 4);
	json_decref(n);
	json_decref(s);
	json_decref(r);
}

static void int64_refuses_garbage(void **state)
{
	static const char *const bad[] = { "", "abc", "4x", " 4", "+4", "1.5",
					   "9223372036854775808", "0x10" };
	int64_t v;
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *s = json_string(bad[i]);
		assert_int_equal(wire_int64_get(s, &v), -1);
		json_decref(s);
	}
	json_t *b = json_true(), *r = json_real(4.5), *huge = json_real(1e300);
	assert_int_equal(wire_int64_get(b, &v), -1);
	assert_int_equal(wire_int64_get(r, &v), -1);
	assert_int_equal(wire_int64_get(huge, &v), -1);	/* no UB on the way */
	json_decref(r);
	json_decref(huge);
}

static void duration_parses_and_formats_canonically(void **state)
{
	static const struct { const char *in; int64_t ns; const char *out; } cases[] = {
		{ "7200s", 7200000000000LL, "7200s" },
		{ "0s", 0, "0s" },
		{ "1.5s", 1500000000LL, "1.500s" },
		{ "0.000001s", 1000, "0.000001s" },
		{ "0.000000001s", 1, "0.000000001s" },
		{ ".5s", 500000000LL, "0.500s" },
		{ "-3s", -3000000000LL, "-3s" },
		{ "9223372035.999999999s", 9223372035999999999LL, "9223372035.999999999s" },
	};
	char buf[48];
	int64_t ns;
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(wire_duration_parse(cases[i].in, &ns), 0);
		assert_true(ns == cases[i].ns);
		wire_duration_format(ns, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].out);
	}
}

static void duration_refuses_bad_syntax(void **state)
{
	static const char *const bad[] = { "", "s", "7200", "2h", "1.s", "1.0000000001s",
					   "9223372036s", "315576000000s", "1 s", "1s ", "--1s" };
	int64_t ns;
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(wire_duration_parse(bad[i], &ns), -1);
}

static void time_round_trips_rfc3339(void **state)
{
	char buf[48];
	int64_t us;
	(void)state;
	assert_int_equal(wire_time_parse("2021-05-18T10:00:00Z", &us), 0);
	assert_true(us == 1621332000LL * 1000000);
	wire_time_format(us, buf, sizeof(buf));
	assert_string_equal(buf, "2021-05-18T10:00:00Z");
	assert_int_equal(wire_time_parse("2021-05-18T12:00:00.250+02:00", &us), 0);
	wire_time_format(us, buf, sizeof(buf));
	assert_string_equal(buf, "2021-05-18T10:00:00.250Z");
	wire_time_format(1621332000LL * 1000000 + 123456, buf, sizeof(buf));
	assert_string_equal(buf, "2021-05-18T10:00:00.123456Z");
	assert_int_equal(wire_time_parse("2021-05-18 10:00:00Z", &us), -1);
	assert_int_equal(wire_time_parse("2021-13-18T10:00:00Z", &us), -1);
	assert_int_equal(wire_time_parse("2021-05-18T10:00:00", &us), -1);
}

static void base64_round_trips_both_alphabets(void **state)
{
	const unsigned char data[] = { 0x07, 0x05, 0x96, 0x8d, 0xad, 0x18, 0x7c, 0x90, 0xff, 0xfe };
	unsigned char back[16];
	(void)state;
	for (size_t len = 0; len <= sizeof(data); len++) {
		for (int url = 0; url < 2; url++) {
			char *enc = wire_base64_encode(data, len, url);
			long n = wire_base64_decode(enc, back, sizeof(back), url);
			assert_int_equal(n, (long)len);
			assert_memory_equal(back, data, len);
			if (!url)
				assert_int_equal(strlen(enc) % 4, 0);
			else
				assert_null(strchr(enc, '='));
			free(enc);
		}
	}
	char *e = wire_base64_encode(data, 8, false);
	assert_string_equal(e, "BwWWja0YfJA=");	/* Google's example etag */
	free(e);
	assert_int_equal(wire_base64_decode("abc", back, sizeof(back), false), -1);
	assert_int_equal(wire_base64_decode("ab=c", back, sizeof(back), false), -1);
	assert_int_equal(wire_base64_decode("a$==", back, sizeof(back), false), -1);
	assert_int_equal(wire_base64_decode("AAAAAAAAAAAAAAAAAAAAAAAA", back, 4, false), -1);
}

static void utf8_is_checked_and_sanitized(void **state)
{
	static const char *const good[] = { "", "abc", "ключ", "日本", "\xf0\x9f\x98\x80" };
	static const char *const bad[] = { "\xff", "a\xc3", "\xc0\xaf", "\xed\xa0\x80",
					   "\xf4\x90\x80\x80", "\xe2\x82" };
	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(wire_utf8_valid(good[i], strlen(good[i])));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(wire_utf8_valid(bad[i], strlen(bad[i])));
	char *s = wire_utf8_sanitize("a\xff" "b");
	assert_string_equal(s, "a\xef\xbf\xbd" "b");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(int64_accepts_numbers_and_decimal_strings),
		cmocka_unit_test(int64_refuses_garbage),
		cmocka_unit_test(duration_parses_and_formats_canonically),
		cmocka_unit_test(duration_refuses_bad_syntax),
		cmocka_unit_test(time_round_trips_rfc3339),
		cmocka_unit_test(base64_round_trips_both_alphabets),
		cmocka_unit_test(utf8_is_checked_and_sanitized),
	};
	return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
