/* Unit tests of the job state machine's table (spec/job_state.c): every
 * pair of states and every (state, cause) against the machine as the
 * README states it, written out here a second time on purpose, so that a
 * change of the table is a change of this test too; the table's shape
 * (deterministic, final states final, everything reachable); the names of
 * every API. The same edges against a real database: test_job_transitions.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common.h"
#include "job_state.h"
#include "ml_types.h"
#include "schema.h"
#include "vertex_types.h"

/*
 * Which pairs are edges. Rows: from (STATE_UNSPECIFIED: before create);
 * columns: to, in the enum's order U Q P R S F G C (G: CANCELLING).
 */
static const char *const pairs[JOB_STATE_COUNT] = {
	/*                          UQPRSFGC */
	[JOB_STATE_UNSPECIFIED] = ".x......",
	[JOB_QUEUED] =            "..x..xxx",
	[JOB_PREPARING] =         ".xxxxxx.",
	[JOB_RUNNING] =           ".x.xxxx.",
	[JOB_SUCCEEDED] =         "........",
	[JOB_FAILED] =            "........",
	[JOB_CANCELLING] =        ".......x",
	[JOB_CANCELLED] =         "........",
};

/*
 * Where each cause takes each state (the letter of the state, '.' when the
 * cause does not apply). Columns: create place run succeed fail cancel
 * cancelled timeout node_loss restart preempt backend cancel_trials.
 */
static const char *const after[JOB_STATE_COUNT] = {
	/*                          cprsfCdtnRpbT */
	[JOB_STATE_UNSPECIFIED] = "Q............",
	[JOB_QUEUED] =            ".P...C.F...FG",
	[JOB_PREPARING] =         "..RSFG.FFPQF.",
	[JOB_RUNNING] =           "...SFG.FFRQF.",
	[JOB_SUCCEEDED] =         ".............",
	[JOB_FAILED] =            ".............",
	[JOB_CANCELLING] =        "......C......",
	[JOB_CANCELLED] =         ".............",
};

static enum job_state state_of_letter(char c)
{
	static const char letters[] = "UQPRSFGC";
	const char *p = strchr(letters, c);
	return p ? (enum job_state)(p - letters) : JOB_STATE_UNSPECIFIED;
}

static void every_pair_of_states_is_legal_exactly_as_the_readme_says(void **state)
{
	(void)state;
	for (unsigned from = 0; from < JOB_STATE_COUNT; from++) {
		assert_int_equal(strlen(pairs[from]), JOB_STATE_COUNT);
		for (unsigned to = 0; to < JOB_STATE_COUNT; to++) {
			bool want = pairs[from][to] == 'x';
			if (job_state_edge_allowed(from, to) != want)
				fail_msg("%s -> %s: %s, want %s", job_state_name(from),
					 job_state_name(to), want ? "refused" : "allowed",
					 want ? "allowed" : "refused");
		}
	}
	/* and nothing outside the enum */
	assert_false(job_state_edge_allowed(JOB_STATE_COUNT, JOB_QUEUED));
	assert_false(job_state_edge_allowed(JOB_QUEUED, (enum job_state)-1));
}

static void every_cause_from_every_state_leads_where_the_readme_says(void **state)
{
	(void)state;
	for (unsigned from = 0; from < JOB_STATE_COUNT; from++) {
		assert_int_equal(strlen(after[from]), JOB_CAUSE_COUNT);
		for (unsigned c = 0; c < JOB_CAUSE_COUNT; c++) {
			enum job_state want = state_of_letter(after[from][c]);
			enum job_state got = job_state_after(from, c);
			if (got != want)
				fail_msg("%s + %s: %s, want %s", job_state_name(from),
					 job_cause_name(c), job_state_name(got), job_state_name(want));
		}
	}
	assert_int_equal(job_state_after(JOB_RUNNING, JOB_CAUSE_COUNT), JOB_STATE_UNSPECIFIED);
}

