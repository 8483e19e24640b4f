/*
 * store_clock.h - the emulator's clock (schema/022_clock.sql, lib/emu_clock.h):
 * read it, advance it, change its speed. A change takes effect for every
 * server at once: the database's tp_now() reads it.
 */
#ifndef TP_STORE_CLOCK_H
#define TP_STORE_CLOCK_H

#include "emu_clock.h"
#include "store.h"

/* The clock, on a pooled connection or the caller's. */
enum store_rc store_clock_get(struct store *st, struct emu_clock *out) MUST_CHECK;
enum store_rc store_clock_read(struct store_conn *c, struct emu_clock *out) MUST_CHECK;

/* Moves emulated time forward by us (> 0); returns the clock after. */
enum store_rc store_clock_advance(struct store *st, int64_t us, struct emu_clock *out) MUST_CHECK;

/* Runs emulated time at speed (0 < speed <= 1e6) from now on, without a
 * jump; returns the clock after. */
enum store_rc store_clock_set_speed(struct store *st, double speed,
				    struct emu_clock *out) MUST_CHECK;

#endif
