/* The agent's one entry point of the replica state machine
 * (replica_transition(), replica_set_final(); agent/replica.h): every
 * (state, cause) pair takes exactly lib/replica_state.c's edge or is
 * refused, the state kept; the causes that are not the agent's (create,
 * lose, restart, requeue) are refused everywhere. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common.h"
#include "log.h"
#include "replica.h"
#include "replica_state.h"

/* The log, replaced (-Wl,--wrap=log_write): its error lines counted, the
 * last one kept. */
static int errors;
static char last_error[512];

void __wrap_log_write(enum log_level level, const char *fmt, ...);
void __wrap_log_write(enum log_level level, const char *fmt, ...)
{
	va_list ap;
	if (level != LOG_ERROR)
		return;
	errors++;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
}

static bool agent_cause(enum replica_cause c)
{
	return c == REPLICA_CAUSE_START || c == REPLICA_CAUSE_RUN || c == REPLICA_CAUSE_EXIT ||
	       c == REPLICA_CAUSE_FAIL_START;
}

static void a_new_replica_is_pending(void **state)
{
	(void)state;
	struct replica *r = replica_new("/tmp/unused", "1-worker-0", 1, RUNTIME_PROCESS);
	assert_int_equal(r->state, REPLICA_PENDING);
	replica_free(r);
}

static void every_state_and_cause_takes_the_tables_edge_or_is_refused(void **state)
{
	(void)state;
	struct replica *r = replica_new("/tmp/unused", "1-worker-0", 1, RUNTIME_PROCESS);
	for (unsigned s = 0; s < REPLICA_STATE_COUNT; s++) {
		for (unsigned c = 0; c < REPLICA_CAUSE_COUNT; c++) {
			enum replica_state want = replica_state_after(s, c);
			bool ok = want != REPLICA_STATE_UNSPECIFIED && agent_cause(c);
			int before = errors;
			r->state = s;	/* the test's own set-up, not a transition */
			if (replica_transition(r, c) != ok || r->state != (ok ? want : s))
				fail_msg("%s + %s: %s, now %s", replica_state_name(s),
					 replica_cause_name(c), ok ? "refused" : "taken",
					 replica_state_name(r->state));
			/* a refusal is an error line, a move none */
			assert_int_equal(errors - before, ok ? 0 : 1);
		}
	}
	r->state = REPLICA_RUNNING;
	assert_false(replica_transition(r, REPLICA_CAUSE_COUNT));
	assert_int_equal(r->state, REPLICA_RUNNING);
	r->state = REPLICA_EXITED;
	assert_false(replica_transition(r, REPLICA_CAUSE_RUN));
	assert_non_null(strstr(last_error, "replica 1-worker-0.1: run refused in EXITED"));
	replica_free(r);
}

/* The path of a replica in the agent: PENDING, STARTING, RUNNING, EXITED. */
static void a_replica_runs_and_ends_through_the_entry_point(void **state)
{
	(void)state;
	struct replica *r = replica_new("/tmp/unused", "1-worker-0", 1, RUNTIME_PROCESS);
	assert_true(replica_transition(r, REPLICA_CAUSE_START));
	assert_int_equal(r->state, REPLICA_STARTING);
	assert_false(replica_transition(r, REPLICA_CAUSE_START));	/* started already */
	assert_true(replica_transition(r, REPLICA_CAUSE_RUN));
	assert_true(replica_set_final(r, REPLICA_EXITED, 3, 1000, NULL));
	assert_int_equal(r->state, REPLICA_EXITED);
	assert_int_equal(r->exit_code, 3);
	/* an end is not ended again: refused, and nothing of it changes */
	assert_false(replica_set_final(r, REPLICA_EXITED, 7, 2000, "again"));
	assert_int_equal(r->exit_code, 3);
	assert_int_equal(r->end_usec, 1000);
	assert_null(r->message);
	/* LOST is the server's (or a report's), never an agent's state */
	assert_false(replica_set_final(r, REPLICA_LOST, 0, 0, NULL));
	assert_int_equal(r->state, REPLICA_EXITED);
	/* a trainer package's exit found to be a failure to start */
	assert_true(replica_set_final(r, REPLICA_FAILED_TO_START, 0, 3000, "no module"));
	assert_int_equal(r->state, REPLICA_FAILED_TO_START);
	assert_int_equal(r->exit_code, 0);
	assert_string_equal(r->message, "no module");
	assert_false(replica_set_final(r, REPLICA_FAILED_TO_START, 0, 4000, "twice"));
	assert_string_equal(r->message, "no module");
	replica_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_new_replica_is_pending),
		cmocka_unit_test(every_state_and_cause_takes_the_tables_edge_or_is_refused),
		cmocka_unit_test(a_replica_runs_and_ends_through_the_entry_point),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
