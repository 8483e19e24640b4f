/*
 * Unit tests: the emulator's simulated fleet as generated from the built-in
 * catalog (scheduler/sim_fleet.h). The property that matters: every
 * machine type a region trains on, with every accelerator count it takes
 * there, fits a node of that region when the node is empty, so that any
 * job the validator accepts can be placed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "catalog.h"
#include "replica_state.h"
#include "sim_fleet.h"

static struct catalog *cat;
static const struct emu_clock identity = { 0, 0, 1.0 };

static int setup(void **state)
{
	char err[512];
	(void)state;
	if (catalog_load_text(CATALOG_BUILTIN_NAME, catalog_builtin_yaml, catalog_builtin_yaml_len,
			      &cat, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	catalog_free(cat);
	return 0;
}

static bool node_in_region(const struct node_info *n, const char *region)
{
	return !strcmp(n->region, region);
}

/* Does some node of region hold one replica of m with count of accelerator a? */
static bool fits_somewhere(const struct sim_fleet *f, const char *region,
			   const struct catalog_machine *m, const struct catalog_accelerator *a,
			   int count)
{
	for (size_t i = 0; i < sim_fleet_size(f); i++) {
		const struct node_info *n = sim_fleet_node(f, i);
		if (!node_in_region(n, region))
			continue;
		if (a && a->tpu) {
			if (n->tpu_type && !strcmp(n->tpu_type, a->name))
				return true;	/* a TPU replica takes a whole host */
			continue;
		}
		if (n->vcpus < m->vcpus || n->memory_mb < m->memory_mb)
			continue;
		if (!a || (n->accel_type && !strcmp(n->accel_type, a->name) && n->accel_count >= count))
			return true;
	}
	return false;
}

static void every_machine_and_count_fits_its_regions(void **state)
{
	(void)state;
	struct sim_fleet *f = sim_fleet_new(cat, 2, 1.0, "test");
	size_t checked = 0;

	for (size_t ri = 0; ri < catalog_region_total(cat); ri++) {
		const struct catalog_region *r = catalog_region(cat, ri);
		for (size_t mi = 0; mi < catalog_machine_count(cat); mi++) {
			const struct catalog_machine *m = catalog_machine(cat, mi);
			if (!(m->apis & r->apis))
				continue;
			if (m->accelerator < 0 && !m->tpu_host) {
				if (!fits_somewhere(f, r->name, m, NULL, 0))
					fail_msg("%s: no node holds %s without accelerators", r->name, m->name);
				checked++;
			}
			for (size_t a = 0; a < catalog_accelerator_count(cat); a++) {
				if (!(r->accelerators >> a & 1))
					continue;
				uint64_t counts = m->accelerator == (int)a ?
					UINT64_C(1) << m->accelerator_count : m->counts[a];
				for (int c = 1; c <= CATALOG_MAX_COUNT; c++) {
					if (!(counts >> c & 1))
						continue;
					if (!fits_somewhere(f, r->name, m, catalog_accelerator(cat, a), c))
						fail_msg("%s: no node holds %s with %d x %s", r->name, m->name,
							 c, catalog_accelerator(cat, a)->name);
					checked++;
				}
			}
		}
	}
	assert_true(checked > 500);
	sim_fleet_free(f);
}

/* ---- one node's life through turns, against a mock store ---------------- */

static int registered, synced;
static json_t *last_reports;	/* the reports of the last sync */
static json_t *desired_now;	/* what the next sync answers */
static int64_t version_now = 1;
static const char *watched;	/* the node whose version moves */

enum store_rc __wrap_store_node_register_on(struct store_conn *c, const struct node_info *n,
					    char *cluster_id, size_t len);
enum store_rc __wrap_store_node_register_on(struct store_conn *c, const struct node_info *n,
					    char *cluster_id, size_t len)
{
	(void)c;
	assert_true(!strncmp(n->incarnation, "emulator-", 9));
	snprintf(cluster_id, len, "cluster");
	registered++;
	return STORE_OK;
}

enum store_rc __wrap_store_node_versions_of(struct store_conn *c, const char *inc, json_t **out);
enum store_rc __wrap_store_node_versions_of(struct store_conn *c, const char *inc, json_t **out)
{
	(void)c;
	(void)inc;
	*out = json_pack("{s:I}", watched, (json_int_t)version_now);
	return STORE_OK;
}

enum store_rc __wrap_store_node_sync_on(struct store_conn *c, const char *node, const char *inc,
					int lease_s, const json_t *reports, json_t **desired,
					int64_t *version, bool *changed);
