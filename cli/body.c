/*
 * body.c - config.yaml -> Job JSON and gcloud flags -> jobs.create body.
 *
 * A --config file is read through the server's own message descriptors
 * (spec/ml_types.h, spec/vertex_types.h): the fields, their JSON types and
 * enum values the server accepts are the ones the CLI accepts, so the two
 * cannot drift. Names are lowerCamelCase as gcloud's YAML loading takes
 * them; output-only fields (a `describe` output fed back) are dropped, as
 * the server drops them. The flags' value lists (scale tiers, accelerator
 * types) come from the same descriptors.
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
#include "ml_types.h"
#include "yamldoc.h"
#include "schema.h"
#include "vertex_types.h"

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

static json_t *conv_any(struct conv *c, yaml_node_t *n)
{
	char err[512];
	json_t *out = yaml_doc_json(c->doc, n, c->name, err, sizeof(err));
	if (!out && !c->err)
		c->err = xstrdup(err);
	return out ? out : json_null();
}

static json_t *conv_field(struct conv *c, const struct schema_field *f, yaml_node_t *n);

/* A mapping read as message msg; what names it in messages ("trainingInput"). */
static json_t *conv_obj(struct conv *c, const struct schema_message *msg, const char *what,
			yaml_node_t *n)
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
		const struct schema_field *f = NULL;
		for (size_t i = 0; i < msg->count && !f; i++)
			if (!strcmp(msg->fields[i].json, scalar(k)))
				f = &msg->fields[i];
		if (!f) {
			conv_err(c, k, "unknown field [%s] in %s", scalar(k), what);
			break;
		}
		if (is_null(v) || f->output_only)
			continue;	/* an empty key: as if absent; output only: the server's */
		json_t *j = conv_field(c, f, v);
		if (!j)
			break;
		json_object_set_new(out, f->json, j);
	}
	if (c->err) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* "[A, B, C]": an enum's names. */
static char *enum_names(const struct schema_enum *e)
{
	struct strbuf sb = STRBUF_INIT;

	sb_addch(&sb, '[');
	for (size_t i = 0; i < e->count; i++)
		sb_addf(&sb, "%s%s", i ? ", " : "", e->names[i]);
	sb_addch(&sb, ']');
	return sb_detach(&sb);
}

/* One value of field f's kind (a list's element, a map's value, or the field's). */
static json_t *conv_value(struct conv *c, const struct schema_field *f, yaml_node_t *n)
{
	const char *s;

	switch (f->kind) {
	case SK_MESSAGE:
		return conv_obj(c, f->message, f->json, n);
	case SK_STRUCT:
		return conv_any(c, n);
	default:
		break;
	}
	if (n->type != YAML_SCALAR_NODE) {
		conv_err(c, n, "%s must be a single value%s", f->json, NULL);
		return NULL;
	}
	s = scalar(n);
	switch (f->kind) {
	case SK_INT64:
	case SK_INT32:
		if (!is_int(s)) {
			conv_err(c, n, "%s must be an integer, not [%s]", f->json, s);
			return NULL;
		}
		if (f->kind == SK_INT64)
			return json_string(s[0] == '+' ? s + 1 : s);
		return json_integer(strtoll(s, NULL, 10));
	case SK_BOOL:
		if (!strcasecmp(s, "true") || !strcasecmp(s, "yes"))
			return json_true();
		if (!strcasecmp(s, "false") || !strcasecmp(s, "no"))
			return json_false();
		conv_err(c, n, "%s must be true or false, not [%s]", f->json, s);
		return NULL;
	case SK_DOUBLE: {
		char *end;
		errno = 0;
		if (is_int(s))
			return json_integer(strtoll(s, NULL, 10));
		double d = strtod(s, &end);
		if (*s && !*end && !errno)
			return json_real(d);
		conv_err(c, n, "%s must be a number, not [%s]", f->json, s);
		return NULL;
	}
	case SK_ENUM:
		for (size_t i = 0; i < f->enumeration->count; i++)
			if (!strcmp(s, f->enumeration->names[i]))
				return json_string(s);
		if (!c->err) {
			char *names = enum_names(f->enumeration);
			char *what = xasprintf("%s must be one of %s", f->json, names);
			conv_err(c, n, "%s, not [%s]", what, s);
			free(what);
			free(names);
		}
		return NULL;
	default:	/* strings, bytes, durations, timestamps: the server checks their form */
		return json_string(s);
	}
}

