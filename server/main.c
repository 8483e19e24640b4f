/*
 * trainplane-server: the API, the store and (later) the scheduler.
 *
 *   trainplane-server [--config FILE]   run
 *   trainplane-server --routes          print the route table and exit
 *   trainplane-server --schemas         print the message descriptors as JSON and exit
 *   trainplane-server --discovery API VERSION [ROOT_URL]
 *                                       print the discovery document of an API and exit
 *   trainplane-server --check-config    load config and catalog, then exit
 *
 * With no `catalog` key the server uses the catalog compiled into it
 * (deploy/catalog.yaml as built), so an installed binary starts from any
 * working directory; a `catalog` path replaces it.
 */
#include <errno.h>
#include <ftw.h>
#include <sys/stat.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "catalog.h"
#include "quota.h"
#include "config.h"
#include "discovery.h"
#include "embedded.h"
#include "messages.h"
#include "http.h"
#include "storage_fs.h"
#include "listen_hub.h"
#include "lease_batch.h"
#include "listener.h"
#include "node_cache.h"
#include "log.h"
#include "scheduler.h"
#include "slurm_backend.h"
#include "snapshot.h"
#include "store.h"
#include "store_job.h"
#include "store_pipe.h"
#include "job_cache.h"
#include "tls.h"
#include "wire.h"
#include "sim_rules.h"
#include "store_sim_rules.h"
#include "violation.h"
#include "yamldoc.h"

struct server_config {
	char *agent_token;
	char *auth_mode;
	char *catalog;
	char *database_url;
	int db_pool_size;
	char *db_statement_timeout;
	int db_wait_seconds;
	bool emulator;
	int emulator_nodes_per_type;
	char *emulator_replica_duration;
	char *emulator_rules_file;
	int http_header_timeout_seconds;
	int http_idle_timeout_seconds;
	int http_io_timeout_seconds;
	int http_max_connections;
	int http_max_connections_per_client;
	int http_threads;
	int job_cache_entries;
	int lease_seconds;
	char *listen;
	char *log_format;
	char *log_level;
	int log_retention_days;
	int max_body_bytes;
	bool db_pipeline;
	char *postgres_bin_dir;
	bool scheduler;
	int scheduler_tick_ms;
	int starve_seconds;
	int never_fits_fail_seconds;
	char *state_dir;
	int storage_max_object_gib;
	char *storage_root;
	int sync_interval_seconds;
	char *tokens_file;
	char *quotas_file;
	char *slurm_file;
	char *tls_cert_file;
	char *tls_key_file;
};

static const char *check_auth_mode(const char *v)
{
	return strcmp(v, "open") && strcmp(v, "tokens") ? "must be open or tokens" : NULL;
}

static const char *check_duration(const char *v)
{
	int64_t ns;
	return wire_duration_parse(v, &ns) || ns < 0 || ns > 366LL * 86400 * 1000000000 ?
	       "must be a duration such as \"2s\" or \"0.5s\" (at most a year)" : NULL;
}

static const char *check_log_level(const char *v)
{
	enum log_level l;
	return log_level_parse(v, &l) ? "must be debug, info, warn or error" : NULL;
}

static const char *check_log_format(const char *v)
{
	enum log_format f;
	return log_format_parse(v, &f) ? "must be text or json" : NULL;
}

