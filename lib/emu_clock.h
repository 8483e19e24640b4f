/*
 * emu_clock.h - the emulator's clock as a model (schema/022_clock.sql keeps
 * it in the database): emulated time runs at speed from base_emu, as real
 * (wall-clock) time runs from base_real:
 *   emulated(real) = base_emu + (real - base_real) * speed
 * Identity (speed 1, bases equal) until an emulator moves it. Times are
 * microseconds since the epoch.
 */
#ifndef TP_EMU_CLOCK_H
#define TP_EMU_CLOCK_H

#include <stdint.h>

struct emu_clock {
	int64_t base_real_us;
	int64_t base_emu_us;
	double speed;		/* > 0 */
};

#define EMU_CLOCK_IDENTITY ((struct emu_clock){ 0, 0, 1.0 })

/* The emulated instant of a real one. */
int64_t emu_clock_at(const struct emu_clock *c, int64_t real_us);
/* The real instant at which the clock shows emu_us (INT64_MAX stays INT64_MAX). */
int64_t emu_clock_real_for(const struct emu_clock *c, int64_t emu_us);

#endif
