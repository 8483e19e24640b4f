/*
 * trainplane - the command-line client: gcloud's `ai-platform jobs`
 * and `ai custom-jobs` (Vertex) commands against a trainplane server, plus
 * `nodes` for operators.
 *
 *   trainplane ai-platform jobs submit training JOB [flags] [-- USER_ARGS...]
 *   trainplane ai-platform jobs describe|cancel|stream-logs JOB
 *   trainplane ai-platform jobs list [--filter F] [--limit N] [--format json|yaml]
 *   trainplane ai-platform jobs update JOB --update-labels k=v --remove-labels k
 *   trainplane ai custom-jobs create --region R --display-name N --worker-pool-spec=... [--config F]
 *   trainplane ai custom-jobs describe|cancel|stream-logs NAME|ID [--region R]
 *   trainplane ai custom-jobs list --region R [--filter F] [--limit N] [--sort-by [~]FIELD]
 *   trainplane nodes list|drain NODE|undrain NODE
 *
 * Endpoint: --endpoint, else TRAINPLANE_ENDPOINT, else http://127.0.0.1:8080/.
 * Project: --project, else TRAINPLANE_PROJECT, else "demo".
 * TRAINPLANE_TOKEN, when set, is sent as a Bearer token. For an https
 * endpoint, --ca-file or else TRAINPLANE_CA_FILE names the CA to verify the server with
 * (default: the system's); verification is never turned off.
 * Exit status: 0 ok, 1 the server refused or the job failed, 2 bad usage.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "common.h"

#define EXIT_USAGE 2

static const char *endpoint, *project, *format, *ca_file;
static const char *cmd_name = "trainplane";

/* --- HTTP ----------------------------------------------------------------- */

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	sb_add(ud, p, sz * n);
	return sz * n;
}

/* Returns the HTTP status, or -1 (message printed) when the server could not be reached. */
static long http(const char *method, const char *path, const json_t *body, struct strbuf *resp)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char *url, *data = NULL, *auth = NULL;
	size_t el = strlen(endpoint);
	long status = -1;
	url = xasprintf("%.*s%s", (int)(el && endpoint[el - 1] == '/' ? el - 1 : el), endpoint, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	/* https: always verified; against --ca-file / TRAINPLANE_CA_FILE when set. */
	if (ca_file && *ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, ca_file);
	const char *tok = getenv("TRAINPLANE_TOKEN");
	if (tok && *tok) {
		auth = xasprintf("Authorization: Bearer %s", tok);
		h = curl_slist_append(h, auth);
	}
	if (body) {
		data = json_dumps(body, JSON_COMPACT);
		h = curl_slist_append(h, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, data);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	CURLcode rc = curl_easy_perform(c);
	if (rc != CURLE_OK)
		fprintf(stderr, "ERROR: (%s) Could not reach %s: %s\n", cmd_name, url, curl_easy_strerror(rc));
	else
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(url);
	free(data);
	free(auth);
	return status;
}

/* Calls the API; on success returns the parsed reply, else prints the error and returns NULL. */
static json_t *call(const char *method, const char *path, const json_t *body)
{
	struct strbuf resp = STRBUF_INIT;
	long st = http(method, path, body, &resp);
	json_t *out = NULL;
	if (st >= 200 && st < 300) {
		out = json_loads(sb_str(&resp), 0, NULL);
		if (!out)
			out = json_object();
	} else if (st > 0) {
		struct strbuf e = STRBUF_INIT;
		cli_render_error(&e, cmd_name, st, path, sb_str(&resp));
		fputs(sb_str(&e), stderr);
		sb_release(&e);
	}
	sb_release(&resp);
	return out;
}

static char *esc(const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0);
	char *out = xstrdup(e);
	curl_free(e);
	return out;
}

static char *job_path(const char *job, const char *suffix)
{
	char *p = esc(project), *j = esc(job);
	char *out = xasprintf("/v1/projects/%s/jobs/%s%s", p, j, suffix ? suffix : "");
	free(p);
	free(j);
	return out;
}

/* --- flag parsing ----------------------------------------------------------- */

enum { F_STR, F_BOOL, F_NOBOOL, F_LIST };

#define MAX_LIST 64

/* A repeatable flag's values, in order (F_LIST). */
struct strlist {
	const char *v[MAX_LIST];
	int n;
};

struct opt {
	const char *name;
	int kind;
	const char **str;
	int *flag;
	struct strlist *list;
};

struct cmd {
	const char *name;	/* "ai-platform.jobs.submit.training" */
	const char *usage;
	int min_pos, max_pos;
};

static const char *positional[4];
static int n_positional;

static void usage_error(const struct cmd *c, const char *fmt, const char *a)
{
	fprintf(stderr, "ERROR: (trainplane.%s) ", c->name);
	fprintf(stderr, fmt, a);
	fprintf(stderr, "\nUsage: %s\n", c->usage);
	exit(EXIT_USAGE);
}

static int global_help;

/*
 * Parses argv against the command's options and the global ones. Stops at
 * `--` and returns its index (argc if none).
 */
