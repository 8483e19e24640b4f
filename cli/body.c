/*
 * body.c - config.yaml -> Job JSON and gcloud flags -> jobs.create body.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "cli.h"
#include "common.h"

enum kind { K_STR, K_INT64, K_INT32, K_BOOL, K_OBJ, K_OBJLIST, K_STRLIST, K_MAP, K_ANY, K_DOUBLE };

struct field {
	const char *name;
	enum kind kind;
	const struct field *sub;	/* K_OBJ, K_OBJLIST */
};

static const struct field accel_fields[] = {
	{ "count", K_INT64, NULL }, { "type", K_STR, NULL }, { NULL, 0, NULL } };
static const struct field disk_fields[] = {
	{ "bootDiskSizeGb", K_INT32, NULL }, { "bootDiskType", K_STR, NULL }, { NULL, 0, NULL } };
static const struct field replica_fields[] = {
	{ "acceleratorConfig", K_OBJ, accel_fields }, { "imageUri", K_STR, NULL },
	{ "containerCommand", K_STRLIST, NULL }, { "containerArgs", K_STRLIST, NULL },
	{ "tpuTfVersion", K_STR, NULL }, { "diskConfig", K_OBJ, disk_fields }, { NULL, 0, NULL } };
static const struct field sched_fields[] = {
	{ "maxRunningTime", K_STR, NULL }, { "maxWaitTime", K_STR, NULL },
	{ "priority", K_INT32, NULL }, { "resilientToWorkerRestart", K_BOOL, NULL },
	{ NULL, 0, NULL } };
static const struct field enc_fields[] = { { "kmsKeyName", K_STR, NULL }, { NULL, 0, NULL } };
static const struct field hp_fields[] = {
	{ "goal", K_STR, NULL }, { "params", K_ANY, NULL }, { "maxTrials", K_INT32, NULL },
	{ "maxParallelTrials", K_INT32, NULL }, { "maxFailedTrials", K_INT32, NULL },
	{ "hyperparameterMetricTag", K_STR, NULL }, { "resumePreviousJobId", K_STR, NULL },
	{ "enableTrialEarlyStopping", K_BOOL, NULL }, { "algorithm", K_STR, NULL },
	{ NULL, 0, NULL } };
static const struct field ti_fields[] = {
	{ "scaleTier", K_STR, NULL }, { "masterType", K_STR, NULL },
	{ "masterConfig", K_OBJ, replica_fields }, { "workerType", K_STR, NULL },
	{ "workerConfig", K_OBJ, replica_fields }, { "workerCount", K_INT64, NULL },
	{ "parameterServerType", K_STR, NULL }, { "parameterServerConfig", K_OBJ, replica_fields },
	{ "parameterServerCount", K_INT64, NULL }, { "evaluatorType", K_STR, NULL },
	{ "evaluatorConfig", K_OBJ, replica_fields }, { "evaluatorCount", K_INT64, NULL },
	{ "packageUris", K_STRLIST, NULL }, { "pythonModule", K_STR, NULL },
	{ "args", K_STRLIST, NULL }, { "hyperparameters", K_OBJ, hp_fields },
	{ "region", K_STR, NULL }, { "jobDir", K_STR, NULL }, { "runtimeVersion", K_STR, NULL },
	{ "pythonVersion", K_STR, NULL }, { "scheduling", K_OBJ, sched_fields },
	{ "network", K_STR, NULL }, { "serviceAccount", K_STR, NULL },
	{ "encryptionConfig", K_OBJ, enc_fields }, { "useChiefInTfConfig", K_BOOL, NULL },
	{ "enableWebAccess", K_BOOL, NULL }, { NULL, 0, NULL } };
static const struct field job_fields[] = {
	{ "jobId", K_STR, NULL }, { "trainingInput", K_OBJ, ti_fields },
	{ "labels", K_MAP, NULL }, { "etag", K_STR, NULL }, { NULL, 0, NULL } };
static const struct field job_root[] = { { "", K_OBJ, job_fields }, { NULL, 0, NULL } };

/* Vertex CustomJobSpec (reference §5.3, §5.4), the `ai custom-jobs create --config` file. */
static const struct field machine_fields[] = {
	{ "machineType", K_STR, NULL }, { "acceleratorType", K_STR, NULL },
	{ "acceleratorCount", K_INT32, NULL }, { "tpuTopology", K_STR, NULL },
	{ "reservationAffinity", K_ANY, NULL }, { "gpuPartitionSize", K_STR, NULL },
	{ NULL, 0, NULL } };
static const struct field env_fields[] = {
	{ "name", K_STR, NULL }, { "value", K_STR, NULL }, { NULL, 0, NULL } };
