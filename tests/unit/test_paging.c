/* Unit tests: pageSize and page tokens (server/paging.c): tokens bound to
 * their list, scope, filter and key, tamper-evident, and opaque. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "paging.h"
#include "wire.h"

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
		cmocka_unit_test(page_size_defaults_clamps_and_refuses),
		cmocka_unit_test(page_tokens_are_bound_to_their_filter),
		cmocka_unit_test(page_tokens_are_bound_to_their_scope_and_key),
		cmocka_unit_test(page_tokens_are_tamper_evident),
		cmocka_unit_test(page_tokens_hide_the_position),
	};
	return cmocka_run_group_tests_name("paging", tests, NULL, NULL);
}