static int parse(const struct cmd *c, const struct opt *opts, int argc, char **argv)
{
	static const struct opt globals[] = {
		{ "--endpoint", F_STR, &endpoint, NULL }, { "--project", F_STR, &project, NULL },
		{ "--ca-file", F_STR, &ca_file, NULL },
		{ "--format", F_STR, &format, NULL }, { "--help", F_BOOL, NULL, &global_help },
		{ "-h", F_BOOL, NULL, &global_help }, { NULL, 0, NULL, NULL },
	};
	int i;
	n_positional = 0;
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--"))
			break;
		if (a[0] != '-' || !a[1]) {
			if (n_positional >= c->max_pos)
				usage_error(c, "unrecognized arguments: %s", a);
			positional[n_positional++] = a;
			continue;
		}
		const char *eq = strchr(a, '=');
		size_t nl = eq ? (size_t)(eq - a) : strlen(a);
		const struct opt *o = NULL;
		for (int pass = 0; pass < 2 && !o; pass++)
			for (const struct opt *p = pass ? globals : opts; p && p->name; p++)
				if (strlen(p->name) == nl && !strncmp(p->name, a, nl)) {
					o = p;
					break;
				}
		if (!o)
			usage_error(c, "unrecognized arguments: %s", a);
		if (o->kind == F_STR || o->kind == F_LIST) {
			const char *v;
			if (eq) {
				v = eq + 1;
			} else {
				if (i + 1 >= argc)
					usage_error(c, "argument %s: expected one argument", o->name);
				v = argv[++i];
			}
			if (o->kind == F_STR) {
				*o->str = v;
			} else {
				if (o->list->n >= MAX_LIST)
					usage_error(c, "argument %s: given too many times", o->name);
				o->list->v[o->list->n++] = v;
			}
		} else {
			if (eq)
				usage_error(c, "argument %s: takes no value", o->name);
			*o->flag = o->kind == F_BOOL;
		}
	}
	if (global_help) {
		printf("Usage: %s\n", c->usage);
		exit(0);
	}
	if (n_positional < c->min_pos)
		usage_error(c, "missing a required argument%s", "");
	if (format && strcmp(format, "json") && strcmp(format, "yaml"))
		usage_error(c, "argument --format: Invalid choice: '%s'. Valid choices are [json, yaml].", format);
	return i;
}

static void print_value(const json_t *v)
{
	if (format && !strcmp(format, "json")) {
		char *s = json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS);
		printf("%s\n", s);
		free(s);
		return;
	}
	struct strbuf sb = STRBUF_INIT;
	cli_yaml(&sb, v);
	fputs(sb_str(&sb), stdout);
	sb_release(&sb);
}

/* --- stream-logs ------------------------------------------------------------ */

static const char *task_of(const json_t *e)
{
	const char *t = json_string_value(json_object_get(json_object_get(json_object_get(e, "resource"),
								 "labels"), "task_name"));
	if (!t)
		t = json_string_value(json_object_get(json_object_get(e, "labels"), "task_name"));
	if (!t)
		t = json_string_value(json_object_get(json_object_get(e, "labels"), "ml.googleapis.com/task_name"));
	return t ? t : "unknown_task";
}

/*
 * Follows a job's log until the job ends; returns the exit status (0 only
 * if it ended in success_state). job_get is the job's GET path; log_project
 * and log_job_id are what its log entries carry (resource.labels.job_id is
 * the ml job id, or a CustomJob's numeric id).
 */
static int stream_logs(const char *job_get, const char *log_project, const char *log_job_id,
		       const char *success_state, const char *task, double interval)
{
	char *last_ts = NULL;
	json_t *seen = json_object();	/* insertIds at last_ts */
	int ended = 0, rc = 1, tail_reads = 0;
	for (;;) {
		/* is the job over? then one last read gets the tail */
		json_t *j = call("GET", job_get, NULL);
		if (!j)
			break;
		ended = json_object_get(j, "endTime") != NULL;
		const char *state = json_string_value(json_object_get(j, "state"));
		if (ended)
			rc = state && !strcmp(state, success_state) ? 0 : 1;
		json_decref(j);

		const char *token = NULL;
		json_t *page = NULL;
		int failed = 0;
		do {
			struct strbuf f = STRBUF_INIT;
			sb_addstr(&f, "resource.labels.job_id=");
			sb_add_json_str(&f, log_job_id);
			if (task) {
				sb_addstr(&f, " AND (resource.labels.task_name=");
				sb_add_json_str(&f, task);
				sb_addstr(&f, " OR labels.task_name=");
				sb_add_json_str(&f, task);
				sb_addch(&f, ')');
			}
			sb_addf(&f, " AND timestamp>=\"%s\"", last_ts ? last_ts : "1970-01-01T01:00:00.000000000Z");
			char *proj = xasprintf("projects/%s", log_project);
			json_t *req = json_pack("{s:[s],s:s,s:s,s:i}", "resourceNames", proj, "filter", sb_str(&f),
						"orderBy", "timestamp asc", "pageSize", 1000);
			if (token)
				json_object_set_new(req, "pageToken", json_string(token));
			free(proj);
			sb_release(&f);
			json_decref(page);
			page = call("POST", "/v2/entries:list", req);
			json_decref(req);
			if (!page) {
				failed = 1;
				break;
			}
			size_t i;
			json_t *e;
			json_array_foreach(json_object_get(page, "entries"), i, e) {
				const char *ts = json_string_value(json_object_get(e, "timestamp"));
				const char *id = json_string_value(json_object_get(e, "insertId"));
				if (!ts)
					continue;
				if (last_ts && !strcmp(ts, last_ts)) {
					if (id && json_object_get(seen, id))
						continue;
				} else {
					free(last_ts);
					last_ts = xstrdup(ts);
					json_object_clear(seen);
				}
				if (id)
					json_object_set_new(seen, id, json_true());
				const char *msg = json_string_value(json_object_get(e, "textPayload"));
				if (!msg)
					msg = json_string_value(json_object_get(json_object_get(e, "jsonPayload"), "message"));
				const char *sev = json_string_value(json_object_get(e, "severity"));
				printf("%s\t%s\t%s\t\t%s\n", sev ? sev : "DEFAULT", ts, task_of(e), msg ? msg : "");
			}
			fflush(stdout);
			token = json_string_value(json_object_get(page, "nextPageToken"));
		} while (token && *token);
		json_decref(page);
		if (failed) {
			rc = 1;
			break;
		}
		/* one more read after the end: lines the agent shipped late */
		if (ended && tail_reads++ >= 1)
			break;
		usleep((useconds_t)((ended ? 0.5 : interval) * 1e6));
	}
	free(last_ts);
	json_decref(seen);
	return rc;
}

static double polling(const char *interval)
{
	return atof(interval) > 0 ? atof(interval) : 1;
}

/* --- list ------------------------------------------------------------------- */

/*
 * Every item of a paged list, GET base_path?pageSize=..&filter=..&pageToken=..,
 * the items under items_key. --sort-by sorts them all before --limit cuts
 * (gcloud's order: sort, then limit). NULL when a call failed.
 */
