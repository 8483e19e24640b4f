/*
 * api_iam.c - ml v1 projects.jobs.getIamPolicy / setIamPolicy /
 * testIamPermissions (reference section 1.8), on policies stored per job.
 *
 * Supported roles: roles/ml.viewer, roles/ml.developer, roles/ml.admin,
 * roles/ml.jobOwner and the basic roles/viewer, roles/editor, roles/owner.
 * Conditions are refused: a binding that grants only under a condition
 * trainplane does not evaluate must not grant at all.
 */
#include "api_iam.h"

#include <stdlib.h>
#include <string.h>

#include "api_ml.h"
#include "api_types.h"
#include "auth.h"
#include "common.h"
#include "schema.h"
#include "store_iam.h"
#include "store_job.h"

static const struct job_key *job_key_of(struct request *req, struct job_key *key)
{
	*key = (struct job_key){ "ml", req->params[0], req->params[1] };
	return key;
}

/* Replies 404 or 503 unless the job exists. */
static int job_exists_or_reply(struct request *req)
{
	struct job_key key;
	struct job_rows *rows = NULL;
	enum store_rc rc = store_job_get(req->srv->store, job_key_of(req, &key), &rows);

	job_rows_free(rows);
	if (rc == STORE_NOT_FOUND)
		api_ml_reply_job_not_found(req);
	else if (rc != STORE_OK)
		reply_store_error(req, rc);
	return rc == STORE_OK ? 0 : -1;
}

/* The stored policy (or the empty one) with its etag, as the API shows it. */
static void reply_policy(struct request *req, json_t *policy, int64_t etag)
{
	char *tag = api_ml_etag(etag);
	json_t *out = json_object();

	if (json_array_size(json_object_get(policy, "bindings")) ||
	    json_array_size(json_object_get(policy, "auditConfigs")))
		json_object_set_new(out, "version", json_integer(1));
	json_object_set(out, "bindings", json_object_get(policy, "bindings"));
	json_object_set(out, "auditConfigs", json_object_get(policy, "auditConfigs"));
	json_object_set_new(out, "etag", json_string(tag));
	/* proto3: empty lists are left out */
	if (!json_array_size(json_object_get(out, "bindings")))
		json_object_del(out, "bindings");
	if (!json_array_size(json_object_get(out, "auditConfigs")))
		json_object_del(out, "auditConfigs");
	free(tag);
	reply_json(req, 200, out);
}

/* Reads the current policy: a new object (empty when none) and its etag. */
static enum store_rc load_policy(struct request *req, json_t **policy, int64_t *etag)
{
	char *text = NULL;
	enum store_rc rc = store_iam_get(req->srv->store, "ml", req->params[0], req->params[1],
					 &text, etag);

	*policy = NULL;
	if (rc == STORE_NOT_FOUND) {
		*policy = json_object();
		*etag = 0;
		return STORE_OK;
	}
	if (rc == STORE_OK && !(*policy = json_loads(text, 0, NULL)))
		rc = STORE_ERROR;
	free(text);
	return rc;
}

void api_iam_get_policy(struct request *req)
{
	const char *v = req_query(req, "options.requestedPolicyVersion");
	json_t *policy;
	int64_t etag;

	if (v && strcmp(v, "0") && strcmp(v, "1") && strcmp(v, "3")) {
		reply_error(req, API_INVALID_ARGUMENT,
			    "Invalid value for options.requestedPolicyVersion: \"%s\". Valid values "
			    "are 0, 1, and 3.", v);
		return;
	}
	if (job_exists_or_reply(req))
		return;
	enum store_rc rc = load_policy(req, &policy, &etag);
	if (rc != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	reply_policy(req, policy, etag);
	json_decref(policy);
}

static bool member_valid(const char *m)
{
	static const char *const prefixes[] = { "user:", "serviceAccount:", "group:", "domain:" };

	if (!strcmp(m, "allUsers") || !strcmp(m, "allAuthenticatedUsers"))
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
		size_t n = strlen(prefixes[i]);
		if (!strncmp(m, prefixes[i], n) && m[n] && !strpbrk(m + n, " \t\r\n"))
			return true;
	}
	return false;
}