static void the_table_is_a_function_of_state_and_cause(void **state)
{
	(void)state;
	for (size_t i = 0; i < job_state_edge_count; i++) {
		const struct job_state_edge *e = &job_state_edges[i];
		assert_true(e->from == JOB_STATE_UNSPECIFIED || job_state_valid(e->from));
		assert_true(job_state_valid(e->to));
		assert_non_null(job_cause_name(e->cause));
		for (size_t k = i + 1; k < job_state_edge_count; k++)
			if (job_state_edges[k].from == e->from && job_state_edges[k].cause == e->cause)
				fail_msg("%s + %s is listed twice", job_state_name(e->from),
					 job_cause_name(e->cause));
	}
	/* The create edge ends in QUEUED: schema/013's insert trigger lets
	 * QUEUED through without looking (creates cost nothing). */
	assert_int_equal(job_state_after(JOB_STATE_UNSPECIFIED, JOB_CAUSE_CREATE), JOB_QUEUED);
	for (unsigned c = 0; c < JOB_CAUSE_COUNT; c++)
		if (c != JOB_CAUSE_CREATE)
			assert_int_equal(job_state_after(JOB_STATE_UNSPECIFIED, c), JOB_STATE_UNSPECIFIED);
	/* Every cause is taken somewhere. */
	for (unsigned c = 0; c < JOB_CAUSE_COUNT; c++) {
		bool used = false;
		for (size_t i = 0; i < job_state_edge_count; i++)
			used |= job_state_edges[i].cause == c;
		if (!used)
			fail_msg("the cause %s takes no edge", job_cause_name(c));
	}
}

static void final_states_are_final_and_every_state_is_reachable_and_can_end(void **state)
{
	bool reach[JOB_STATE_COUNT] = { [JOB_STATE_UNSPECIFIED] = true };
	bool ends[JOB_STATE_COUNT] = { false };
	(void)state;

	assert_true(job_state_final(JOB_SUCCEEDED));
	assert_true(job_state_final(JOB_FAILED));
	assert_true(job_state_final(JOB_CANCELLED));
	assert_false(job_state_final(JOB_QUEUED));
	assert_false(job_state_final(JOB_PREPARING));
	assert_false(job_state_final(JOB_RUNNING));
	assert_false(job_state_final(JOB_CANCELLING));
	assert_false(job_state_final(JOB_STATE_UNSPECIFIED));
	assert_false(job_state_final(JOB_STATE_COUNT));
	/* A fixed point over the edges, both ways. */
	for (unsigned round = 0; round < JOB_STATE_COUNT; round++) {
		for (size_t i = 0; i < job_state_edge_count; i++) {
			const struct job_state_edge *e = &job_state_edges[i];
			reach[e->to] |= reach[e->from];
			ends[e->from] |= job_state_final(e->to) || ends[e->to];
		}
	}
	for (unsigned s = JOB_QUEUED; s < JOB_STATE_COUNT; s++) {
		if (!reach[s])
			fail_msg("%s cannot be reached from create", job_state_name(s));
		if (!job_state_final(s) && !ends[s])
			fail_msg("a job in %s can never end", job_state_name(s));
		/* a final state has no edge at all, not even to itself */
		for (unsigned to = 0; job_state_final(s) && to < JOB_STATE_COUNT; to++)
			assert_false(job_state_edge_allowed(s, to));
	}
}

