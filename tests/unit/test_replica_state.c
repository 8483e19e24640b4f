/* Unit tests of the replica state machine's table (lib/replica_state.c):
 * every pair of states and every (state, cause) against the machine as
 * lib/replica_state.h draws it, written out here a second time on purpose,
 * so that a change of the table is a change of this test too; the table's
 * shape (a function of state and cause, every state reachable, a new
 * attempt possible after every end); the names. The agent's entry point:
 * test_agent_transition.c; the database's trigger: tests/integration/c/
 * test_replica_node_states.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common.h"
#include "replica_state.h"

/* The states' letters, in the enum's order: U (STATE_UNSPECIFIED, before
 * create), P, S, R, E, F (FAILED_TO_START), L (LOST). */
static const char letters[] = "UPSREFL";

/* Which pairs are edges. Rows: from; columns: to, in the letters' order. */
static const char *const pairs[REPLICA_STATE_COUNT] = {
	/*                              UPSREFL */
	[REPLICA_STATE_UNSPECIFIED] = ".x.....",
	[REPLICA_PENDING] =           ".xxxxxx",
	[REPLICA_STARTING] =          "...xxxx",
	[REPLICA_RUNNING] =           "....xxx",
	[REPLICA_EXITED] =            ".x...x.",
	[REPLICA_FAILED_TO_START] =   ".x.....",
	[REPLICA_LOST] =              ".x.....",
};

/*
 * Where each cause takes each state (the state's letter, '.' when the
 * cause does not apply). Columns: create start run exit fail_start lose
 * restart requeue.
 */
static const char *const after[REPLICA_STATE_COUNT] = {
	/*                              csreflRQ */
	[REPLICA_STATE_UNSPECIFIED] = "P.......",
	[REPLICA_PENDING] =           ".SREFLPP",
	[REPLICA_STARTING] =          "..REFL..",
	[REPLICA_RUNNING] =           "...EFL..",
	[REPLICA_EXITED] =            "....F.PP",
	[REPLICA_FAILED_TO_START] =   "......PP",
	[REPLICA_LOST] =              "......PP",
};

static enum replica_state state_of_letter(char c)
{
	const char *p = strchr(letters, c);
	return p && c ? (enum replica_state)(p - letters) : REPLICA_STATE_UNSPECIFIED;
}

static void every_pair_of_states_is_legal_exactly_as_the_header_draws_it(void **state)
{
	(void)state;
	assert_int_equal(strlen(letters), REPLICA_STATE_COUNT);
	for (unsigned from = 0; from < REPLICA_STATE_COUNT; from++) {
		assert_int_equal(strlen(pairs[from]), REPLICA_STATE_COUNT);
		for (unsigned to = 0; to < REPLICA_STATE_COUNT; to++) {
			bool want = pairs[from][to] == 'x';
			if (replica_state_edge_allowed(from, to) != want)
				fail_msg("%s -> %s: %s, want %s", replica_state_name(from),
					 replica_state_name(to), want ? "refused" : "allowed",
					 want ? "allowed" : "refused");
		}
	}
	/* and nothing outside the enum */
	assert_false(replica_state_edge_allowed(REPLICA_STATE_COUNT, REPLICA_PENDING));
	assert_false(replica_state_edge_allowed(REPLICA_LOST, (enum replica_state)-1));
}

static void every_cause_from_every_state_leads_where_the_header_says(void **state)
{
	(void)state;
	for (unsigned from = 0; from < REPLICA_STATE_COUNT; from++) {
		assert_int_equal(strlen(after[from]), REPLICA_CAUSE_COUNT);
		for (unsigned c = 0; c < REPLICA_CAUSE_COUNT; c++) {
			enum replica_state want = state_of_letter(after[from][c]);
			enum replica_state got = replica_state_after(from, c);
			if (got != want)
				fail_msg("%s + %s: %s, want %s", replica_state_name(from),
					 replica_cause_name(c), replica_state_name(got),
					 replica_state_name(want));
		}
	}
	assert_int_equal(replica_state_after(REPLICA_RUNNING, REPLICA_CAUSE_COUNT),
			 REPLICA_STATE_UNSPECIFIED);
	assert_int_equal(replica_state_after(REPLICA_STATE_COUNT, REPLICA_CAUSE_RUN),
			 REPLICA_STATE_UNSPECIFIED);
}