/* Checks bindings; returns them without empty ones, or NULL with vs filled. */
static json_t *check_bindings(const json_t *bindings, struct violations *vs)
{
	json_t *out = json_array(), *b;
	size_t i;

	json_array_foreach(bindings, i, b) {
		char path[64];
		const char *role = json_string_value(json_object_get(b, "role"));
		const json_t *members = json_object_get(b, "members"), *m;
		size_t k;

		snprintf(path, sizeof(path), "policy.bindings[%zu]", i);
		if (!role || !*role)
			violations_add(vs, path, "A binding needs a role.");
		else if (auth_iam_role(role) == ROLE_NONE)
			violations_add(vs, path, "Role %s is not supported for this resource. "
					"Supported: roles/ml.viewer, roles/ml.developer, roles/ml.admin, "
					"roles/ml.jobOwner, roles/viewer, roles/editor, roles/owner.", role);
		if (json_object_get(b, "condition"))
			violations_add(vs, path, "Conditions are not supported: trainplane does not "
					"evaluate them, so a conditional binding could not grant safely.");
		json_array_foreach(members, k, m) {
			const char *s = json_string_value(m);
			if (!member_valid(s))
				violations_add(vs, path, "Invalid member \"%s\": expected user:, "
						"serviceAccount:, group:, domain:, allUsers or "
						"allAuthenticatedUsers.", s);
		}
		if (json_array_size(members))
			json_array_append(out, b);	/* Google drops bindings with no members */
	}
	if (vs->n) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* The fields of updateMask (default "bindings,etag"); -1 with vs on a bad path. */
static int parse_mask(const char *mask, bool *bindings, bool *etag, bool *audit,
		      struct violations *vs)
{
	char *copy = xstrdup(mask && *mask ? mask : "bindings,etag"), *save = NULL;

	*bindings = *etag = *audit = false;
	for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		while (*p == ' ')
			p++;
		if (!strcmp(p, "bindings"))
			*bindings = true;
		else if (!strcmp(p, "etag"))
			*etag = true;
		else if (!strcmp(p, "auditConfigs") || !strcmp(p, "audit_configs"))
			*audit = true;
		else
			violations_add(vs, "update_mask", "Unsupported field in update_mask: \"%s\"; "
					"allowed: bindings, etag, auditConfigs.", p);
	}
	free(copy);
	return vs->n ? -1 : 0;
}

void api_iam_set_policy(struct request *req)
{
	struct violations vs = VIOLATIONS_INIT;
	json_t *body = schema_normalize(&iam_set_policy_request_message, req->json, "", &vs);
	json_t *cur = NULL, *bindings = NULL;
	bool m_bindings, m_etag, m_audit;
	int64_t cur_etag, want, etag;
	enum store_rc rc;

	if (!body) {
		api_ml_reply_schema_violations(req, &vs);
		goto out;
	}
	json_t *policy = json_object_get(body, "policy");
	if (!policy)
		violations_add(&vs, "policy", "A policy is required.");
	if (parse_mask(json_string_value(json_object_get(body, "updateMask")), &m_bindings,
		       &m_etag, &m_audit, &vs) || vs.n) {
		api_ml_reply_field_violations(req, &vs);
		goto out;
	}
	json_int_t version = json_integer_value(json_object_get(policy, "version"));
	if (version != 0 && version != 1 && version != 3)
		violations_add(&vs, "policy.version", "Invalid policy version %lld: valid versions "
				"are 0, 1 and 3.", (long long)version);
	if (m_bindings && !(bindings = check_bindings(json_object_get(policy, "bindings"), &vs))) {
		api_ml_reply_field_violations(req, &vs);
		goto out;
	}
	const char *tag = json_string_value(json_object_get(policy, "etag"));
	if (m_etag && tag && api_ml_etag_version(tag, &want))
		violations_add(&vs, "policy.etag", "The etag is not one this server issued.");
	if (vs.n) {
		api_ml_reply_field_violations(req, &vs);
		goto out;
	}
	if (job_exists_or_reply(req))
		goto out;
	rc = load_policy(req, &cur, &cur_etag);
	if (rc != STORE_OK) {
		reply_store_error(req, rc);
		goto out;
	}
	if (!(m_etag && tag))
		want = cur_etag;	/* read-modify-write: fail if someone else set it meanwhile */
	if (m_bindings)
		json_object_set(cur, "bindings", bindings);
	if (m_audit)
		json_object_set(cur, "auditConfigs", json_object_get(policy, "auditConfigs"));
	json_object_del(cur, "etag");
	json_object_del(cur, "version");
	char *text = json_dumps(cur, JSON_COMPACT);
	rc = store_iam_set(req->srv->store, "ml", req->params[0], req->params[1], text, &want,
			   &etag);
	free(text);
	if (rc == STORE_NOT_FOUND)
		api_ml_reply_job_not_found(req);
	else if (rc == STORE_STALE)
		reply_error(req, API_ABORTED, "There were concurrent policy changes. Please retry the "
			    "whole read-modify-write with exponential backoff.");
	else if (rc != STORE_OK)
		reply_store_error(req, rc);
	else
		reply_policy(req, cur, etag);
out:
	violations_release(&vs);
	json_decref(bindings);
	json_decref(cur);
	json_decref(body);
}

