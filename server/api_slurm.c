#include "api_slurm.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_error.h"
#include "job_plan.h"
#include "log.h"
#include "slurm_backend.h"
#include "store_slurm.h"
#include "training_spec.h"

bool api_slurm_refuse(struct request *req, const char *region, const json_t *stored,
		      const json_t *labels)
{
	struct training_spec spec;
	struct job_plan plan = { 0 };
	char why[512];
	bool refused = false;

	if (!slurm_backends_serving(req->srv->slurm, region))
		return false;
	spec_parse_stored(stored, region, &spec);
	if (!spec_plan_replicas(req->catalog, &spec, labels, NULL, &plan, why, sizeof(why)) &&
	    slurm_backends_fits(req->srv->slurm, region, &plan, why, sizeof(why))) {
		log_info("create in region %s refused: %s", region, why);
		reply_error(req, API_INVALID_ARGUMENT, "%s", why);
		refused = true;
	}
	job_plan_release(&plan);
	spec_release(&spec);
	return refused;
}

#define PILOT_PREFIX "tpp1."

bool api_slurm_pilot_token(const char *bearer)
{
	return bearer && !strncmp(bearer, PILOT_PREFIX, strlen(PILOT_PREFIX));
}

void api_slurm_pilot_region(int64_t job, char *out, size_t len)
{
	snprintf(out, len, "slurm-%lld", (long long)job);
}

/* A decimal of at most 18 digits at *p, which moves past it. */
static bool number(const char **p, long long *out)
{
	const char *s = *p;
	long long v = 0;
	int n = 0;
	while (*s >= '0' && *s <= '9' && n < 18)
		v = v * 10 + (*s++ - '0'), n++;
	if (!n || (*s >= '0' && *s <= '9'))
		return false;
	*p = s;
	*out = v;
	return true;
}

static bool parse_node(const char *node, struct pilot_claim *c)
{
	long long job, r, g, t;
	const char *p = node;
	if (strncmp(p, "slurm-", 6))
		return false;
	p += 6;
	if (!number(&p, &job) || strncmp(p, "-r", 2))
		return false;
	p += 2;
	if (!number(&p, &r) || strncmp(p, "-g", 2))
		return false;
	p += 2;
	if (!number(&p, &g) || strncmp(p, "-t", 2))
		return false;
	p += 2;
	if (!number(&p, &t) || *p || r > 1000000 || g > 64 || t > 1000000)
		return false;
	c->job = job;
	c->restart = (int)r;
	c->group = (int)g;
	c->task = (int)t;
	return true;
}

enum store_rc api_slurm_pilot_check(struct store *st, const char *node, const char *bearer,
				    bool registering, bool *ok, struct pilot_claim *out)
{
	struct slurm_pilot_grant g;
	const char *p = bearer + strlen(PILOT_PREFIX);
	long long job;
	unsigned char digest[SHA256_DIGEST_LENGTH];
	char hex[2 * SHA256_DIGEST_LENGTH + 1];

	*ok = false;
	memset(out, 0, sizeof(*out));
	if (!api_slurm_pilot_token(bearer) || !number(&p, &job) || *p != '.' ||
	    strlen(p + 1) != 64 || !parse_node(node, out) || out->job != job)
		return STORE_OK;
	enum store_rc rc = store_slurm_pilot_grant(st, job, &g);
	if (rc == STORE_NOT_FOUND)
		return STORE_OK;
	if (rc != STORE_OK)
		return rc;
	SHA256((const unsigned char *)p + 1, 64, digest);
	for (size_t i = 0; i < sizeof(digest); i++)
		snprintf(hex + 2 * i, 3, "%02x", digest[i]);
	bool same = strlen(g.token_hash) == 64 && !CRYPTO_memcmp(hex, g.token_hash, 64);
	/* A pilot of an earlier run (Slurm requeued the job) may still report
	 * how its replicas stopped; only the current run's may register. */
	if (same && !g.done && (out->restart == g.restart_cnt ||
				(!registering && out->restart < g.restart_cnt))) {
		size_t i;
		const json_t *s;
		json_array_foreach(g.slots, i, s) {
			if (json_integer_value(json_object_get(s, "group")) != out->group ||
			    json_integer_value(json_object_get(s, "task")) != out->task)
				continue;
			out->slot = (int)i;
			out->vcpus = (int)json_integer_value(json_object_get(s, "vcpus"));
			out->memory_mb = json_integer_value(json_object_get(s, "memoryMb"));
			out->accel_count = (int)json_integer_value(json_object_get(s, "accelCount"));
			snprintf(out->accel_type, sizeof(out->accel_type), "%s",
				 json_string_value(json_object_get(s, "accelType")) ?: "");
			*ok = true;
			break;
		}
	}
	slurm_pilot_grant_release(&g);
	return STORE_OK;
}
