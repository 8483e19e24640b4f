/*
 * api_emulator.c - the emulator's controls (api_emulator.h).
 */
#include "api_emulator.h"

#include <stdlib.h>

#include "api_error.h"
#include "emu_clock.h"
#include "log.h"
#include "scheduler.h"
#include "store_clock.h"
#include "store_reset.h"
#include "store_sim_rules.h"
#include "sim_rules.h"
#include "violation.h"
#include "wire.h"

bool emulator_only(struct request *req)
{
	if (req->srv->emulator)
		return true;
	reply_error(req, API_FAILED_PRECONDITION,
		    "This trainplane-server is not an emulator: %s changes what every client sees "
		    "and is refused outside emulator mode (start the server with --emulator or "
		    "`emulator: true`).", req->route->operation_id);
	return false;
}

void api_emulator_get(struct request *req)
{
	reply_json(req, 200, json_pack("{s:b}", "enabled", req->srv->emulator));
}

/* ---- the clock (schema/022_clock.sql, docs/emulator.md "The clock") ---- */

static void reply_clock(struct request *req, const struct emu_clock *c)
{
	char time[40], offset[40];
	int64_t real = now_usec(), emu = emu_clock_at(c, real);

	wire_time_format(emu, time, sizeof(time));
	wire_duration_format((emu - real) * 1000, offset, sizeof(offset));
	reply_json(req, 200, json_pack("{s:s,s:f,s:s}", "time", time, "speed", c->speed,
				       "offset", offset));
}

void api_emulator_get_clock(struct request *req)
{
	struct emu_clock c;
	enum store_rc rc;

	if (!emulator_only(req))
		return;
	if ((rc = store_clock_get(req->srv->store, &c)) != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	reply_clock(req, &c);
}

/* At most a year at a time: a test of a 24-hour wait needs no more. */
#define MAX_ADVANCE_NS (INT64_C(366) * 86400 * 1000000000)

void api_emulator_advance_clock(struct request *req)
{
	const json_t *d = json_object_get(req->json, "duration");
	int64_t ns = 0;
	struct emu_clock c;
	enum store_rc rc;

	if (!emulator_only(req))
		return;
	if (!json_is_string(d) || wire_duration_parse(json_string_value(d), &ns)) {
		reply_error(req, API_INVALID_ARGUMENT, "Field: duration Error: a duration such as "
			    "\"7200s\" is required");
		return;
	}
	if (ns < 1000 || ns > MAX_ADVANCE_NS) {
		reply_error(req, API_INVALID_ARGUMENT, "Field: duration Error: must be from 0.000001s "
			    "to 31622400s (366 days): time never goes back");
		return;
	}
	if ((rc = store_clock_advance(req->srv->store, ns / 1000, &c)) != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	log_info("emulator: the clock advanced by %s", json_string_value(d));
	sched_wake(req->srv->sched);	/* timeouts and simulated ends are judged now */
	reply_clock(req, &c);
}

void api_emulator_set_clock_speed(struct request *req)
{
	const json_t *v = json_object_get(req->json, "speed");
	double speed = 0;
	struct emu_clock c;
	enum store_rc rc;

	if (!emulator_only(req))
		return;
	if (!v || wire_double_get(v, &speed) || !(speed > 0 && speed <= 1e6)) {
		reply_error(req, API_INVALID_ARGUMENT, "Field: speed Error: a number greater than 0 "
			    "and at most 1000000 is required");
		return;
	}
	if ((rc = store_clock_set_speed(req->srv->store, speed, &c)) != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	log_info("emulator: the clock runs at %g times real time", speed);
	sched_wake(req->srv->sched);
	reply_clock(req, &c);
}

/* ---- reset (docs/emulator.md "Reset") ----------------------------------- */

void api_emulator_reset(struct request *req)
{
	const json_t *p = json_object_get(req->json, "project");
	const char *project = NULL;
	int64_t deleted = 0;
	enum store_rc rc;

	if (!emulator_only(req))
		return;
	if (req->json && json_object_size(req->json) > (p ? 1u : 0u)) {
		reply_error(req, API_INVALID_ARGUMENT, "Invalid JSON payload: the body of :reset is "
			    "{} (every project) or {\"project\": \"ID\"}.");
		return;
	}
	if (p) {
		project = json_string_value(p);
		if (!project || !project_id_valid(project)) {
			reply_error(req, API_INVALID_ARGUMENT, "Field: project Error: a project id is 1 to "
				    "30 lowercase letters, digits and hyphens, not beginning or ending "
				    "with a hyphen (or a project number, or domain:project)");
			return;
		}
	}
	int64_t t0 = mono_usec();
	if ((rc = store_reset(req->srv->store, project, &deleted)) != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	log_info("emulator: reset %s%s: %lld job(s) deleted in %.1f ms", project ? "project " : "",
		 project ? project : "every project", (long long)deleted,
		 (double)(mono_usec() - t0) / 1000.0);
	sched_wake(req->srv->sched);	/* capacity freed */
	reply_json(req, 200, json_pack("{s:I}", "deletedJobs", (json_int_t)deleted));
}

/* ---- scripted outcomes (spec/sim_rules.h, docs/emulator.md) ------------- */

void api_emulator_get_rules(struct request *req)
{
	char *text = NULL;
	enum store_rc rc;

	if (!emulator_only(req))
		return;
	if ((rc = store_sim_rules_get(req->srv->store, &text)) != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	json_t *list = json_loads(text, 0, NULL);
	free(text);
	reply_json(req, 200, json_pack("{s:o}", "rules", list ? list : json_array()));
}

void api_emulator_set_rules(struct request *req)
{
	const json_t *list = json_object_get(req->json, "rules");
	struct violations vs = VIOLATIONS_INIT;
	enum store_rc rc;

	if (!emulator_only(req))
		return;
	if (!list || json_object_size(req->json) != 1) {
		reply_error(req, API_INVALID_ARGUMENT, "Invalid JSON payload: the body of :setRules is "
			    "{\"rules\": [...]}.");
		return;
	}
	struct sim_rules *rules = sim_rules_parse(list, "rules", &vs);
	if (!rules) {
		char *msg = api_violations_message(&vs);
		reply_violations(req, &vs, msg);
		free(msg);
		violations_release(&vs);
		return;
	}
	size_t n = sim_rules_count(rules);
	sim_rules_free(rules);
	char *text = json_dumps(list, JSON_COMPACT);
	rc = store_sim_rules_set(req->srv->store, text);
	free(text);
	if (rc != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	log_info("emulator: %zu scripted-outcome rule(s) set", n);
	sched_wake(req->srv->sched);	/* a queue rule lifted: place what it held */
	reply_json(req, 200, json_pack("{s:O}", "rules", list));
}
