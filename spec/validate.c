/*
 * validate.c - the semantic rules of a training job, as the cloud applies
 * them, checked against the catalog (lib/catalog.h). One engine for both
 * APIs: ml v1 TrainingInput (replicas master/worker/parameter server/
 * evaluator) and Vertex CustomJobSpec (worker pools) share the machine x
 * accelerator table, the accelerator limits and the region/zone rules.
 *
 * The input has been through the structural pass (server/ml_schema.c), but
 * nothing here trusts that: a value of the wrong JSON type is reported as a
 * violation or treated as unset, never dereferenced blindly (the fuzz target
 * tests/fuzz/fuzz_validate.c feeds arbitrary JSON). Every problem found is
 * reported; the order of the violations is the order of the checks below.
 *
 * Descriptions are sentences in Google's style. Where the reference quotes
 * Google's wording (Vertex pool 0, both-or-none, accelerator vs machine
 * type, the API field documentation), it is used verbatim; ml v1 messages
 * name fields in lowerCamelCase as a user writes them in config.yaml.
 */
#include "validate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageref.h"
#include "strbuf.h"
#include "wire.h"

#define FIELD_MAX 256
#define BASE_MAX 96	/* a path prefix that FIELD_MAX always has room to extend */

/* Limits of the API itself (not the catalog's). */
#define MAX_PACKAGE_URIS 100
#define MAX_LABELS 64
#define MAX_LABEL_CHARS 63
#define MAX_DISCRETE_VALUES 1000
#define MAX_HP_PARAMS 1000		/* ours: keeps the uniqueness checks linear-ish */
#define MAX_CATEGORICAL_VALUES 1000	/* ours, likewise */
#define MIN_MAX_WAIT_NANOS (1800LL * 1000000000LL)

struct ctx {
	const struct catalog *cat;
	struct violations *out;
	unsigned api;		/* CATALOG_API_ML or CATALOG_API_VERTEX */
};

/* ------------------------------------------------------------------------- */
/* Robust JSON access                                                         */

/* The member key of obj, or NULL when obj is not an object, key is absent or null. */
static const json_t *member(const json_t *obj, const char *key)
{
	const json_t *v;

	if (!json_is_object(obj))
		return NULL;
	v = json_object_get(obj, key);
	return json_is_null(v) ? NULL : v;
}

/*
 * A string member. An empty string is proto3's default, so it reads as
 * unset (NULL). The wrong JSON type is reported and reads as unset.
 */
static const char *get_str(struct ctx *c, const json_t *obj, const char *key, const char *field)
{
	const json_t *v = member(obj, key);

	if (!v)
		return NULL;
	if (!json_is_string(v)) {
		violations_add(c->out, field, "Invalid value: expected a string.");
		return NULL;
	}
	return json_string_length(v) ? json_string_value(v) : NULL;
}

/* An object member; the wrong type is reported and reads as unset. */
static const json_t *get_obj(struct ctx *c, const json_t *obj, const char *key, const char *field)
{
	const json_t *v = member(obj, key);

	if (v && !json_is_object(v)) {
		violations_add(c->out, field, "Invalid value: expected an object.");
		return NULL;
	}
	return v;
}

/* An array member; the wrong type is reported and reads as unset. */
static const json_t *get_arr(struct ctx *c, const json_t *obj, const char *key, const char *field)
{
	const json_t *v = member(obj, key);

	if (v && !json_is_array(v)) {
		violations_add(c->out, field, "Invalid value: expected a list.");
		return NULL;
	}
	return v;
}

static size_t arr_size(const json_t *a)
{
	return json_is_array(a) ? json_array_size(a) : 0;
}

/* wire_int64_get, but never casting an out-of-range double (UB). */
static int json_int64(const json_t *v, int64_t *out)
{
	if (json_is_real(v)) {
		double d = json_real_value(v);
		if (!(d >= -9.2e18 && d <= 9.2e18))
			return -1;
	}
	return wire_int64_get(v, out);
}

/*
 * An integer member (int64 as JSON string or number). Absent reads as 0
 * with *set false; an unparsable value is reported, reads as 0 and returns -1.
 */
static int get_int(struct ctx *c, const json_t *obj, const char *key, const char *field,
		   int64_t *out, bool *set)
{
	const json_t *v = member(obj, key);

	*out = 0;
	if (set)
		*set = false;
	if (!v)
		return 0;
	if (json_int64(v, out)) {
		*out = 0;
		violations_add(c->out, field, "Invalid value: expected an integer.");
		return -1;
	}
	if (set)
		*set = true;
	return 0;
}

/* A double (JSON number, or a numeric string as proto3 JSON allows). */
static int json_double(const json_t *v, double *out)
{
	if (json_is_number(v)) {
		*out = json_number_value(v);
		return 0;
	}
	if (json_is_string(v) && json_string_length(v)) {
		char *end;
		*out = strtod(json_string_value(v), &end);
		return *end || !isfinite(*out) ? -1 : 0;
	}
	return -1;
}

static int get_double(struct ctx *c, const json_t *obj, const char *key, const char *field,
		      double *out, bool *set)
{
	const json_t *v = member(obj, key);

	*out = 0;
	*set = false;
	if (!v)
		return 0;
	if (json_double(v, out)) {
		*out = 0;
		violations_add(c->out, field, "Invalid value: expected a number.");
		return -1;
	}
	*set = true;
	return 0;
}

/* An enum member: NULL when absent or the *_UNSPECIFIED value. */
static const char *get_enum(struct ctx *c, const json_t *obj, const char *key, const char *field)
{
	const char *s = get_str(c, obj, key, field);
	size_t n = s ? strlen(s) : 0;

	if (n >= 12 && !strcmp(s + n - 12, "_UNSPECIFIED"))
		return NULL;
	return s;
}

/* ------------------------------------------------------------------------- */
/* Formatting helpers                                                         */

/* "1, 2, 4" for a count mask. */
static void fmt_counts(uint64_t mask, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int n = 1; n <= CATALOG_MAX_COUNT && off < len; n++) {
		if (!(mask & (UINT64_C(1) << n)))
			continue;
		off += snprintf(buf + off, len - off, "%s%d", off ? ", " : "", n);
	}
}

/* Memory in GB as the catalog writes it: "208", "14.4". */
static void fmt_gb(int64_t mb, char *buf, size_t len)
{
	snprintf(buf, len, "%.4g", (double)mb / 1024.0);
}

static void add_runtime_list(const struct catalog *cat, struct strbuf *sb, bool tpu_only)
{
	bool first = true;

	for (size_t i = 0; i < catalog_runtime_count(cat); i++) {
		const struct catalog_runtime *rt = catalog_runtime(cat, i);
		if (tpu_only && !rt->tpu)
			continue;
		sb_addf(sb, "%s%s", first ? "" : ", ", rt->version);
		first = false;
	}
}

static const char *acc_name(const struct ctx *c, int a)
{
	return catalog_accelerator(c->cat, (size_t)a)->name;
}

/* ------------------------------------------------------------------------- */
/* Shared: what reaches a container engine (lib/imageref.h)                   */

/* Whether a hostile value can be repeated in a message: printable ASCII, short. */
static bool quotable(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if ((unsigned char)s[n] < ' ' || (unsigned char)s[n] >= 0x7f || n >= 300)
			return false;
	return true;
}

/*
 * An image: the node's engine gets it as `run ... -- <image>`, and before
 * issue 12 an image "--volume=/:/host" was read as an option. Anything that
 * is not a reference (docker's grammar; no podman transport) is refused.
 */