static json_t *list_all(const struct cmd *c, const char *base_path, const char *items_key, const char *filter,
			const char *limit_s, const char *page_s, const char *sort_by)
{
	long limit = limit_s ? atol(limit_s) : -1;
	if (limit_s && limit < 1)
		usage_error(c, "argument --limit: Value must be greater than or equal to 1; received: %s", limit_s);
	long fetch = sort_by ? -1 : limit;
	json_t *all = json_array();
	char *token = NULL;
	do {
		struct strbuf path = STRBUF_INIT;
		sb_addf(&path, "%s?pageSize=%s", base_path, page_s ? page_s : "100");
		if (filter) {
			char *f = esc(filter);
			sb_addf(&path, "&filter=%s", f);
			free(f);
		}
		if (token) {
			char *t = esc(token);
			sb_addf(&path, "&pageToken=%s", t);
			free(t);
		}
		json_t *r = call("GET", sb_str(&path), NULL);
		sb_release(&path);
		free(token);
		token = NULL;
		if (!r) {
			json_decref(all);
			return NULL;
		}
		size_t i;
		json_t *j;
		json_array_foreach(json_object_get(r, items_key), i, j)
			if (fetch < 0 || (long)json_array_size(all) < fetch)
				json_array_append(all, j);
		const char *t = json_string_value(json_object_get(r, "nextPageToken"));
		if (t && *t && (fetch < 0 || (long)json_array_size(all) < fetch))
			token = xstrdup(t);
		json_decref(r);
	} while (token);
	if (sort_by) {
		char *err = NULL;
		if (cli_sort(all, sort_by, &err)) {
			json_decref(all);
			usage_error(c, "%s", err);
		}
		while (limit >= 0 && (long)json_array_size(all) > limit)
			json_array_remove(all, json_array_size(all) - 1);
	}
	return all;
}

/* --- commands ----------------------------------------------------------------- */

static int cmd_submit(int argc, char **argv)
{
	static const struct cmd c = { "ai-platform.jobs.submit.training",
		"trainplane ai-platform jobs submit training JOB [--config FILE] [--region REGION]\n"
		"    [--scale-tier TIER] [--master-machine-type T] [--master-accelerator count=N,type=T]\n"
		"    [--master-image-uri URI] [--worker-count N --worker-machine-type T]\n"
		"    [--worker-accelerator count=N,type=T] [--worker-image-uri URI]\n"
		"    [--parameter-server-count N --parameter-server-machine-type T]\n"
		"    [--parameter-server-accelerator count=N,type=T] [--parameter-server-image-uri URI]\n"
		"    [--use-chief-in-tf-config] [--package-path DIR] [--packages P,...] [--staging-bucket B]\n"
		"    [--module-name M]\n"
		"    [--job-dir DIR] [--runtime-version V] [--python-version V] [--labels k=v,...]\n"
		"    [--service-account SA] [--network N] [--kms-key K] [--enable-web-access]\n"
		"    [--stream-logs | --async] [--polling-interval SECONDS] [-- USER_ARGS...]\n"
		"Flags override the values of the --config file (a Job in YAML or JSON,\n"
		"e.g. trainingInput: {scaleTier: CUSTOM, ...}); USER_ARGS become trainingInput.args.",
		1, 1 };
	struct submit_opts o;
	const char *interval = "1";
	int stream = 0, async = 0;
	submit_opts_init(&o);
	const struct opt opts[] = {
		{ "--config", F_STR, &o.config, NULL }, { "--region", F_STR, &o.region, NULL },
		{ "--scale-tier", F_STR, &o.scale_tier, NULL },
		{ "--master-machine-type", F_STR, &o.master_machine_type, NULL },
		{ "--master-accelerator", F_STR, &o.master_accelerator, NULL },
		{ "--master-image-uri", F_STR, &o.master_image_uri, NULL },
		{ "--worker-count", F_STR, &o.worker_count, NULL },
		{ "--worker-machine-type", F_STR, &o.worker_machine_type, NULL },
		{ "--worker-accelerator", F_STR, &o.worker_accelerator, NULL },
		{ "--worker-image-uri", F_STR, &o.worker_image_uri, NULL },
		{ "--parameter-server-count", F_STR, &o.ps_count, NULL },
		{ "--parameter-server-machine-type", F_STR, &o.ps_machine_type, NULL },
		{ "--parameter-server-accelerator", F_STR, &o.ps_accelerator, NULL },
		{ "--parameter-server-image-uri", F_STR, &o.ps_image_uri, NULL },
		{ "--use-chief-in-tf-config", F_BOOL, NULL, &o.use_chief_in_tf_config },
		{ "--no-use-chief-in-tf-config", F_NOBOOL, NULL, &o.use_chief_in_tf_config },
		{ "--enable-web-access", F_BOOL, NULL, &o.enable_web_access },
		{ "--package-path", F_STR, &o.package_path, NULL },
		{ "--packages", F_STR, &o.packages, NULL },
		{ "--staging-bucket", F_STR, &o.staging_bucket, NULL }, { "--module-name", F_STR, &o.module_name, NULL },
		{ "--job-dir", F_STR, &o.job_dir, NULL },
		{ "--runtime-version", F_STR, &o.runtime_version, NULL },
		{ "--python-version", F_STR, &o.python_version, NULL },
		{ "--labels", F_STR, &o.labels, NULL },
		{ "--service-account", F_STR, &o.service_account, NULL },
		{ "--network", F_STR, &o.network, NULL }, { "--kms-key", F_STR, &o.kms_key, NULL },
		{ "--stream-logs", F_BOOL, NULL, &stream }, { "--async", F_BOOL, NULL, &async },
		{ "--polling-interval", F_STR, &interval, NULL },
		{ NULL, 0, NULL, NULL },
	};
	int dd = parse(&c, opts, argc, argv);
	if (stream && async)
		usage_error(&c, "argument --async: At most one of --async | --stream-logs can be specified.%s", "");
	o.job_id = positional[0];
	if (dd < argc) {
		o.has_user_args = 1;
		o.user_args = argv + dd + 1;
		o.n_user_args = argc - dd - 1;
	}
	json_t *config = NULL;
	char *err = NULL;
	if (o.config && !(config = cli_load_config(o.config, &err))) {
		fprintf(stderr, "ERROR: (trainplane.%s) %s\n", c.name, err);
		free(err);
		return EXIT_USAGE;
	}
	json_t *body = cli_build_submit_body(&o, config, &err);
	json_decref(config);
	if (!body) {
		fprintf(stderr, "ERROR: (trainplane.%s) %s\n", c.name, err);
		free(err);
		return EXIT_USAGE;
	}
	char *p = esc(project);
	char *path = xasprintf("/v1/projects/%s/jobs", p);
	free(p);
	json_t *job = call("POST", path, body);
	free(path);
	json_decref(body);
	if (!job)
		return 1;
	const char *id = json_string_value(json_object_get(job, "jobId"));
	fprintf(stderr, "Job [%s] submitted successfully.\n", id ? id : o.job_id);
	int rc = 0;
	if (stream) {
		char *jp = job_path(o.job_id, NULL);
		rc = stream_logs(jp, project, o.job_id, "SUCCEEDED", NULL, polling(interval));
		free(jp);
	} else {
		fprintf(stderr, "Your job is still active. You may view the status of your job with the command\n\n"
			"  $ trainplane ai-platform jobs describe %s\n\n"
			"or continue streaming the logs with the command\n\n"
			"  $ trainplane ai-platform jobs stream-logs %s\n", o.job_id, o.job_id);
	}
	char *jp = job_path(o.job_id, NULL);
	json_t *now = stream ? call("GET", jp, NULL) : json_incref(job);
	free(jp);
	if (now) {
		json_t *summary = json_object();
		const char *keys[] = { "jobId", "state", "startTime", "endTime" };
		for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
			if (json_object_get(now, keys[i]))
				json_object_set(summary, keys[i], json_object_get(now, keys[i]));
		print_value(summary);
		json_decref(summary);
		json_decref(now);
	}
	json_decref(job);
	return rc;
}