static json_t *conv_field(struct conv *c, const struct schema_field *f, yaml_node_t *n)
{
	if (f->map) {
		if (n->type != YAML_MAPPING_NODE) {
			conv_err(c, n, "%s must be a mapping%s", f->json, NULL);
			return NULL;
		}
		json_t *out = json_object();
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
			yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
			yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
			if (k->type != YAML_SCALAR_NODE || v->type != YAML_SCALAR_NODE) {
				conv_err(c, k, "%s must map strings to strings%s", f->json, NULL);
				json_decref(out);
				return NULL;
			}
			json_t *j = conv_value(c, f, v);
			if (!j) {
				json_decref(out);
				return NULL;
			}
			json_object_set_new(out, scalar(k), j);
		}
		return out;
	}
	if (f->repeated) {
		/* A list of messages (an empty entry is an empty object: a skipped
		 * worker pool) or of values. */
		if (n->type != YAML_SEQUENCE_NODE) {
			conv_err(c, n, "%s must be a list%s", f->json, NULL);
			return NULL;
		}
		json_t *out = json_array();
		for (yaml_node_item_t *it = n->data.sequence.items.start;
		     it < n->data.sequence.items.top; it++) {
			yaml_node_t *e = yaml_document_get_node(c->doc, *it);
			json_t *o;
			if (f->kind == SK_MESSAGE && is_null(e))
				o = json_object();
			else if (f->kind != SK_MESSAGE && f->kind != SK_STRUCT &&
				 e->type != YAML_SCALAR_NODE)
				o = NULL, conv_err(c, e, "%s must be a list of %s", f->json,
						   f->kind == SK_DOUBLE || f->kind == SK_INT32 ||
						   f->kind == SK_INT64 ? "numbers" : "strings");
			else
				o = conv_value(c, f, e);
			if (!o) {
				json_decref(out);
				return NULL;
			}
			json_array_append_new(out, o);
		}
		return out;
	}
	return conv_value(c, f, n);
}

static json_t *parse_doc(const char *name, const char *text, size_t len,
			 const struct schema_message *root, const char *root_what, char **err)
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
	yaml_node_t *node = yaml_document_get_root_node(&doc);
	if (!node) {
		*err = xasprintf("%s: the file is empty", name);
	} else {
		struct conv c = { name, &doc, NULL };
		out = conv_obj(&c, root, root_what, node);
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
	return parse_doc(name, text, len, &ml_job_message, "the job", err);
}

json_t *cli_parse_custom_job_spec(const char *name, const char *text, size_t len, char **err)
{
	return parse_doc(name, text, len, vertex_custom_job_spec_message, "the CustomJobSpec", err);
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

json_t *cli_parse_hp_tuning_job(const char *name, const char *text, size_t len, char **err)
{
	return parse_doc(name, text, len, &vertex_hyperparameter_tuning_job_message,
			 "the HyperparameterTuningJob", err);
}

json_t *cli_load_config(const char *path, char **err)
{
	return load_file(path, cli_parse_config, err);
}

json_t *cli_load_custom_job_spec(const char *path, char **err)
{
	return load_file(path, cli_parse_custom_job_spec, err);
}

json_t *cli_load_hp_tuning_job(const char *path, char **err)
{
	return load_file(path, cli_parse_hp_tuning_job, err);
}

/* --- flags ---------------------------------------------------------------- */

/*
 * gcloud's choices for a flag of enum field path under msg: its values
 * (*_UNSPECIFIED only where unspecified says so: gcloud's ChoiceEnumMapper
 * flags keep it), lower-cased with dashes ("nvidia-tesla-t4"), sorted.
 */
struct choices {
	char **v;
	size_t n;
};

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void flag_choices(const struct schema_message *msg, const char *path, bool unspecified,
			 struct choices *out)
{
	const struct schema_field *f = schema_field_at(msg, path);
	const struct schema_enum *e = f && f->kind == SK_ENUM ? f->enumeration : NULL;

	out->n = 0;
	out->v = xcalloc(e ? e->count + 1 : 1, sizeof(*out->v));
	for (size_t i = 0; e && i < e->count; i++) {
		size_t len = strlen(e->names[i]);
		if (!unspecified && len >= 12 && !strcmp(e->names[i] + len - 12, "_UNSPECIFIED"))
			continue;
		char *c = xstrdup(e->names[i]);
		for (char *p = c; *p; p++)
			*p = *p == '_' ? '-' : (char)tolower((unsigned char)*p);
		out->v[out->n++] = c;
	}
	qsort(out->v, out->n, sizeof(*out->v), str_cmp);
}

static void choices_release(struct choices *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i]);
	free(c->v);
}

/* A choice back to its enum value: "nvidia-tesla-t4" -> "NVIDIA_TESLA_T4". */
static char *choice_value(const char *choice)
{
	char *up = xstrdup(choice);
	for (char *p = up; *p; p++)
		*p = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
	return up;
}