static void names_of_every_api_round_trip(void **state)
{
	static const struct {
		enum job_state s;
		const char *ml, *vertex, *pipeline;
	} want[] = {
		{ JOB_QUEUED, "QUEUED", "JOB_STATE_QUEUED", "PIPELINE_STATE_QUEUED" },
		{ JOB_PREPARING, "PREPARING", "JOB_STATE_PENDING", "PIPELINE_STATE_PENDING" },
		{ JOB_RUNNING, "RUNNING", "JOB_STATE_RUNNING", "PIPELINE_STATE_RUNNING" },
		{ JOB_SUCCEEDED, "SUCCEEDED", "JOB_STATE_SUCCEEDED", "PIPELINE_STATE_SUCCEEDED" },
		{ JOB_FAILED, "FAILED", "JOB_STATE_FAILED", "PIPELINE_STATE_FAILED" },
		{ JOB_CANCELLING, "CANCELLING", "JOB_STATE_CANCELLING", "PIPELINE_STATE_CANCELLING" },
		{ JOB_CANCELLED, "CANCELLED", "JOB_STATE_CANCELLED", "PIPELINE_STATE_CANCELLED" },
	};
	(void)state;
	assert_int_equal(ARRAY_SIZE(want), JOB_STATE_COUNT - 1);
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		/* ml v1's and Vertex's enum numbers */
		assert_int_equal(want[i].s, i + 1);
		assert_string_equal(job_state_name(want[i].s), want[i].ml);
		assert_string_equal(job_state_vertex_name(want[i].s), want[i].vertex);
		assert_string_equal(job_state_pipeline_name(want[i].s), want[i].pipeline);
		assert_int_equal(job_state_parse(want[i].ml), want[i].s);
		assert_int_equal(job_state_parse_vertex(want[i].vertex), want[i].s);
		assert_int_equal(job_state_parse_pipeline(want[i].pipeline), want[i].s);
		/* one API's name is not another's */
		assert_int_equal(job_state_parse(want[i].vertex), JOB_STATE_UNSPECIFIED);
		assert_int_equal(job_state_parse_vertex(want[i].ml), JOB_STATE_UNSPECIFIED);
		assert_int_equal(job_state_parse_pipeline(want[i].vertex), JOB_STATE_UNSPECIFIED);
	}
	assert_string_equal(job_state_name(JOB_STATE_UNSPECIFIED), "STATE_UNSPECIFIED");
	assert_string_equal(job_state_vertex_name(JOB_STATE_COUNT), "JOB_STATE_UNSPECIFIED");
	assert_string_equal(job_state_pipeline_name((enum job_state)-3), "PIPELINE_STATE_UNSPECIFIED");
	static const char *const unknown[] = { "STATE_UNSPECIFIED", "JOB_STATE_UNSPECIFIED",
					       "JOB_STATE_PAUSED", "queued", "", "QUEUED " };
	for (size_t i = 0; i < ARRAY_SIZE(unknown); i++) {
		assert_int_equal(job_state_parse(unknown[i]), JOB_STATE_UNSPECIFIED);
		assert_int_equal(job_state_parse_vertex(unknown[i]), JOB_STATE_UNSPECIFIED);
		assert_int_equal(job_state_parse_pipeline(unknown[i]), JOB_STATE_UNSPECIFIED);
	}
	assert_int_equal(job_state_parse(NULL), JOB_STATE_UNSPECIFIED);

	static const char *const causes[] = { "create", "place", "run", "succeed", "fail",
					      "cancel", "cancelled", "timeout", "node_loss",
					      "restart", "preempt", "backend", "cancel_trials" };
	assert_int_equal(ARRAY_SIZE(causes), JOB_CAUSE_COUNT);
	for (unsigned c = 0; c < JOB_CAUSE_COUNT; c++) {
		enum job_cause got;
		assert_string_equal(job_cause_name(c), causes[c]);
		assert_true(job_cause_parse(causes[c], &got));
		assert_int_equal(got, c);
	}
	enum job_cause untouched = JOB_CAUSE_RUN;
	assert_false(job_cause_parse("Cancel", &untouched));
	assert_false(job_cause_parse(NULL, &untouched));
	assert_int_equal(untouched, JOB_CAUSE_RUN);
	assert_null(job_cause_name(JOB_CAUSE_COUNT));
}

/* Whether e, a descriptor's enum, holds name. */
static bool enum_has(const struct schema_enum *e, const char *name)
{
	for (size_t i = 0; i < e->count; i++)
		if (!strcmp(e->names[i], name))
			return true;
	return false;
}

/*
 * The machine's names are values of the APIs' enums as the descriptors
 * (and so the rendering, the CLI and openapi.yaml) have them: a state
 * renamed in one place and not the other fails here.
 */
static void names_are_values_of_the_descriptors_enums(void **state)
{
	(void)state;
	const struct schema_field *ml = schema_field_at(&ml_job_message, "state");
	const struct schema_field *vx = schema_field_at(&vertex_custom_job_message, "state");
	const struct schema_field *pl = schema_field_at(&vertex_training_pipeline_message, "state");
	assert_non_null(ml);
	assert_non_null(vx);
	assert_non_null(pl);
	for (int s = 0; s < JOB_STATE_COUNT; s++) {
		if (!job_state_valid((enum job_state)s))
			continue;
		if (!enum_has(ml->enumeration, job_state_name((enum job_state)s)) ||
		    !enum_has(vx->enumeration, job_state_vertex_name((enum job_state)s)) ||
		    !enum_has(pl->enumeration, job_state_pipeline_name((enum job_state)s)))
			fail_msg("state %d: %s / %s / %s not all in the descriptors' enums", s,
				 job_state_name((enum job_state)s), job_state_vertex_name((enum job_state)s),
				 job_state_pipeline_name((enum job_state)s));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_pair_of_states_is_legal_exactly_as_the_readme_says),
		cmocka_unit_test(every_cause_from_every_state_leads_where_the_readme_says),
		cmocka_unit_test(the_table_is_a_function_of_state_and_cause),
		cmocka_unit_test(final_states_are_final_and_every_state_is_reachable_and_can_end),
		cmocka_unit_test(names_of_every_api_round_trip),
		cmocka_unit_test(names_are_values_of_the_descriptors_enums),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