static int cmd_describe(int argc, char **argv)
{
	static const struct cmd c = { "ai-platform.jobs.describe",
		"trainplane ai-platform jobs describe JOB [--format json|yaml]", 1, 1 };
	static const struct opt opts[] = { { NULL, 0, NULL, NULL } };
	parse(&c, opts, argc, argv);
	char *path = job_path(positional[0], NULL);
	json_t *j = call("GET", path, NULL);
	if (!j) {
		free(path);
		return 1;
	}
	print_value(j);
	json_decref(j);
	/* gcloud's trailer (on stderr, as its status log), pointing where
	 * trainplane serves the job and its logs: there is no Cloud Console. */
	size_t el = strlen(endpoint);
	fprintf(stderr, "\nView job at:\n%.*s%s\n\nView logs with:\n"
		"  $ trainplane ai-platform jobs stream-logs %s\n",
		(int)(el && endpoint[el - 1] == '/' ? el - 1 : el), endpoint, path, positional[0]);
	free(path);
	return 0;
}

static int cmd_cancel(int argc, char **argv)
{
	static const struct cmd c = { "ai-platform.jobs.cancel", "trainplane ai-platform jobs cancel JOB", 1, 1 };
	static const struct opt opts[] = { { NULL, 0, NULL, NULL } };
	parse(&c, opts, argc, argv);
	char *path = job_path(positional[0], ":cancel");
	json_t *body = json_object();
	json_t *j = call("POST", path, body);
	json_decref(body);
	free(path);
	if (!j)
		return 1;
	json_decref(j);
	return 0;
}

static int cmd_stream_logs(int argc, char **argv)
{
	static const struct cmd c = { "ai-platform.jobs.stream-logs",
		"trainplane ai-platform jobs stream-logs JOB [--task-name T] [--polling-interval SECONDS]\n"
		"Prints the job's log until the job ends; exits 1 unless it SUCCEEDED.", 1, 1 };
	const char *task = NULL, *interval = "1";
	int multiline = 0;
	const struct opt opts[] = {
		{ "--task-name", F_STR, &task, NULL }, { "--polling-interval", F_STR, &interval, NULL },
		{ "--allow-multiline-logs", F_BOOL, NULL, &multiline }, { NULL, 0, NULL, NULL } };
	parse(&c, opts, argc, argv);
	char *jp = job_path(positional[0], NULL);
	int rc = stream_logs(jp, project, positional[0], "SUCCEEDED", task, polling(interval));
	free(jp);
	return rc;
}

static int cmd_update(int argc, char **argv)
{
	static const struct cmd c = { "ai-platform.jobs.update",
		"trainplane ai-platform jobs update JOB [--update-labels k=v,...] [--remove-labels k,...]"
		" [--clear-labels]", 1, 1 };
	const char *upd = NULL, *rem = NULL;
	int clear = 0;
	const struct opt opts[] = {
		{ "--update-labels", F_STR, &upd, NULL }, { "--remove-labels", F_STR, &rem, NULL },
		{ "--clear-labels", F_BOOL, NULL, &clear }, { NULL, 0, NULL, NULL } };
	parse(&c, opts, argc, argv);
	if (!upd && !rem && !clear)
		usage_error(&c, "At least one of --update-labels, --remove-labels, --clear-labels must be given.%s", "");
	char *err = NULL;
	json_t *add = upd ? cli_parse_labels("--update-labels", upd, &err) : json_object();
	if (!add) {
		fprintf(stderr, "ERROR: (trainplane.%s) %s\n", c.name, err);
		free(err);
		return EXIT_USAGE;
	}
	char *path = job_path(positional[0], NULL);
	json_t *j = call("GET", path, NULL);
	if (!j) {
		free(path);
		json_decref(add);
		return 1;
	}
	json_t *labels = clear ? json_object() : json_deep_copy(json_object_get(j, "labels"));
	if (!labels)
		labels = json_object();
	if (rem) {
		char *copy = xstrdup(rem), *save = NULL;
		for (char *k = strtok_r(copy, ",", &save); k; k = strtok_r(NULL, ",", &save))
			json_object_del(labels, k);
		free(copy);
	}
	json_object_update(labels, add);
	json_t *body = json_pack("{s:o}", "labels", labels);
	if (json_object_get(j, "etag"))
		json_object_set(body, "etag", json_object_get(j, "etag"));
	char *ppath = xasprintf("%s?updateMask=labels", path);
	json_t *r = call("PATCH", ppath, body);
	free(ppath);
	free(path);
	json_decref(body);
	json_decref(add);
	json_decref(j);
	if (!r)
		return 1;
	json_decref(r);
	fprintf(stderr, "Updated ml engine job [%s].\n", positional[0]);
	return 0;
}