static const struct field container_fields[] = {
	{ "imageUri", K_STR, NULL }, { "command", K_STRLIST, NULL }, { "args", K_STRLIST, NULL },
	{ "env", K_OBJLIST, env_fields }, { NULL, 0, NULL } };
static const struct field python_fields[] = {
	{ "executorImageUri", K_STR, NULL }, { "packageUris", K_STRLIST, NULL },
	{ "pythonModule", K_STR, NULL }, { "args", K_STRLIST, NULL },
	{ "env", K_OBJLIST, env_fields }, { NULL, 0, NULL } };
static const struct field nfs_fields[] = {
	{ "server", K_STR, NULL }, { "path", K_STR, NULL }, { "mountPoint", K_STR, NULL },
	{ NULL, 0, NULL } };
static const struct field pool_fields[] = {
	{ "containerSpec", K_OBJ, container_fields }, { "pythonPackageSpec", K_OBJ, python_fields },
	{ "machineSpec", K_OBJ, machine_fields }, { "replicaCount", K_INT64, NULL },
	{ "nfsMounts", K_OBJLIST, nfs_fields }, { "diskSpec", K_OBJ, disk_fields },
	{ NULL, 0, NULL } };
static const struct field vsched_fields[] = {
	{ "timeout", K_STR, NULL }, { "restartJobOnWorkerRestart", K_BOOL, NULL },
	{ "strategy", K_STR, NULL }, { "disableRetries", K_BOOL, NULL },
	{ "maxWaitDuration", K_STR, NULL }, { NULL, 0, NULL } };
static const struct field gcs_fields[] = { { "outputUriPrefix", K_STR, NULL }, { NULL, 0, NULL } };
static const struct field spec_fields[] = {
	{ "workerPoolSpecs", K_OBJLIST, pool_fields }, { "scheduling", K_OBJ, vsched_fields },
	{ "serviceAccount", K_STR, NULL }, { "network", K_STR, NULL },
	{ "reservedIpRanges", K_STRLIST, NULL }, { "baseOutputDirectory", K_OBJ, gcs_fields },
	{ "tensorboard", K_STR, NULL }, { "enableWebAccess", K_BOOL, NULL },
	{ "enableDashboardAccess", K_BOOL, NULL }, { "experiment", K_STR, NULL },
	{ "experimentRun", K_STR, NULL }, { "protectedArtifactLocationId", K_STR, NULL },
	{ "models", K_STRLIST, NULL }, { "persistentResourceId", K_STR, NULL },
	{ "pscInterfaceConfig", K_ANY, NULL }, { NULL, 0, NULL } };
static const struct field spec_root[] = { { "", K_OBJ, spec_fields }, { NULL, 0, NULL } };

struct conv {
	const char *name;
	const char *root_what;	/* what the top mapping is called in messages */
	yaml_document_t *doc;
	char *err;
};

static void conv_err(struct conv *c, yaml_node_t *n, const char *fmt, const char *a, const char *b)
{
	if (c->err)
		return;
	struct strbuf sb = STRBUF_INIT;
	sb_addf(&sb, "%s:%zu:%zu: ", c->name, n->start_mark.line + 1, n->start_mark.column + 1);
	sb_addf(&sb, fmt, a, b ? b : "");
	c->err = sb_detach(&sb);
}

