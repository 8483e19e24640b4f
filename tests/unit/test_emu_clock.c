/* Unit tests: the emulator's clock model (lib/emu_clock.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "emu_clock.h"

#define T0 (INT64_C(1800000000) * 1000000)

static void identity_is_real_time(void **state)
{
	(void)state;
	struct emu_clock c = EMU_CLOCK_IDENTITY;
	assert_true(emu_clock_at(&c, T0) == T0);
	assert_true(emu_clock_real_for(&c, T0 + 5) == T0 + 5);
}

static void advanced_and_faster(void **state)
{
	(void)state;
	/* Two hours ahead since T0, and 60 times as fast from then. */
	struct emu_clock c = { T0, T0 + INT64_C(7200) * 1000000, 60.0 };
	assert_true(emu_clock_at(&c, T0) == T0 + INT64_C(7200) * 1000000);
	assert_true(emu_clock_at(&c, T0 + 1000000) == T0 + INT64_C(7260) * 1000000);
	/* The real instant of an emulated deadline: a minute is a second. */
	assert_true(emu_clock_real_for(&c, T0 + INT64_C(7260) * 1000000) == T0 + 1000000);
	/* A deadline already passed maps before now. */
	assert_true(emu_clock_real_for(&c, T0) < T0);
	/* No deadline stays none. */
	assert_true(emu_clock_real_for(&c, INT64_MAX) == INT64_MAX);
	/* Round trips within a microsecond. */
	for (int64_t r = T0; r < T0 + 10000000; r += 999983) {
		int64_t back = emu_clock_real_for(&c, emu_clock_at(&c, r));
		assert_true(back >= r - 1 && back <= r + 1);
	}
}

static void slower_than_real(void **state)
{
	(void)state;
	struct emu_clock c = { T0, T0, 0.5 };
	assert_true(emu_clock_at(&c, T0 + 2000000) == T0 + 1000000);
	assert_true(emu_clock_real_for(&c, T0 + 1000000) == T0 + 2000000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(identity_is_real_time),
		cmocka_unit_test(advanced_and_faster),
		cmocka_unit_test(slower_than_real),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
