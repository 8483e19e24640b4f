/*
 * emu_clock.c - the emulator's clock as a model (emu_clock.h).
 */
#include "emu_clock.h"

#include <math.h>

static int64_t clamp(double v)
{
	if (v >= 9.2e18)
		return INT64_MAX;
	if (v <= -9.2e18)
		return INT64_MIN;
	return (int64_t)llround(v);
}

int64_t emu_clock_at(const struct emu_clock *c, int64_t real_us)
{
	return clamp((double)c->base_emu_us + (double)(real_us - c->base_real_us) * c->speed);
}

int64_t emu_clock_real_for(const struct emu_clock *c, int64_t emu_us)
{
	if (emu_us == INT64_MAX)
		return INT64_MAX;
	return clamp((double)c->base_real_us + (double)(emu_us - c->base_emu_us) / c->speed);
}