static bool permission_valid(const char *p)
{
	const char *dot1 = strchr(p, '.'), *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
	return dot2 && !strchr(dot2 + 1, '.') && !strpbrk(p, "* \t") && dot1 > p && dot2 > dot1 + 1 &&
	       dot2[1];
}

void api_iam_test_permissions(struct request *req)
{
	struct violations vs = VIOLATIONS_INIT;
	json_t *body = schema_normalize(&iam_test_permissions_request_message, req->json, "", &vs);
	json_t *held = json_array(), *p;
	size_t i;

	if (!body) {
		api_ml_reply_schema_violations(req, &vs);
		goto out;
	}
	json_t *asked = json_object_get(body, "permissions");
	json_array_foreach(asked, i, p) {
		if (!permission_valid(json_string_value(p)))
			violations_add(&vs, "permissions", "Permission %s is not valid.",
					json_string_value(p));
	}
	if (vs.n) {
		api_ml_reply_field_violations(req, &vs);
		goto out;
	}
	struct job_key key;
	struct job_rows *rows = NULL;
	enum store_rc rc = json_array_size(asked)
				   ? store_job_get(req->srv->store, job_key_of(req, &key), &rows)
				   : STORE_NOT_FOUND;
	job_rows_free(rows);
	if (rc != STORE_OK && rc != STORE_NOT_FOUND) {
		reply_store_error(req, rc);
		goto out;
	}
	/* A job that does not exist: the empty set, never NOT_FOUND. */
	json_array_foreach(rc == STORE_OK ? asked : NULL, i, p) {
		const char *name = json_string_value(p);
		bool known = false, allowed = false;
		for (size_t k = 0; k < auth_ml_job_permissions_count; k++)
			known |= !strcmp(name, auth_ml_job_permissions[k]);
		if (!known)
			continue;
		rc = auth_allows_job(req->srv->store, req->srv->auth_mode, req->caller,
				     req->params[0], req->params[1], name, &allowed);
		if (rc != STORE_OK) {
			reply_store_error(req, rc);
			goto out;
		}
		if (allowed)
			json_array_append(held, p);
	}
	json_t *out = json_object();
	if (json_array_size(held))
		json_object_set(out, "permissions", held);
	reply_json(req, 200, out);
out:
	violations_release(&vs);
	json_decref(held);
	json_decref(body);
}

/* --- trainplane.whoami.get ---------------------------------------------- */

void api_whoami_get(struct request *req)
{
	const struct auth_token *t = req->caller;
	enum auth_mode mode = req->srv->auth_mode;
	json_t *perms = json_array(), *seen = json_object();
	char perm[128];

	/* Every permission a route needs that the caller's role grants (open
	 * mode: all), once each, in the route table's order. */
	for (size_t i = 0; i < routes_count; i++) {
		if (routes[i].agent ||
		    !auth_route_permission(mode, routes[i].operation_id, perm, sizeof(perm)) ||
		    json_object_get(seen, perm) || (t && !auth_token_allows(t, NULL, perm)))
			continue;
		json_object_set_new(seen, perm, json_true());
		json_array_append_new(perms, json_string(perm));
	}
	json_decref(seen);
	json_t *out = json_pack("{s:s}", "authMode", mode == AUTH_TOKENS ? "tokens" : "open");
	if (t) {
		json_t *projects = json_array();
		if (t->all_projects)
			json_array_append_new(projects, json_string("*"));
		for (size_t i = 0; i < t->nprojects; i++)
			json_array_append_new(projects, json_string(t->projects[i]));
		json_object_set_new(out, "name", json_string(t->name));
		json_object_set_new(out, "member", json_string(t->member));
		json_object_set_new(out, "role", json_string(auth_role_name(t->role)));
		json_object_set_new(out, "projects", projects);
	}
	json_object_set_new(out, "permissions", perms);
	reply_json(req, 200, out);
}