static void check_image(struct ctx *c, const char *image, const char *field)
{
	const char *why = image ? imageref_parse(image, NULL) : NULL;

	if (!why)
		return;
	if (quotable(image))
		violations_add(c->out, field, "Invalid image URI \"%s\": %s. An image URI is "
			       IMAGEREF_FORM ", e.g. " IMAGEREF_EXAMPLE ".", image, why);
	else
		violations_add(c->out, field, "Invalid image URI: %s. An image URI is "
			       IMAGEREF_FORM ", e.g. " IMAGEREF_EXAMPLE ".", why);
}

/* ------------------------------------------------------------------------- */
/* Shared: one machine type with one accelerator config                       */

/*
 * Checks acc_type x acc_count on machine m (either may be unset), as both
 * APIs do; fields name where to blame the type and the count. On success
 * *acc and *count are the accelerator the replica uses (-1 / 0 for none),
 * including the GPUs built into the type (a2, g2) when none is asked for.
 */
static void check_machine_accelerator(struct ctx *c, const struct catalog_machine *m,
				      const char *acc_type, int64_t acc_count,
				      const char *type_field, const char *count_field,
				      const char *machine_field, int *acc, int64_t *count)
{
	uint64_t mask;
	int a;

	*acc = -1;
	*count = 0;
	if (!acc_type) {
		if (m && m->accelerator >= 0) {
			*acc = m->accelerator;
			*count = m->accelerator_count;
		}
		return;
	}
	a = catalog_accelerator_find(c->cat, acc_type);
	if (a < 0 || !(catalog_accelerator(c->cat, (size_t)a)->apis & c->api)) {
		violations_add(c->out, type_field, "Accelerator \"%s\" is not supported.", acc_type);
		return;
	}
	if (!m || acc_count <= 0)
		return;
	mask = m->counts[a];
	if (!mask) {
		violations_add(c->out, type_field,
			       "Accelerator \"%s\" is not supported for machine type \"%s\".",
			       acc_type, m->name);
		return;
	}
	if (acc_count > CATALOG_MAX_COUNT || !(mask & (UINT64_C(1) << acc_count))) {
		char counts[256];
		fmt_counts(mask, counts, sizeof(counts));
		violations_add(c->out, count_field,
			       "Accelerator count %lld is not supported for accelerator \"%s\" on "
			       "machine type \"%s\". Supported counts: %s.",
			       (long long)acc_count, acc_type, m->name, counts);
		return;
	}
	for (size_t i = 0; i < catalog_limit_count(c->cat); i++) {
		const struct catalog_limit *l = catalog_limit(c->cat, i);
		char max_gb[32], gb[32];
		if (l->accelerator != a || acc_count < l->count)
			continue;
		if (m->vcpus <= l->max_vcpus && m->memory_mb <= l->max_memory_mb)
			continue;
		fmt_gb(l->max_memory_mb, max_gb, sizeof(max_gb));
		fmt_gb(m->memory_mb, gb, sizeof(gb));
		violations_add(c->out, machine_field,
			       "Configurations with %d %s accelerators support at most %d vCPUs and "
			       "%s GB of memory; machine type \"%s\" has %d vCPUs and %s GB.",
			       l->count, acc_type, l->max_vcpus, max_gb, m->name, m->vcpus, gb);
		return;
	}
	*acc = a;
	*count = acc_count;
}

static void check_boot_disk_type(struct ctx *c, const json_t *disk, const char *field)
{
	const char *t = get_str(c, disk, "bootDiskType", field);

	if (t && strcmp(t, "pd-ssd") && strcmp(t, "pd-standard"))
		violations_add(c->out, field,
			       "Boot disk type \"%s\" is not supported. Valid values: \"pd-ssd\", "
			       "\"pd-standard\".", t);
}

/* A google-duration; *nanos stays 0 when absent or bad. Returns true when set and valid. */
static bool check_duration(struct ctx *c, const json_t *obj, const char *key, const char *field,
			   int64_t *nanos)
{
	const char *s = get_str(c, obj, key, field);

	*nanos = 0;
	if (!s)
		return false;
	if (wire_duration_parse(s, nanos)) {
		*nanos = 0;
		violations_add(c->out, field,
			       "Invalid duration \"%s\": expected seconds with up to 9 fractional "
			       "digits followed by 's', e.g. \"7200s\".", s);
		return false;
	}
	if (*nanos <= 0) {
		violations_add(c->out, field, "The duration must be positive.");
		return false;
	}
	return true;
}

/*
 * The accelerators of a job in region: each must be offered there, and a
 * job using more than one needs one zone offering them all (seed 000).
 * blame[a] is the field to name when accelerator a is missing.
 */
static void check_region_accelerators(struct ctx *c, const struct catalog_region *r,
				      catalog_accset used, const char *const *blame,
				      const char *zone_field, const char *where)
{
	catalog_accset missing = used & ~r->accelerators;
	struct strbuf sb = STRBUF_INIT;
	size_t n = 0;

	for (size_t a = 0; a < catalog_accelerator_count(c->cat); a++)
		if (missing & (1u << a))
			violations_add(c->out, blame[a],
				       "Accelerator \"%s\" is not available in %s \"%s\".",
				       acc_name(c, (int)a), where, r->name);
	if (missing || !used || catalog_region_zone_offering(r, used))
		return;
	for (size_t a = 0; a < catalog_accelerator_count(c->cat); a++)
		if (used & (1u << a))
			sb_addf(&sb, "%s%s", n++ ? ", " : "", acc_name(c, (int)a));
	if (n < 2) {	/* one type offered by the region is offered by one of its zones */
		sb_release(&sb);
		return;
	}
	violations_add(c->out, zone_field,
		       "No zone in %s \"%s\" offers all of the accelerator types the job uses "
		       "(%s). A job that uses more than one accelerator type must run in one "
		       "zone that offers all of them.", where, r->name, sb_str(&sb));
	sb_release(&sb);
}

/* ------------------------------------------------------------------------- */
/* ml v1: TrainingInput                                                       */

enum role { MASTER, WORKER, PS, EVALUATOR, N_ROLES };

static const struct role_names {
	const char *json;	/* JSON key prefix: masterType, masterConfig */
	const char *snake;	/* path prefix: training_input.master_type */
} role_names[N_ROLES] = {
	[MASTER] = { "master", "master" },
	[WORKER] = { "worker", "worker" },
	[PS] = { "parameterServer", "parameter_server" },
	[EVALUATOR] = { "evaluator", "evaluator" },
};

struct replica {
	enum role role;
	char type_key[32], count_key[32], config_key[32];	/* workerType ... */
	char type_field[64], count_field[64], config_field[64];	/* training_input.worker_type ... */
	const char *type;		/* machine type, from the job or the scale tier */
	bool from_tier;
	const struct catalog_machine *m;	/* NULL: unset or unknown */
	int64_t count;			/* replicas; the master is 1 */
	const json_t *config;		/* ReplicaConfig, borrowed */
	const char *image;		/* its imageUri, or the master's it inherits */
	bool has_acc_config;		/* acceleratorConfig given with a type or count */
	int acc;			/* the accelerator it uses, -1 none */
	int64_t acc_count;
	char acc_field[FIELD_MAX];	/* where to blame the accelerator */
};

static bool replica_active(const struct replica *r)
{
	return r->m && (r->role == MASTER || r->count > 0);
}

static void replica_init(struct replica *r, enum role role)
{
	const struct role_names *n = &role_names[role];

	memset(r, 0, sizeof(*r));
	r->role = role;
	r->acc = -1;
	snprintf(r->type_key, sizeof(r->type_key), "%sType", n->json);
	snprintf(r->count_key, sizeof(r->count_key), "%sCount", n->json);
	snprintf(r->config_key, sizeof(r->config_key), "%sConfig", n->json);
	snprintf(r->type_field, sizeof(r->type_field), "training_input.%s_type", n->snake);
	snprintf(r->count_field, sizeof(r->count_field), "training_input.%s_count", n->snake);
	snprintf(r->config_field, sizeof(r->config_field), "training_input.%s_config", n->snake);
}

