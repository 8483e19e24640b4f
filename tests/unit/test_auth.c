/* Unit tests: permissions, roles, policies, the tokens file, the strength of
 * the cluster token and the agents' credentials, the decisions on requests
 * (server/auth.c, without HTTP), and the reloadable snapshot (lib/snapshot.c). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "api_slurm.h"
#include "auth.h"
#include "snapshot.h"
#include "store_iam.h"

/*
 * The store's policies are not under test here: the driver links
 * server/auth.o alone, the Makefile's test_auth_WRAP sends its calls to this
 * __wrap_ mock, and a call fails the test.
 */
enum store_rc __wrap_store_iam_get(struct store *st, const char *api, const char *project,
				   const char *job_id, char **policy_json, int64_t *etag);

enum store_rc __wrap_store_iam_get(struct store *st, const char *api, const char *project,
				   const char *job_id, char **policy_json, int64_t *etag)
{
	(void)st, (void)api, (void)project, (void)policy_json, (void)etag;
	fail_msg("store_iam_get called: %s", job_id);
	return STORE_ERROR;
}

/* Slurm pilots (api_slurm.c): a token of "tpp1." and what the job's row says. */
static bool pilot_ok;
static const char *pilot_node_seen;
static bool pilot_registering;
bool __wrap_api_slurm_pilot_token(const char *bearer);
enum store_rc __wrap_api_slurm_pilot_check(struct store *st, const char *node, const char *bearer,
					   bool registering, bool *ok, struct pilot_claim *out);

bool __wrap_api_slurm_pilot_token(const char *bearer)
{
	return bearer && !strncmp(bearer, "tpp1.", 5);
}

enum store_rc __wrap_api_slurm_pilot_check(struct store *st, const char *node, const char *bearer,
					   bool registering, bool *ok, struct pilot_claim *out)
{
	(void)st, (void)bearer;
	pilot_node_seen = node;
	pilot_registering = registering;
	memset(out, 0, sizeof(*out));
	*ok = pilot_ok;
	return STORE_OK;
}

static void permission_of(const char *op, const char *want)
{
	char buf[128];
	assert_true(auth_permission(op, buf, sizeof(buf)));
	assert_string_equal(buf, want);
}

static void permissions_follow_operation_ids(void **state)
{
	(void)state;
	permission_of("ml.projects.jobs.get", "ml.jobs.get");
	permission_of("ml.projects.jobs.patch", "ml.jobs.update");
	permission_of("ml.projects.jobs.setIamPolicy", "ml.jobs.setIamPolicy");
	permission_of("ml.projects.getConfig", "ml.projects.getConfig");
	permission_of("ml.projects.locations.list", "ml.locations.list");
	permission_of("aiplatform.projects.locations.customJobs.create", "aiplatform.customJobs.create");
	permission_of("aiplatform.projects.locations.operations.wait", "aiplatform.operations.wait");
	permission_of("aiplatform.projects.locations.trainingPipelines.cancel",
		      "aiplatform.trainingPipelines.cancel");
	permission_of("logging.entries.list", "logging.logEntries.list");
	permission_of("trainplane.nodes.drain", "trainplane.nodes.drain");
	char buf[32];
	assert_false(auth_permission("healthz", buf, sizeof(buf)));
	assert_false(auth_permission("metrics", buf, sizeof(buf)));
}

static void roles_by_verb(void **state)
{
	(void)state;
	assert_int_equal(auth_role_needed("ml.jobs.get"), ROLE_VIEWER);
	assert_int_equal(auth_role_needed("ml.jobs.list"), ROLE_VIEWER);
	assert_int_equal(auth_role_needed("logging.logEntries.list"), ROLE_VIEWER);
	assert_int_equal(auth_role_needed("aiplatform.operations.wait"), ROLE_VIEWER);
	assert_int_equal(auth_role_needed("ml.jobs.create"), ROLE_DEVELOPER);
	assert_int_equal(auth_role_needed("ml.jobs.update"), ROLE_DEVELOPER);
	assert_int_equal(auth_role_needed("aiplatform.customJobs.delete"), ROLE_DEVELOPER);
	assert_int_equal(auth_role_needed("ml.jobs.getIamPolicy"), ROLE_ADMIN);
	assert_int_equal(auth_role_needed("trainplane.nodes.list"), ROLE_ADMIN);
	/* of trainplane's own, a user reads who they are and their jobs' replicas */
	assert_int_equal(auth_role_needed(AUTH_WHOAMI_PERMISSION), ROLE_VIEWER);
	assert_int_equal(auth_role_needed("trainplane.replicas.list"), ROLE_VIEWER);
	assert_int_equal(auth_role_needed("trainplane.quotas.get"), ROLE_ADMIN);
	/* a verb nobody classified yet needs the most */
	assert_int_equal(auth_role_needed("ml.jobs.frobnicate"), ROLE_ADMIN);
}

static void tokens_reach_their_projects(void **state)
{
	char *projects[] = { (char *)"a", (char *)"b" };
	struct auth_token dev = { .role = ROLE_DEVELOPER, .projects = projects, .nprojects = 2 };
	struct auth_token all = { .role = ROLE_VIEWER, .all_projects = true };

	(void)state;
	assert_true(auth_token_allows(&dev, "a", "ml.jobs.cancel"));
	assert_true(auth_token_allows(&dev, "b", "ml.jobs.get"));
	assert_false(auth_token_allows(&dev, "c", "ml.jobs.get"));
	assert_false(auth_token_allows(&dev, "a", "ml.jobs.setIamPolicy"));
	assert_false(auth_token_allows(&dev, "a", "trainplane.nodes.list"));
	assert_true(auth_token_allows(&all, "anything", "ml.jobs.list"));
	assert_false(auth_token_allows(&all, "anything", "ml.jobs.create"));
}