#define KEY(name, type, def, min, max, check) \
	{ #name, type, offsetof(struct server_config, name), def, min, max, check }
/* Alphabetical; each is also TRAINPLANE_<NAME>. */
static const struct config_key server_keys[] = {
	KEY(agent_token, CONFIG_STRING, NULL, 0, 0, NULL),
	KEY(auth_mode, CONFIG_STRING, "open", 0, 0, check_auth_mode),
	KEY(catalog, CONFIG_STRING, NULL, 0, 0, NULL),
	KEY(database_url, CONFIG_STRING, NULL, 0, 0, NULL),
	KEY(db_pipeline, CONFIG_BOOL, "true", 0, 0, NULL),
	KEY(db_pool_size, CONFIG_INT, "16", 1, 1000, NULL),
	KEY(db_statement_timeout, CONFIG_STRING, "10s", 0, 0, check_duration),
	KEY(db_wait_seconds, CONFIG_INT, "30", 0, 3600, NULL),
	KEY(emulator, CONFIG_BOOL, "false", 0, 0, NULL),
	KEY(emulator_nodes_per_type, CONFIG_INT, "8", 1, 1000, NULL),
	KEY(emulator_replica_duration, CONFIG_STRING, "2s", 0, 0, check_duration),
	KEY(emulator_rules_file, CONFIG_STRING, NULL, 0, 0, NULL),
	KEY(http_header_timeout_seconds, CONFIG_INT, "10", 1, 3600, NULL),
	KEY(http_idle_timeout_seconds, CONFIG_INT, "120", 1, 86400, NULL),
	KEY(http_io_timeout_seconds, CONFIG_INT, "60", 1, 3600, NULL),
	KEY(http_max_connections, CONFIG_INT, "10000", 16, 1000000, NULL),
	KEY(http_max_connections_per_client, CONFIG_INT, "2500", 0, 1000000, NULL),
	KEY(http_threads, CONFIG_INT, "16", 1, 1024, NULL),
	KEY(job_cache_entries, CONFIG_INT, "10000", 0, 10000000, NULL),
	KEY(lease_seconds, CONFIG_INT, "30", 2, 3600, NULL),
	KEY(listen, CONFIG_STRING, "127.0.0.1:8080", 0, 0, NULL),
	KEY(log_format, CONFIG_STRING, "text", 0, 0, check_log_format),
	KEY(log_level, CONFIG_STRING, "info", 0, 0, check_log_level),
	KEY(log_retention_days, CONFIG_INT, "30", 1, 36500, NULL),
	KEY(max_body_bytes, CONFIG_INT, "1048576", 1024, 64 << 20, NULL),
	KEY(postgres_bin_dir, CONFIG_STRING, NULL, 0, 0, NULL),
	KEY(scheduler, CONFIG_BOOL, "true", 0, 0, NULL),
	KEY(scheduler_tick_ms, CONFIG_INT, "1000", 10, 60000, NULL),
	KEY(starve_seconds, CONFIG_INT, "600", 1, 86400 * 7, NULL),
	KEY(never_fits_fail_seconds, CONFIG_INT, "0", 0, 86400 * 365, NULL),
	KEY(state_dir, CONFIG_STRING, NULL, 0, 0, NULL),
	KEY(storage_max_object_gib, CONFIG_INT, "5120", 1, 1048576, NULL),
	KEY(storage_root, CONFIG_STRING, NULL, 0, 0, NULL),
	KEY(sync_interval_seconds, CONFIG_INT, "10", 1, 600, NULL),
	KEY(tls_cert_file, CONFIG_STRING, NULL, 0, 0, NULL),
	KEY(tls_key_file, CONFIG_STRING, NULL, 0, 0, NULL),
	KEY(tokens_file, CONFIG_STRING, NULL, 0, 0, NULL),
	KEY(quotas_file, CONFIG_STRING, NULL, 0, 0, NULL),
	KEY(slurm_file, CONFIG_STRING, NULL, 0, 0, NULL),
};

/*
 * The emulator's rules file (docs/emulator.md, "Scripted outcomes"): YAML
 * (or JSON) with a `rules:` list, checked as setRules checks a list. NULL
 * path: none (*out NULL). -1 with the file and every problem in err.
 */
static int load_rules_file(const char *path, json_t **out, char *err, size_t errlen)
{
	yaml_document_t doc;
	json_t *top = NULL;

	*out = NULL;
	if (!path || !*path)
		return 0;
	if (yaml_doc_load(path, &doc, err, errlen))
		return -1;
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (root)
		top = yaml_doc_json(&doc, root, path, err, errlen);
	yaml_document_delete(&doc);
	if (!root || (top && !json_is_array(json_object_get(top, "rules")))) {
		snprintf(err, errlen, "%s: a `rules:` list is required", path);
		json_decref(top);
		return -1;
	}
	if (!top)
		return -1;
	struct violations vs = VIOLATIONS_INIT;
	json_t *list = json_incref(json_object_get(top, "rules"));
	json_decref(top);
	struct sim_rules *rules = sim_rules_parse(list, "rules", &vs);
	if (!rules) {
		size_t at = (size_t)snprintf(err, errlen, "%s:", path);
		for (size_t i = 0; i < vs.n && at < errlen; i++)
			at += (size_t)snprintf(err + at, errlen - at, " %s: %s;", vs.v[i].field,
					       vs.v[i].description);
		violations_release(&vs);
		json_decref(list);
		return -1;
	}
	sim_rules_free(rules);
	*out = list;
	return 0;
}

/* What leaving a key unset means, where that is more than "none" (--help). */
static const struct {
	const char *key, *meaning;
} unset_meanings[] = {
	{ "catalog", "the built-in catalog, deploy/catalog.yaml as built" },
	{ "database_url", "an embedded PostgreSQL under state_dir" },
	{ "quotas_file", "no quotas: every project may use the whole cluster, with equal fair-share "
			 "weights (docs/quotas.md)" },
	{ "postgres_bin_dir", "the newest /usr/lib/postgresql/N/bin" },
	{ "slurm_file", "no Slurm backend: every region is served by trainplane's own agents "
			"(docs/slurm.md)" },
	{ "state_dir", "./var; in emulator mode a fresh directory under $TMPDIR or /tmp, removed at "
		       "exit" },
	{ "storage_root", "state_dir/gcs (the agents' storage_root must be the same tree)" },
};

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	if (remove(path))
		log_warn("cannot remove %s: %s", path, strerror(errno));
	return 0;
}