static const struct catalog_tier_replica *tier_replica(const struct catalog_tier *t, enum role role)
{
	switch (role) {
	case MASTER:
		return &t->master;
	case WORKER:
		return &t->worker;
	case PS:
		return &t->parameter_server;
	default:
		return &t->evaluator;
	}
}

/* Types, counts and the scale tier: who runs on what. */
static void ml_replicas(struct ctx *c, const json_t *ti, bool custom,
			const struct catalog_tier *tier, struct replica *rs)
{
	int64_t max = catalog_max_replica_count(c->cat);

	for (int i = 0; i < N_ROLES; i++) {
		struct replica *r = &rs[i];
		const char *type;
		int64_t count = 0;
		bool count_bad = false;

		replica_init(r, (enum role)i);
		type = get_str(c, ti, r->type_key, r->type_field);
		if (i != MASTER)
			count_bad = get_int(c, ti, r->count_key, r->count_field, &count, NULL) < 0;
		r->config = get_obj(c, ti, r->config_key, r->config_field);

		if (!custom) {
			const struct catalog_tier_replica *tr;
			if (!tier)	/* an unknown tier is reported; its rules are unknown */
				continue;
			if (type)
				violations_add(c->out, r->type_field,
					       "%s can only be set when scaleTier is CUSTOM.", r->type_key);
			if (count)
				violations_add(c->out, r->count_field,
					       "%s can only be set when scaleTier is CUSTOM.", r->count_key);
			tr = tier_replica(tier, (enum role)i);
			r->type = tr->machine_type;
			r->count = i == MASTER ? 1 : tr->count;
			r->from_tier = true;
		} else {
			r->type = type;
			r->count = i == MASTER ? 1 : count;
			if (i == MASTER && !type)
				violations_add(c->out, r->type_field,
					       "masterType must be set when scaleTier is CUSTOM.");
			if (count < 0)
				violations_add(c->out, r->count_field, "%s must not be negative.",
					       r->count_key);
			else if (count > max)
				violations_add(c->out, r->count_field,
					       "%s must be at most %lld.", r->count_key, (long long)max);
			else if (count > 0 && !type)
				violations_add(c->out, r->type_field,
					       "%s must be set when %s is greater than zero.",
					       r->type_key, r->count_key);
		}
		if (!r->type)
			continue;
		r->m = catalog_machine_find(c->cat, r->type);
		if (!r->m || !(r->m->apis & CATALOG_API_ML)) {
			violations_add(c->out, r->type_field,
				       "Machine type \"%s\" is not supported for training.", r->type);
			r->m = NULL;
			continue;
		}
		if (r->m->tpu_host && i != WORKER) {
			violations_add(c->out, r->type_field,
				       "Machine type \"%s\" can only be used as workerType.", r->type);
			r->m = NULL;
			continue;
		}
		/* A TPU worker's count has its own rule (ml_tpu). */
		if (custom && i != MASTER && count == 0 && !count_bad && !r->m->tpu_host)
			violations_add(c->out, r->count_field,
				       "%s must be greater than zero when %s is set.",
				       r->count_key, r->type_key);
	}
	/* "This value must be consistent with the category of machine type that
	 * masterType uses": a Cloud TPU worker goes with either. */
	if (!rs[MASTER].m)
		return;
	for (int i = WORKER; i < N_ROLES; i++) {
		const struct replica *r = &rs[i];
		if (!r->m || r->m->tpu_host || r->m->legacy == rs[MASTER].m->legacy)
			continue;
		violations_add(c->out, r->type_field,
			       "%s \"%s\" and masterType \"%s\" must both be Compute Engine machine "
			       "types or both be legacy machine types.",
			       r->type_key, r->m->name, rs[MASTER].m->name);
	}
}

/* acceleratorConfig of each replica against the machine x accelerator table. */
static void ml_accelerators(struct ctx *c, bool custom, struct replica *rs)
{
	for (int i = 0; i < N_ROLES; i++) {
		struct replica *r = &rs[i];
		char field[BASE_MAX], tfield[FIELD_MAX], cfield[FIELD_MAX];
		const char *type = NULL;
		int64_t count = 0;
		const json_t *ac;

		snprintf(field, sizeof(field), "%s.accelerator_config", r->config_field);
		snprintf(tfield, sizeof(tfield), "%s.type", field);
		snprintf(cfield, sizeof(cfield), "%s.count", field);
		ac = get_obj(c, r->config, "acceleratorConfig", field);
		if (ac) {
			type = get_enum(c, ac, "type", tfield);
			(void)get_int(c, ac, "count", cfield, &count, NULL);
		}
		r->has_acc_config = type || count;
		if (!r->has_acc_config) {
			check_machine_accelerator(c, r->m, NULL, 0, tfield, cfield,
						  r->type_field, &r->acc, &r->acc_count);
			snprintf(r->acc_field, sizeof(r->acc_field), "%s",
				 r->from_tier ? "training_input.scale_tier" : r->type_field);
			continue;
		}
		snprintf(r->acc_field, sizeof(r->acc_field), "%s", tfield);
		if (!custom) {
			violations_add(c->out, field,
				       "acceleratorConfig can only be set when scaleTier is CUSTOM.");
			continue;
		}
		if (!r->type) {
			if (i != MASTER)	/* a missing masterType is reported already */
				violations_add(c->out, field,
					       "acceleratorConfig can only be set together with %s.",
					       r->type_key);
			continue;
		}
		if (count < 0)
			violations_add(c->out, cfield, "Accelerator count must not be negative.");
		else if (type && count == 0)
			violations_add(c->out, cfield,
				       "Accelerator count must be greater than zero when an "
				       "accelerator type is set.");
		if (!type && count > 0)
			violations_add(c->out, tfield,
				       "Accelerator type must be set when an accelerator count is set.");
		if (!r->m) {
			if (type)	/* still say when the accelerator itself is unknown */
				check_machine_accelerator(c, NULL, type, 0, tfield, cfield,
							  r->type_field, &r->acc, &r->acc_count);
			continue;
		}
		if (r->m->legacy && !r->m->tpu_host) {
			violations_add(c->out, field,
				       "acceleratorConfig can only be set when %s is a Compute Engine "
				       "machine type; \"%s\" is a legacy machine type that comes with "
				       "its own accelerators.", r->type_key, r->m->name);
			continue;
		}
		if (r->m->tpu_host && rs[MASTER].m && rs[MASTER].m->legacy) {
			violations_add(c->out, field,
				       "acceleratorConfig can only be set on a %s worker when "
				       "masterType is a Compute Engine machine type.", r->m->name);
			continue;
		}
		check_machine_accelerator(c, r->m, type, count, tfield, cfield, r->type_field,
					  &r->acc, &r->acc_count);
	}
}

static bool is_tpu_runtime_or_image_version(const struct catalog *cat, const char *v)
{
	const struct catalog_runtime *rt = catalog_runtime_find(cat, v);

	if (rt && rt->tpu)
		return true;
	for (size_t i = 0; i < catalog_tpu_image_count(cat); i++) {
		const char *iv;
		(void)catalog_tpu_image(cat, i, &iv);
		if (!strcmp(iv, v))
			return true;
	}
	return false;
}