static const char *scalar(yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static int plain(yaml_node_t *n)
{
	return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static int is_null(yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE && plain(n) &&
	       (!strcmp(scalar(n), "null") || !strcmp(scalar(n), "~") || !*scalar(n));
}

static int is_int(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

static json_t *any_scalar(yaml_node_t *n)
{
	const char *s = scalar(n);
	if (!plain(n))
		return json_string(s);
	if (!strcmp(s, "true") || !strcmp(s, "True"))
		return json_true();
	if (!strcmp(s, "false") || !strcmp(s, "False"))
		return json_false();
	if (!strcmp(s, "null") || !strcmp(s, "~") || !*s)
		return json_null();
	if (is_int(s))
		return json_integer(strtoll(s, NULL, 10));
	char *end;
	errno = 0;
	double d = strtod(s, &end);
	if (!*end && end != s && !errno)
		return json_real(d);
	return json_string(s);
}

static json_t *conv_any(struct conv *c, yaml_node_t *n)
{
	json_t *out;
	switch (n->type) {
	case YAML_SCALAR_NODE:
		return any_scalar(n);
	case YAML_SEQUENCE_NODE:
		out = json_array();
		for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++)
			json_array_append_new(out, conv_any(c, yaml_document_get_node(c->doc, *it)));
		return out;
	case YAML_MAPPING_NODE:
		out = json_object();
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
			yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
			if (k->type != YAML_SCALAR_NODE) {
				conv_err(c, k, "a key must be a string%s%s", "", NULL);
				continue;
			}
			json_object_set_new(out, scalar(k), conv_any(c, yaml_document_get_node(c->doc, p->value)));
		}
		return out;
	default:
		return json_null();
	}
}

static json_t *conv_field(struct conv *c, const struct field *f, yaml_node_t *n);

static json_t *conv_obj(struct conv *c, const struct field *fields, const char *what, yaml_node_t *n)
{
	if (n->type != YAML_MAPPING_NODE) {
		conv_err(c, n, "%s must be a mapping%s", what, NULL);
		return NULL;
	}
	json_t *out = json_object();
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
		if (k->type != YAML_SCALAR_NODE) {
			conv_err(c, k, "%s: a key must be a string%s", what, NULL);
			break;
		}
		const struct field *f = fields;
		while (f->name && strcmp(f->name, scalar(k)))
			f++;
		if (!f->name) {
			conv_err(c, k, "unknown field [%s] in %s", scalar(k), what);
			break;
		}
		if (is_null(v))
			continue;	/* an empty key: as if absent */
		json_t *j = conv_field(c, f, v);
		if (!j)
			break;
		json_object_set_new(out, f->name, j);
	}
	if (c->err) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* A list of objects (an empty entry is an empty object: a skipped worker
 * pool) or of strings. */
static json_t *conv_list(struct conv *c, const struct field *f, yaml_node_t *n)
{
	if (n->type != YAML_SEQUENCE_NODE) {
		conv_err(c, n, "%s must be a list%s", f->name, NULL);
		return NULL;
	}
	json_t *out = json_array();
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
	     it++) {
		yaml_node_t *e = yaml_document_get_node(c->doc, *it);
		json_t *o = NULL;
		if (f->kind == K_OBJLIST)
			o = is_null(e) ? json_object() : conv_obj(c, f->sub, f->name, e);
		else if (e->type == YAML_SCALAR_NODE)
			o = json_string(scalar(e));
		else
			conv_err(c, e, "%s must be a list of strings%s", f->name, NULL);
		if (!o) {
			json_decref(out);
			return NULL;
		}
		json_array_append_new(out, o);
	}
	return out;
}

static json_t *conv_field(struct conv *c, const struct field *f, yaml_node_t *n)
{
	const char *s;
	switch (f->kind) {
	case K_OBJ:
		return conv_obj(c, f->sub, *f->name ? f->name : c->root_what, n);
	case K_OBJLIST:
	case K_STRLIST:
		return conv_list(c, f, n);
	case K_ANY:
		return conv_any(c, n);
	case K_MAP:
		if (n->type != YAML_MAPPING_NODE) {
			conv_err(c, n, "%s must be a mapping%s", f->name, NULL);
			return NULL;
		}
		{
			json_t *out = json_object();
			for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
				yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
				yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
				if (k->type != YAML_SCALAR_NODE || v->type != YAML_SCALAR_NODE) {
					conv_err(c, k, "%s must map strings to strings%s", f->name, NULL);
					json_decref(out);
					return NULL;
				}
				json_object_set_new(out, scalar(k), json_string(scalar(v)));
			}
			return out;
		}
	default:
		break;
	}
	if (n->type != YAML_SCALAR_NODE) {
		conv_err(c, n, "%s must be a single value%s", f->name, NULL);
		return NULL;
	}
	s = scalar(n);
	switch (f->kind) {
	case K_INT64:
	case K_INT32:
		if (!is_int(s)) {
			conv_err(c, n, "%s must be an integer, not [%s]", f->name, s);
			return NULL;
		}
		if (f->kind == K_INT64)
			return json_string(s[0] == '+' ? s + 1 : s);
		return json_integer(strtoll(s, NULL, 10));
	case K_BOOL:
		if (!strcasecmp(s, "true") || !strcasecmp(s, "yes"))
			return json_true();
		if (!strcasecmp(s, "false") || !strcasecmp(s, "no"))
			return json_false();
		conv_err(c, n, "%s must be true or false, not [%s]", f->name, s);
		return NULL;
	default:
		return json_string(s);
	}
}

