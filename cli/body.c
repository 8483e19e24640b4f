/*
 * body.c - config.yaml -> Job JSON and gcloud flags -> jobs.create body.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "cli.h"
#include "common.h"

enum kind { K_STR, K_INT64, K_INT32, K_BOOL, K_OBJ, K_STRLIST, K_MAP, K_ANY, K_DOUBLE };

struct field {
	const char *name;
	enum kind kind;
	const struct field *sub;	/* K_OBJ */
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

struct conv {
	const char *name;
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
		if (v->type == YAML_SCALAR_NODE && plain(v) &&
		    (!strcmp(scalar(v), "null") || !strcmp(scalar(v), "~") || !*scalar(v)))
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

static json_t *conv_field(struct conv *c, const struct field *f, yaml_node_t *n)
{
	const char *s;
	switch (f->kind) {
	case K_OBJ:
		return conv_obj(c, f->sub, *f->name ? f->name : "the job", n);
	case K_ANY:
		return conv_any(c, n);
	case K_STRLIST:
		if (n->type != YAML_SEQUENCE_NODE) {
			conv_err(c, n, "%s must be a list%s", f->name, NULL);
			return NULL;
		}
		{
			json_t *out = json_array();
			for (yaml_node_item_t *it = n->data.sequence.items.start;
			     it < n->data.sequence.items.top; it++) {
				yaml_node_t *e = yaml_document_get_node(c->doc, *it);
				if (e->type != YAML_SCALAR_NODE) {
					conv_err(c, e, "%s must be a list of strings%s", f->name, NULL);
					json_decref(out);
					return NULL;
				}
				json_array_append_new(out, json_string(scalar(e)));
			}
			return out;
		}
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

json_t *cli_parse_config(const char *name, const char *text, size_t len, char **err)
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
		struct conv c = { name, &doc, NULL };
		out = conv_field(&c, job_root, root);
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

json_t *cli_load_config(const char *path, char **err)
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
	json_t *j = cli_parse_config(path, sb_str(&sb), sb.len, err);
	sb_release(&sb);
	return j;
}

/* --- flags ---------------------------------------------------------------- */

static const char *const accel_types[] = {
	"nvidia-tesla-a100", "nvidia-tesla-k80", "nvidia-tesla-p100", "nvidia-tesla-p4",
	"nvidia-tesla-t4", "nvidia-tesla-v100", "tpu-v2", "tpu-v2-pod", "tpu-v3", "tpu-v3-pod",
	"tpu-v4-pod",
};

json_t *cli_parse_accelerator(const char *flag, const char *value, char **err)
{
	char *copy = xstrdup(value), *save = NULL, *count = NULL, *type = NULL;
	json_t *out = NULL;
	*err = NULL;
	for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq) {
			*err = xasprintf("argument %s: Bad syntax for dict arg: [%s]. Please see "
					 "`trainplane topic flags-file` or `trainplane topic escaping` "
					 "for information on providing list or dictionary flag values "
					 "with special characters.", flag, kv);
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