/*
 * An emulator without a state_dir gets a fresh one, removed at exit: a CI
 * run starts clean, and never touches make run's ./var. 0 or -1.
 */
static int resolve_state_dir(struct server_config *cfg, bool *temporary)
{
	*temporary = false;
	if (cfg->state_dir && *cfg->state_dir)
		return 0;
	free(cfg->state_dir);
	if (!cfg->emulator) {
		cfg->state_dir = xstrdup("./var");
		return 0;
	}
	const char *tmp = getenv("TMPDIR");
	char *dir = xasprintf("%s/trainplane-emulator-XXXXXX", tmp && *tmp == '/' ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "trainplane-server: cannot make a state directory %s: %s\n", dir,
			strerror(errno));
		free(dir);
		cfg->state_dir = NULL;
		return -1;
	}
	/* The embedded database runs as postgres when we are root: it must get in. */
	if (chmod(dir, 0755))
		log_warn("cannot chmod %s: %s", dir, strerror(errno));
	cfg->state_dir = dir;
	*temporary = true;
	return 0;
}

static void usage(FILE *f)
{
	fputs("usage: trainplane-server [--config FILE] [--emulator] [--routes] [--schemas] "
	      "[--check-config]\n"
	      "       (--emulator: emulator: true, docs/emulator.md)\n"
	      "       trainplane-server --hash-token < TOKEN   (the sha256 for a tokens file)\n"
	      "       trainplane-server --discovery API VERSION [ROOT_URL]   (ml v1, aiplatform v1,\n"
	      "         logging v2; ROOT_URL http://127.0.0.1:8080/ unless given)\n"
	      "Configuration keys (YAML file or TRAINPLANE_<KEY> environment variables):\n", f);
	for (size_t i = 0; i < ARRAY_SIZE(server_keys); i++) {
		const char *meaning = NULL;

		for (size_t j = 0; j < ARRAY_SIZE(unset_meanings); j++)
			if (!strcmp(unset_meanings[j].key, server_keys[i].name))
				meaning = unset_meanings[j].meaning;
		if (server_keys[i].def)
			fprintf(f, "  %-18s default %s\n", server_keys[i].name, server_keys[i].def);
		else
			fprintf(f, "  %-18s default (unset%s%s)\n", server_keys[i].name,
				meaning ? ": " : "", meaning ? meaning : "");
	}
}