static json_t *parse_doc(const char *name, const char *text, size_t len, const struct field *root_field,
			 const char *root_what, char **err)
{
	yaml_parser_t p;
	yaml_document_t doc;
	json_t *out = NULL;
	*err = NULL;
	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	if (!yaml_parser_load(&p, &doc)) {
		*err = xasprintf("%s:%zu:%zu: invalid YAML: %s%s%s", name, p.problem_mark.line + 1,
				 p.problem_mark.column + 1, p.problem ? p.problem : "syntax error",
				 p.context ? " " : "", p.context ? p.context : "");
		yaml_parser_delete(&p);
		return NULL;
	}
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root) {
		*err = xasprintf("%s: the file is empty", name);
	} else {
		struct conv c = { name, root_what, &doc, NULL };
		out = conv_field(&c, root_field, root);
		if (c.err) {
			json_decref(out);
			out = NULL;
			*err = c.err;
		}
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&p);
	return out;
}

json_t *cli_parse_config(const char *name, const char *text, size_t len, char **err)
{
	return parse_doc(name, text, len, job_root, "the job", err);
}

json_t *cli_parse_custom_job_spec(const char *name, const char *text, size_t len, char **err)
{
	return parse_doc(name, text, len, spec_root, "the CustomJobSpec", err);
}

static json_t *load_file(const char *path, json_t *(*parse_fn)(const char *, const char *, size_t, char **),
			 char **err)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		*err = xasprintf("%s: %s", path, strerror(errno));
		return NULL;
	}
	struct strbuf sb = STRBUF_INIT;
	char buf[8192];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		sb_add(&sb, buf, n);
	fclose(f);
	json_t *j = parse_fn(path, sb_str(&sb), sb.len, err);
	sb_release(&sb);
	return j;
}

json_t *cli_load_config(const char *path, char **err)
{
	return load_file(path, cli_parse_config, err);
}

json_t *cli_load_custom_job_spec(const char *path, char **err)
{
	return load_file(path, cli_parse_custom_job_spec, err);
}

/* --- flags ---------------------------------------------------------------- */

static const char *const accel_types[] = {
	"nvidia-tesla-a100", "nvidia-tesla-k80", "nvidia-tesla-p100", "nvidia-tesla-p4",
	"nvidia-tesla-t4", "nvidia-tesla-v100", "tpu-v2", "tpu-v2-pod", "tpu-v3", "tpu-v3-pod",
	"tpu-v4-pod",
};

static char *dict_syntax_error(const char *flag, const char *item)
{
	return xasprintf("argument %s: Bad syntax for dict arg: [%s]. Please see "
			 "`trainplane topic flags-file` or `trainplane topic escaping` "
			 "for information on providing list or dictionary flag values "
			 "with special characters.", flag, item);
}

json_t *cli_parse_accelerator(const char *flag, const char *value, char **err)
{
	char *copy = xstrdup(value), *save = NULL, *count = NULL, *type = NULL;
	json_t *out = NULL;
	*err = NULL;
	for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq) {
			*err = dict_syntax_error(flag, kv);
			goto out;
		}
		*eq = '\0';
		if (!strcmp(kv, "count"))
			count = eq + 1;
		else if (!strcmp(kv, "type"))
			type = eq + 1;
		else {
			*err = xasprintf("argument %s: valid keys are [count, type]; received: %s", flag, kv);
			goto out;
		}
	}
	if (!type || !count) {
		*err = xasprintf("argument %s: Key [%s] required in dict arg but not provided",
				 flag, !type ? "type" : "count");
		goto out;
	}
	if (!is_int(count) || strtoll(count, NULL, 10) <= 0) {
		if (is_int(count))
			*err = xasprintf("argument %s: The count of the accelerator must be greater than 0.", flag);
		else
			*err = xasprintf("argument %s: count: Value must be an integer, not [%s]", flag, count);
		goto out;
	}
	size_t i;
	for (i = 0; i < ARRAY_SIZE(accel_types); i++)
		if (!strcasecmp(type, accel_types[i]))
			break;
	if (i == ARRAY_SIZE(accel_types)) {
		struct strbuf sb = STRBUF_INIT;
		sb_addf(&sb, "argument %s: type: Invalid choice: '%s'. Valid choices are [", flag, type);
		for (i = 0; i < ARRAY_SIZE(accel_types); i++)
			sb_addf(&sb, "%s%s", i ? ", " : "", accel_types[i]);
		sb_addstr(&sb, "].");
		*err = sb_detach(&sb);
		goto out;
	}
	char *up = xstrdup(accel_types[i]);
	for (char *p = up; *p; p++)
		*p = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
	out = json_object();
	json_object_set_new(out, "count", json_string(count[0] == '+' ? count + 1 : count));
	json_object_set_new(out, "type", json_string(up));
	free(up);
out:
	free(copy);
	return out;
}