/* Seed 002: Cloud TPU workers, tpuTfVersion, TPU runtime versions. */
static void ml_tpu(struct ctx *c, bool custom, struct replica *rs,
		   const char *runtime)
{
	struct replica *w = &rs[WORKER];
	bool tpu_worker = w->m && w->m->tpu_host;

	for (int i = 0; i < N_ROLES; i++) {
		struct replica *r = &rs[i];
		char field[FIELD_MAX];
		const char *tfv;

		snprintf(field, sizeof(field), "%s.tpu_tf_version", r->config_field);
		tfv = get_str(c, r->config, "tpuTfVersion", field);
		if (i == WORKER && tpu_worker) {
			if (!r->image) {
				if (tfv)
					violations_add(c->out, field,
						       "tpuTfVersion can only be set when the Cloud TPU "
						       "worker uses a custom container.");
				continue;
			}
			const char *need = catalog_tpu_image_version(c->cat, r->image);
			if (!tfv && need) {
				violations_add(c->out, field,
					       "tpuTfVersion is required when the Cloud TPU worker uses "
					       "a custom container; image \"%s\" needs tpuTfVersion "
					       "\"%s\".", r->image, need);
			} else if (!tfv) {
				violations_add(c->out, field,
					       "tpuTfVersion is required when the Cloud TPU worker uses "
					       "a custom container.");
			} else if (need && strcmp(need, tfv)) {
				violations_add(c->out, field, "Image \"%s\" requires tpuTfVersion \"%s\".",
					       r->image, need);
			} else if (!need && !is_tpu_runtime_or_image_version(c->cat, tfv)) {
				struct strbuf sb = STRBUF_INIT;
				add_runtime_list(c->cat, &sb, true);
				for (size_t k = 0; k < catalog_tpu_image_count(c->cat); k++) {
					const char *iv;
					(void)catalog_tpu_image(c->cat, k, &iv);
					sb_addf(&sb, ", %s", iv);
				}
				violations_add(c->out, field,
					       "tpuTfVersion \"%s\" is not supported. Supported values: %s.",
					       tfv, sb_str(&sb));
				sb_release(&sb);
			}
		} else if (tfv) {
			violations_add(c->out, field, "tpuTfVersion can only be set on a Cloud TPU worker.");
		}
	}
	if (!tpu_worker)
		return;
	if (custom && w->count != 1)
		violations_add(c->out, w->count_field, "workerCount must be 1 when workerType is %s.",
			       w->m->name);
	if (rs[PS].count > 0 || rs[PS].m)
		violations_add(c->out, rs[PS].from_tier ? "training_input.scale_tier" :
			       rs[PS].count > 0 ? rs[PS].count_field : rs[PS].type_field,
			       "Parameter servers cannot be used with Cloud TPU: parameterServerCount "
			       "must be 0 when workerType is %s.", w->m->name);
	/* Without a custom container the TPU worker runs the runtime version. */
	if (!w->image && runtime) {
		const struct catalog_runtime *rt = catalog_runtime_find(c->cat, runtime);
		if (rt && !rt->tpu) {
			struct strbuf sb = STRBUF_INIT;
			add_runtime_list(c->cat, &sb, true);
			violations_add(c->out, "training_input.runtime_version",
				       "Runtime version \"%s\" does not support training on Cloud TPU. "
				       "Runtime versions for Cloud TPU: %s.", runtime, sb_str(&sb));
			sb_release(&sb);
		}
	}
}

static void ml_region(struct ctx *c, const json_t *ti, const struct replica *rs)
{
	const char *blame[CATALOG_MAX_ACCELERATORS] = { 0 };
	const char *region = get_str(c, ti, "region", "training_input.region");
	const struct catalog_region *r;
	catalog_accset used = 0;

	if (!region) {
		violations_add(c->out, "training_input.region", "Region must be specified.");
		return;
	}
	r = catalog_region_find(c->cat, region);
	if (!r) {
		violations_add(c->out, "training_input.region",
			       "Region \"%s\" is not supported for training.", region);
		return;
	}
	for (int i = 0; i < N_ROLES; i++) {
		if (!replica_active(&rs[i]) || rs[i].acc < 0)
			continue;
		used |= 1u << rs[i].acc;
		blame[rs[i].acc] = "training_input.region";
	}
	check_region_accelerators(c, r, used, blame, "training_input.region", "region");
}

static void ml_runtime(struct ctx *c, const json_t *ti, const char *master_image,
		       const char **effective)
{
	const char *rv = get_str(c, ti, "runtimeVersion", "training_input.runtime_version");
	const char *pv = get_str(c, ti, "pythonVersion", "training_input.python_version");
	const struct catalog_runtime *rt = NULL;

	*effective = rv;
	if (rv && master_image)
		violations_add(c->out, "training_input.runtime_version",
			       "Only one of masterConfig.imageUri and runtimeVersion should be set.");
	if (rv) {
		rt = catalog_runtime_find(c->cat, rv);
		if (!rt) {
			struct strbuf sb = STRBUF_INIT;
			add_runtime_list(c->cat, &sb, false);
			violations_add(c->out, "training_input.runtime_version",
				       "Runtime version \"%s\" is not supported. Supported runtime "
				       "versions: %s.", rv, sb_str(&sb));
			sb_release(&sb);
			return;
		}
	} else if (!master_image) {
		*effective = catalog_default_runtime_version(c->cat);
		rt = catalog_runtime_find(c->cat, *effective);
	}
	if (!pv || !rt)
		return;
	for (size_t i = 0; i < rt->n_python; i++)
		if (!strcmp(rt->python[i], pv))
			return;
	{
		struct strbuf sb = STRBUF_INIT;
		for (size_t i = 0; i < rt->n_python; i++)
			sb_addf(&sb, "%s%s", i ? ", " : "", rt->python[i]);
		violations_add(c->out, "training_input.python_version",
			       "Python version \"%s\" is not available for runtime version \"%s\". "
			       "Available Python versions: %s.", pv, rt->version, sb_str(&sb));
		sb_release(&sb);
	}
}

static void ml_packages(struct ctx *c, const json_t *ti, const char *master_image)
{
	const json_t *pkgs = get_arr(c, ti, "packageUris", "training_input.package_uris");
	const char *module = get_str(c, ti, "pythonModule", "training_input.python_module");
	size_t n = arr_size(pkgs);

	if (!master_image && !n)
		violations_add(c->out, "training_input.package_uris",
			       "At least one package URI is required unless masterConfig.imageUri "
			       "is set.");
	if (!master_image && !module)
		violations_add(c->out, "training_input.python_module",
			       "pythonModule is required unless masterConfig.imageUri is set.");
	if (n > MAX_PACKAGE_URIS) {
		violations_add(c->out, "training_input.package_uris",
			       "The maximum number of package URIs is %d.", MAX_PACKAGE_URIS);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const json_t *p = json_array_get(pkgs, i);
		if (!json_is_string(p) || !json_string_length(p)) {
			char field[FIELD_MAX];
			snprintf(field, sizeof(field), "training_input.package_uris[%zu]", i);
			violations_add(c->out, field, "Package URI must be a non-empty string.");
		}
	}
}