static int cmd_list(int argc, char **argv)
{
	static const struct cmd c = { "ai-platform.jobs.list",
		"trainplane ai-platform jobs list [--filter EXPR] [--limit N] [--page-size N] [--sort-by [~]FIELD,...]\n"
		"    [--format json|yaml]\n"
		"EXPR is the API's filter, e.g. 'state=FAILED' or 'labels.owner=\"bob\"'; --sort-by sorts\n"
		"by fields of the Job (e.g. ~createTime: newest first).", 0, 0 };
	const char *filter = NULL, *limit_s = NULL, *page_s = NULL, *sort_by = NULL;
	const struct opt opts[] = {
		{ "--filter", F_STR, &filter, NULL }, { "--limit", F_STR, &limit_s, NULL },
		{ "--page-size", F_STR, &page_s, NULL }, { "--sort-by", F_STR, &sort_by, NULL },
		{ NULL, 0, NULL, NULL } };
	parse(&c, opts, argc, argv);
	char *p = esc(project);
	char *base = xasprintf("/v1/projects/%s/jobs", p);
	free(p);
	json_t *all = list_all(&c, base, "jobs", filter, limit_s, page_s, sort_by);
	free(base);
	if (!all)
		return 1;
	if (format) {
		print_value(all);
	} else if (json_array_size(all)) {
		printf("%-40s %-12s %s\n", "JOB_ID", "STATUS", "CREATED");
		size_t i;
		json_t *j;
		json_array_foreach(all, i, j) {
			const char *id = json_string_value(json_object_get(j, "jobId"));
			const char *st = json_string_value(json_object_get(j, "state"));
			const char *ct = json_string_value(json_object_get(j, "createTime"));
			printf("%-40s %-12s %s\n", id ? id : "", st ? st : "", ct ? ct : "");
		}
	} else {
		fprintf(stderr, "Listed 0 items.\n");
	}
	json_decref(all);
	return 0;
}

static int cmd_nodes(const char *verb, int argc, char **argv)
{
	int list = !strcmp(verb, "list");
	struct cmd c = { NULL, NULL, list ? 0 : 1, list ? 0 : 1 };
	char name[64];
	snprintf(name, sizeof name, "nodes.%s", verb);
	c.name = name;
	c.usage = list ? "trainplane nodes list [--sort-by [~]FIELD,...] [--format json|yaml]"
		       : !strcmp(verb, "drain") ? "trainplane nodes drain NODE   (no new replicas are placed on it)"
						: "trainplane nodes undrain NODE";
	const char *sort_by = NULL;
	const struct opt list_opts[] = { { "--sort-by", F_STR, &sort_by, NULL }, { NULL, 0, NULL, NULL } };
	parse(&c, list_opts + !list, argc, argv);
	if (!list) {
		char *n = esc(positional[0]);
		char *path = xasprintf("/trainplane/v1/nodes/%s:%s", n, verb);
		free(n);
		json_t *body = json_object();
		json_t *r = call("POST", path, body);
		json_decref(body);
		free(path);
		if (!r)
			return 1;
		print_value(r);
		json_decref(r);
		return 0;
	}
	json_t *r = call("GET", "/trainplane/v1/nodes", NULL);
	if (!r)
		return 1;
	json_t *nodes = json_object_get(r, "nodes");
	char *err = NULL;
	if (sort_by && nodes && cli_sort(nodes, sort_by, &err)) {
		json_decref(r);
		usage_error(&c, "%s", err);
	}
	if (format) {
		print_value(nodes ? nodes : json_array());
	} else {
		printf("%-24s %-14s %-10s %-8s %-6s %-9s %s\n", "NAME", "REGION", "STATE", "RUNTIME", "VCPUS",
		       "REPLICAS", "ACCELERATORS");
		size_t i, k;
		json_t *n, *a;
		json_array_foreach(nodes, i, n) {
			struct strbuf acc = STRBUF_INIT;
			json_array_foreach(json_object_get(n, "accelerators"), k, a)
				sb_addf(&acc, "%s%s %lld/%lld free", k ? ", " : "",
					json_string_value(json_object_get(a, "type")) ?: "?",
					(long long)json_integer_value(json_object_get(a, "free")),
					(long long)json_integer_value(json_object_get(a, "total")));
			printf("%-24s %-14s %-10s %-8s %-6lld %-9lld %s\n",
			       json_string_value(json_object_get(n, "name")) ?: "",
			       json_string_value(json_object_get(n, "region")) ?: "",
			       json_string_value(json_object_get(n, "state")) ?: "",
			       json_string_value(json_object_get(n, "runtime")) ?: "",
			       (long long)json_integer_value(json_object_get(n, "vcpus")),
			       (long long)json_integer_value(json_object_get(n, "replicas")), sb_str(&acc));
			sb_release(&acc);
		}
	}
	json_decref(r);
	return 0;
}

/* --- ai custom-jobs (Vertex) ------------------------------------------------- */

static const char *region_flag;

/*
 * A CustomJob named in full (projects/P/locations/R/customJobs/ID) or by its
 * id with --region (the project is the CLI's). Sets *name to the full name
 * and *id to the id (caller frees both); exits 2 when it cannot.
 */