enum store_rc __wrap_store_node_sync_on(struct store_conn *c, const char *node, const char *inc,
					int lease_s, const json_t *reports, json_t **desired,
					int64_t *version, bool *changed)
{
	(void)c;
	(void)inc;
	(void)lease_s;
	if (strcmp(node, watched)) {	/* the first turn syncs every node */
		*desired = json_array();
		*version = 1;
		*changed = false;
		return STORE_OK;
	}
	synced++;
	json_decref(last_reports);
	last_reports = json_deep_copy(reports);
	*desired = json_deep_copy(desired_now);
	*version = version_now;
	*changed = json_array_size(reports) > 0;
	return STORE_OK;
}

const char *__wrap_store_rc_name(enum store_rc rc);
const char *__wrap_store_rc_name(enum store_rc rc)
{
	(void)rc;
	return "mock";
}

static const json_t *report_of(const char *replica)
{
	size_t i;
	json_t *r;
	json_array_foreach(last_reports, i, r)
		if (!strcmp(json_string_value(json_object_get(r, "replica")), replica))
			return r;
	return NULL;
}

static bool logged(const json_t *report, const char *text)
{
	size_t i;
	json_t *l;
	json_array_foreach(json_object_get(report, "logs"), i, l)
		if (strstr(json_string_value(json_object_get(l, "text")), text))
			return true;
	return false;
}

static void a_replica_runs_prints_its_env_and_exits_after_its_script(void **state)
{
	(void)state;
	struct sim_fleet *f = sim_fleet_new(cat, 1, 2.0, "t1");
	int ended;
	int64_t next, t0 = INT64_C(1800000000) * 1000000;

	watched = sim_fleet_node(f, 0)->name;
	desired_now = json_pack("[{s:s,s:i,s:s,s:[s,s],s:{s:f,s:i,s:f}}]", "replica", "r1", "attempt", 1,
				"desired", "RUN", "env", "TF_CONFIG={\"cluster\":{}}", "RANK=0",
				"simulate", "seconds", 1.5, "exitCode", 3, "metric", 0.25);
	assert_int_equal(sim_fleet_turn(f, NULL, &identity, t0, &ended, &next), STORE_OK);
	assert_int_equal(registered, (int)sim_fleet_size(f));
	/* The first sync got the set; the second reported the start. */
	const json_t *r = report_of("r1");
	assert_non_null(r);
	assert_string_equal(json_string_value(json_object_get(r, "state")), "RUNNING");
	assert_true(logged(r, "TF_CONFIG={\"cluster\":{}}"));
	assert_true(logged(r, "RANK=0"));
	assert_true(next == t0 + 1500000);
	assert_int_equal(ended, 0);

	/* Before its end nothing is due: no sync. */
	int before = synced;
	assert_int_equal(sim_fleet_turn(f, NULL, &identity, t0 + 1000000, &ended, &next), STORE_OK);
	assert_int_equal(synced, before);

	/* At its end: EXITED 3 with its metric; the server then drops it. */
	json_decref(desired_now);
	desired_now = json_array();
	version_now++;
	assert_int_equal(sim_fleet_turn(f, NULL, &identity, t0 + 1500000, &ended, &next), STORE_OK);
	r = report_of("r1");
	assert_non_null(r);
	assert_string_equal(json_string_value(json_object_get(r, "state")), "EXITED");
	assert_int_equal(json_integer_value(json_object_get(r, "exitCode")), 3);
	assert_true(json_real_value(json_object_get(json_array_get(json_object_get(r, "metrics"), 0),
						    "value")) == 0.25);
	assert_int_equal(ended, 1);
	assert_true(next == INT64_MAX);

	json_decref(desired_now);
	json_decref(last_reports);
	last_reports = NULL;
	sim_fleet_free(f);
}