json_t *cli_parse_labels(const char *flag, const char *value, char **err)
{
	json_t *out = json_object();
	char *copy = xstrdup(value), *save = NULL;
	*err = NULL;
	for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq || eq == kv) {
			*err = xasprintf("argument %s: Bad syntax for dict arg: [%s]", flag, kv);
			json_decref(out);
			out = NULL;
			break;
		}
		*eq = '\0';
		json_object_set_new(out, kv, json_string(eq + 1));
	}
	free(copy);
	return out;
}

void submit_opts_init(struct submit_opts *o)
{
	memset(o, 0, sizeof *o);
	o->use_chief_in_tf_config = -1;
	o->enable_web_access = -1;
}

static json_t *obj_child(json_t *parent, const char *key)
{
	json_t *c = json_object_get(parent, key);
	if (!json_is_object(c)) {
		c = json_object();
		json_object_set_new(parent, key, c);
	}
	return c;
}

static void set_str(json_t *o, const char *key, const char *v)
{
	if (v)
		json_object_set_new(o, key, json_string(v));
}

static int set_count(json_t *o, const char *key, const char *flag, const char *v, char **err)
{
	if (!v)
		return 0;
	if (!is_int(v) || strtoll(v, NULL, 10) < 1) {
		*err = xasprintf("argument %s: Value must be greater than or equal to 1; received: %s", flag, v);
		return -1;
	}
	json_object_set_new(o, key, json_string(v[0] == '+' ? v + 1 : v));
	return 0;
}

static int set_accel(json_t *ti, const char *cfg, const char *flag, const char *v, char **err)
{
	if (!v)
		return 0;
	json_t *a = cli_parse_accelerator(flag, v, err);
	if (!a)
		return -1;
	json_object_set_new(obj_child(ti, cfg), "acceleratorConfig", a);
	return 0;
}

static const struct { const char *flag, *api; } tiers[] = {
	{ "basic", "BASIC" }, { "standard-1", "STANDARD_1" }, { "premium-1", "PREMIUM_1" },
	{ "basic-gpu", "BASIC_GPU" }, { "basic-tpu", "BASIC_TPU" }, { "custom", "CUSTOM" },
};

