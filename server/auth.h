/*
 * auth.h - who may call what.
 *
 * Two modes. open (the default): any credentials or none are accepted, as
 * an emulator should. tokens: callers present a token from the tokens file
 * (stored as SHA-256, never in clear) as "Authorization: Bearer <t>" or
 * "?key=<t>"; each token has a role and the projects it reaches:
 *
 *   viewer     get, list, logs
 *   developer  + create, cancel, update (patch), delete
 *   admin      + the nodes API and IAM (getIamPolicy, setIamPolicy)
 *
 * Of trainplane's own routes (trainplane.*, admins'), viewers and up read
 * who they are (whoami) and the replicas of their projects' jobs; the
 * project of a /trainplane/v1/projects/{projectsId}/ route is checked as a
 * /v1/projects/ route's is.
 *
 * An IAM policy stored on an ml job (setIamPolicy) grants its members the
 * permissions of its roles (roles/ml.viewer, roles/ml.developer,
 * roles/ml.admin, ...) on that job, whatever the token's projects.
 *
 * Two more roles are not users': an agent token (role agent, nodes: [...])
 * opens the agent routes of the nodes it names and nothing else, as a
 * kubelet's credential names its node (Kubernetes' Node authorizer); a
 * metrics token (role metrics) opens GET /metrics and nothing else.
 *
 * Permissions are named after the route's operation id the way Google
 * names them: ml.projects.jobs.get -> ml.jobs.get, patch -> update,
 * aiplatform.projects.locations.customJobs.create ->
 * aiplatform.customJobs.create, logging.entries.list ->
 * logging.logEntries.list. A route whose operation id has no dot
 * (healthz, readyz, metrics) is public, except /metrics in tokens mode,
 * which needs trainplane.metrics.get (admins and metrics tokens): it shows
 * every project's job counts, the nodes and their GPUs. The agents' routes
 * take the cluster token (agent_token) or the node's agent token, checked
 * before any of this (auth_check_agent()).
 *
 * A refusal never tells whether another project's resource exists: it is
 * the same 403 for a job that exists and one that does not.
 *
 * auth decides and the HTTP layer replies: the router (router.c) describes
 * the request in a struct auth_request, and turns each struct
 * auth_decision into the reply (or lets the request go on). Nothing here
 * knows HTTP's types.
 */
#ifndef TP_AUTH_H
#define TP_AUTH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "api_error.h"
#include "common.h"
#include "store.h"

/* open: every caller may do everything; tokens: the tokens file says who may do what. */
enum auth_mode { AUTH_OPEN, AUTH_TOKENS };

enum auth_role { ROLE_NONE = 0, ROLE_VIEWER, ROLE_DEVELOPER, ROLE_ADMIN };

/* What a token of the tokens file is for. */
enum auth_token_kind {
	TOKEN_USER,		/* the APIs, by role and projects */
	TOKEN_AGENT,		/* role agent: the agent routes of its nodes, nothing else */
	TOKEN_METRICS,		/* role metrics: GET /metrics, nothing else */
};

/*
 * What the nodes of an agent token may declare at register (the tokens
 * file's `inventory`), as Kubernetes' NodeRestriction bounds what a kubelet
 * may write of its own node. A type not listed may not be declared.
 */
struct auth_inventory_limit {
	char *type;		/* NVIDIA_TESLA_T4, TPU_V2, ... */
	int64_t most;		/* GPUs of that type, or TPU cores */
};
struct auth_inventory {
	bool given;		/* the token has `inventory`; without it, nothing may register */
	bool any;		/* `inventory: any`: no bound (the operator wrote so) */
	int64_t vcpus, memory_mb;	/* the most; 0: no bound */
	struct auth_inventory_limit *gpus, *tpus;
	size_t ngpus, ntpus;
	char **zones;		/* the zones its nodes may say they are in; none listed: any */
	size_t nzones;
};

/* What a node declares at register, as auth_inventory_allows() checks it. */
struct auth_node_claim {
	int64_t vcpus, memory_mb;
	const char *gpu_type;	/* NULL: none */
	int64_t gpus;
	const char *tpu_type;	/* NULL: none */
	int64_t tpu_cores;
	const char *zone;	/* NULL: not checked */
};

struct auth_token {
	unsigned char sha256[32];
	char *name;
	char *member;		/* IAM member: "user:<name>" unless the file says */
	enum auth_token_kind kind;
	enum auth_role role;	/* TOKEN_USER; ROLE_NONE for the others */
	bool all_projects;	/* projects: ["*"] */
	char **projects;
	size_t nprojects;
	char **nodes;		/* TOKEN_AGENT: the node names it may act for */
	size_t nnodes;
	struct auth_inventory inventory;	/* TOKEN_AGENT: what its nodes may declare */
};