/* --hash-token: reads a token on stdin (one line) and prints its SHA-256. */
static int hash_token(void)
{
	char line[4096], hex[65];

	if (!fgets(line, sizeof(line), stdin)) {
		fputs("trainplane-server: --hash-token reads the token on standard input\n", stderr);
		return 2;
	}
	line[strcspn(line, "\r\n")] = '\0';
	if (strlen(line) < 16) {
		fputs("trainplane-server: a token should be at least 16 characters of random data "
		      "(openssl rand -hex 32)\n", stderr);
		return 2;
	}
	auth_sha256_hex(line, hex);
	printf("%s\n", hex);
	return 0;
}

/* open mode's cluster token when agent_token is unset: make run, the emulator. */
#define DEV_AGENT_TOKEN "trainplane-dev-token"

/*
 * The agents' cluster token in effect: tokens mode takes only a strong one
 * (auth_secret_strong()) and none when unset (then only the per-node
 * tokens of tokens_file open the agent routes); open mode defaults to
 * DEV_AGENT_TOKEN. -1 with err set when tokens mode gets a weak one.
 */
static int agent_token_in_effect(const struct server_config *cfg, const char **out, char *err,
				 size_t errlen)
{
	const char *t = cfg->agent_token && *cfg->agent_token ? cfg->agent_token : NULL;
	char why[256];

	*out = t;
	if (strcmp(cfg->auth_mode, "tokens")) {
		if (!t)
			*out = DEV_AGENT_TOKEN;
		return 0;
	}
	if (t && !auth_secret_strong(t, why, sizeof(why))) {
		snprintf(err, errlen, "agent_token (TRAINPLANE_AGENT_TOKEN) is too weak for auth_mode "
			 "tokens: %s. Make one with `openssl rand -hex 32` (%d bits at least), or leave "
			 "agent_token unset so that only the per-node agent tokens of tokens_file "
			 "(role: agent) open the agent routes", why, AUTH_SECRET_MIN_BITS);
		return -1;
	}
	return 0;
}

static void catalog_free_any(void *cat)
{
	catalog_free(cat);
}

/* cfg's catalog file, or the built-in one when the key is unset or empty. */
static int load_catalog(const struct server_config *cfg, struct catalog **out, char *err,
			size_t errlen)
{
	if (cfg->catalog && *cfg->catalog)
		return catalog_load(cfg->catalog, out, err, errlen);
	return catalog_load_text(CATALOG_BUILTIN_NAME, catalog_builtin_yaml, catalog_builtin_yaml_len,
				 out, err, errlen);
}

/* For the log: which catalog load_catalog() reads. */
static const char *catalog_source(const struct server_config *cfg)
{
	return cfg->catalog && *cfg->catalog ? cfg->catalog :
	       "built in (deploy/catalog.yaml of this build)";
}

/* Loads the tokens file when the mode needs one (else *out = NULL). */
static int load_tokens(const struct server_config *cfg, struct auth_tokens **out, char *err,
		       size_t errlen)
{
	*out = NULL;
	if (strcmp(cfg->auth_mode, "tokens"))
		return 0;
	if (!cfg->tokens_file || !*cfg->tokens_file) {
		snprintf(err, errlen, "auth_mode tokens needs tokens_file");
		return -1;
	}
	return auth_tokens_load(cfg->tokens_file, out, err, errlen);
}

static void quotas_free_any(void *q)
{
	quotas_free(q);
}

/* The quotas file when the key is set (else *out = NULL: no limits). */
static int load_quotas(const struct server_config *cfg, const struct catalog *cat,
		       struct quotas **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!cfg->quotas_file || !*cfg->quotas_file)
		return 0;
	return quotas_load(cfg->quotas_file, cat, out, err, errlen);
}

