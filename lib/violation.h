/*
 * violation.h - a list of field violations (google.rpc.BadRequest).
 *
 * Validators append every problem they find instead of stopping at the
 * first, so a user fixes a config in one round trip. Field paths are the
 * snake_case proto paths Google prints, e.g.
 * "training_input.worker_config.accelerator_config.count".
 */
#ifndef TP_VIOLATION_H
#define TP_VIOLATION_H

#include "common.h"

struct violation {
	char *field;		/* owned */
	char *description;	/* owned */
};

struct violations {
	struct violation *v;
	size_t n, alloc;
};

#define VIOLATIONS_INIT { NULL, 0, 0 }

void violations_add(struct violations *vs, const char *field, const char *fmt, ...)
	PRINTF_LIKE(3, 4);
/* Frees every entry; vs can be reused afterwards. */
void violations_release(struct violations *vs);

#endif