static void custom_job_name(const struct cmd *c, const char *arg, char **name, char **id)
{
	if (!strncmp(arg, "projects/", 9)) {
		char *copy = xstrdup(arg), *save = NULL, *seg[7];
		int n = 0;
		for (char *s = strtok_r(copy, "/", &save); s; s = strtok_r(NULL, "/", &save))
			seg[n < 7 ? n : 6] = s, n++;
		if (n != 6 || strcmp(seg[2], "locations") || strcmp(seg[4], "customJobs")) {
			free(copy);
			usage_error(c, "Invalid CustomJob name [%s]: expected "
				    "projects/PROJECT/locations/REGION/customJobs/ID.", arg);
		}
		*id = xstrdup(seg[5]);
		free(copy);
		*name = xstrdup(arg);
		return;
	}
	if (!region_flag || !*region_flag)
		usage_error(c, "Error parsing [custom_job]. The [customJob] resource is not properly "
			    "specified. Failed to find attribute [region]: give the full name "
			    "projects/PROJECT/locations/REGION/customJobs/%s or --region.", arg);
	if (strchr(arg, '/'))
		usage_error(c, "Invalid CustomJob id [%s].", arg);
	*id = xstrdup(arg);
	*name = xasprintf("projects/%s/locations/%s/customJobs/%s", project, region_flag, arg);
}