struct auth_tokens {
	struct auth_token *v;
	size_t n;
};

/*
 * Loads a tokens file:
 *   tokens:
 *     - name: alice
 *       sha256: <64 hex digits of SHA-256(token)>
 *       role: developer
 *       projects: [team-a, team-b]      # or ["*"]
 *       member: user:alice@example.com  # optional
 *     - name: gpu-1
 *       sha256: ...
 *       role: agent
 *       nodes: [gpu-1]                  # node names, as the agents register
 *       inventory:                      # the most its nodes may declare, or "any"
 *         gpus: {NVIDIA_TESLA_T4: 4}    # per type; absent or {}: no GPU
 *         tpu: {TPU_V2: 8}              # cores per type; absent: no TPU
 *         vcpus: 16                     # absent: no bound
 *         memoryMb: 61440               # absent: no bound
 *     - name: prometheus
 *       sha256: ...
 *       role: metrics
 * Agent tokens take nodes and no projects, metrics tokens neither, user
 * tokens projects and no nodes. Errors name the file, line and column.
 */
int auth_tokens_load(const char *path, struct auth_tokens **out, char *err, size_t errlen);
void auth_tokens_free(void *tokens);	/* struct auth_tokens *; NULL is a no-op */

/* SHA-256 of token as 64 lowercase hex digits and a NUL. */
void auth_sha256_hex(const char *token, char out[65]);
/* The entry whose hash matches token's, or NULL. Constant time in the match. */
const struct auth_token *auth_tokens_find(const struct auth_tokens *t, const char *token);

/*
 * The permission an operation id needs, written to buf ("ml.jobs.get").
 * Returns false for a public route (no dot in the id).
 */
bool auth_permission(const char *operation_id, char *buf, size_t len);
/* The least token role that grants permission. */
enum auth_role auth_role_needed(const char *permission);
const char *auth_role_name(enum auth_role r);
/* Whether t reaches project with permission through its role. */
bool auth_token_allows(const struct auth_token *t, const char *project, const char *permission);

/* The token role an IAM role grants on a job, ROLE_NONE for unknown roles. */
enum auth_role auth_iam_role(const char *role);
/*
 * Whether a stored policy ({"bindings":[{"role","members"}]}) grants member
 * (NULL: an anonymous caller in open mode) permission.
 */
bool auth_policy_allows(const json_t *policy, const char *member, const char *permission);

/* GET /trainplane/v1/whoami's: every user token holds it (viewer and up). */
#define AUTH_WHOAMI_PERMISSION "trainplane.whoami.get"
/* The permission GET /metrics needs in tokens mode. */
#define AUTH_METRICS_PERMISSION "trainplane.metrics.get"
/*
 * The permission a route needs in mode, written to buf: auth_permission(),
 * and AUTH_METRICS_PERMISSION for /metrics in tokens mode. False: public.
 */
bool auth_route_permission(enum auth_mode mode, const char *operation_id, char *buf, size_t len);

/*
 * Secrets the server holds in clear (agent_token) must carry at least
 * AUTH_SECRET_MIN_BITS of entropy, as `openssl rand -hex 32` does.
 */
#define AUTH_SECRET_MIN_BITS 256
/*
 * The most entropy secret can carry, in bits: its length times log2 of the
 * size of the smallest of these alphabets that holds all its characters:
 * digits (10), hex digits of one case (16), digits and letters of one case
 * (36), digits and letters (62), base64 or base64url (64; trailing '='
 * padding is not counted), printable ASCII without space (94). 0 when a
 * character is none of those (space, control, non-ASCII).
 */
double auth_secret_bits(const char *secret);
/*
 * Whether secret is fit to guard the cluster: not a known default or
 * placeholder (trainplane-dev-token, CHANGE-ME, example, ...), at least
 * AUTH_SECRET_MIN_BITS by auth_secret_bits(), and not degenerate: no
 * character makes up more than a third of it, it is not one block
 * repeated, and at most half of its neighbouring characters are equal or
 * one code point apart ("aaaa", "abcd", "9876"). Random tokens of the
 * minimum size fail these with a probability below 1e-8. When not, writes
 * why into why (never the secret itself).
 */
bool auth_secret_strong(const char *secret, char *why, size_t whylen);

