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
 * An IAM policy stored on an ml job (setIamPolicy) grants its members the
 * permissions of its roles (roles/ml.viewer, roles/ml.developer,
 * roles/ml.admin, ...) on that job, whatever the token's projects.
 *
 * Permissions are named after the route's operation id the way Google
 * names them: ml.projects.jobs.get -> ml.jobs.get, patch -> update,
 * aiplatform.projects.locations.customJobs.create ->
 * aiplatform.customJobs.create, logging.entries.list ->
 * logging.logEntries.list. A route whose operation id has no dot
 * (healthz, readyz, metrics) is public. The agents' routes take the
 * cluster token only, checked before any of this.
 *
 * A refusal never tells whether another project's resource exists: it is
 * the same 403 for a job that exists and one that does not.
 */
#ifndef TP_AUTH_H
#define TP_AUTH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "store.h"

enum auth_role { ROLE_NONE = 0, ROLE_VIEWER, ROLE_DEVELOPER, ROLE_ADMIN };

struct auth_token {
	unsigned char sha256[32];
	char *name;
	char *member;		/* IAM member: "user:<name>" unless the file says */
	enum auth_role role;
	bool all_projects;	/* projects: ["*"] */
	char **projects;
	size_t nprojects;
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
 * Errors name the file, line and column.
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

/* The ml.jobs.* permissions, for testIamPermissions. */
extern const char *const auth_ml_job_permissions[];
extern const size_t auth_ml_job_permissions_count;

struct request;
/*
 * Router hooks (http.c). Both reply and return -1 when the request may not
 * go on. authenticate runs before the body is read (401s); authorize after
 * it is parsed (403s; logging's resourceNames are in the body).
 */
int auth_authenticate_or_reply(struct request *req);
int auth_authorize_or_reply(struct request *req);
/*
 * Whether the caller of req holds permission on an ml job, through its
 * token or the job's IAM policy: *allowed. Fails only when the policy
 * cannot be read.
 */
enum store_rc auth_request_allows_job(struct request *req, const char *project,
				     const char *job_id, const char *permission, bool *allowed);

#endif