/* Per ReplicaConfig: image, containerCommand/containerArgs, diskConfig. */
static void ml_replica_configs(struct ctx *c, const json_t *ti, struct replica *rs)
{
	const json_t *args = get_arr(c, ti, "args", "training_input.args");

	for (int i = 0; i < N_ROLES; i++) {
		struct replica *r = &rs[i];
		char field[FIELD_MAX];
		const json_t *cmd, *cargs;

		snprintf(field, sizeof(field), "%s.container_command", r->config_field);
		cmd = get_arr(c, r->config, "containerCommand", field);
		if (arr_size(cmd)) {
			if (!r->image)
				violations_add(c->out, field,
					       "containerCommand cannot be set if a custom container "
					       "image is not provided.");
			if (arr_size(args))
				violations_add(c->out, field,
					       "containerCommand and args are mutually exclusive, i.e., "
					       "both cannot be set at the same time.");
		}
		snprintf(field, sizeof(field), "%s.container_args", r->config_field);
		cargs = get_arr(c, r->config, "containerArgs", field);
		if (arr_size(cargs)) {
			if (!r->image)
				violations_add(c->out, field,
					       "containerArgs cannot be set if a custom container image "
					       "is not provided.");
			if (arr_size(args))
				violations_add(c->out, field,
					       "containerArgs and args are mutually exclusive, i.e., both "
					       "cannot be set at the same time.");
		}
		snprintf(field, sizeof(field), "%s.disk_config", r->config_field);
		{
			const json_t *disk = get_obj(c, r->config, "diskConfig", field);
			int64_t gb;
			snprintf(field, sizeof(field), "%s.disk_config.boot_disk_type",
				 r->config_field);
			check_boot_disk_type(c, disk, field);
			snprintf(field, sizeof(field), "%s.disk_config.boot_disk_size_gb",
				 r->config_field);
			if (!get_int(c, disk, "bootDiskSizeGb", field, &gb, NULL) && gb < 0)
				violations_add(c->out, field, "The boot disk size must not be negative.");
		}
	}
}

static void ml_scheduling(struct ctx *c, const json_t *ti)
{
	const json_t *s = get_obj(c, ti, "scheduling", "training_input.scheduling");
	int64_t nanos, prio;
	bool set;

	if (!s)
		return;
	(void)check_duration(c, s, "maxRunningTime", "training_input.scheduling.max_running_time",
			     &nanos);
	if (check_duration(c, s, "maxWaitTime", "training_input.scheduling.max_wait_time", &nanos) &&
	    nanos < MIN_MAX_WAIT_NANOS)
		violations_add(c->out, "training_input.scheduling.max_wait_time",
			       "The minimum for this field is 1800s (30 minutes).");
	if (!get_int(c, s, "priority", "training_input.scheduling.priority", &prio, &set) && set &&
	    (prio < 0 || prio > 1000))
		violations_add(c->out, "training_input.scheduling.priority",
			       "Priority must be between 0 and 1000.");
}

/* --- hyperparameters --- */

static const char *const scale_types[] = { "UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE",
					    "UNIT_REVERSE_LOG_SCALE" };

static void hp_param(struct ctx *c, const json_t *p, size_t i, bool grid)
{
	char base[BASE_MAX], f[FIELD_MAX];
	const char *type, *scale;
	double minv = 0, maxv = 0;
	bool has_min, has_max, log_scale;
	const json_t *cats, *discs;

	snprintf(base, sizeof(base), "training_input.hyperparameters.params[%zu]", i);
	snprintf(f, sizeof(f), "%s.type", base);
	type = get_enum(c, p, "type", f);
	if (!type) {
		violations_add(c->out, f, "A parameter type (DOUBLE, INTEGER, CATEGORICAL or "
			       "DISCRETE) must be specified.");
		return;
	}
	if (grid && !strcmp(type, "DOUBLE"))
		violations_add(c->out, f, "GRID_SEARCH requires every parameter to be INTEGER, "
			       "CATEGORICAL or DISCRETE.");
	snprintf(f, sizeof(f), "%s.scale_type", base);
	scale = get_enum(c, p, "scaleType", f);
	if (scale && !strcmp(scale, "NONE"))
		scale = NULL;
	log_scale = scale && strcmp(scale, "UNIT_LINEAR_SCALE");
	if (scale) {
		size_t k;
		for (k = 0; k < ARRAY_SIZE(scale_types); k++)
			if (!strcmp(scale, scale_types[k]))
				break;
		if (k == ARRAY_SIZE(scale_types)) {
			violations_add(c->out, f, "Scale type \"%s\" is not supported.", scale);
			scale = NULL;
			log_scale = false;
		}
	}
	snprintf(f, sizeof(f), "%s.min_value", base);
	(void)get_double(c, p, "minValue", f, &minv, &has_min);
	snprintf(f, sizeof(f), "%s.max_value", base);
	(void)get_double(c, p, "maxValue", f, &maxv, &has_max);
	snprintf(f, sizeof(f), "%s.categorical_values", base);
	cats = get_arr(c, p, "categoricalValues", f);
	snprintf(f, sizeof(f), "%s.discrete_values", base);
	discs = get_arr(c, p, "discreteValues", f);

	if (!strcmp(type, "DOUBLE") || !strcmp(type, "INTEGER")) {
		bool integer = !strcmp(type, "INTEGER");
		snprintf(f, sizeof(f), "%s.min_value", base);
		if (!has_min)
			violations_add(c->out, f, "minValue is required for %s parameters.", type);
		else if (integer && minv != floor(minv))
			violations_add(c->out, f, "minValue must be an integer for INTEGER parameters.");
		else if (log_scale && minv <= 0)
			violations_add(c->out, f, "The entire feasible space must be strictly positive "
				       "for %s.", scale);
		snprintf(f, sizeof(f), "%s.max_value", base);
		if (!has_max)
			violations_add(c->out, f, "maxValue is required for %s parameters.", type);
		else if (integer && maxv != floor(maxv))
			violations_add(c->out, f, "maxValue must be an integer for INTEGER parameters.");
		else if (has_min && minv >= maxv)
			violations_add(c->out, f, "maxValue (%g) must be greater than minValue (%g).",
				       maxv, minv);
		if (cats) {
			snprintf(f, sizeof(f), "%s.categorical_values", base);
			violations_add(c->out, f, "categoricalValues can only be set for CATEGORICAL "
				       "parameters.");
		}
		if (discs) {
			snprintf(f, sizeof(f), "%s.discrete_values", base);
			violations_add(c->out, f, "discreteValues can only be set for DISCRETE "
				       "parameters.");
		}
		return;
	}
	if (strcmp(type, "CATEGORICAL") && strcmp(type, "DISCRETE")) {
		snprintf(f, sizeof(f), "%s.type", base);
		violations_add(c->out, f, "Parameter type \"%s\" is not supported.", type);
		return;
	}
	if (has_min || has_max) {
		snprintf(f, sizeof(f), "%s.%s", base, has_min ? "min_value" : "max_value");
		violations_add(c->out, f, "minValue and maxValue can only be set for DOUBLE and "
			       "INTEGER parameters.");
	}
	if (!strcmp(type, "CATEGORICAL")) {
		size_t n = arr_size(cats);
		snprintf(f, sizeof(f), "%s.categorical_values", base);
		if (!n)
			violations_add(c->out, f, "categoricalValues must not be empty for CATEGORICAL "
				       "parameters.");
		else if (n > MAX_CATEGORICAL_VALUES)
			violations_add(c->out, f, "At most %d categorical values are supported.",
				       MAX_CATEGORICAL_VALUES);
		else
			for (size_t k = 0; k < n; k++) {
				const json_t *v = json_array_get(cats, k);
				if (!json_is_string(v)) {
					violations_add(c->out, f, "Categorical values must be strings.");
					break;
				}
				for (size_t j = 0; j < k; j++)
					if (json_equal(v, json_array_get(cats, j))) {
						violations_add(c->out, f, "Duplicate categorical value "
							       "\"%s\".", json_string_value(v));
						k = n;	/* one report is enough */
						break;
					}
			}
		if (discs) {
			snprintf(f, sizeof(f), "%s.discrete_values", base);
			violations_add(c->out, f, "discreteValues can only be set for DISCRETE "
				       "parameters.");
		}
		if (scale) {
			snprintf(f, sizeof(f), "%s.scale_type", base);
			violations_add(c->out, f, "scaleType cannot be set for CATEGORICAL parameters.");
		}
		return;
	}
	/* DISCRETE */
	{
		size_t n = arr_size(discs);
		double prev = 0;
		snprintf(f, sizeof(f), "%s.discrete_values", base);
		if (!n)
			violations_add(c->out, f, "discreteValues must not be empty for DISCRETE "
				       "parameters.");
		else if (n > MAX_DISCRETE_VALUES)
			violations_add(c->out, f, "At most %d discrete values are supported.",
				       MAX_DISCRETE_VALUES);
		else
			for (size_t k = 0; k < n; k++) {
				double d;
				if (json_double(json_array_get(discs, k), &d)) {
					violations_add(c->out, f, "Discrete values must be numbers.");
					break;
				}
				if (k && d <= prev) {
					violations_add(c->out, f, "Discrete values must be strictly "
						       "increasing.");
					break;
				}
				if (!k && log_scale && d <= 0) {
					violations_add(c->out, f, "The entire feasible space must be "
						       "strictly positive for %s.", scale);
					break;
				}
				prev = d;
			}
		if (cats) {
			snprintf(f, sizeof(f), "%s.categorical_values", base);
			violations_add(c->out, f, "categoricalValues can only be set for CATEGORICAL "
				       "parameters.");
		}
	}
}