/* The decision on an agent route for the node named in its path. */
enum auth_agent_verdict {
	AUTH_AGENT_ALLOWED,		/* the cluster token, or a token of this node */
	AUTH_AGENT_UNAUTHENTICATED,	/* no agent credential: 401 */
	AUTH_AGENT_OTHER_NODE,		/* an agent token bound to other nodes: 403 */
};
/*
 * Whether bearer (the Authorization: Bearer credential, may be NULL) may
 * act for node: cluster_token (NULL or "": none) opens every node, an agent
 * token of tokens (may be NULL) the nodes it names. Constant time in the
 * comparison of secrets.
 */
enum auth_agent_verdict auth_agent_allows(const char *cluster_token,
					  const struct auth_tokens *tokens, const char *node,
					  const char *bearer);
/*
 * Whether an agent token's nodes may declare claim: true, or false with
 * why (a sentence naming what exceeds which bound, the type only when it
 * is made of A-Z, 0-9 and '_'). A token without `inventory` may declare
 * nothing; `inventory: any` anything.
 */
bool auth_inventory_allows(const struct auth_token *t, const struct auth_node_claim *claim,
			   char *why, size_t whylen);

/* Whether bearer is the cluster token (constant time; false when there is none). */
bool auth_is_cluster_token(const char *cluster_token, const char *bearer);

/* The ml.jobs.* permissions, for testIamPermissions. */
extern const char *const auth_ml_job_permissions[];
extern const size_t auth_ml_job_permissions_count;

struct snapshot;
struct snap_ref;

/* A request as auth sees it; the router fills it in. Strings borrowed. */
struct auth_request {
	enum auth_mode mode;
	struct snapshot *tokens;	/* struct auth_tokens; AUTH_TOKENS only */
	struct snap_ref **tokens_ref;	/* holds the version taken until the request ends */
	const char *cluster_token;	/* the agents' (agent_token); NULL or "": none */
	struct store *store;		/* the jobs' IAM policies */
	const char *operation_id;	/* the route's, as in openapi.yaml */
	const char *pattern;		/* the route's ("/v1/projects/{projectsId}/jobs") */
	bool agent_route;		/* the route is for agents */
	char *const *params;		/* the path's variables in pattern order, NULL after the last */
	size_t nparams;			/* the size of params */
	const char *path;		/* as sent (its segments percent-encoded) */
	const char *authorization;	/* the Authorization header, or NULL */
	const char *key;		/* the "key" query parameter, or NULL (AUTH_OPEN: may be NULL) */
	const json_t *body;		/* the parsed body (auth_authorize()), or NULL */
	const struct auth_token *caller;	/* set by auth_authenticate(); NULL: none */
	/*
	 * The project a route outside /v1/projects/{projectsId}/ acts in (the
	 * Cloud Storage routes: a bucket's owner, or ?project=); NULL: none
	 * known (only a token of every project reaches it).
	 */
	const char *project;
};

/*
 * What auth decided: allowed, or the refusal the HTTP layer replies with
 * (Google's envelope of code, with http as its status, 0: the code's own).
 * A refusal because a job's policy could not be read has store_rc set (not
 * STORE_OK): the reply is the store error's.
 */
struct auth_decision {
	bool allowed;
	enum api_code code;
	int http;
	json_t *details;	/* owned: the error's details array, or NULL */
	char *message;		/* owned */
	enum store_rc store_rc;
};
/* Frees what d owns (NULL fields are fine) and zeroes it. */
void auth_decision_release(struct auth_decision *d);

/*
 * The three checks, in the router's order. check_agent first: an agent
 * route needs the cluster token or its node's agent token
 * (auth_agent_allows(); 401, or 403 for another node's token), and the
 * cluster token opens no other route but the public ones (403).
 * authenticate before the body is read: 401s, and 403 for an agent or
 * metrics token on a route it does not open; sets ar->caller. authorize
 * after the body is parsed (logging's resourceNames are in it): 403s,
 * reading a job's IAM policy from the store for an ml job route.
 */
struct auth_decision auth_check_agent(const struct auth_request *ar) MUST_CHECK;
struct auth_decision auth_authenticate(struct auth_request *ar) MUST_CHECK;
struct auth_decision auth_authorize(const struct auth_request *ar) MUST_CHECK;

/*
 * Whether caller (NULL in open mode) holds permission on an ml job,
 * through its token or the job's IAM policy in st: *allowed. Fails only
 * when the policy cannot be read.
 */
enum store_rc auth_allows_job(struct store *st, enum auth_mode mode,
			      const struct auth_token *caller, const char *project,
			      const char *job_id, const char *permission, bool *allowed) MUST_CHECK;

#endif