json_t *cli_build_submit_body(const struct submit_opts *o, const json_t *config, char **err)
{
	json_t *job = config ? json_deep_copy(config) : json_object();
	*err = NULL;
	if (o->job_id)
		json_object_set_new(job, "jobId", json_string(o->job_id));
	json_t *ti = obj_child(job, "trainingInput");
	if (o->scale_tier) {
		size_t i;
		for (i = 0; i < ARRAY_SIZE(tiers); i++)
			if (!strcasecmp(o->scale_tier, tiers[i].flag) || !strcmp(o->scale_tier, tiers[i].api))
				break;
		if (i == ARRAY_SIZE(tiers)) {
			*err = xasprintf("argument --scale-tier: Invalid choice: '%s'. Valid choices are "
					 "[basic, basic-gpu, basic-tpu, custom, premium-1, standard-1].",
					 o->scale_tier);
			goto fail;
		}
		json_object_set_new(ti, "scaleTier", json_string(tiers[i].api));
	}
	if (o->master_image_uri && o->runtime_version) {
		*err = xstrdup("Only one of --master-image-uri, --runtime-version can be set.");
		goto fail;
	}
	if ((o->worker_count != NULL) != (o->worker_machine_type != NULL)) {
		*err = xstrdup("argument --worker-count --worker-machine-type: Must be specified together.");
		goto fail;
	}
	if ((o->ps_count != NULL) != (o->ps_machine_type != NULL)) {
		*err = xstrdup("argument --parameter-server-count --parameter-server-machine-type: "
			       "Must be specified together.");
		goto fail;
	}
	set_str(ti, "pythonModule", o->module_name);
	if (o->package_path || o->packages) {
		json_t *uris = json_array();
		if (o->package_path) {
			/* Nothing is built or uploaded (there is no Cloud Storage here): the
			 * URI is where gcloud would have put the sdist, named as setup.py
			 * without a version names it. gs:// paths pass through. */
			const char *p = o->package_path;
			if (!strncmp(p, "gs://", 5)) {
				json_array_append_new(uris, json_string(p));
			} else {
				char *copy = xstrdup(p);
				size_t l = strlen(copy);
				while (l > 1 && copy[l - 1] == '/')
					copy[--l] = '\0';
				const char *base = strrchr(copy, '/') ? strrchr(copy, '/') + 1 : copy;
				const char *root = o->staging_bucket ? o->staging_bucket : o->job_dir;
				if (!root) {
					free(copy);
					json_decref(uris);
					*err = xstrdup("If local packages are provided, the `--staging-bucket` or "
						       "`--job-dir` flag must be given.");
					goto fail;
				}
				size_t rl = strlen(root);
				while (rl && root[rl - 1] == '/')
					rl--;
				char *uri = o->staging_bucket
					? xasprintf("%.*s/%s/%s-0.0.0.tar.gz", (int)rl, root,
						    o->job_id ? o->job_id : "job", base)
					: xasprintf("%.*s/packages/%s-0.0.0.tar.gz", (int)rl, root, base);
				json_array_append_new(uris, json_string(uri));
				free(uri);
				free(copy);
			}
		}
		if (o->packages) {
			char *copy = xstrdup(o->packages), *save = NULL;
			for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save))
				json_array_append_new(uris, json_string(p));
			free(copy);
		}
		json_object_set_new(ti, "packageUris", uris);
	}
	set_str(ti, "region", o->region);
	set_str(ti, "jobDir", o->job_dir);
	set_str(ti, "runtimeVersion", o->runtime_version);
	set_str(ti, "pythonVersion", o->python_version);
	set_str(ti, "masterType", o->master_machine_type);
	if (set_accel(ti, "masterConfig", "--master-accelerator", o->master_accelerator, err))
		goto fail;
	if (o->master_image_uri)
		set_str(obj_child(ti, "masterConfig"), "imageUri", o->master_image_uri);
	set_str(ti, "workerType", o->worker_machine_type);
	if (set_count(ti, "workerCount", "--worker-count", o->worker_count, err) ||
	    set_accel(ti, "workerConfig", "--worker-accelerator", o->worker_accelerator, err))
		goto fail;
	if (o->worker_image_uri)
		set_str(obj_child(ti, "workerConfig"), "imageUri", o->worker_image_uri);
	set_str(ti, "parameterServerType", o->ps_machine_type);
	if (set_count(ti, "parameterServerCount", "--parameter-server-count", o->ps_count, err) ||
	    set_accel(ti, "parameterServerConfig", "--parameter-server-accelerator",
		      o->ps_accelerator, err))
		goto fail;
	if (o->ps_image_uri)
		set_str(obj_child(ti, "parameterServerConfig"), "imageUri", o->ps_image_uri);
	if (o->use_chief_in_tf_config >= 0)
		json_object_set_new(ti, "useChiefInTfConfig", json_boolean(o->use_chief_in_tf_config));
	if (o->enable_web_access >= 0)
		json_object_set_new(ti, "enableWebAccess", json_boolean(o->enable_web_access));
	set_str(ti, "serviceAccount", o->service_account);
	set_str(ti, "network", o->network);
	if (o->kms_key)
		set_str(obj_child(ti, "encryptionConfig"), "kmsKeyName", o->kms_key);
	if (o->has_user_args) {
		json_t *args = json_array();
		for (int i = 0; i < o->n_user_args; i++)
			json_array_append_new(args, json_string(o->user_args[i]));
		json_object_set_new(ti, "args", args);
	}
	if (o->labels) {
		json_t *l = cli_parse_labels("--labels", o->labels, err);
		if (!l)
			goto fail;
		json_object_set_new(job, "labels", l);
	}
	/* gcloud's quirk (reference §6.1): CUSTOM needs the flag, not just the YAML key. */
	const char *tier = json_string_value(json_object_get(ti, "scaleTier"));
	if (tier && !strcmp(tier, "CUSTOM") && !o->master_machine_type &&
	    !json_object_get(ti, "masterType")) {
		*err = xstrdup("--master-machine-type is required if scale-tier is set to `CUSTOM`.");
		goto fail;
	}
	if (!json_object_get(obj_child(ti, "masterConfig"), "imageUri") &&
	    !json_array_size(json_object_get(ti, "packageUris"))) {
		*err = xstrdup("Non-custom jobs must have packages.");
		goto fail;
	}
	if (!json_object_size(json_object_get(ti, "masterConfig")))
		json_object_del(ti, "masterConfig");
	return job;
fail:
	json_decref(job);
	return NULL;
}

/* --- ai custom-jobs create ------------------------------------------------- */

void custom_job_opts_init(struct custom_job_opts *o)
{
	memset(o, 0, sizeof *o);
	o->enable_web_access = -1;
}

/* gcloud's ArgList: "a,b" -> ["a","b"]. */
static json_t *arg_list(const char *value)
{
	json_t *out = json_array();
	char *copy = xstrdup(value), *save = NULL;
	for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save))
		json_array_append_new(out, json_string(p));
	free(copy);
	return out;
}

