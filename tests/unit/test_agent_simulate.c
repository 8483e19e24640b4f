/*
 * Unit tests: the simulate runtime (agent/runtime_simulate.c,
 * agent/simulate_script.c): script strings and objects, the configured
 * default, stop, and re-adoption by time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures/agent/agent_test.h"

struct fx {
	char *dir;
	struct agent_config cfg;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	f->dir = test_tmpdir();
	test_config(&f->cfg, f->dir, RUNTIME_SIMULATE);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	test_rm_rf(f->dir);
	free(f->dir);
	agent_config_free(&f->cfg);
	free(f);
	return 0;
}

static void simulate__scripts_parse(void **state)
{
	double s;
	int c;
	(void)state;
	assert_int_equal(simulate_script_parse("run-2s-exit-0", &s, &c), 0);
	assert_true(s == 2.0 && c == 0);
	assert_int_equal(simulate_script_parse("fail-3-after-2s", &s, &c), 0);
	assert_true(s == 2.0 && c == 3);
	assert_int_equal(simulate_script_parse("run-0.25s-exit-137", &s, &c), 0);
	assert_true(s == 0.25 && c == 137);
	assert_int_equal(simulate_script_parse("succeed-after-1s", &s, &c), 0);
	assert_true(s == 1.0 && c == 0);
	static const char *const bad[] = { "", "run", "run-2s", "run-2s-exit-", "run-2s-exit-256",
					   "run--1s-exit-0", "fail-3-after-2", "fail-3-after-2sx",
					   "run-2s-exit-0 ", "walk-2s-exit-0", "run-nans-exit-0" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (!simulate_script_parse(bad[i], &s, &c))
			fail_msg("'%s' parsed", bad[i]);
	assert_int_equal(simulate_script_parse(NULL, &s, &c), -1);
}

static struct replica *start(struct fx *f, const char *id, bool has, double sec, int code)
{
	struct desired_replica d;
	struct replica *r = replica_new(f->dir, id, 1, RUNTIME_SIMULATE);
	test_desired(&d, id, 1, NULL, NULL, NULL);
	d.has_simulate = has;
	d.sim_seconds = sec;
	d.sim_exit = code;
	runtime_start(&f->cfg, r, &d);
	desired_replica_release(&d);
	return r;
}

static void simulate__runs_then_exits_with_its_code(void **state)
{
	struct fx *f = *state;
	struct replica *r = start(f, "sim-0", true, 0.3, 3);
	assert_int_equal(r->state, REPLICA_RUNNING);
	assert_false(runtime_poll(&f->cfg, r));
	assert_int_equal(r->state, REPLICA_RUNNING);
	test_sleep_ms(350);
	assert_true(runtime_poll(&f->cfg, r));
	assert_int_equal(r->state, REPLICA_EXITED);
	assert_int_equal(r->exit_code, 3);
	assert_true(r->end_usec - r->start_usec >= 300000);
	char *logs = test_logs(r);
	assert_non_null(strstr(logs, "stdout:simulate: replica sim-0 attempt 1 runs for 0.3s"));
	assert_non_null(strstr(logs, "stderr:simulate: exiting with 3\n"));
	free(logs);
	runtime_forget(&f->cfg, r);
	replica_free(r);
}

/* The agent's loop waits for the server no longer than until a simulated
 * replica ends (agent.c, loop_wait_ms()): the runtime says when that is. */
static void simulate__says_when_it_ends(void **state)
{
	struct fx *f = *state;
	struct replica *r = start(f, "sim-9", true, 0.2, 0);
	assert_int_equal(runtime_next_event(r), r->start_usec + 200000);
	assert_true(test_wait_end(&f->cfg, r, 2000));
	assert_int_equal(runtime_next_event(r), 0);	/* ended: nothing more to come */
	runtime_forget(&f->cfg, r);
	replica_free(r);
}

static void simulate__default_script_applies_without_one(void **state)
{
	struct fx *f = *state;
	free(f->cfg.simulate_default);
	f->cfg.simulate_default = xstrdup("fail-9-after-0.1s");
	struct replica *r = start(f, "sim-1", false, 0, 0);
	assert_true(test_wait_end(&f->cfg, r, 2000));
	assert_int_equal(r->exit_code, 9);
	runtime_forget(&f->cfg, r);
	replica_free(r);
}

static void simulate__stop_ends_it_as_sigterm(void **state)
{
	struct fx *f = *state;
	struct replica *r = start(f, "sim-2", true, 1000, 0);
	runtime_stop(&f->cfg, r);
	assert_int_equal(r->state, REPLICA_EXITED);
	assert_int_equal(r->exit_code, 143);
	runtime_forget(&f->cfg, r);
	replica_free(r);
}

static void simulate__readopted_replica_keeps_its_script(void **state)
{
	struct fx *f = *state;
	struct replica *r = start(f, "sim-3", true, 0.2, 4);
	replica_free(r);	/* agent restart */
	test_sleep_ms(250);
	struct replica *list = NULL;
	assert_int_equal(runtime_adopt_all(&f->cfg, NULL, &list, NULL), 1);
	assert_int_equal(list->state, REPLICA_EXITED);
	assert_int_equal(list->exit_code, 4);
	runtime_forget(&f->cfg, list);
	replica_free(list);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(simulate__scripts_parse),
		cmocka_unit_test_setup_teardown(simulate__runs_then_exits_with_its_code, setup, teardown),
		cmocka_unit_test_setup_teardown(simulate__says_when_it_ends, setup, teardown),
		cmocka_unit_test_setup_teardown(simulate__default_script_applies_without_one, setup, teardown),
		cmocka_unit_test_setup_teardown(simulate__stop_ends_it_as_sigterm, setup, teardown),
		cmocka_unit_test_setup_teardown(simulate__readopted_replica_keeps_its_script, setup, teardown),
	};
	log_set_level(LOG_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