/* SIGHUP: the catalog, the quotas and the tokens file again; a bad file keeps the old. */
static void reload(const struct server_config *cfg, struct server *srv)
{
	char err[2048];
	struct catalog *cat;
	struct auth_tokens *tokens;
	struct quotas *quotas;

	if (load_catalog(cfg, &cat, err, sizeof(err))) {
		log_error("SIGHUP: catalog not reloaded, keeping the current one: %s", err);
	} else {
		snapshot_replace(srv->catalogs, cat);
		log_info("SIGHUP: catalog %s reloaded", catalog_source(cfg));
	}
	struct snap_ref *ref = NULL;
	const struct catalog *now = snapshot_acquire(srv->catalogs, &ref);
	if (load_quotas(cfg, now, &quotas, err, sizeof(err))) {
		log_error("SIGHUP: quotas not reloaded, keeping the current ones: %s", err);
	} else {
		snapshot_replace(srv->quotas, quotas);
		if (quotas)
			log_info("SIGHUP: quotas file %s reloaded", cfg->quotas_file);
	}
	snapshot_release(ref);
	if (srv->auth_mode != AUTH_TOKENS)
		return;
	if (load_tokens(cfg, &tokens, err, sizeof(err))) {
		log_error("SIGHUP: tokens not reloaded, keeping the current ones: %s", err);
	} else {
		snapshot_replace(srv->tokens, tokens);
		log_info("SIGHUP: tokens file %s reloaded (%zu tokens)", cfg->tokens_file, tokens->n);
	}
}

/* tokens mode: what opens the agent routes, and a warning when nothing does. */
static void log_agent_credentials(const char *agent_token, const struct auth_tokens *tokens)
{
	size_t per_node = 0;

	for (size_t i = 0; i < tokens->n; i++)
		per_node += tokens->v[i].kind == TOKEN_AGENT;
	log_info("agent routes: %s; %zu per-node agent tokens", agent_token ?
		 "the cluster token (agent_token) or a per-node token" :
		 "no cluster token (agent_token unset)", per_node);
	if (!agent_token && !per_node)
		log_warn("no agent can register: agent_token is unset and tokens_file has no agent "
			 "token (role: agent, nodes: [...])");
}

static bool listen_is_loopback(const char *listen)
{
	return !strncmp(listen, "127.", 4) || !strncmp(listen, "[::1]:", 6) ||
	       !strncmp(listen, "localhost:", 10);
}

static void print_routes(void)
{
	for (size_t i = 0; i < routes_count; i++)
		printf("%s %s %s\n", routes[i].method, routes[i].pattern, routes[i].operation_id);
}

/* --schemas: the messages as the server parses and renders them (spec/messages.h). */
static int print_schemas(void)
{
	json_t *d = spec_messages_describe();
	int rc = json_dumpf(d, stdout, JSON_INDENT(1)) || putchar('\n') == EOF;

	json_decref(d);
	return rc;
}

/*
 * --discovery API VERSION [ROOT_URL]: the document GET
 * /discovery/v1/apis/API/VERSION/rest serves, for a client built from a
 * file (googleapiclient's build_from_document).
 */