static void ml_hyperparameters(struct ctx *c, const json_t *ti)
{
	const json_t *hp = get_obj(c, ti, "hyperparameters", "training_input.hyperparameters");
	const json_t *params;
	const char *goal, *algo;
	int64_t trials, parallel, failed;
	bool has_trials, has_parallel, has_failed, grid;
	size_t n;

	if (!hp)
		return;
	goal = get_enum(c, hp, "goal", "training_input.hyperparameters.goal");
	if (!goal)
		violations_add(c->out, "training_input.hyperparameters.goal",
			       "A goal (MAXIMIZE or MINIMIZE) must be specified.");
	else if (strcmp(goal, "MAXIMIZE") && strcmp(goal, "MINIMIZE"))
		violations_add(c->out, "training_input.hyperparameters.goal",
			       "Goal \"%s\" is not supported: use MAXIMIZE or MINIMIZE.", goal);
	(void)get_str(c, hp, "hyperparameterMetricTag",
		      "training_input.hyperparameters.hyperparameter_metric_tag");
	algo = get_enum(c, hp, "algorithm", "training_input.hyperparameters.algorithm");
	if (algo && strcmp(algo, "GRID_SEARCH") && strcmp(algo, "RANDOM_SEARCH"))
		violations_add(c->out, "training_input.hyperparameters.algorithm",
			       "Algorithm \"%s\" is not supported.", algo);
	grid = algo && !strcmp(algo, "GRID_SEARCH");

	(void)get_int(c, hp, "maxTrials", "training_input.hyperparameters.max_trials", &trials,
		      &has_trials);
	(void)get_int(c, hp, "maxParallelTrials",
		      "training_input.hyperparameters.max_parallel_trials", &parallel, &has_parallel);
	(void)get_int(c, hp, "maxFailedTrials", "training_input.hyperparameters.max_failed_trials",
		      &failed, &has_failed);
	if (has_trials && trials < 1)
		violations_add(c->out, "training_input.hyperparameters.max_trials",
			       "maxTrials must be at least 1.");
	if (has_parallel && parallel < 1)
		violations_add(c->out, "training_input.hyperparameters.max_parallel_trials",
			       "maxParallelTrials must be at least 1.");
	else if (has_parallel && has_trials && trials >= 1 && parallel > trials)
		violations_add(c->out, "training_input.hyperparameters.max_parallel_trials",
			       "maxParallelTrials (%lld) must not be greater than maxTrials (%lld).",
			       (long long)parallel, (long long)trials);
	if (has_failed && failed < 0)
		violations_add(c->out, "training_input.hyperparameters.max_failed_trials",
			       "maxFailedTrials must not be negative.");

	params = get_arr(c, hp, "params", "training_input.hyperparameters.params");
	n = arr_size(params);
	if (!n) {
		violations_add(c->out, "training_input.hyperparameters.params",
			       "At least one parameter must be specified.");
		return;
	}
	if (n > MAX_HP_PARAMS) {
		violations_add(c->out, "training_input.hyperparameters.params",
			       "At most %d parameters are supported.", MAX_HP_PARAMS);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const json_t *p = json_array_get(params, i);
		char f[FIELD_MAX];
		const char *name;

		snprintf(f, sizeof(f), "training_input.hyperparameters.params[%zu]", i);
		if (!json_is_object(p)) {
			violations_add(c->out, f, "Invalid value: expected an object.");
			continue;
		}
		snprintf(f, sizeof(f), "training_input.hyperparameters.params[%zu].parameter_name", i);
		name = get_str(c, p, "parameterName", f);
		if (!name) {
			violations_add(c->out, f, "parameterName must be specified.");
		} else {
			for (size_t j = 0; j < i; j++) {
				const json_t *q = member(json_array_get(params, j), "parameterName");
				if (json_is_string(q) && !strcmp(json_string_value(q), name)) {
					violations_add(c->out, f, "Duplicate parameter name \"%s\".", name);
					break;
				}
			}
		}
		hp_param(c, p, i, grid);
	}
}

size_t validate_ml_training_input(const struct catalog *cat, const json_t *ti,
				  struct violations *out)
{
	struct ctx c = { cat, out, CATALOG_API_ML };
	struct replica rs[N_ROLES];
	const struct catalog_tier *tier = NULL;
	const char *tier_name, *master_image, *runtime;
	size_t before = out->n;
	bool custom;

	if (!json_is_object(ti)) {
		violations_add(out, "training_input", "Invalid value: expected an object.");
		return out->n - before;
	}
	tier_name = get_str(&c, ti, "scaleTier", "training_input.scale_tier");
	if (!tier_name)
		tier_name = "BASIC";	/* BASIC is 0, proto3's default */
	custom = !strcmp(tier_name, "CUSTOM");
	if (!custom) {
		tier = catalog_tier_find(cat, tier_name);
		if (!tier)
			violations_add(out, "training_input.scale_tier",
				       "Scale tier \"%s\" is not supported.", tier_name);
	}
	ml_replicas(&c, ti, custom, tier, rs);

	/* "If workerConfig.imageUri has not been set, AI Platform uses the value
	 * of masterConfig.imageUri" (and likewise for the other roles). */
	master_image = get_str(&c, rs[MASTER].config, "imageUri",
			       "training_input.master_config.image_uri");
	for (int i = 0; i < N_ROLES; i++) {
		char f[FIELD_MAX];
		snprintf(f, sizeof(f), "%s.image_uri", rs[i].config_field);
		rs[i].image = i == MASTER ? master_image : get_str(&c, rs[i].config, "imageUri", f);
		check_image(&c, rs[i].image, f);
		if (!rs[i].image)
			rs[i].image = master_image;
	}
	ml_accelerators(&c, custom, rs);
	ml_runtime(&c, ti, master_image, &runtime);
	ml_tpu(&c, custom, rs, runtime);
	ml_region(&c, ti, rs);
	ml_packages(&c, ti, master_image);
	ml_replica_configs(&c, ti, rs);
	ml_scheduling(&c, ti);
	ml_hyperparameters(&c, ti);
	return out->n - before;
}

/* ------------------------------------------------------------------------- */
/* Labels                                                                     */