static void agent_and_metrics_tokens_open_their_routes_only(void **state)
{
	char *nodes[] = { (char *)"gpu-1", (char *)"gpu-2" };
	struct auth_token agent = { .kind = TOKEN_AGENT, .nodes = nodes, .nnodes = 2 };
	struct auth_token metrics = { .kind = TOKEN_METRICS };
	struct auth_token viewer = { .role = ROLE_VIEWER, .all_projects = true };
	struct auth_token admin_a = { .role = ROLE_ADMIN, .projects = (char *[]){ (char *)"a" }, .nprojects = 1 };
	char perm[64];

	(void)state;
	/* An agent's token is no user: no role, no project, not even metrics. */
	assert_false(auth_token_allows(&agent, "a", "ml.jobs.get"));
	assert_false(auth_token_allows(&agent, NULL, "trainplane.nodes.list"));
	assert_false(auth_token_allows(&agent, NULL, AUTH_METRICS_PERMISSION));
	assert_true(auth_token_allows(&metrics, NULL, AUTH_METRICS_PERMISSION));
	assert_false(auth_token_allows(&metrics, "a", "ml.jobs.get"));
	assert_false(auth_token_allows(&metrics, NULL, "trainplane.nodes.list"));
	/* /metrics in tokens mode: the cluster's admins (as the nodes API), not viewers. */
	assert_true(auth_token_allows(&admin_a, NULL, AUTH_METRICS_PERMISSION));
	assert_false(auth_token_allows(&viewer, NULL, AUTH_METRICS_PERMISSION));
	assert_true(auth_route_permission(AUTH_TOKENS, "metrics", perm, sizeof(perm)));
	assert_string_equal(perm, "trainplane.metrics.get");
	assert_false(auth_route_permission(AUTH_OPEN, "metrics", perm, sizeof(perm)));
	assert_false(auth_route_permission(AUTH_TOKENS, "healthz", perm, sizeof(perm)));
	assert_false(auth_route_permission(AUTH_TOKENS, "readyz", perm, sizeof(perm)));
	assert_true(auth_route_permission(AUTH_OPEN, "ml.projects.jobs.get", perm, sizeof(perm)));
	assert_string_equal(perm, "ml.jobs.get");
}

static void expect_weak(const char *secret, const char *why_part)
{
	char why[256] = "";
	if (auth_secret_strong(secret, why, sizeof(why)))
		fail_msg("\"%s\" passed", secret);
	if (!strstr(why, why_part))
		fail_msg("\"%s\": \"%s\" lacks \"%s\"", secret, why, why_part);
	if (*secret && strstr(why, secret))
		fail_msg("the reason repeats the secret: %s", why);
}

