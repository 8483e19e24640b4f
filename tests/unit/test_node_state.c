/* Unit tests of the node state machine's table (lib/node_state.c): every
 * pair of states and every (state, cause) against the machine as
 * lib/node_state.h draws it, written out here a second time on purpose;
 * the table's shape; the names. The database's trigger: tests/integration/
 * c/test_replica_node_states.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common.h"
#include "node_state.h"

/* U (STATE_UNSPECIFIED: not registered), R (READY), S (STOPPING), L (LOST). */
static const char letters[] = "URSL";

/* Which pairs are edges. Rows: from; columns: to, in the letters' order. */
static const char *const pairs[NODE_STATE_COUNT] = {
	/*                           URSL */
	[NODE_STATE_UNSPECIFIED] = ".x..",
	[NODE_READY] =             ".xxx",
	[NODE_STOPPING] =          ".xxx",
	[NODE_LOST] =              ".xx.",
};

/* Where each cause takes each state. Columns: register sync stop expire. */
static const char *const after[NODE_STATE_COUNT] = {
	/*                           rysx */
	[NODE_STATE_UNSPECIFIED] = "R...",
	[NODE_READY] =             "RRSL",
	[NODE_STOPPING] =          "R.SL",
	[NODE_LOST] =              "RRS.",
};

static enum node_state state_of_letter(char c)
{
	const char *p = strchr(letters, c);
	return p && c ? (enum node_state)(p - letters) : NODE_STATE_UNSPECIFIED;
}

static void every_pair_of_states_is_legal_exactly_as_the_header_draws_it(void **state)
{
	(void)state;
	assert_int_equal(strlen(letters), NODE_STATE_COUNT);
	for (unsigned from = 0; from < NODE_STATE_COUNT; from++) {
		assert_int_equal(strlen(pairs[from]), NODE_STATE_COUNT);
		for (unsigned to = 0; to < NODE_STATE_COUNT; to++) {
			bool want = pairs[from][to] == 'x';
			if (node_state_edge_allowed(from, to) != want)
				fail_msg("%s -> %s: %s, want %s", node_state_name(from),
					 node_state_name(to), want ? "refused" : "allowed",
					 want ? "allowed" : "refused");
		}
	}
	assert_false(node_state_edge_allowed(NODE_STATE_COUNT, NODE_READY));
	assert_false(node_state_edge_allowed(NODE_READY, (enum node_state)-1));
}

static void every_cause_from_every_state_leads_where_the_header_says(void **state)
{
	(void)state;
	for (unsigned from = 0; from < NODE_STATE_COUNT; from++) {
		assert_int_equal(strlen(after[from]), NODE_CAUSE_COUNT);
		for (unsigned c = 0; c < NODE_CAUSE_COUNT; c++) {
			enum node_state want = state_of_letter(after[from][c]);
			enum node_state got = node_state_after(from, c);
			if (got != want)
				fail_msg("%s + %s: %s, want %s", node_state_name(from),
					 node_cause_name(c), node_state_name(got),
					 node_state_name(want));
		}
	}
	assert_int_equal(node_state_after(NODE_READY, NODE_CAUSE_COUNT), NODE_STATE_UNSPECIFIED);
}

static void the_table_is_a_function_of_state_and_cause(void **state)
{
	bool reach[NODE_STATE_COUNT] = { [NODE_STATE_UNSPECIFIED] = true };
	(void)state;
	for (size_t i = 0; i < node_state_edge_count; i++) {
		const struct node_state_edge *e = &node_state_edges[i];
		assert_true(e->from == NODE_STATE_UNSPECIFIED || node_state_valid(e->from));
		assert_true(node_state_valid(e->to));
		assert_non_null(node_cause_name(e->cause));
		for (size_t k = i + 1; k < node_state_edge_count; k++)
			if (node_state_edges[k].from == e->from && node_state_edges[k].cause == e->cause)
				fail_msg("%s + %s is listed twice", node_state_name(e->from),
					 node_cause_name(e->cause));
	}
	/* The register edge of a new node ends in READY: schema/030's insert
	 * trigger lets READY through without looking. */
	assert_int_equal(node_state_after(NODE_STATE_UNSPECIFIED, NODE_CAUSE_REGISTER), NODE_READY);
	/* A registration is taken from every state: a restarted agent's node
	 * is READY whatever it was. */
	for (unsigned s = 0; s < NODE_STATE_COUNT; s++)
		assert_int_equal(node_state_after(s, NODE_CAUSE_REGISTER), NODE_READY);
	for (unsigned c = 0; c < NODE_CAUSE_COUNT; c++) {
		bool used = false;
		for (size_t i = 0; i < node_state_edge_count; i++)
			used |= node_state_edges[i].cause == c;
		if (!used)
			fail_msg("the cause %s takes no edge", node_cause_name(c));
	}
	for (unsigned round = 0; round < NODE_STATE_COUNT; round++)
		for (size_t i = 0; i < node_state_edge_count; i++)
			reach[node_state_edges[i].to] |= reach[node_state_edges[i].from];
	for (unsigned s = NODE_READY; s < NODE_STATE_COUNT; s++)
		if (!reach[s])
			fail_msg("%s cannot be reached from a registration", node_state_name(s));
}

static void names_round_trip(void **state)
{
	static const char *const want[NODE_STATE_COUNT] = { "STATE_UNSPECIFIED", "READY",
							     "STOPPING", "LOST" };
	(void)state;
	for (unsigned s = 0; s < NODE_STATE_COUNT; s++) {
		assert_string_equal(node_state_name(s), want[s]);
		assert_int_equal(node_state_parse(want[s]), s);
		assert_int_equal(node_state_valid(s), s != NODE_STATE_UNSPECIFIED);
	}
	assert_string_equal(node_state_name(NODE_STATE_COUNT), "STATE_UNSPECIFIED");
	/* DRAINING is a flag's name in listings, no state */
	static const char *const unknown[] = { "DRAINING", "ready", "", "LOST " };
	for (size_t i = 0; i < ARRAY_SIZE(unknown); i++)
		assert_int_equal(node_state_parse(unknown[i]), NODE_STATE_UNSPECIFIED);
	assert_int_equal(node_state_parse(NULL), NODE_STATE_UNSPECIFIED);

	static const char *const causes[] = { "register", "sync", "stop", "expire" };
	assert_int_equal(ARRAY_SIZE(causes), NODE_CAUSE_COUNT);
	for (unsigned c = 0; c < NODE_CAUSE_COUNT; c++) {
		enum node_cause got;
		assert_string_equal(node_cause_name(c), causes[c]);
		assert_true(node_cause_parse(causes[c], &got));
		assert_int_equal(got, c);
	}
	enum node_cause untouched = NODE_CAUSE_SYNC;
	assert_false(node_cause_parse("drain", &untouched));
	assert_false(node_cause_parse(NULL, &untouched));
	assert_int_equal(untouched, NODE_CAUSE_SYNC);
	assert_null(node_cause_name(NODE_CAUSE_COUNT));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_pair_of_states_is_legal_exactly_as_the_header_draws_it),
		cmocka_unit_test(every_cause_from_every_state_leads_where_the_header_says),
		cmocka_unit_test(the_table_is_a_function_of_state_and_cause),
		cmocka_unit_test(names_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