/* Decodes one UTF-8 code point; returns its length, 0 when malformed. */
static size_t utf8_next(const unsigned char *s, uint32_t *cp)
{
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0 && (s[1] & 0xc0) == 0x80) {
		*cp = (uint32_t)(s[0] & 0x1f) << 6 | (s[1] & 0x3f);
		return *cp >= 0x80 ? 2 : 0;
	}
	if ((s[0] & 0xf0) == 0xe0 && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80) {
		*cp = (uint32_t)(s[0] & 0x0f) << 12 | (uint32_t)(s[1] & 0x3f) << 6 | (s[2] & 0x3f);
		return *cp >= 0x800 && (*cp < 0xd800 || *cp > 0xdfff) ? 3 : 0;
	}
	if ((s[0] & 0xf8) == 0xf0 && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80 &&
	    (s[3] & 0xc0) == 0x80) {
		*cp = (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3f) << 12 |
		      (uint32_t)(s[2] & 0x3f) << 6 | (s[3] & 0x3f);
		return *cp >= 0x10000 && *cp <= 0x10ffff ? 4 : 0;
	}
	return 0;
}

/*
 * An "international character" in Google's label rule ([\p{Ll}\p{Lo}] and
 * \p{N}). Without Unicode tables this is an approximation: any non-ASCII
 * code point except the Latin-1 symbols, the common upper-case blocks
 * (Latin-1, Greek, Cyrillic) and general punctuation.
 */
static bool label_intl_ok(uint32_t cp)
{
	if (cp < 0xc0)	/* Latin-1 symbols; keep ª µ º and ² ³ ¹ ¼ ½ ¾ */
		return cp == 0xaa || cp == 0xb5 || cp == 0xba || cp == 0xb2 || cp == 0xb3 ||
		       cp == 0xb9 || (cp >= 0xbc && cp <= 0xbe);
	if (cp <= 0xde || cp == 0xf7)	/* À..Þ upper case, × and ÷ */
		return false;
	if ((cp >= 0x391 && cp <= 0x3ab) || (cp >= 0x400 && cp <= 0x42f))
		return false;
	if (cp >= 0x2000 && cp <= 0x206f)
		return false;
	return true;
}

/* Checks one label key or value: min..63 characters of the label alphabet. */
static bool label_ok(const char *s, bool key)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t chars = 0;

	while (*p) {
		uint32_t cp;
		size_t len = utf8_next(p, &cp);
		if (!len)
			return false;
		if (cp < 0x80) {
			bool lower = cp >= 'a' && cp <= 'z';
			bool other = (cp >= '0' && cp <= '9') || cp == '_' || cp == '-';
			if (!lower && (!other || (key && chars == 0)))
				return false;
		} else if (!label_intl_ok(cp)) {
			return false;
		}
		p += len;
		if (++chars > MAX_LABEL_CHARS)
			return false;
	}
	return !key || chars > 0;
}

size_t validate_labels(const json_t *labels, const char *field, struct violations *out)
{
	size_t before = out->n;
	const char *key;
	json_t *value;

	if (!labels || json_is_null(labels))
		return 0;
	if (!json_is_object(labels)) {
		violations_add(out, field, "Invalid value: expected a map of labels.");
		return out->n - before;
	}
	if (json_object_size(labels) > MAX_LABELS) {
		violations_add(out, field, "At most %d labels can be set; %zu were given.",
			       MAX_LABELS, json_object_size(labels));
		return out->n - before;
	}
	json_object_foreach((json_t *)labels, key, value) {
		if (!label_ok(key, true))
			violations_add(out, field,
				       "Invalid label key \"%s\": label keys must be between 1 and 63 "
				       "characters long and must conform to the regular expression "
				       "[\\p{Ll}\\p{Lo}][\\p{Ll}\\p{Lo}\\p{N}_-]{0,62}.", key);
		if (!json_is_string(value))
			violations_add(out, field, "Invalid value for label \"%s\": expected a string.",
				       key);
		else if (!label_ok(json_string_value(value), false))
			violations_add(out, field,
				       "Invalid value for label \"%s\": label values must be between 0 "
				       "and 63 characters long and must conform to the regular "
				       "expression [\\p{Ll}\\p{Lo}\\p{N}_-]{0,63}.", key);
	}
	return out->n - before;
}

/* ------------------------------------------------------------------------- */
/* Vertex: CustomJobSpec                                                      */

/* A container's env (containerSpec.env, pythonPackageSpec.env): EnvVar.name
 * is "Required. ... Must be a valid C identifier." */
static void vx_env(struct ctx *c, const json_t *spec, const char *base)
{
	char f[FIELD_MAX];
	const json_t *env, *var;
	size_t i;

	snprintf(f, sizeof(f), "%s.env", base);
	env = get_arr(c, spec, "env", f);
	json_array_foreach((json_t *)env, i, var) {
		const char *name;
		snprintf(f, sizeof(f), "%s.env[%zu]", base, i);
		if (!json_is_object(var)) {
			violations_add(c->out, f, "Invalid value: expected an object.");
			continue;
		}
		snprintf(f, sizeof(f), "%s.env[%zu].value", base, i);
		(void)get_str(c, var, "value", f);
		snprintf(f, sizeof(f), "%s.env[%zu].name", base, i);
		name = get_str(c, var, "name", f);
		if (member(var, "name") && !json_is_string(member(var, "name")))
			continue;	/* the wrong type, reported by get_str() */
		if (!name)
			violations_add(c->out, f, "Required field is not set.");
		else if (!env_name_valid(name) && quotable(name))
			violations_add(c->out, f, "Invalid environment variable name \"%s\": it must "
				       "be a C identifier, [A-Za-z_][A-Za-z0-9_]*.", name);
		else if (!env_name_valid(name))
			violations_add(c->out, f, "Invalid environment variable name: it must be a C "
				       "identifier, [A-Za-z_][A-Za-z0-9_]*.");
	}
}

static void vx_python_package(struct ctx *c, const json_t *pp, const char *base)
{
	char f[FIELD_MAX];
	const char *image;
	const json_t *pkgs;
	size_t n;

	snprintf(f, sizeof(f), "%s.python_package_spec.executor_image_uri", base);
	image = get_str(c, pp, "executorImageUri", f);
	if (!image)
		violations_add(c->out, f, "An executor image URI must be specified.");
	check_image(c, image, f);
	snprintf(f, sizeof(f), "%s.python_package_spec.package_uris", base);
	pkgs = get_arr(c, pp, "packageUris", f);
	n = arr_size(pkgs);
	if (!n)
		violations_add(c->out, f, "At least one package URI must be specified.");
	else if (n > MAX_PACKAGE_URIS)
		violations_add(c->out, f, "The maximum number of package URIs is %d.",
			       MAX_PACKAGE_URIS);
	snprintf(f, sizeof(f), "%s.python_package_spec.python_module", base);
	if (!get_str(c, pp, "pythonModule", f))
		violations_add(c->out, f, "A Python module must be specified.");
	snprintf(f, sizeof(f), "%s.python_package_spec", base);
	vx_env(c, pp, f);
}