/*
 * The enum value of a flag's choice (field path under msg): "basic-gpu" (any
 * case) or the API's own "BASIC_GPU" -> "BASIC_GPU" (caller frees); NULL and
 * gcloud's "Invalid choice" in *err when it is none of them.
 */
static char *enum_flag(const struct schema_message *msg, const char *path, bool unspecified,
		       const char *flag, const char *value, char **err)
{
	struct choices ch;
	char *api = NULL;
	flag_choices(msg, path, unspecified, &ch);
	for (size_t i = 0; i < ch.n && !api; i++) {
		char *v = choice_value(ch.v[i]);
		if (!strcasecmp(value, ch.v[i]) || !strcmp(value, v))
			api = v;
		else
			free(v);
	}
	if (!api) {
		struct strbuf sb = STRBUF_INIT;
		for (size_t i = 0; i < ch.n; i++)
			sb_addf(&sb, "%s%s", i ? ", " : "", ch.v[i]);
		*err = xasprintf("argument %s: Invalid choice: '%s'. Valid choices are [%s].", flag, value,
				 sb_str(&sb));
		sb_release(&sb);
	}
	choices_release(&ch);
	return api;
}

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
	struct choices types;
	size_t i;
	flag_choices(&ml_job_message, "trainingInput.masterConfig.acceleratorConfig.type", false, &types);
	for (i = 0; i < types.n; i++)
		if (!strcasecmp(type, types.v[i]))
			break;
	if (i == types.n) {
		struct strbuf sb = STRBUF_INIT;
		sb_addf(&sb, "argument %s: type: Invalid choice: '%s'. Valid choices are [", flag, type);
		for (i = 0; i < types.n; i++)
			sb_addf(&sb, "%s%s", i ? ", " : "", types.v[i]);
		sb_addstr(&sb, "].");
		*err = sb_detach(&sb);
		choices_release(&types);
		goto out;
	}
	char *up = choice_value(types.v[i]);
	choices_release(&types);
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