static int print_discovery(const char *api, int argc, char **argv)
{
	const char *root = argc > 1 ? argv[1] : "http://127.0.0.1:8080/";
	const char *scheme = !strncmp(root, "https://", 8) ? "https" :
			     !strncmp(root, "http://", 7) ? "http" : NULL;
	size_t len;

	if (argc < 1 || argc > 2 || !scheme) {
		fputs("usage: trainplane-server --discovery API VERSION [http[s]://HOST[:PORT]/]\n",
		      stderr);
		return 2;
	}
	char *host = xstrdup(root + strlen(scheme) + 3);
	size_t n = strlen(host);
	if (n && host[n - 1] == '/')
		host[n - 1] = '\0';
	if (!discovery_host_valid(host)) {
		fprintf(stderr, "trainplane-server: %s is not http[s]://HOST[:PORT]/\n", root);
		free(host);
		return 2;
	}
	char *doc = discovery_document(api, argv[0], scheme, host, &len);
	free(host);
	if (!doc) {
		fprintf(stderr, "trainplane-server: no discovery document of %s %s (ml v1, "
			"aiplatform v1, logging v2)\n", api, argv[0]);
		return 1;
	}
	int rc = fwrite(doc, 1, len, stdout) != len || putchar('\n') == EOF;
	free(doc);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "emulator", no_argument, NULL, 'e' },
		{ "routes", no_argument, NULL, 'r' },
		{ "schemas", no_argument, NULL, 's' },
		{ "discovery", required_argument, NULL, 'd' },
		{ "check-config", no_argument, NULL, 'k' },
		{ "hash-token", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct server_config cfg = { 0 };
	const char *config_path = getenv("TRAINPLANE_CONFIG");
	bool check_only = false, emulator_flag = false, temporary_state = false;
	char err[2048];
	struct catalog *cat = NULL;
	struct auth_tokens *tokens = NULL;
	const char *agent_token = NULL;
	char *tls_cert = NULL, *tls_key = NULL;
	struct snapshot *catalogs = NULL, *token_snap = NULL, *quota_snap = NULL;
	struct quotas *quotas = NULL;
	struct slurm_backends *slurm = NULL;
	struct pg_embedded *pg = NULL;
	struct store *st = NULL;
	struct httpd *http = NULL;
	struct storage_fs *storage = NULL;
	struct sched *sched = NULL;
	struct listen_hub *hub = NULL;
	struct listener *listener = NULL;
	struct store_pipe *pipe = NULL;
	struct node_cache *nodes = NULL;
	struct lease_batch *leases = NULL;
	struct job_cache *job_cache = NULL;
	char *conninfo = NULL;
	json_t *rules = NULL;
	int rc = 1, c;

	while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': config_path = optarg; break;
		case 'e': emulator_flag = true; break;
		case 'r': print_routes(); return 0;
		case 's': return print_schemas();
		case 'd': return print_discovery(optarg, argc - optind, argv + optind);
		case 'k': check_only = true; break;
		case 't': return hash_token();
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (config_load(server_keys, ARRAY_SIZE(server_keys), &cfg, config_path, "TRAINPLANE_",
			err, sizeof(err))) {
		fprintf(stderr, "trainplane-server: bad configuration: %s\n", err);
		goto out;
	}
	if (emulator_flag)
		cfg.emulator = true;
	if (!check_only && resolve_state_dir(&cfg, &temporary_state))
		goto out;
	enum log_level level;
	if (!log_level_parse(cfg.log_level, &level))
		log_set_level(level);
	enum log_format format;
	if (!log_format_parse(cfg.log_format, &format))
		log_set_format(format);
	if (load_catalog(&cfg, &cat, err, sizeof(err))) {
		fprintf(stderr, "trainplane-server: bad catalog: %s\n", err);
		goto out;
	}
	if (load_tokens(&cfg, &tokens, err, sizeof(err))) {
		fprintf(stderr, "trainplane-server: bad tokens file: %s\n", err);
		goto out;
	}
	if (load_quotas(&cfg, cat, &quotas, err, sizeof(err))) {
		fprintf(stderr, "trainplane-server: bad quotas file: %s\n", err);
		goto out;
	}
	if (slurm_backends_load(cfg.slurm_file, &slurm, err, sizeof(err))) {
		fprintf(stderr, "trainplane-server: bad slurm file: %s\n", err);
		goto out;
	}
	if (agent_token_in_effect(&cfg, &agent_token, err, sizeof(err))) {
		fprintf(stderr, "trainplane-server: %s\n", err);
		goto out;
	}
	if (tls_load(cfg.tls_cert_file, cfg.tls_key_file, &tls_cert, &tls_key, err, sizeof(err))) {
		fprintf(stderr, "trainplane-server: bad TLS configuration: %s\n", err);
		goto out;
	}
	if (load_rules_file(cfg.emulator_rules_file, &rules, err, sizeof(err))) {
		fprintf(stderr, "trainplane-server: bad emulator rules: %s\n", err);
		goto out;
	}
	if (check_only) {
		printf("configuration and catalog are valid\n");
		rc = 0;
		goto out;
	}

	log_info("catalog: %s", catalog_source(&cfg));
	if (tokens)
		log_agent_credentials(agent_token, tokens);
	catalogs = snapshot_new(cat, catalog_free_any);
	cat = NULL;
	token_snap = snapshot_new(tokens, auth_tokens_free);
	tokens = NULL;
	if (quotas)
		log_info("quotas: %s", cfg.quotas_file);
	quota_snap = snapshot_new(quotas, quotas_free_any);
	quotas = NULL;

	/* Signals are taken synchronously by this thread; block them before
	 * any thread starts so that workers never see them. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (cfg.database_url && *cfg.database_url) {
		conninfo = xstrdup(cfg.database_url);
	} else if (pg_embedded_start(cfg.state_dir, cfg.postgres_bin_dir, &pg, &conninfo, err,
				     sizeof(err))) {
		log_error("embedded database: %s", err);
		goto out;
	}
	{
		int64_t ns = 0;
		if (wire_duration_parse(cfg.db_statement_timeout, &ns))
			ns = STORE_STATEMENT_DEADLINE_DEFAULT_US * 1000;	/* (checked at load) */
		store_set_statement_deadline(ns / 1000);
	}
	if (store_open(conninfo, cfg.db_pool_size, cfg.db_wait_seconds, &st, err, sizeof(err))) {
		log_error("%s", err);
		goto out;
	}
	store_jobs_on_emulated_clock(cfg.emulator);
	if (cfg.emulator && rules) {
		char *text = json_dumps(rules, JSON_COMPACT);
		enum store_rc src = store_sim_rules_set(st, text);
		free(text);
		if (src != STORE_OK) {
			log_error("emulator: cannot store the rules of %s: %s", cfg.emulator_rules_file,
				  store_rc_name(src));
			goto out;
		}
		log_info("emulator: %zu scripted-outcome rule(s) from %s", json_array_size(rules),
			 cfg.emulator_rules_file);
	} else if (rules) {
		log_warn("emulator_rules_file is set but this server is not an emulator: its rules "
			 "do not apply");
	}
	if (cfg.lease_seconds <= cfg.sync_interval_seconds) {
		log_error("lease_seconds (%d) must be longer than sync_interval_seconds (%d)",
			  cfg.lease_seconds, cfg.sync_interval_seconds);
		goto out;
	}
	/* The server's one listening connection: the job cache, the scheduler
	 * and the agents' parked syncs subscribe to it. */
	hub = listen_hub_start(conninfo);
	if (cfg.scheduler) {
		struct sched_config sc = { .conninfo = conninfo, .catalogs = catalogs,
					   .quotas = quota_snap,
					   .lease_s = cfg.lease_seconds,
					   .tick_ms = cfg.scheduler_tick_ms,
					   .starve_s = cfg.starve_seconds,
					   .never_fits_fail_s = cfg.never_fits_fail_seconds,
					   .log_retention_days = cfg.log_retention_days, .hub = hub,
					   .emulator = cfg.emulator,
					   .emulator_nodes_per_type = cfg.emulator_nodes_per_type };
		int64_t ns = 0;
		if (wire_duration_parse(cfg.emulator_replica_duration, &ns))
			ns = 2000000000;	/* (checked at load) */
		sc.emulator_replica_s = (double)ns / 1e9;
		sched = sched_start(&sc);
	}
	struct server srv = { .store = st, .catalogs = catalogs, .tokens = token_snap,
			      .quotas = quota_snap,
			      .auth_mode = strcmp(cfg.auth_mode, "tokens") ? AUTH_OPEN : AUTH_TOKENS,
			      .http_limits = { cfg.http_header_timeout_seconds,
					       cfg.http_idle_timeout_seconds,
					       cfg.http_io_timeout_seconds, cfg.http_max_connections,
					       cfg.http_max_connections_per_client,
					       (size_t)cfg.max_body_bytes },
			      .agent_token = agent_token,
			      .sync_interval_s = cfg.sync_interval_seconds,
			      .lease_s = cfg.lease_seconds, .sched = sched,
			      .emulator = cfg.emulator, .slurm = slurm };
	if (slurm_backends_count(slurm)) {
		log_info("slurm backends: %zu, from %s", slurm_backends_count(slurm), cfg.slurm_file);
		struct slurm_backends_ctx sctx = { st, catalogs, sched };
		slurm_backends_start(slurm, &sctx);
	}
	if (cfg.db_pipeline)
		srv.pipe = pipe = store_pipe_start(conninfo);
	srv.nodes = nodes = node_cache_new();
	srv.leases = leases = lease_batch_start(st, cfg.lease_seconds);
	if (cfg.job_cache_entries)
		srv.job_cache = job_cache = job_cache_start(hub, (size_t)cfg.job_cache_entries);
	srv.tls_cert_pem = tls_cert;
	srv.tls_key_pem = tls_key;
	{
		char *root = cfg.storage_root && *cfg.storage_root ? xstrdup(cfg.storage_root) :
			     xasprintf("%s/gcs", cfg.state_dir);
		srv.storage = storage = storage_fs_open(root, err, sizeof(err));
		if (!storage) {
			log_error("%s", err);
			free(root);
			goto out;
		}
		log_info("Cloud Storage API over %s", root);
		free(root);
		srv.storage_max_object = (uint64_t)cfg.storage_max_object_gib << 30;
	}
	http = front_start(&srv, cfg.listen, cfg.http_threads, err, sizeof(err));
	if (!http) {
		log_error("%s", err);
		goto out;
	}
	listener = listener_start(hub, http, srv.nodes);
	log_info("trainplane-server listening on %s://%.*s:%d/ (database: %s, auth: %s)",
		 tls_cert ? "https" : "http", (int)(strrchr(cfg.listen, ':') - cfg.listen),
		 cfg.listen, httpd_port(http), pg ? "embedded" : "external", cfg.auth_mode);
	if (!tls_cert && !listen_is_loopback(cfg.listen))
		log_warn("listening on %s without TLS: tokens cross the network in clear; set "
			 "tls_cert_file and tls_key_file, or listen on loopback", cfg.listen);

	for (;;) {
		int sig;
		if (sigwait(&sigs, &sig))
			continue;
		if (sig == SIGHUP) {
			reload(&cfg, &srv);
			continue;
		}
		log_info("%s: shutting down: no new connections, finishing the requests in flight",
			 strsignal(sig));
		break;
	}
	rc = 0;