/* "/v1/" + a resource name, each segment escaped. */
static char *name_path(const char *name, const char *suffix)
{
	struct strbuf sb = STRBUF_INIT;
	char *copy = xstrdup(name), *save = NULL;
	sb_addstr(&sb, "/v1");
	for (char *s = strtok_r(copy, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
		char *e = esc(s);
		sb_addf(&sb, "/%s", e);
		free(e);
	}
	sb_addstr(&sb, suffix ? suffix : "");
	free(copy);
	return sb_detach(&sb);
}

static void require_region(const struct cmd *c)
{
	if (!region_flag || !*region_flag)
		usage_error(c, "argument --region: Must be specified.%s", "");
}

static int cmd_custom_create(int argc, char **argv)
{
	static const struct cmd c = { "ai.custom-jobs.create",
		"trainplane ai custom-jobs create --region REGION --display-name NAME\n"
		"    (--worker-pool-spec=machine-type=T,replica-count=N,accelerator-type=A,\n"
		"       accelerator-count=N,container-image-uri=URI ... (repeat: one per pool)\n"
		"     | --config FILE) [--args=A,...] [--command=C,...] [--labels k=v,...]\n"
		"    [--python-package-uris URI,...] [--network N] [--service-account SA]\n"
		"    [--enable-web-access] [--persistent-resource-id ID] [--format json|yaml]\n"
		"--config is a CustomJobSpec in YAML or JSON (workerPoolSpecs, scheduling,\n"
		"baseOutputDirectory, ...). --worker-pool-spec flags replace its workerPoolSpecs;\n"
		"an empty --worker-pool-spec= skips a pool (not the first). executor-image-uri with\n"
		"python-module (and --python-package-uris) instead of container-image-uri makes a\n"
		"Python package pool. --args and --command apply to every pool.", 0, 0 };
	struct custom_job_opts o;
	struct strlist pools = { { 0 }, 0 };
	const char *config = NULL;
	custom_job_opts_init(&o);
	const struct opt opts[] = {
		{ "--region", F_STR, &region_flag, NULL }, { "--display-name", F_STR, &o.display_name, NULL },
		{ "--worker-pool-spec", F_LIST, NULL, NULL, &pools }, { "--config", F_STR, &config, NULL },
		{ "--args", F_STR, &o.args, NULL }, { "--command", F_STR, &o.command, NULL },
		{ "--labels", F_STR, &o.labels, NULL },
		{ "--python-package-uris", F_STR, &o.python_package_uris, NULL },
		{ "--network", F_STR, &o.network, NULL }, { "--service-account", F_STR, &o.service_account, NULL },
		{ "--enable-web-access", F_BOOL, NULL, &o.enable_web_access },
		{ "--persistent-resource-id", F_STR, &o.persistent_resource_id, NULL },
		{ NULL, 0, NULL, NULL } };
	parse(&c, opts, argc, argv);
	require_region(&c);
	if (!o.display_name)
		usage_error(&c, "argument --display-name: Must be specified.%s", "");
	if (!pools.n && !config)
		usage_error(&c, "Missing required argument [--worker-pool-spec]: Either --worker-pool-spec "
			    "or --config must be specified.%s", "");
	o.pool_specs = pools.v;
	o.n_pool_specs = pools.n;
	json_t *spec = NULL;
	char *err = NULL;
	if (config && !(spec = cli_load_custom_job_spec(config, &err))) {
		fprintf(stderr, "ERROR: (trainplane.%s) %s\n", c.name, err);
		free(err);
		return EXIT_USAGE;
	}
	json_t *body = cli_build_custom_job_body(&o, spec, &err);
	json_decref(spec);
	if (!body) {
		fprintf(stderr, "ERROR: (trainplane.%s) %s\n", c.name, err);
		free(err);
		return EXIT_USAGE;
	}
	char *parent = xasprintf("projects/%s/locations/%s", project, region_flag);
	char *path = name_path(parent, "/customJobs");
	free(parent);
	json_t *job = call("POST", path, body);
	free(path);
	json_decref(body);
	if (!job)
		return 1;
	const char *name = json_string_value(json_object_get(job, "name"));
	fprintf(stderr, "CustomJob [%s] is submitted successfully.\n\n"
		"Your job is still active. You may view the status of your job with the command\n\n"
		"  $ trainplane ai custom-jobs describe %s\n\n"
		"or continue streaming the logs with the command\n\n"
		"  $ trainplane ai custom-jobs stream-logs %s\n", name ? name : "", name ? name : "",
		name ? name : "");
	if (format)
		print_value(job);
	json_decref(job);
	return 0;
}

/* describe, cancel and stream-logs: JOB plus --region. */
static int cmd_custom_job(const char *verb, int argc, char **argv)
{
	static char cname[64];
	struct cmd c = { cname, NULL, 1, 1 };
	const char *interval = "1", *task = NULL;
	int describe = !strcmp(verb, "describe"), cancel = !strcmp(verb, "cancel");
	snprintf(cname, sizeof cname, "ai.custom-jobs.%s", verb);
	c.usage = describe ? "trainplane ai custom-jobs describe (NAME | ID --region REGION) [--format json|yaml]\n"
			     "NAME is projects/PROJECT/locations/REGION/customJobs/ID."
		  : cancel ? "trainplane ai custom-jobs cancel (NAME | ID --region REGION)\n"
			     "NAME is projects/PROJECT/locations/REGION/customJobs/ID."
			   : "trainplane ai custom-jobs stream-logs (NAME | ID --region REGION) [--task-name T]\n"
			     "    [--polling-interval SECONDS]\n"
			     "Prints the job's log (task names workerpool0-0, workerpool1-0, ...) until the\n"
			     "job ends; exits 1 unless it ended JOB_STATE_SUCCEEDED.";
	const struct opt opts[] = {
		{ "--region", F_STR, &region_flag, NULL },
		{ "--polling-interval", F_STR, &interval, NULL }, { "--task-name", F_STR, &task, NULL },
		{ NULL, 0, NULL, NULL } };
	const struct opt few[] = { { "--region", F_STR, &region_flag, NULL }, { NULL, 0, NULL, NULL } };
	parse(&c, describe || cancel ? few : opts, argc, argv);
	char *name, *id;
	custom_job_name(&c, positional[0], &name, &id);
	int rc = 0;
	if (describe) {
		char *path = name_path(name, NULL);
		json_t *j = call("GET", path, NULL);
		free(path);
		if (j)
			print_value(j);
		rc = j ? 0 : 1;
		json_decref(j);
	} else if (cancel) {
		char *path = name_path(name, ":cancel");
		json_t *body = json_object();
		json_t *r = call("POST", path, body);
		json_decref(body);
		free(path);
		if (r)
			fprintf(stderr, "Request to cancel CustomJob [%s] has been sent.\n\n"
				"You may view the status of your job with the command\n\n"
				"  $ trainplane ai custom-jobs describe %s\n", name, name);
		rc = r ? 0 : 1;
		json_decref(r);
	} else {
		/* the log's project is the name's */
		char *proj = xstrdup(name + 9);
		*strchr(proj, '/') = '\0';
		char *path = name_path(name, NULL);
		rc = stream_logs(path, proj, id, "JOB_STATE_SUCCEEDED", task, polling(interval));
		free(path);
		free(proj);
	}
	free(name);
	free(id);
	return rc;
}

static int cmd_custom_list(int argc, char **argv)
{
	static const struct cmd c = { "ai.custom-jobs.list",
		"trainplane ai custom-jobs list --region REGION [--filter EXPR] [--limit N] [--page-size N]\n"
		"    [--sort-by [~]FIELD,...] [--format json|yaml]\n"
		"EXPR is the API's filter, e.g. 'state=JOB_STATE_FAILED', 'display_name:\"exp-*\"' or\n"
		"'labels.team=ml'; --sort-by sorts by fields of the CustomJob (e.g. ~createTime).", 0, 0 };
	const char *filter = NULL, *limit_s = NULL, *page_s = NULL, *sort_by = NULL;
	const struct opt opts[] = {
		{ "--region", F_STR, &region_flag, NULL }, { "--filter", F_STR, &filter, NULL },
		{ "--limit", F_STR, &limit_s, NULL }, { "--page-size", F_STR, &page_s, NULL },
		{ "--sort-by", F_STR, &sort_by, NULL }, { NULL, 0, NULL, NULL } };
	parse(&c, opts, argc, argv);
	require_region(&c);
	char *parent = xasprintf("projects/%s/locations/%s", project, region_flag);
	char *base = name_path(parent, "/customJobs");
	free(parent);
	json_t *all = list_all(&c, base, "customJobs", filter, limit_s, page_s, sort_by);
	free(base);
	if (!all)
		return 1;
	if (format) {
		print_value(all);
	} else if (json_array_size(all)) {
		printf("%-20s %-32s %-22s %s\n", "CUSTOM_JOB_ID", "DISPLAY_NAME", "STATE", "CREATED");
		size_t i;
		json_t *j;
		json_array_foreach(all, i, j) {
			const char *n = json_string_value(json_object_get(j, "name"));
			const char *dn = json_string_value(json_object_get(j, "displayName"));
			const char *st = json_string_value(json_object_get(j, "state"));
			const char *ct = json_string_value(json_object_get(j, "createTime"));
			const char *base_id = n && strrchr(n, '/') ? strrchr(n, '/') + 1 : n;
			printf("%-20s %-32s %-22s %s\n", base_id ? base_id : "", dn ? dn : "", st ? st : "",
			       ct ? ct : "");
		}
	} else {
		fprintf(stderr, "Listed 0 items.\n");
	}
	json_decref(all);
	return 0;
}

static const char top_usage[] =
	"Usage: trainplane [--endpoint URL] [--project P] [--ca-file PEM] GROUP COMMAND [ARGS...]\n\n"
	"  ai-platform jobs submit training JOB [flags] [-- USER_ARGS...]\n"
	"  ai-platform jobs describe JOB\n"
	"  ai-platform jobs list [--filter EXPR] [--limit N] [--format json|yaml]\n"
	"  ai-platform jobs cancel JOB\n"
	"  ai-platform jobs stream-logs JOB\n"
	"  ai-platform jobs update JOB --update-labels k=v,... --remove-labels k,...\n"
	"  ai custom-jobs create --region R --display-name N --worker-pool-spec=... [--config FILE]\n"
	"  ai custom-jobs describe|cancel|stream-logs (NAME | ID --region R)\n"
	"  ai custom-jobs list --region R [--filter EXPR] [--limit N] [--sort-by [~]FIELD]\n"
	"  nodes list | drain NODE | undrain NODE\n\n"
	"Every command takes --help. Endpoint: --endpoint, TRAINPLANE_ENDPOINT or\n"
	"http://127.0.0.1:8080/; project: --project, TRAINPLANE_PROJECT or demo;\n"
	"TRAINPLANE_TOKEN is sent as a Bearer token; --ca-file or TRAINPLANE_CA_FILE is\n"
	"the CA that verifies an https endpoint.\n";

static int is_help(const char *a)
{
	return a && (!strcmp(a, "--help") || !strcmp(a, "-h") || !strcmp(a, "help"));
}

static int usage(int rc)
{
	fputs(top_usage, rc ? stderr : stdout);
	return rc;
}

int main(int argc, char **argv)
{
	int i = 1;
	/* leading global flags */
	while (i < argc && argv[i][0] == '-' && !is_help(argv[i])) {
		const char *a = argv[i];
		const char **dst = !strncmp(a, "--endpoint", 10) ? &endpoint : !strncmp(a, "--project", 9) ? &project
				   : !strncmp(a, "--ca-file", 9) ? &ca_file
				   : !strncmp(a, "--format", 8) ? &format : NULL;
		const char *eq = strchr(a, '=');
		if (!dst) {
			fprintf(stderr, "ERROR: (trainplane) unrecognized arguments: %s\n", a);
			return usage(EXIT_USAGE);
		}
		if (eq) {
			*dst = eq + 1;
		} else if (i + 1 < argc) {
			*dst = argv[++i];
		} else {
			fprintf(stderr, "ERROR: (trainplane) argument %s: expected one argument\n", a);
			return EXIT_USAGE;
		}
		i++;
	}
	if (i >= argc)
		return usage(EXIT_USAGE);
	if (is_help(argv[i]))
		return usage(0);
	if (!ca_file)
		ca_file = getenv("TRAINPLANE_CA_FILE");
	if (!endpoint)
		endpoint = getenv("TRAINPLANE_ENDPOINT");
	if (!endpoint || !*endpoint)
		endpoint = "http://127.0.0.1:8080/";
	if (!project)
		project = getenv("TRAINPLANE_PROJECT");
	if (!project || !*project)
		project = "demo";
	curl_global_init(CURL_GLOBAL_DEFAULT);
	static char namebuf[128];
	int rc;
	const char *g = argv[i];
	const char *sub = i + 1 < argc ? argv[i + 1] : NULL;
	const char *verb = i + 2 < argc ? argv[i + 2] : NULL;
	if (!strcmp(g, "ai-platform") && sub && !strcmp(sub, "jobs") && verb && !is_help(verb)) {
		int first = i + 3;
		snprintf(namebuf, sizeof namebuf, "trainplane.ai-platform.jobs.%s", verb);
		cmd_name = namebuf;
		if (!strcmp(verb, "submit")) {
			if (first >= argc || strcmp(argv[first], "training")) {
				if (first < argc && is_help(argv[first]))
					return printf("Usage: trainplane ai-platform jobs submit training JOB [flags]\n"), 0;
				fprintf(stderr, "ERROR: (trainplane.ai-platform.jobs.submit) Invalid choice: '%s'. "
					"Valid choices are [training].\n", first < argc ? argv[first] : "");
				return EXIT_USAGE;
			}
			cmd_name = "trainplane.ai-platform.jobs.submit.training";
			rc = cmd_submit(argc - first - 1, argv + first + 1);
		} else if (!strcmp(verb, "describe")) {
			rc = cmd_describe(argc - first, argv + first);
		} else if (!strcmp(verb, "list")) {
			rc = cmd_list(argc - first, argv + first);
		} else if (!strcmp(verb, "cancel")) {
			rc = cmd_cancel(argc - first, argv + first);
		} else if (!strcmp(verb, "stream-logs")) {
			rc = cmd_stream_logs(argc - first, argv + first);
		} else if (!strcmp(verb, "update")) {
			rc = cmd_update(argc - first, argv + first);
		} else {
			fprintf(stderr, "ERROR: (trainplane.ai-platform.jobs) Invalid choice: '%s'. Valid choices are "
				"[cancel, describe, list, stream-logs, submit, update].\n", verb);
			return EXIT_USAGE;
		}
	} else if (!strcmp(g, "ai") && sub && !strcmp(sub, "custom-jobs") && verb && !is_help(verb)) {
		int first = i + 3;
		snprintf(namebuf, sizeof namebuf, "trainplane.ai.custom-jobs.%s", verb);
		cmd_name = namebuf;
		if (!strcmp(verb, "create")) {
			rc = cmd_custom_create(argc - first, argv + first);
		} else if (!strcmp(verb, "list")) {
			rc = cmd_custom_list(argc - first, argv + first);
		} else if (!strcmp(verb, "describe") || !strcmp(verb, "cancel") || !strcmp(verb, "stream-logs")) {
			rc = cmd_custom_job(verb, argc - first, argv + first);
		} else {
			fprintf(stderr, "ERROR: (trainplane.ai.custom-jobs) Invalid choice: '%s'. Valid choices are "
				"[cancel, create, describe, list, stream-logs].\n", verb);
			return EXIT_USAGE;
		}
	} else if (!strcmp(g, "nodes") && sub && !is_help(sub)) {
		if (strcmp(sub, "list") && strcmp(sub, "drain") && strcmp(sub, "undrain")) {
			fprintf(stderr, "ERROR: (trainplane.nodes) Invalid choice: '%s'. Valid choices are "
				"[drain, list, undrain].\n", sub);
			return EXIT_USAGE;
		}
		snprintf(namebuf, sizeof namebuf, "trainplane.nodes.%s", sub);
		cmd_name = namebuf;
		rc = cmd_nodes(sub, argc - i - 2, argv + i + 2);
	} else if (!strcmp(g, "ai") && sub && !is_help(sub) && strcmp(sub, "custom-jobs")) {
		fprintf(stderr, "ERROR: (trainplane.ai) Invalid choice: '%s'. Valid choices are [custom-jobs].\n", sub);
		return EXIT_USAGE;
	} else if ((!strcmp(g, "ai-platform") || !strcmp(g, "nodes") || !strcmp(g, "ai"))) {
		return usage(sub && is_help(sub) ? 0 : (verb && is_help(verb) ? 0 : EXIT_USAGE));
	} else {
		fprintf(stderr, "ERROR: (trainplane) Invalid choice: '%s'. Valid choices are [ai, ai-platform, nodes].\n", g);
		return EXIT_USAGE;
	}
	curl_global_cleanup();
	return rc;
}