/* --labels k=v,... into o.labels; no flag: nothing. */
static int set_labels(json_t *o, const char *v, char **err)
{
	json_t *l = v ? cli_parse_labels("--labels", v, err) : NULL;
	if (v && !l)
		return -1;
	if (l)
		json_object_set_new(o, "labels", l);
	return 0;
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

json_t *cli_build_submit_body(const struct submit_opts *o, const json_t *config, char **err)
{
	json_t *job = config ? json_deep_copy(config) : json_object();
	*err = NULL;
	if (o->job_id)
		json_object_set_new(job, "jobId", json_string(o->job_id));
	json_t *ti = obj_child(job, "trainingInput");
	if (o->scale_tier) {
		char *api = enum_flag(&ml_job_message, "trainingInput.scaleTier", false, "--scale-tier",
				      o->scale_tier, err);
		if (!api)
			goto fail;
		json_object_set_new(ti, "scaleTier", json_string(api));
		free(api);
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
	if (set_labels(job, o->labels, err))
		goto fail;
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

/* gcloud's --worker-pool-spec accelerator-type choices: Vertex's GPU types, in the enum's order. */
static bool vertex_gpu(const struct schema_enum *e, size_t i)
{
	return !strncmp(e->names[i], "NVIDIA_", 7);
}

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
		const struct schema_enum *e = schema_field_at(vertex_custom_job_spec_message,
			"workerPoolSpecs.machineSpec.acceleratorType")->enumeration;
		size_t i;
		for (i = 0; i < e->count; i++)
			if (vertex_gpu(e, i) && !strcmp(atype, e->names[i]))
				break;
		if (i == e->count) {
			struct strbuf sb = STRBUF_INIT;
			size_t n = 0;
			sb_addf(&sb, "Invalid value for [%s]: Found invalid value of [accelerator-type]: %s. "
				"Available values are [", POOL_FLAG, atype);
			for (i = 0; i < e->count; i++)
				if (vertex_gpu(e, i))
					sb_addf(&sb, "%s%s", n++ ? ", " : "", e->names[i]);
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
	if (set_labels(body, o->labels, err))
		goto fail;
	return body;
fail:
	json_decref(body);
	return NULL;
}

/* --- ai hp-tuning-jobs create ----------------------------------------------- */

void hp_tuning_job_opts_init(struct hp_tuning_job_opts *o)
{
	memset(o, 0, sizeof *o);
}

/* An int32 flag's value, at least min, into o[key]; no flag: nothing. */
static int set_int32(json_t *o, const char *key, const char *flag, const char *v, long long min, char **err)
{
	if (!v)
		return 0;
	errno = 0;
	long long n = is_int(v) ? strtoll(v, NULL, 10) : 0;
	if (!is_int(v) || errno || n < min || n > INT32_MAX) {
		*err = xasprintf("argument %s: Value must be an integer from %lld to %d; received: %s", flag, min,
				 INT32_MAX, v);
		return -1;
	}
	json_object_set_new(o, key, json_integer(n));
	return 0;
}

/* Whether s is projects/P/locations/L/keyRings/R/cryptoKeys/K. */
static bool kms_key_name(const char *s)
{
	static const char *const lit[] = { "projects", "locations", "keyRings", "cryptoKeys" };
	for (size_t i = 0; i < ARRAY_SIZE(lit); i++) {
		size_t n = strlen(lit[i]);
		if (strncmp(s, lit[i], n) || s[n] != '/')
			return false;
		s += n + 1;
		const char *e = strchr(s, '/');
		if (e == s || !*s || (i + 1 < ARRAY_SIZE(lit)) != (e != NULL))
			return false;
		s = e ? e + 1 : s;
	}
	return true;
}

json_t *cli_build_hp_tuning_job_body(const struct hp_tuning_job_opts *o, const json_t *config, char **err)
{
	json_t *job = config ? json_deep_copy(config) : json_object();
	*err = NULL;
	/* gcloud's HpTuningJobsClient.Create: the counts default to 1 when
	 * neither the file nor the flag gives them; the flags override the file */
	if (set_int32(job, "maxTrialCount", "--max-trial-count", o->max_trial_count, 1, err) ||
	    set_int32(job, "parallelTrialCount", "--parallel-trial-count", o->parallel_trial_count, 1, err) ||
	    set_int32(job, "maxFailedTrialCount", "--max-failed-trial-count", o->max_failed_trial_count, 0, err))
		goto fail;
	if (!json_object_get(job, "maxTrialCount"))
		json_object_set_new(job, "maxTrialCount", json_integer(1));
	if (!json_object_get(job, "parallelTrialCount"))
		json_object_set_new(job, "parallelTrialCount", json_integer(1));
	if (o->network || o->service_account || o->enable_web_access || o->enable_dashboard_access) {
		json_t *spec = obj_child(job, "trialJobSpec");
		set_str(spec, "network", o->network);
		set_str(spec, "serviceAccount", o->service_account);
		if (o->enable_web_access)
			json_object_set_new(spec, "enableWebAccess", json_true());
		if (o->enable_dashboard_access)
			json_object_set_new(spec, "enableDashboardAccess", json_true());
	}
	set_str(job, "displayName", o->display_name);
	if (o->algorithm) {
		char *api = enum_flag(&vertex_hyperparameter_tuning_job_message, "studySpec.algorithm", true,
				      "--algorithm", o->algorithm, err);
		if (!api)
			goto fail;
		json_object_set_new(obj_child(job, "studySpec"), "algorithm", json_string(api));
		free(api);
	}
	if (o->kms_key) {
		if (!kms_key_name(o->kms_key)) {
			*err = xasprintf("argument --kms-key: Invalid value [%s]: give the key's full name, "
					 "projects/PROJECT/locations/LOCATION/keyRings/KEYRING/cryptoKeys/KEY.",
					 o->kms_key);
			goto fail;
		}
		json_object_set_new(job, "encryptionSpec", json_pack("{s:s}", "kmsKeyName", o->kms_key));
	}
	if (set_labels(job, o->labels, err))
		goto fail;
	return job;
fail:
	json_decref(job);
	return NULL;
}

/* --- replies read as gcloud reads them -------------------------------------- */

void cli_typed(json_t *v, const struct schema_message *m)
{
	const char *k;
	json_t *x;
	if (!json_is_object(v) || !m)
		return;
	json_object_foreach(v, k, x) {
		const struct schema_field *f = schema_find_field(m, k);
		if (!f)
			continue;
		size_t i;
		json_t *e;
		const char *mk;
		if (f->kind == SK_DOUBLE && !f->repeated && !f->map && json_is_integer(x)) {
			json_object_set_new(v, k, json_real((double)json_integer_value(x)));
		} else if (f->kind == SK_MESSAGE && f->map) {
			json_object_foreach(x, mk, e)
				cli_typed(e, f->message);
		} else if (f->kind == SK_MESSAGE && json_is_array(x)) {
			json_array_foreach(x, i, e)
				cli_typed(e, f->message);
		} else if (f->kind == SK_MESSAGE) {
			cli_typed(x, f->message);
		} else if (f->kind == SK_DOUBLE && json_is_array(x)) {
			json_array_foreach(x, i, e)
				if (json_is_integer(e))
					json_array_set_new(x, i, json_real((double)json_integer_value(e)));
		}
	}
}