/* One pool; returns the accelerator it uses (-1 none) for the region check. */
static int vx_pool(struct ctx *c, const json_t *pool, size_t i, bool *nonempty)
{
	char base[BASE_MAX], f[FIELD_MAX], tfield[FIELD_MAX], cfield[FIELD_MAX];
	const json_t *ms, *cs, *pp;
	const struct catalog_machine *m = NULL;
	const char *mtype = NULL, *atype = NULL;
	int64_t replicas, acount = 0, max = catalog_max_replica_count(c->cat);
	int acc = -1;
	int64_t used_count;

	*nonempty = false;
	snprintf(base, sizeof(base), "job_spec.worker_pool_specs[%zu]", i);
	if (!pool || (json_is_object(pool) && !json_object_size(pool))) {
		/* "All worker pools except the first one are optional and can be
		 * skipped by providing an empty value." */
		if (i == 0)
			violations_add(c->out, "job_spec.worker_pool_specs[0].replica_count",
				       "Replica count for master worker pool "
				       "(worker_pool_specs[0].replica_count) should be 1.");
		return -1;
	}
	if (!json_is_object(pool)) {
		violations_add(c->out, base, "Invalid value: expected an object.");
		return -1;
	}
	*nonempty = true;
	snprintf(f, sizeof(f), "%s.machine_spec", base);
	ms = get_obj(c, pool, "machineSpec", f);
	snprintf(f, sizeof(f), "%s.replica_count", base);
	(void)get_int(c, pool, "replicaCount", f, &replicas, NULL);
	if (i == 0 && replicas != 1)
		violations_add(c->out, f, "Replica count for master worker pool "
			       "(worker_pool_specs[0].replica_count) should be 1.");
	else if (replicas < 0)
		violations_add(c->out, f, "replica_count must not be negative.");
	else if (replicas > max)
		violations_add(c->out, f, "replica_count must be at most %lld.", (long long)max);
	/* proto3: a replica_count of 0 is an unset one. */
	if (!ms != !replicas) {
		snprintf(f, sizeof(f), "%s.machine_spec", base);
		violations_add(c->out, f,
			       "Both or none of `machine_spec` and `replica_count` should be specified.");
	}

	snprintf(tfield, sizeof(tfield), "%s.machine_spec.accelerator_type", base);
	snprintf(cfield, sizeof(cfield), "%s.machine_spec.accelerator_count", base);
	if (ms) {
		snprintf(f, sizeof(f), "%s.machine_spec.machine_type", base);
		mtype = get_str(c, ms, "machineType", f);
		if (!mtype) {
			violations_add(c->out, f, "A machine type must be specified.");
		} else {
			m = catalog_machine_find(c->cat, mtype);
			if (!m || !(m->apis & CATALOG_API_VERTEX)) {
				violations_add(c->out, f,
					       "Machine type \"%s\" is not supported for training.", mtype);
				m = NULL;
			}
		}
		atype = get_enum(c, ms, "acceleratorType", tfield);
		(void)get_int(c, ms, "acceleratorCount", cfield, &acount, NULL);
		if (!atype != !acount)
			violations_add(c->out, tfield, "Both `accelerator_type` and "
				       "`accelerator_count` should be specified or none.");
		if (acount < 0)
			violations_add(c->out, cfield, "accelerator_count must not be negative.");
		if (atype && acount > 0) {
			check_machine_accelerator(c, m, atype, acount, tfield, cfield, f, &acc,
						  &used_count);
		} else if (!atype && !acount) {
			check_machine_accelerator(c, m, NULL, 0, tfield, cfield, f, &acc, &used_count);
			if (m && m->tpu_host && acc < 0) {
				struct strbuf sb = STRBUF_INIT;
				size_t n = 0;
				for (size_t a = 0; a < CATALOG_MAX_ACCELERATORS; a++)
					if (m->counts[a])
						sb_addf(&sb, "%s%s", n++ ? ", " : "",
							acc_name(c, (int)a));
				violations_add(c->out, tfield,
					       "Machine type \"%s\" needs an accelerator: %s.", m->name,
					       n ? sb_str(&sb) : "none is configured");
				sb_release(&sb);
			}
		} else if (atype) {
			/* Say when the accelerator itself is unknown too. */
			check_machine_accelerator(c, NULL, atype, 0, tfield, cfield, f, &acc,
						  &used_count);
			acc = -1;
		}
		snprintf(f, sizeof(f), "%s.machine_spec.tpu_topology", base);
		(void)get_str(c, ms, "tpuTopology", f);
	} else if (!replicas) {
		snprintf(f, sizeof(f), "%s.machine_spec", base);
		violations_add(c->out, f, "A non-empty worker pool needs `machine_spec` and "
			       "`replica_count`.");
	}

	snprintf(f, sizeof(f), "%s.container_spec", base);
	cs = get_obj(c, pool, "containerSpec", f);
	snprintf(f, sizeof(f), "%s.python_package_spec", base);
	pp = get_obj(c, pool, "pythonPackageSpec", f);
	if (!cs == !pp)
		violations_add(c->out, base, "Exactly one of `container_spec` and "
			       "`python_package_spec` should be specified.");
	if (cs) {
		const char *image;
		snprintf(f, sizeof(f), "%s.container_spec.image_uri", base);
		image = get_str(c, cs, "imageUri", f);
		if (!image)
			violations_add(c->out, f, "A container image URI must be specified.");
		check_image(c, image, f);
		snprintf(f, sizeof(f), "%s.container_spec", base);
		vx_env(c, cs, f);
	}
	if (pp)
		vx_python_package(c, pp, base);
	snprintf(f, sizeof(f), "%s.disk_spec", base);
	{
		const json_t *disk = get_obj(c, pool, "diskSpec", f);
		int64_t gb;
		snprintf(f, sizeof(f), "%s.disk_spec.boot_disk_type", base);
		check_boot_disk_type(c, disk, f);
		snprintf(f, sizeof(f), "%s.disk_spec.boot_disk_size_gb", base);
		if (!get_int(c, disk, "bootDiskSizeGb", f, &gb, NULL) && gb < 0)
			violations_add(c->out, f, "The boot disk size must not be negative.");
	}
	return replicas > 0 ? acc : -1;
}

size_t validate_vertex_job_spec(const struct catalog *cat, const char *location,
				const json_t *job_spec, struct violations *out)
{
	struct ctx c = { cat, out, CATALOG_API_VERTEX };
	const char *blame[CATALOG_MAX_ACCELERATORS] = { 0 };
	char fields[CATALOG_MAX_ACCELERATORS][FIELD_MAX];
	const struct catalog_region *region = NULL;
	const json_t *pools, *sched;
	catalog_accset used = 0;
	size_t before = out->n, n;
	int64_t nanos;

	if (!location || !(region = catalog_region_find(cat, location)))
		violations_add(out, "parent", "Location \"%s\" is not supported for training.",
			       location ? location : "");
	if (!json_is_object(job_spec)) {
		violations_add(out, "job_spec", "Invalid value: expected an object.");
		return out->n - before;
	}
	pools = get_arr(&c, job_spec, "workerPoolSpecs", "job_spec.worker_pool_specs");
	n = arr_size(pools);
	if (!n && pools)
		violations_add(out, "job_spec.worker_pool_specs[0].replica_count",
			       "Replica count for master worker pool "
			       "(worker_pool_specs[0].replica_count) should be 1.");
	else if (!n)
		violations_add(out, "job_spec.worker_pool_specs",
			       "At least one worker pool spec must be specified.");
	for (size_t i = 0; i < n; i++) {
		bool nonempty;
		int a = vx_pool(&c, json_array_get(pools, i), i, &nonempty);
		if (a < 0 || blame[a])
			continue;
		used |= 1u << a;
		snprintf(fields[a], sizeof(fields[a]),
			 "job_spec.worker_pool_specs[%zu].machine_spec.accelerator_type", i);
		blame[a] = fields[a];
	}
	if (region)
		check_region_accelerators(&c, region, used, blame, "job_spec.worker_pool_specs",
					  "location");
	sched = get_obj(&c, job_spec, "scheduling", "job_spec.scheduling");
	(void)check_duration(&c, sched, "timeout", "job_spec.scheduling.timeout", &nanos);
	return out->n - before;
}