out:
	/* Graceful: stop accepting and answer the parked long-polls, give up
	 * the scheduler lock at once (a standby takes over), let the requests
	 * in flight finish, then close. Agents keep their replicas running. */
	httpd_quiesce(http);
	slurm_backends_stop(slurm);
	sched_stop(sched);
	listener_stop(listener);	/* it wakes parked requests: none park now */
	httpd_stop(http);
	lease_batch_stop(leases);	/* after the requests that wait on it */
	node_cache_free(nodes);
	store_pipe_stop(pipe);	/* after the requests that wait on it */
	job_cache_stop(job_cache);	/* likewise */
	listen_hub_stop(hub);	/* after its subscribers */
	sched_free(sched);
	storage_fs_close(storage);
	store_close(st);
	pg_embedded_stop(pg);
	if (temporary_state) {
		log_info("removing the emulator's state directory %s", cfg.state_dir);
		nftw(cfg.state_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
	free(conninfo);
	catalog_free(cat);
	auth_tokens_free(tokens);
	free(tls_cert);
	free(tls_key);
	snapshot_free(catalogs);
	snapshot_free(token_snap);
	snapshot_free(quota_snap);
	quotas_free(quotas);
	slurm_backends_free(slurm);
	config_free(server_keys, ARRAY_SIZE(server_keys), &cfg);
	json_decref(rules);
	return rc;
}