/* The --worker-pool-spec keys gcloud knows, sorted as its message lists them. */
static const char *const pool_keys[] = {
	"accelerator-count", "accelerator-type", "container-image-uri", "executor-image-uri",
	"extra-dirs", "extra-packages", "local-package-path", "machine-type", "output-image-uri",
	"python-module", "replica-count", "requirements", "script",
};

/* What gcloud does with these is build an image with the local Docker; trainplane does not. */
static const char *const autopackage_keys[] = {
	"local-package-path", "script", "output-image-uri", "requirements", "extra-packages",
	"extra-dirs",
};

static const char *const vertex_gpus[] = {
	"NVIDIA_TESLA_K80", "NVIDIA_TESLA_P100", "NVIDIA_TESLA_V100", "NVIDIA_TESLA_P4",
	"NVIDIA_TESLA_T4", "NVIDIA_TESLA_A100", "NVIDIA_A100_80GB", "NVIDIA_L4", "NVIDIA_H100_80GB",
	"NVIDIA_H100_MEGA_80GB", "NVIDIA_H200_141GB", "NVIDIA_B200", "NVIDIA_GB200",
	"NVIDIA_RTX_PRO_6000",
};

#define POOL_FLAG "--worker-pool-spec"

json_t *cli_parse_worker_pool_spec(const char *value, const char *python_package_uris, char **err)
{
	json_t *kv = json_object(), *out = NULL;
	char *copy = xstrdup(value), *save = NULL;
	*err = NULL;
	for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');
		if (!eq || eq == item) {
			*err = dict_syntax_error(POOL_FLAG, item);
			goto out;
		}
		*eq = '\0';
		size_t i;
		for (i = 0; i < ARRAY_SIZE(pool_keys); i++)
			if (!strcmp(item, pool_keys[i]))
				break;
		if (i == ARRAY_SIZE(pool_keys)) {
			struct strbuf sb = STRBUF_INIT;
			sb_addf(&sb, "argument %s: valid keys are [", POOL_FLAG);
			for (i = 0; i < ARRAY_SIZE(pool_keys); i++)
				sb_addf(&sb, "%s%s", i ? ", " : "", pool_keys[i]);
			sb_addf(&sb, "]; received: %s", item);
			*err = sb_detach(&sb);
			goto out;
		}
		json_object_set_new(kv, item, json_string(eq + 1));
	}
	out = json_object();
	if (!json_object_size(kv))
		goto out;	/* an empty pool */
	for (size_t i = 0; i < ARRAY_SIZE(autopackage_keys); i++)
		if (json_object_get(kv, autopackage_keys[i])) {
			*err = xasprintf("Invalid value for [%s]: key [%s] needs gcloud's local Docker "
					 "autopackaging, which trainplane does not do: build and push the "
					 "image, then give it as container-image-uri.", POOL_FLAG,
					 autopackage_keys[i]);
			goto fail;
		}
#define GET(k) json_string_value(json_object_get(kv, k))
	const char *machine = GET("machine-type"), *replicas = GET("replica-count");
	const char *atype = GET("accelerator-type"), *acount = GET("accelerator-count");
	const char *image = GET("container-image-uri"), *executor = GET("executor-image-uri");
	const char *module = GET("python-module");