static void random_hex(char *out, size_t bytes)
{
	unsigned char b[64];
	assert_true(bytes <= sizeof(b));
	assert_int_equal(RAND_bytes(b, (int)bytes), 1);
	for (size_t i = 0; i < bytes; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static void random_base64(char *out, size_t bytes)
{
	unsigned char b[64];
	assert_true(bytes <= sizeof(b));
	assert_int_equal(RAND_bytes(b, (int)bytes), 1);
	EVP_EncodeBlock((unsigned char *)out, b, (int)bytes);	/* as openssl rand -base64 */
}

static void secrets_estimate_entropy_by_alphabet(void **state)
{
	(void)state;
	/* length x log2(alphabet): the smallest standard alphabet that holds it */
	assert_float_equal(auth_secret_bits("0123456789"), 10 * 3.321928, 1e-4);
	assert_float_equal(auth_secret_bits("deadbeef"), 8 * 4.0, 1e-9);
	assert_float_equal(auth_secret_bits("DEADBEEF"), 8 * 4.0, 1e-9);
	assert_float_equal(auth_secret_bits("deadbeefg"), 9 * log2(26), 1e-9);
	assert_float_equal(auth_secret_bits("deadbeefg1"), 10 * log2(36), 1e-9);
	assert_float_equal(auth_secret_bits("deadBEEF"), 8 * log2(62), 1e-9);
	/* Mixed case: base64's alphabets; one case: only the classes used
	 * (a lowercase phrase with hyphens is not base64url). */
	assert_float_equal(auth_secret_bits("aB+/"), 4 * 6.0, 1e-9);
	assert_float_equal(auth_secret_bits("aB-_"), 4 * 6.0, 1e-9);
	assert_float_equal(auth_secret_bits("aB+-"), 4 * log2(94), 1e-9);
	assert_float_equal(auth_secret_bits("aB!"), 3 * log2(94), 1e-9);
	assert_float_equal(auth_secret_bits("ab+/"), 4 * log2(28), 1e-9);
	assert_float_equal(auth_secret_bits("ab-_"), 4 * log2(28), 1e-9);
	assert_float_equal(auth_secret_bits("a1-b"), 4 * log2(38), 1e-9);
	assert_float_equal(auth_secret_bits("ab=="), 2 * 4.0, 1e-9);	/* padding is no data */
	assert_float_equal(auth_secret_bits("a+b-"), 4 * log2(30), 1e-9);
	assert_float_equal(auth_secret_bits("a!b"), 3 * log2(58), 1e-9);
	assert_float_equal(auth_secret_bits("a b"), 0, 0);
	assert_float_equal(auth_secret_bits("caf\xc3\xa9"), 0, 0);
	assert_float_equal(auth_secret_bits(""), 0, 0);
	char hex[129];
	random_hex(hex, 32);
	assert_float_equal(auth_secret_bits(hex), 256, 1e-9);
}

static void secrets_refuse_defaults_placeholders_short_and_degenerate(void **state)
{
	char hex[129], b64[129], s[400];

	(void)state;
	expect_weak("trainplane-dev-token", "public default");
	expect_weak("TRAINPLANE-DEV-TOKEN", "public default");
	/* The default padded out, and a lowercase phrase long enough for 256 bits
	 * at base64url's 6 bits a character (it is not base64url). */
	expect_weak("trainplane-dev-token-trainplane-dev-token-padded-out-to-60-char",
		    "public default");
	expect_weak("correct-horse-battery-staple-and-some-more-words-here",
		    "characters from an alphabet of 28");
	expect_weak("CHANGE-ME-openssl-rand-hex-32", "placeholder");
	random_hex(hex, 40);
	snprintf(s, sizeof(s), "changeme%s", hex);
	expect_weak(s, "placeholder");
	snprintf(s, sizeof(s), "%sEXAMPLE", hex);
	expect_weak(s, "placeholder");
	expect_weak("", "0 characters");
	random_hex(hex, 31);
	expect_weak(hex, "62 characters from an alphabet of 16: 248 bits, 256 needed");
	random_base64(b64, 32);	/* 44 characters, one '=': 43 x 6 = 258 bits (256.03 without + and /) */
	assert_true(auth_secret_strong(b64, s, sizeof(s)));
	random_base64(b64, 31);	/* 44 characters, two '=': 42 x 6 = 252 bits */
	expect_weak(b64, "42 characters from an alphabet of 6");	/* 64, or 62 without + and / */
	random_hex(hex, 32);
	hex[10] = ' ';
	expect_weak(hex, "a space, a control or a non-ASCII character (position 11)");
	memset(s, 'a', 80);
	s[80] = '\0';
	expect_weak(s, "one character makes up 80 of its 80 characters");
	random_hex(hex, 32);
	memset(hex, '7', 24);	/* 24 of 64 */
	expect_weak(hex, "one character makes up");
	expect_weak("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		    "a block of 16 characters repeated");
	random_hex(hex, 12);
	snprintf(s, sizeof(s), "%s%s%s", hex, hex, hex);	/* 72 characters, 3 blocks */
	expect_weak(s, "a block of 24 characters repeated");
	expect_weak("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "in sequence");
	expect_weak("zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA9876543210", "in sequence");
}

/*
 * What `openssl rand -hex 32` and `openssl rand -base64 32` make always
 * passes (the degenerate rules refuse a random one with a probability
 * below 1e-8): 20,000 of each. One byte less never does.
 */
static void secrets_of_32_random_bytes_pass(void **state)
{
	char hex[129], b64[129], why[256];

	(void)state;
	for (int i = 0; i < 20000; i++) {
		random_hex(hex, 32);
		if (!auth_secret_strong(hex, why, sizeof(why)))
			fail_msg("%s refused: %s", hex, why);
		random_base64(b64, 32);
		if (!auth_secret_strong(b64, why, sizeof(why)))
			fail_msg("%s refused: %s", b64, why);
		random_hex(hex, 31);
		assert_false(auth_secret_strong(hex, why, sizeof(why)));
	}
}

static void agent_routes_take_the_cluster_token_or_the_nodes_own(void **state)
{
	char *nodes_a[] = { (char *)"gpu-a" }, *nodes_bc[] = { (char *)"gpu-b", (char *)"gpu-c" };
	struct auth_token v[3] = {
		{ .name = (char *)"node-a", .kind = TOKEN_AGENT, .nodes = nodes_a, .nnodes = 1 },
		{ .name = (char *)"node-bc", .kind = TOKEN_AGENT, .nodes = nodes_bc, .nnodes = 2 },
		{ .name = (char *)"root", .kind = TOKEN_USER, .role = ROLE_ADMIN, .all_projects = true },
	};
	struct auth_tokens t = { v, 3 };
	unsigned char h[32];
	const char *cluster = "3c1e4a4f0a6b2c9d8e7f60514233241506f7e8d9cab0b1c2d3e4f5a6b7c8d9e0";

	(void)state;
	/* Hashes as the tokens file holds them. */
	const char *secrets[] = { "token-of-node-a", "token-of-nodes-b-and-c", "token-of-root" };
	for (int i = 0; i < 3; i++) {
		char hex[65];
		auth_sha256_hex(secrets[i], hex);
		for (int b = 0; b < 32; b++) {
			unsigned int x;
			sscanf(hex + 2 * b, "%2x", &x);
			h[b] = (unsigned char)x;
		}
		memcpy(v[i].sha256, h, 32);
	}
	assert_int_equal(auth_agent_allows(cluster, &t, "gpu-a", cluster), AUTH_AGENT_ALLOWED);
	assert_int_equal(auth_agent_allows(cluster, &t, "anything", cluster), AUTH_AGENT_ALLOWED);
	assert_int_equal(auth_agent_allows(cluster, &t, "gpu-a", secrets[0]), AUTH_AGENT_ALLOWED);
	assert_int_equal(auth_agent_allows(cluster, &t, "gpu-b", secrets[0]), AUTH_AGENT_OTHER_NODE);
	assert_int_equal(auth_agent_allows(cluster, &t, "gpu-c", secrets[1]), AUTH_AGENT_ALLOWED);
	assert_int_equal(auth_agent_allows(cluster, &t, "gpu-a", secrets[1]), AUTH_AGENT_OTHER_NODE);
	assert_int_equal(auth_agent_allows(cluster, &t, "gpu-a", "gpu-a"), AUTH_AGENT_UNAUTHENTICATED);
	/* a user's token is no agent's, whatever its role */
	assert_int_equal(auth_agent_allows(cluster, &t, "gpu-a", secrets[2]), AUTH_AGENT_UNAUTHENTICATED);
	assert_int_equal(auth_agent_allows(cluster, &t, "gpu-a", NULL), AUTH_AGENT_UNAUTHENTICATED);
	assert_int_equal(auth_agent_allows(cluster, &t, "gpu-a", ""), AUTH_AGENT_UNAUTHENTICATED);
	/* node names match exactly: no prefix, no case folding */
	assert_int_equal(auth_agent_allows(NULL, &t, "gpu-a2", secrets[0]), AUTH_AGENT_OTHER_NODE);
	assert_int_equal(auth_agent_allows(NULL, &t, "GPU-A", secrets[0]), AUTH_AGENT_OTHER_NODE);
	/* no cluster token: only the nodes' own; an empty bearer never matches an unset one */
	assert_int_equal(auth_agent_allows(NULL, &t, "gpu-a", cluster), AUTH_AGENT_UNAUTHENTICATED);
	assert_int_equal(auth_agent_allows("", &t, "gpu-a", ""), AUTH_AGENT_UNAUTHENTICATED);
	assert_int_equal(auth_agent_allows(NULL, &t, "gpu-a", secrets[0]), AUTH_AGENT_ALLOWED);
	/* open mode: no tokens file, the cluster token */
	assert_int_equal(auth_agent_allows("trainplane-dev-token", NULL, "n", "trainplane-dev-token"),
			 AUTH_AGENT_ALLOWED);
	assert_int_equal(auth_agent_allows("trainplane-dev-token", NULL, "n", "trainplane-dev-tokeN"),
			 AUTH_AGENT_UNAUTHENTICATED);
	assert_true(auth_is_cluster_token(cluster, cluster));
	assert_false(auth_is_cluster_token(cluster, "3c1e"));
	assert_false(auth_is_cluster_token(NULL, ""));
	assert_false(auth_is_cluster_token("", ""));
}

/* Sets t's hash to that of secret, as the tokens file holds it. */
static void set_secret(struct auth_token *t, const char *secret)
{
	char hex[65];

	auth_sha256_hex(secret, hex);
	for (int b = 0; b < 32; b++) {
		unsigned int x;
		sscanf(hex + 2 * b, "%2x", &x);
		t->sha256[b] = (unsigned char)x;
	}
}

/* The "reason" of a refusal's ErrorInfo detail, or NULL. */
static const char *reason_of(const struct auth_decision *d)
{
	return json_string_value(json_object_get(json_array_get(d->details, 0), "reason"));
}

/* Checks a refusal's code and that its message holds want; releases it. */
static void assert_refused(struct auth_decision d, enum api_code code, const char *want)
{
	assert_false(d.allowed);
	assert_int_equal(d.store_rc, STORE_OK);
	assert_int_equal(d.code, code);
	assert_non_null(d.message);
	if (!strstr(d.message, want))
		fail_msg("message \"%s\" lacks \"%s\"", d.message, want);
	auth_decision_release(&d);
	assert_null(d.message);
}

static void assert_allowed(struct auth_decision d)
{
	if (!d.allowed)
		fail_msg("refused: %s", d.message);
	assert_null(d.details);
	auth_decision_release(&d);
}

static void requests_get_decisions_without_http(void **state)
{
	char *projects_a[] = { (char *)"a" }, *nodes_a[] = { (char *)"gpu-a" };
	struct auth_token v[3] = {
		{ .name = (char *)"dev", .member = (char *)"user:dev", .kind = TOKEN_USER, .role = ROLE_DEVELOPER,
		  .projects = projects_a, .nprojects = 1 },
		{ .name = (char *)"node-a", .kind = TOKEN_AGENT, .nodes = nodes_a, .nnodes = 1 },
		{ .name = (char *)"scraper", .kind = TOKEN_METRICS },
	};
	struct auth_tokens t = { v, 3 };
	struct snapshot *snap = snapshot_new(&t, NULL);
	struct snap_ref *ref = NULL;
	const char *cluster = "3c1e4a4f0a6b2c9d8e7f60514233241506f7e8d9cab0b1c2d3e4f5a6b7c8d9e0";
	char *agent_params[4] = { (char *)"gpu-a" }, *list_b[4] = { (char *)"b" }, *list_a[4] = { (char *)"a" };
	struct auth_request sync = {
		.mode = AUTH_TOKENS, .tokens = snap, .tokens_ref = &ref, .cluster_token = cluster,
		.operation_id = "agent.nodes.sync", .pattern = "/agent/v1/nodes/{nodesId}:sync",
		.agent_route = true, .params = agent_params, .nparams = 4,
		.path = "/agent/v1/nodes/gpu-a:sync",
	};
	struct auth_request list = {
		.mode = AUTH_TOKENS, .tokens = snap, .tokens_ref = &ref, .cluster_token = cluster,
		.operation_id = "ml.projects.jobs.list", .pattern = "/v1/projects/{projectsId}/jobs",
		.params = list_b, .nparams = 4, .path = "/v1/projects/b/jobs",
	};
	struct auth_request logs = {
		.mode = AUTH_TOKENS, .tokens = snap, .tokens_ref = &ref, .cluster_token = cluster,
		.operation_id = "logging.entries.list", .pattern = "/v2/entries:list",
		.path = "/v2/entries:list",
	};
	struct auth_request health = list;

	(void)state;
	set_secret(&v[0], "token-of-dev");
	set_secret(&v[1], "token-of-node-a");
	set_secret(&v[2], "token-of-scraper");

	/* agent routes: the cluster token or the node's own */
	assert_refused(auth_check_agent(&sync), API_UNAUTHENTICATED, "agent routes need the cluster token");
	sync.authorization = "Bearer token-of-node-a";
	assert_allowed(auth_check_agent(&sync));
	assert_non_null(ref);	/* the tokens file version is held for the request */
	sync.params = list_b;	/* another node's route */
	assert_refused(auth_check_agent(&sync), API_PERMISSION_DENIED, "not bound to node b");
	sync.authorization = "bearer 3c1e4a4f0a6b2c9d8e7f60514233241506f7e8d9cab0b1c2d3e4f5a6b7c8d9e0";
	assert_allowed(auth_check_agent(&sync));	/* "Bearer" in any case */
	sync.authorization = "Bearer token-of-dev";
	assert_refused(auth_check_agent(&sync), API_UNAUTHENTICATED, "agent routes");
	/* a Slurm job's pilot: its job's secret, for the nodes its row names */
	sync.params = agent_params;
	sync.authorization = "Bearer tpp1.7.secret";
	pilot_ok = false;
	assert_refused(auth_check_agent(&sync), API_UNAUTHENTICATED, "pilot token is not valid");
	assert_string_equal(pilot_node_seen, "gpu-a");
	assert_false(pilot_registering);
	pilot_ok = true;
	assert_allowed(auth_check_agent(&sync));
	sync.path = "/agent/v1/nodes/gpu-a:register";
	assert_allowed(auth_check_agent(&sync));
	assert_true(pilot_registering);	/* only the current run's pilots register */
	sync.path = "/agent/v1/nodes/gpu-a:sync";
	/* ... and a pilot token opens no user route */
	list.authorization = "Bearer tpp1.7.secret";
	assert_refused(auth_authenticate(&list), API_UNAUTHENTICATED, "");
	list.authorization = NULL;
	/* ... and the cluster token opens no user route */
	list.authorization = "Bearer 3c1e4a4f0a6b2c9d8e7f60514233241506f7e8d9cab0b1c2d3e4f5a6b7c8d9e0";
	assert_refused(auth_check_agent(&list), API_PERMISSION_DENIED, "cluster token cannot call");

	/* who calls */
	list.authorization = NULL;
	struct auth_decision d = auth_authenticate(&list);
	assert_string_equal(reason_of(&d), "CREDENTIALS_MISSING");
	assert_refused(d, API_UNAUTHENTICATED, "missing required authentication credential");
	list.authorization = "Bearer token-of-nobody";
	d = auth_authenticate(&list);
	assert_string_equal(reason_of(&d), "ACCESS_TOKEN_TYPE_UNSUPPORTED");
	assert_refused(d, API_UNAUTHENTICATED, "invalid authentication credentials");
	assert_null(list.caller);
	list.authorization = "Bearer token-of-scraper";
	assert_refused(auth_authenticate(&list), API_PERMISSION_DENIED, "metrics tokens open /metrics only");
	list.authorization = "Bearer token-of-node-a";
	assert_refused(auth_authenticate(&list), API_PERMISSION_DENIED, "agent tokens open the agent routes");
	list.authorization = NULL;
	list.key = "token-of-dev";	/* ?key= */
	list.caller = NULL;
	assert_allowed(auth_authenticate(&list));
	assert_ptr_equal(list.caller, &v[0]);
	health.operation_id = "healthz";
	health.authorization = NULL;
	health.key = NULL;
	assert_allowed(auth_authenticate(&health));	/* public */
	assert_null(health.caller);

	/* whether they may: project b is not the developer's, a is */
	d = auth_authorize(&list);
	assert_string_equal(reason_of(&d), "IAM_PERMISSION_DENIED");
	assert_refused(d, API_PERMISSION_DENIED,
		       "Permission 'ml.jobs.list' denied on resource 'projects/b'");
	list.params = list_a;
	list.path = "/v1/projects/a/jobs";
	assert_allowed(auth_authorize(&list));
	/* logging names its projects in the body */
	logs.caller = &v[0];
	json_t *body = json_pack("{s:[s,s]}", "resourceNames", "projects/a", "projects/b");
	logs.body = body;
	assert_refused(auth_authorize(&logs), API_PERMISSION_DENIED, "on resource 'projects/b'");
	json_array_remove(json_object_get(body, "resourceNames"), 1);
	assert_allowed(auth_authorize(&logs));
	json_decref(body);
	/* trainplane's project routes check their project as /v1/projects/ routes do */
	struct auth_request replicas = list;
	replicas.operation_id = "trainplane.projects.replicas.list";
	replicas.pattern = "/trainplane/v1/projects/{projectsId}/replicas";
	replicas.params = list_b;
	replicas.path = "/trainplane/v1/projects/b/replicas";
	replicas.caller = &v[0];
	assert_refused(auth_authorize(&replicas), API_PERMISSION_DENIED,
		       "Permission 'trainplane.replicas.list' denied on resource 'projects/b' (or it");
	replicas.params = list_a;
	assert_allowed(auth_authorize(&replicas));

	/* open mode: everyone may do everything, the cluster token still no user's */
	list.mode = AUTH_OPEN;
	list.caller = NULL;
	list.params = list_b;
	assert_allowed(auth_authenticate(&list));
	assert_allowed(auth_authorize(&list));
	list.authorization = "Bearer 3c1e4a4f0a6b2c9d8e7f60514233241506f7e8d9cab0b1c2d3e4f5a6b7c8d9e0";
	assert_refused(auth_check_agent(&list), API_PERMISSION_DENIED, "cluster token");

	snapshot_release(ref);
	snapshot_free(snap);
}

static void policies_grant_by_role_and_member(void **state)
{
	json_t *p = json_loads("{\"bindings\":["
			       "{\"role\":\"roles/ml.viewer\",\"members\":[\"user:bob\"]},"
			       "{\"role\":\"roles/ml.developer\",\"members\":[\"group:ops\"]},"
			       "{\"role\":\"roles/storage.admin\",\"members\":[\"user:eve\"]},"
			       "{\"role\":\"roles/ml.admin\",\"members\":[\"allAuthenticatedUsers\"]}]}",
			       0, NULL);
	json_t *viewer_only = json_loads("{\"bindings\":[{\"role\":\"roles/ml.viewer\","
					 "\"members\":[\"user:bob\"]}]}", 0, NULL);

	(void)state;
	assert_non_null(p);
	assert_true(auth_policy_allows(viewer_only, "user:bob", "ml.jobs.get"));
	assert_false(auth_policy_allows(viewer_only, "user:bob", "ml.jobs.cancel"));
	assert_false(auth_policy_allows(viewer_only, "user:bobby", "ml.jobs.get"));
	assert_false(auth_policy_allows(viewer_only, NULL, "ml.jobs.get"));
	assert_true(auth_policy_allows(p, "group:ops", "ml.jobs.cancel"));
	assert_true(auth_policy_allows(p, "user:anyone", "ml.jobs.setIamPolicy"));
	/* unknown roles grant nothing; job policies grant only job permissions */
	assert_false(auth_policy_allows(viewer_only, "user:eve", "ml.jobs.get"));
	assert_false(auth_policy_allows(p, "user:bob", "aiplatform.customJobs.get"));
	assert_int_equal(auth_iam_role("roles/ml.jobOwner"), ROLE_ADMIN);
	assert_int_equal(auth_iam_role("roles/editor"), ROLE_DEVELOPER);
	assert_int_equal(auth_iam_role("roles/ml.modelOwner"), ROLE_NONE);
	json_decref(p);
	json_decref(viewer_only);
}

static char path[64];

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

static int load_text(const char *text, struct auth_tokens **t, char *err, size_t len)
{
	snprintf(path, sizeof(path), "/tmp/tp-tokens-%d.yaml", (int)getpid());
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return auth_tokens_load(path, t, err, len);
}

#define HASH_A "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"	/* hello */

static void tokens_file_loads_and_finds(void **state)
{
	struct auth_tokens *t;
	char err[512];
	char hex[65];

	(void)state;
	assert_int_equal(load_text("tokens:\n"
				   "  - name: alice\n"
				   "    sha256: " HASH_A "\n"
				   "    role: developer\n"
				   "    projects: [a, \"*\"]\n"
				   "  - {name: bob, member: 'user:bob@x.org', role: viewer, projects: [b],\n"
				   "     sha256: 486ea46224d1bb4fb680f34f7c9ad96a8f24ec88be73ea8e5a6c65260e9cb8a7}\n",
				   &t, err, sizeof(err)), 0);
	assert_int_equal(t->n, 2);
	assert_string_equal(t->v[0].member, "user:alice");
	assert_true(t->v[0].all_projects);
	assert_string_equal(t->v[1].member, "user:bob@x.org");
	auth_sha256_hex("hello", hex);
	assert_string_equal(hex, HASH_A);
	assert_ptr_equal(auth_tokens_find(t, "hello"), &t->v[0]);
	assert_ptr_equal(auth_tokens_find(t, "world"), &t->v[1]);
	assert_null(auth_tokens_find(t, "hello "));
	assert_int_equal(t->v[0].kind, TOKEN_USER);
	auth_tokens_free(t);

	assert_int_equal(load_text("tokens:\n"
				   "  - {name: gpu-1, sha256: " HASH_A ", role: agent, nodes: [gpu-1, gpu_2.x]}\n"
				   "  - {name: prom, role: metrics,\n"
				   "     sha256: 486ea46224d1bb4fb680f34f7c9ad96a8f24ec88be73ea8e5a6c65260e9cb8a7}\n",
				   &t, err, sizeof(err)), 0);
	assert_int_equal(t->n, 2);
	assert_int_equal(t->v[0].kind, TOKEN_AGENT);
	assert_int_equal(t->v[0].role, ROLE_NONE);
	assert_int_equal(t->v[0].nnodes, 2);
	assert_string_equal(t->v[0].nodes[1], "gpu_2.x");
	assert_int_equal(t->v[0].nprojects, 0);
	assert_int_equal(t->v[1].kind, TOKEN_METRICS);
	assert_int_equal(t->v[1].role, ROLE_NONE);
	assert_ptr_equal(auth_tokens_find(t, "hello"), &t->v[0]);
	auth_tokens_free(t);
}

static void expect_error(const char *text, const char *want)
{
	struct auth_tokens *t = NULL;
	char err[512];

	assert_int_equal(load_text(text, &t, err, sizeof(err)), -1);
	assert_null(t);
	if (!strstr(err, want))
		fail_msg("error \"%s\" lacks \"%s\"", err, want);
}

static void tokens_file_errors_name_line_and_column(void **state)
{
	(void)state;
	expect_error("tokens:\n  - name: a\n    sha256: " HASH_A "\n    role: root\n    projects: [a]\n",
		     ":4:11: role must be viewer, developer or admin, not \"root\"");
	expect_error("tokens:\n  - name: a\n    sha256: hello\n    role: viewer\n    projects: [a]\n",
		     ":3:13: sha256 must be 64 hex digits");
	expect_error("tokens:\n  - name: a\n    sha256: " HASH_A "\n    role: viewer\n",
		     ":2:5: token a needs projects");
	expect_error("tokens:\n  - name: a\n    sha256: " HASH_A "\n    role: viewer\n    projects: [a]\n"
		     "  - name: b\n    sha256: " HASH_A "\n    role: viewer\n    projects: [a]\n",
		     ":6:5: tokens a and b have the same hash");
	expect_error("tokens:\n  - name: a\n    secret: x\n", ":3:5: unknown key \"secret\"");
	expect_error("tokens: [\n", "did not find expected node content");
	expect_error("users: []\n", ":1:1: unknown key");
	/* agent and metrics tokens: nodes for agents only, projects for users only */
	expect_error("tokens:\n  - name: a\n    sha256: " HASH_A "\n    role: agent\n",
		     ":2:5: agent token a needs nodes");
	expect_error("tokens:\n  - name: a\n    sha256: " HASH_A "\n    role: agent\n    nodes: []\n",
		     ":5:12: nodes must be a non-empty list of node names");
	expect_error("tokens:\n  - name: a\n    sha256: " HASH_A "\n    role: agent\n    nodes: [gpu-*]\n",
		     ":5:13: nodes: each must be a node name");
	expect_error("tokens:\n  - name: a\n    sha256: " HASH_A "\n    role: agent\n    nodes: [a/b]\n",
		     ":5:13: nodes: each must be a node name");
	expect_error("tokens:\n  - name: a\n    sha256: " HASH_A "\n    role: agent\n    nodes: [n]\n"
		     "    projects: [p]\n", ":6:15: projects: an agent token reaches no project");
	expect_error("tokens:\n  - name: a\n    sha256: " HASH_A "\n    role: admin\n    projects: [p]\n"
		     "    nodes: [n]\n", ":6:12: nodes: only an agent token");
	expect_error("tokens:\n  - name: a\n    sha256: " HASH_A "\n    role: metrics\n    projects: [p]\n",
		     ":5:15: projects: a metrics token opens /metrics only");
	expect_error("tokens:\n  - name: a\n    sha256: " HASH_A "\n    role: agent\n    nodes: [n]\n"
		     "    nodes: [m]\n", ":6:5: duplicate key \"nodes\"");
}

static void inventory_bounds_what_a_node_declares(void **state)
{
	struct auth_tokens *t;
	char err[512], why[512];

	(void)state;
	assert_int_equal(load_text("tokens:\n"
				   "  - name: gpu-1\n    sha256: " HASH_A "\n    role: agent\n"
				   "    nodes: [gpu-1]\n"
				   "    inventory: {gpus: {NVIDIA_TESLA_T4: 4, NVIDIA_L4: 0}, tpu: {TPU_V2: 8},\n"
				   "                vcpus: 16, memoryMb: 61440,\n"
				   "                zones: [us-central1-a, us-central1-b]}\n"
				   "  - {name: bare, role: agent, nodes: [n],\n"
				   "     sha256: 486ea46224d1bb4fb680f34f7c9ad96a8f24ec88be73ea8e5a6c65260e9cb8a7}\n"
				   "  - {name: any, role: agent, nodes: [m], inventory: any,\n"
				   "     sha256: 0000000000000000000000000000000000000000000000000000000000000000}\n",
				   &t, err, sizeof(err)), 0);
	const struct auth_token *g = &t->v[0], *bare = &t->v[1], *any = &t->v[2];
	struct auth_node_claim c = { 16, 61440, "NVIDIA_TESLA_T4", 4, NULL, 0 };
	assert_true(auth_inventory_allows(g, &c, why, sizeof(why)));
	c.gpus = 5;
	assert_false(auth_inventory_allows(g, &c, why, sizeof(why)));
	assert_string_equal(why, "it declares 5 GPUs of type NVIDIA_TESLA_T4, and its agent token "
			    "(gpu-1) allows at most 4");
	c.gpus = 0;	/* a type with no count claims nothing */
	c.gpu_type = "NVIDIA_TESLA_V100";
	assert_true(auth_inventory_allows(g, &c, why, sizeof(why)));
	c.gpus = 1;
	assert_false(auth_inventory_allows(g, &c, why, sizeof(why)));
	assert_non_null(strstr(why, "type NVIDIA_TESLA_V100, and its agent token (gpu-1) allows 0"));
	c.gpu_type = "NVIDIA_L4";	/* listed with 0 */
	assert_false(auth_inventory_allows(g, &c, why, sizeof(why)));
	c.gpu_type = "bad type\n";
	assert_false(auth_inventory_allows(g, &c, why, sizeof(why)));
	assert_null(strchr(why, '\n'));
	assert_non_null(strstr(why, "(not a catalog name)"));
	c = (struct auth_node_claim){ 17, 1, NULL, 0, "TPU_V2", 8 };
	assert_false(auth_inventory_allows(g, &c, why, sizeof(why)));
	assert_non_null(strstr(why, "17 vCPUs"));
	c.vcpus = 16;
	assert_true(auth_inventory_allows(g, &c, why, sizeof(why)));
	c.memory_mb = 61441;
	assert_false(auth_inventory_allows(g, &c, why, sizeof(why)));
	c.memory_mb = 1;
	c.tpu_cores = 16;
	assert_false(auth_inventory_allows(g, &c, why, sizeof(why)));
	assert_non_null(strstr(why, "16 TPU cores of type TPU_V2"));
	/* zones: one listed, one not (named), one that is no zone (not echoed) */
	c = (struct auth_node_claim){ 1, 1, NULL, 0, NULL, 0, "us-central1-b" };
	assert_true(auth_inventory_allows(g, &c, why, sizeof(why)));
	c.zone = "europe-west4-a";
	assert_false(auth_inventory_allows(g, &c, why, sizeof(why)));
	assert_string_equal(why, "it declares zone europe-west4-a, and its agent token (gpu-1) "
			    "allows only us-central1-a, us-central1-b");
	c.zone = "x\ny";
	assert_false(auth_inventory_allows(g, &c, why, sizeof(why)));
	assert_non_null(strstr(why, "(not a zone name)"));
	c = (struct auth_node_claim){ 1, 1, NULL, 0, NULL, 0, "us-west1-a" };
	assert_true(auth_inventory_allows(any, &c, why, sizeof(why)));	/* any: every zone */
	c = (struct auth_node_claim){ 1, 1, NULL, 0, NULL, 0 };
	assert_false(auth_inventory_allows(bare, &c, why, sizeof(why)));
	assert_non_null(strstr(why, "(bare) no inventory"));
	c = (struct auth_node_claim){ 1 << 20, INT64_C(1) << 40, "NVIDIA_H100_80GB", 64, "TPU_V5", 2048 };
	assert_true(auth_inventory_allows(any, &c, why, sizeof(why)));
	auth_tokens_free(t);

	const char *head = "tokens:\n  - name: a\n    sha256: " HASH_A "\n    role: agent\n"
			   "    nodes: [n]\n";
	char text[1024];
	static const struct { const char *inv, *want; } bad[] = {
		{ "    inventory: all\n", ":6:16: inventory must be a mapping" },
		{ "    inventory: {zones: us-central1-a}\n", ":6:24: inventory: zones must be a list" },
		{ "    inventory: {zones: [US-CENTRAL1]}\n", ":6:25: inventory: zones: each must be a zone" },
		{ "    inventory: {gpus: 4}\n", ":6:23: inventory: gpus must map accelerator types" },
		{ "    inventory: {gpus: {t4: 4}}\n", ":6:24: inventory: gpus: each key must be an "
						     "accelerator type" },
		{ "    inventory: {gpus: {T4: -1}}\n", ":6:28: inventory: gpus must be a whole number "
						      "from 0 to 64" },
		{ "    inventory: {tpu: {TPU_V2: 8, TPU_V2: 4}}\n", ":6:34: inventory: tpu: duplicate type TPU_V2" },
		{ "    inventory: {vcpus: 1.5}\n", "inventory: vcpus must be a whole number" },
		{ "    inventory: {disk: 1}\n", ":6:17: inventory: unknown key" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "%s%s", head, bad[i].inv);
		expect_error(text, bad[i].want);
	}
	expect_error("tokens:\n  - name: a\n    sha256: " HASH_A "\n    role: admin\n    projects: [p]\n"
		     "    inventory: any\n", ":6:16: inventory: only an agent token");
}

static int freed;
static void count_free(void *p)
{
	freed++;
	free(p);
}

static void snapshot_frees_a_replaced_version_after_its_last_reader(void **state)
{
	struct snap_ref *r1, *r2;
	struct snapshot *s = snapshot_new(strdup("one"), count_free);

	(void)state;
	freed = 0;
	const char *a = snapshot_acquire(s, &r1);
	assert_string_equal(a, "one");
	snapshot_replace(s, strdup("two"));
	assert_int_equal(freed, 0);	/* r1 still reads "one" */
	assert_string_equal(a, "one");
	const char *b = snapshot_acquire(s, &r2);
	assert_string_equal(b, "two");
	snapshot_release(r1);
	assert_int_equal(freed, 1);
	snapshot_release(r2);
	assert_int_equal(freed, 1);
	snapshot_free(s);
	assert_int_equal(freed, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(permissions_follow_operation_ids),
		cmocka_unit_test(roles_by_verb),
		cmocka_unit_test(tokens_reach_their_projects),
		cmocka_unit_test(policies_grant_by_role_and_member),
		cmocka_unit_test(agent_and_metrics_tokens_open_their_routes_only),
		cmocka_unit_test(secrets_estimate_entropy_by_alphabet),
		cmocka_unit_test(secrets_refuse_defaults_placeholders_short_and_degenerate),
		cmocka_unit_test(secrets_of_32_random_bytes_pass),
		cmocka_unit_test(agent_routes_take_the_cluster_token_or_the_nodes_own),
		cmocka_unit_test(requests_get_decisions_without_http),
		cmocka_unit_test_teardown(tokens_file_loads_and_finds, teardown),
		cmocka_unit_test_teardown(tokens_file_errors_name_line_and_column, teardown),
		cmocka_unit_test_teardown(inventory_bounds_what_a_node_declares, teardown),
		cmocka_unit_test(snapshot_frees_a_replaced_version_after_its_last_reader),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