static void the_table_is_a_function_of_state_and_cause(void **state)
{
	(void)state;
	for (size_t i = 0; i < replica_state_edge_count; i++) {
		const struct replica_state_edge *e = &replica_state_edges[i];
		assert_true(e->from == REPLICA_STATE_UNSPECIFIED || replica_state_valid(e->from));
		assert_true(replica_state_valid(e->to));
		assert_non_null(replica_cause_name(e->cause));
		for (size_t k = i + 1; k < replica_state_edge_count; k++)
			if (replica_state_edges[k].from == e->from &&
			    replica_state_edges[k].cause == e->cause)
				fail_msg("%s + %s is listed twice", replica_state_name(e->from),
					 replica_cause_name(e->cause));
		/* A new attempt starts PENDING; nothing else goes back there
		 * (schema/030's trigger: attempt grows exactly on those edges). */
		assert_int_equal(replica_cause_new_attempt(e->cause), e->to == REPLICA_PENDING &&
				 e->from != REPLICA_STATE_UNSPECIFIED);
	}
	/* The create edge ends in PENDING: schema/030's insert trigger lets
	 * PENDING through without looking. */
	assert_int_equal(replica_state_after(REPLICA_STATE_UNSPECIFIED, REPLICA_CAUSE_CREATE),
			 REPLICA_PENDING);
	for (unsigned c = 0; c < REPLICA_CAUSE_COUNT; c++) {
		bool used = false;
		for (size_t i = 0; i < replica_state_edge_count; i++)
			used |= replica_state_edges[i].cause == c;
		if (!used)
			fail_msg("the cause %s takes no edge", replica_cause_name(c));
		assert_int_equal(replica_cause_new_attempt(c),
				 c == REPLICA_CAUSE_RESTART || c == REPLICA_CAUSE_REQUEUE);
	}
}

/* Restart and requeue take the same states: a replica that can start over
 * after a loss can after preemption too, and the other way round. */
static void restart_and_requeue_leave_the_same_states(void **state)
{
	(void)state;
	for (unsigned s = 0; s < REPLICA_STATE_COUNT; s++)
		assert_int_equal(replica_state_after(s, REPLICA_CAUSE_RESTART),
				 replica_state_after(s, REPLICA_CAUSE_REQUEUE));
	/* preemption stops a running replica: EXITED (143), LOST or
	 * FAILED_TO_START, each of which goes back to PENDING */
	static const enum replica_state stopped[] = { REPLICA_EXITED, REPLICA_LOST,
						      REPLICA_FAILED_TO_START };
	for (size_t i = 0; i < ARRAY_SIZE(stopped); i++)
		assert_int_equal(replica_state_after(stopped[i], REPLICA_CAUSE_REQUEUE),
				 REPLICA_PENDING);
	/* and only the ended ones and PENDING: a live one is stopped first */
	assert_int_equal(replica_state_after(REPLICA_RUNNING, REPLICA_CAUSE_REQUEUE),
			 REPLICA_STATE_UNSPECIFIED);
	assert_int_equal(replica_state_after(REPLICA_STARTING, REPLICA_CAUSE_RESTART),
			 REPLICA_STATE_UNSPECIFIED);
}

static void every_state_is_reachable_and_every_end_can_start_over(void **state)
{
	bool reach[REPLICA_STATE_COUNT] = { [REPLICA_STATE_UNSPECIFIED] = true };
	(void)state;

	for (unsigned round = 0; round < REPLICA_STATE_COUNT; round++)
		for (size_t i = 0; i < replica_state_edge_count; i++)
			reach[replica_state_edges[i].to] |= reach[replica_state_edges[i].from];
	for (unsigned s = REPLICA_PENDING; s < REPLICA_STATE_COUNT; s++) {
		if (!reach[s])
			fail_msg("%s cannot be reached from create", replica_state_name(s));
		bool over = false;
		for (unsigned c = 0; c < REPLICA_CAUSE_COUNT; c++)
			over |= replica_cause_new_attempt(c) &&
				replica_state_after(s, c) == REPLICA_PENDING;
		/* every state but the live ones can start a new attempt */
		assert_int_equal(over, s != REPLICA_STARTING && s != REPLICA_RUNNING);
	}
	assert_false(replica_state_ended(REPLICA_PENDING));
	assert_false(replica_state_ended(REPLICA_STARTING));
	assert_false(replica_state_ended(REPLICA_RUNNING));
	assert_true(replica_state_ended(REPLICA_EXITED));
	assert_true(replica_state_ended(REPLICA_FAILED_TO_START));
	assert_true(replica_state_ended(REPLICA_LOST));
	assert_false(replica_state_ended(REPLICA_STATE_UNSPECIFIED));
}