#undef GET
	if (!machine || !*machine) {
		*err = xasprintf("Invalid value for [%s]: Key [machine-type] required in dict arg but not "
				 "provided.", POOL_FLAG);
		goto fail;
	}
	if (acount && !atype) {
		*err = xasprintf("Invalid value for [%s]: Key [accelerator-type] required in dict arg "
				 "when [accelerator-count] is given.", POOL_FLAG);
		goto fail;
	}
	if ((image != NULL) + (executor != NULL) != 1) {
		*err = xasprintf("Invalid value for [%s]: Exactly one of keys [container-image-uri, "
				 "executor-image-uri] is required.", POOL_FLAG);
		goto fail;
	}
	if (executor && !module) {
		*err = xasprintf("Invalid value for [%s]: Key [python-module] required in dict arg when "
				 "[executor-image-uri] is given.", POOL_FLAG);
		goto fail;
	}
	if (module && !executor) {
		*err = xasprintf("Invalid value for [%s]: Key [python-module] is only allowed with "
				 "[executor-image-uri].", POOL_FLAG);
		goto fail;
	}
	if (replicas && (!is_int(replicas) || strtoll(replicas, NULL, 10) < 1)) {
		*err = xasprintf("Invalid value for [%s]: replica-count: Value must be an integer "
				 "greater than or equal to 1, not [%s]", POOL_FLAG, replicas);
		goto fail;
	}
	if (acount && (!is_int(acount) || strtoll(acount, NULL, 10) < 1 ||
		       strtoll(acount, NULL, 10) > INT32_MAX)) {
		*err = xasprintf("Invalid value for [%s]: accelerator-count: Value must be an integer "
				 "greater than or equal to 1, not [%s]", POOL_FLAG, acount);
		goto fail;
	}
	json_t *machine_spec = json_pack("{s:s}", "machineType", machine);
	if (atype) {
		size_t i;
		for (i = 0; i < ARRAY_SIZE(vertex_gpus); i++)
			if (!strcmp(atype, vertex_gpus[i]))
				break;
		if (i == ARRAY_SIZE(vertex_gpus)) {
			struct strbuf sb = STRBUF_INIT;
			sb_addf(&sb, "Invalid value for [%s]: Found invalid value of [accelerator-type]: %s. "
				"Available values are [", POOL_FLAG, atype);
			for (i = 0; i < ARRAY_SIZE(vertex_gpus); i++)
				sb_addf(&sb, "%s%s", i ? ", " : "", vertex_gpus[i]);
			sb_addstr(&sb, "].");
			*err = sb_detach(&sb);
			json_decref(machine_spec);
			goto fail;
		}
		json_object_set_new(machine_spec, "acceleratorType", json_string(atype));
		json_object_set_new(machine_spec, "acceleratorCount",
				    json_integer(acount ? strtoll(acount, NULL, 10) : 1));
	}
	json_object_set_new(out, "machineSpec", machine_spec);
	/* replicaCount is an int64: a JSON string, "1" when not given */
	json_object_set_new(out, "replicaCount",
			    json_string(replicas ? (replicas[0] == '+' ? replicas + 1 : replicas) : "1"));
	if (image)
		json_object_set_new(out, "containerSpec", json_pack("{s:s}", "imageUri", image));
	if (executor) {
		json_t *py = json_pack("{s:s, s:s}", "executorImageUri", executor, "pythonModule", module);
		if (python_package_uris)
			json_object_set_new(py, "packageUris", arg_list(python_package_uris));
		json_object_set_new(out, "pythonPackageSpec", py);
	}
	goto out;
fail:
	json_decref(out);
	out = NULL;
out:
	free(copy);
	json_decref(kv);
	return out;
}

json_t *cli_build_custom_job_body(const struct custom_job_opts *o, const json_t *spec, char **err)
{
	json_t *js = spec ? json_deep_copy(spec) : json_object();
	json_t *body = json_object();
	*err = NULL;
	json_object_set_new(body, "displayName", json_string(o->display_name ? o->display_name : ""));
	json_object_set_new(body, "jobSpec", js);
	/* the flags replace the file's pools (gcloud's ConstructCustomJobSpec) */
	if (o->n_pool_specs) {
		if (!*o->pool_specs[0]) {
			*err = xasprintf("Invalid value for [%s]: Empty value is not allowed for the first "
					 "`%s` flag.", POOL_FLAG, POOL_FLAG);
			goto fail;
		}
		json_t *pools = json_array();
		json_object_set_new(js, "workerPoolSpecs", pools);
		for (int i = 0; i < o->n_pool_specs; i++) {
			json_t *p = cli_parse_worker_pool_spec(o->pool_specs[i], o->python_package_uris, err);
			if (!p)
				goto fail;
			json_array_append_new(pools, p);
		}
	}
	if (!json_array_size(json_object_get(js, "workerPoolSpecs"))) {
		*err = xasprintf("Missing required argument [%s]: Either %s or --config (with "
				 "workerPoolSpecs) must be specified.", POOL_FLAG, POOL_FLAG);
		goto fail;
	}
	set_str(js, "network", o->network);
	set_str(js, "serviceAccount", o->service_account);
	set_str(js, "persistentResourceId", o->persistent_resource_id);
	if (o->enable_web_access > 0)
		json_object_set_new(js, "enableWebAccess", json_true());
	size_t i;
	json_t *pool;
	json_array_foreach(json_object_get(js, "workerPoolSpecs"), i, pool) {
		json_t *cs = json_object_get(pool, "containerSpec");
		json_t *ps = json_object_get(pool, "pythonPackageSpec");
		if (o->args && cs)
			json_object_set_new(cs, "args", arg_list(o->args));
		if (o->args && ps)
			json_object_set_new(ps, "args", arg_list(o->args));
		if (o->command && cs)
			json_object_set_new(cs, "command", arg_list(o->command));
	}
	if (o->labels) {
		json_t *l = cli_parse_labels("--labels", o->labels, err);
		if (!l)
			goto fail;
		json_object_set_new(body, "labels", l);
	}
	return body;
fail:
	json_decref(body);
	return NULL;
}