static void stop_preempt_and_hang(void **state)
{
	(void)state;
	struct sim_fleet *f = sim_fleet_new(cat, 1, 2.0, "t2");
	int ended;
	int64_t next, t0 = INT64_C(1800000000) * 1000000;

	watched = sim_fleet_node(f, 0)->name;
	desired_now = json_pack("[{s:s,s:i,s:s,s:{s:s}},{s:s,s:i,s:s,s:{s:f,s:s}}]",
				"replica", "hang", "attempt", 1, "desired", "RUN", "simulate", "outcome", "hang",
				"replica", "spot", "attempt", 1, "desired", "RUN", "simulate", "seconds", 1.0,
				"outcome", "preempt");
	version_now++;
	assert_int_equal(sim_fleet_turn(f, NULL, &identity, t0, &ended, &next), STORE_OK);
	assert_true(next == t0 + 1000000);	/* the hang has no end */
	/* The preemptible one is lost, as a preempted VM. */
	assert_int_equal(sim_fleet_turn(f, NULL, &identity, t0 + 1000000, &ended, &next), STORE_OK);
	const json_t *r = report_of("spot");
	assert_string_equal(json_string_value(json_object_get(r, "state")), "LOST");
	assert_non_null(strstr(json_string_value(json_object_get(r, "message")), "preempted"));
	assert_true(next == INT64_MAX);
	/* A stop ends the hanging one with SIGTERM's status. */
	json_decref(desired_now);
	desired_now = json_pack("[{s:s,s:i,s:s}]", "replica", "hang", "attempt", 1, "desired", "STOP");
	version_now++;
	assert_int_equal(sim_fleet_turn(f, NULL, &identity, t0 + 3600000000LL, &ended, &next), STORE_OK);
	r = report_of("hang");
	assert_string_equal(json_string_value(json_object_get(r, "state")), "EXITED");
	assert_int_equal(json_integer_value(json_object_get(r, "exitCode")), 143);
	assert_true(logged(r, "stopped by SIGTERM"));
	/* A label script: "fail-7-after-2s". */
	json_decref(desired_now);
	desired_now = json_pack("[{s:s,s:i,s:s,s:s}]", "replica", "lbl", "attempt", 2, "desired", "RUN",
				"simulate", "fail-7-after-2s");
	version_now++;
	assert_int_equal(sim_fleet_turn(f, NULL, &identity, t0, &ended, &next), STORE_OK);
	assert_true(next == t0 + 2000000);
	assert_int_equal(sim_fleet_turn(f, NULL, &identity, t0 + 2000000, &ended, &next), STORE_OK);
	assert_int_equal(json_integer_value(json_object_get(report_of("lbl"), "exitCode")), 7);
	/* Told to stop before it was ever played (a cancel with its placement):
	 * it ends never started, or its job would wait CANCELLING for ever. */
	json_decref(desired_now);
	desired_now = json_pack("[{s:s,s:i,s:s}]", "replica", "late", "attempt", 1, "desired", "STOP");
	version_now++;
	assert_int_equal(sim_fleet_turn(f, NULL, &identity, t0 + 2000000, &ended, &next), STORE_OK);
	r = report_of("late");
	assert_non_null(r);
	assert_string_equal(json_string_value(json_object_get(r, "state")), "FAILED_TO_START");
	assert_string_equal(json_string_value(json_object_get(r, "message")), REPLICA_SKIPPED_MESSAGE);
	assert_null(json_object_get(r, "startTime"));
	assert_null(json_object_get(r, "exitCode"));

	json_decref(desired_now);
	json_decref(last_reports);
	last_reports = NULL;
	sim_fleet_free(f);
}

static void nodes_per_kind_and_zones(void **state)
{
	(void)state;
	struct sim_fleet *f = sim_fleet_new(cat, 3, 1.0, "test");
	size_t h200 = 0, cpu_us_central1 = 0;

	for (size_t i = 0; i < sim_fleet_size(f); i++) {
		const struct node_info *n = sim_fleet_node(f, i);
		assert_true(!strncmp(n->name, "sim-", 4));
		assert_true(sim_fleet_has_node(n->name));
		/* every zone is its region's */
		assert_true(!strncmp(n->zone, n->region, strlen(n->region)));
		assert_string_equal(n->runtime, "simulate");
		assert_true(n->lease_s > 86400);
		if (n->accel_type && !strcmp(n->accel_type, "NVIDIA_H200_141GB")) {
			assert_int_equal(n->accel_count, 8);
			h200++;
		}
		if (!n->accel_type && !n->tpu_type && !strcmp(n->region, "us-central1"))
			cpu_us_central1++;
		for (size_t k = 0; k < i; k++)
			assert_true(strcmp(n->name, sim_fleet_node(f, k)->name));
	}
	assert_int_equal(cpu_us_central1, 3);
	assert_true(h200 > 0 && h200 % 3 == 0);
	assert_false(sim_fleet_has_node("gpu-node-1"));
	sim_fleet_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_machine_and_count_fits_its_regions),
		cmocka_unit_test(nodes_per_kind_and_zones),
		cmocka_unit_test(a_replica_runs_prints_its_env_and_exits_after_its_script),
		cmocka_unit_test(stop_preempt_and_hang),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