/* The states an agent reports (agent/PROTOCOL.md "Sync"), each the end of
 * its cause's edges; PENDING is never reported. */
static void reports_are_causes_that_lead_to_the_reported_state(void **state)
{
	enum replica_cause c;
	(void)state;
	assert_false(replica_cause_of_report(REPLICA_STATE_UNSPECIFIED, &c));
	assert_false(replica_cause_of_report(REPLICA_PENDING, &c));
	assert_false(replica_cause_of_report(REPLICA_STATE_COUNT, &c));
	for (unsigned s = REPLICA_STARTING; s < REPLICA_STATE_COUNT; s++) {
		assert_true(replica_cause_of_report(s, &c));
		assert_false(replica_cause_new_attempt(c));
		for (size_t i = 0; i < replica_state_edge_count; i++)
			if (replica_state_edges[i].cause == c)
				assert_int_equal(replica_state_edges[i].to, s);
		/* a PENDING replica takes any report: the agent's reports are
		 * level triggered, a start and an end may fall between two */
		assert_int_equal(replica_state_after(REPLICA_PENDING, c), s);
	}
}

static void names_round_trip(void **state)
{
	static const char *const want[REPLICA_STATE_COUNT] = {
		"STATE_UNSPECIFIED", "PENDING", "STARTING", "RUNNING", "EXITED",
		"FAILED_TO_START", "LOST",
	};
	(void)state;
	for (unsigned s = 0; s < REPLICA_STATE_COUNT; s++) {
		assert_string_equal(replica_state_name(s), want[s]);
		assert_int_equal(replica_state_parse(want[s]), s);	/* UNSPECIFIED: 0 too */
		assert_int_equal(replica_state_valid(s), s != REPLICA_STATE_UNSPECIFIED);
	}
	assert_string_equal(replica_state_name(REPLICA_STATE_COUNT), "STATE_UNSPECIFIED");
	assert_string_equal(replica_state_name((enum replica_state)-2), "STATE_UNSPECIFIED");
	static const char *const unknown[] = { "running", "", "LOST ", "DONE", "STOP", "READY" };
	for (size_t i = 0; i < ARRAY_SIZE(unknown); i++)
		assert_int_equal(replica_state_parse(unknown[i]), REPLICA_STATE_UNSPECIFIED);
	assert_int_equal(replica_state_parse(NULL), REPLICA_STATE_UNSPECIFIED);

	static const char *const causes[] = { "create", "start", "run", "exit", "fail_start",
					      "lose", "restart", "requeue" };
	assert_int_equal(ARRAY_SIZE(causes), REPLICA_CAUSE_COUNT);
	for (unsigned c = 0; c < REPLICA_CAUSE_COUNT; c++) {
		enum replica_cause got;
		assert_string_equal(replica_cause_name(c), causes[c]);
		assert_true(replica_cause_parse(causes[c], &got));
		assert_int_equal(got, c);
	}
	enum replica_cause untouched = REPLICA_CAUSE_RUN;
	assert_false(replica_cause_parse("Exit", &untouched));
	assert_false(replica_cause_parse(NULL, &untouched));
	assert_int_equal(untouched, REPLICA_CAUSE_RUN);
	assert_null(replica_cause_name(REPLICA_CAUSE_COUNT));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_pair_of_states_is_legal_exactly_as_the_header_draws_it),
		cmocka_unit_test(every_cause_from_every_state_leads_where_the_header_says),
		cmocka_unit_test(the_table_is_a_function_of_state_and_cause),
		cmocka_unit_test(restart_and_requeue_leave_the_same_states),
		cmocka_unit_test(every_state_is_reachable_and_every_end_can_start_over),
		cmocka_unit_test(reports_are_causes_that_lead_to_the_reported_state),
		cmocka_unit_test(names_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
