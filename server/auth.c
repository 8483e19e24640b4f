#include "auth.h"

#include <errno.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "api_slurm.h"
#include "common.h"
#include "log.h"
#include "snapshot.h"
#include "store_iam.h"
#include "yamldoc.h"

/* --- the tokens file ------------------------------------------------------ */

struct tl {
	const char *path;
	yaml_document_t *doc;
	char *err;
	size_t errlen;
};

PRINTF_LIKE(3, 4)
static int tl_fail(struct tl *l, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;
	int off = snprintf(l->err, l->errlen, "%s:%zu:%zu: ", l->path,
			   n ? n->start_mark.line + 1 : 1, n ? n->start_mark.column + 1 : 1);

	if (off < 0 || (size_t)off >= l->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(l->err + off, l->errlen - (size_t)off, fmt, ap);
	va_end(ap);
	return -1;
}

static yaml_node_t *tl_node(struct tl *l, yaml_node_item_t i)
{
	return yaml_document_get_node(l->doc, i);
}

static const char *tl_scalar(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static const char *const role_names[] = { "none", "viewer", "developer", "admin" };

const char *auth_role_name(enum auth_role r)
{
	return role_names[r];
}

static void free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void limits_free(struct auth_inventory_limit *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].type);
	free(v);
}

static void token_release(struct auth_token *t)
{
	limits_free(t->inventory.gpus, t->inventory.ngpus);
	limits_free(t->inventory.tpus, t->inventory.ntpus);
	for (size_t i = 0; i < t->inventory.nzones; i++)
		free(t->inventory.zones[i]);
	free(t->inventory.zones);
	free(t->name);
	free(t->member);
	free_list(t->projects, t->nprojects);
	free_list(t->nodes, t->nnodes);
}

void auth_tokens_free(void *p)
{
	struct auth_tokens *t = p;
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		token_release(&t->v[i]);
	free(t->v);
	free(t);
}

static int load_projects(struct tl *l, const yaml_node_t *n, struct auth_token *t)
{
	if (n->type != YAML_SEQUENCE_NODE || n->data.sequence.items.top ==
						     n->data.sequence.items.start)
		return tl_fail(l, n, "projects must be a non-empty list of project ids (or [\"*\"])");
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
	     it++) {
		const yaml_node_t *p = tl_node(l, *it);
		const char *s = tl_scalar(p);
		if (!s || !*s || strchr(s, '/'))
			return tl_fail(l, p, "projects: each must be a project id");
		if (!strcmp(s, "*")) {
			t->all_projects = true;
			continue;
		}
		t->projects = xrealloc(t->projects, (t->nprojects + 1) * sizeof(*t->projects));
		t->projects[t->nprojects++] = xstrdup(s);
	}
	return 0;
}

/* A node name as the agents register it (agent_config.c): a URL path segment. */
static bool node_name_valid(const char *s)
{
	if (!*s || strlen(s) > 253)
		return false;
	for (; *s; s++)
		if (!(*s == '-' || *s == '_' || *s == '.' || (*s >= '0' && *s <= '9') ||
		      (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
			return false;
	return true;
}

static int load_nodes(struct tl *l, const yaml_node_t *n, struct auth_token *t)
{
	if (n->type != YAML_SEQUENCE_NODE || n->data.sequence.items.top ==
						     n->data.sequence.items.start)
		return tl_fail(l, n, "nodes must be a non-empty list of node names");
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
	     it++) {
		const yaml_node_t *p = tl_node(l, *it);
		const char *s = tl_scalar(p);
		if (!s || !node_name_valid(s))
			return tl_fail(l, p, "nodes: each must be a node name (letters, digits, '-', "
					     "'_' and '.'), not a pattern");
		t->nodes = xrealloc(t->nodes, (t->nnodes + 1) * sizeof(*t->nodes));
		t->nodes[t->nnodes++] = xstrdup(s);
	}
	return 0;
}

/* An accelerator type as the catalog names them: A-Z, 0-9, '_'. */
static bool accel_type_valid(const char *s)
{
	if (!s || !*s || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

static int tl_count(struct tl *l, const yaml_node_t *n, const char *what, int64_t max,
		    int64_t *out)
{
	const char *s = tl_scalar(n);
	char *end;
	errno = 0;
	long long v = s && *s >= '0' && *s <= '9' ? strtoll(s, &end, 10) : -1;
	if (!s || v < 0 || errno || *end || v > max)
		return tl_fail(l, n, "inventory: %s must be a whole number from 0 to %lld", what,
			       (long long)max);
	*out = v;
	return 0;
}

/* inventory.gpus or inventory.tpu: {TYPE: most, ...} */
static int load_limits(struct tl *l, const yaml_node_t *n, const char *what, int64_t max,
		       struct auth_inventory_limit **v, size_t *nv)
{
	if (n->type != YAML_MAPPING_NODE)
		return tl_fail(l, n, "inventory: %s must map accelerator types to counts "
				     "({NVIDIA_TESLA_T4: 4})", what);
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	     p++) {
		const yaml_node_t *k = tl_node(l, p->key), *val = tl_node(l, p->value);
		const char *type = tl_scalar(k);
		int64_t most;
		if (!accel_type_valid(type))
			return tl_fail(l, k, "inventory: %s: each key must be an accelerator type "
					     "(A-Z, 0-9 and '_', as the catalog names them)", what);
		for (size_t i = 0; i < *nv; i++)
			if (!strcmp((*v)[i].type, type))
				return tl_fail(l, k, "inventory: %s: duplicate type %s", what, type);
		if (tl_count(l, val, what, max, &most))
			return -1;
		*v = xrealloc(*v, (*nv + 1) * sizeof(**v));
		(*v)[*nv].type = xstrdup(type);
		(*v)[(*nv)++].most = most;
	}
	return 0;
}

/* A zone as Google names them: lowercase letters, digits, '-' (us-central1-a). */
static bool zone_valid(const char *s)
{
	if (!s || !*s || strlen(s) > 63)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
			return false;
	return true;
}

/* inventory.zones: [us-central1-a, ...] */
static int load_zones(struct tl *l, const yaml_node_t *n, struct auth_inventory *inv)
{
	if (n->type != YAML_SEQUENCE_NODE)
		return tl_fail(l, n, "inventory: zones must be a list of zones ([us-central1-a])");
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
	     it++) {
		const yaml_node_t *z = tl_node(l, *it);
		const char *zone = tl_scalar(z);
		if (!zone_valid(zone))
			return tl_fail(l, z, "inventory: zones: each must be a zone (lowercase letters, "
					     "digits and '-': us-central1-a)");
		inv->zones = xrealloc(inv->zones, (inv->nzones + 1) * sizeof(*inv->zones));
		inv->zones[inv->nzones++] = xstrdup(zone);
	}
	return 0;
}

static int load_inventory(struct tl *l, const yaml_node_t *n, struct auth_inventory *inv)
{
	inv->given = true;
	if (tl_scalar(n) && !strcmp(tl_scalar(n), "any")) {
		inv->any = true;
		return 0;
	}
	if (n->type != YAML_MAPPING_NODE)
		return tl_fail(l, n, "inventory must be a mapping (gpus, tpu, vcpus, memoryMb, zones) "
				     "or \"any\"");
	bool seen[5] = { false };
	static const char *const keys[] = { "gpus", "tpu", "vcpus", "memoryMb", "zones" };
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	     p++) {
		const yaml_node_t *k = tl_node(l, p->key), *v = tl_node(l, p->value);
		const char *key = tl_scalar(k);
		size_t i = 0;
		while (i < ARRAY_SIZE(keys) && (!key || strcmp(key, keys[i])))
			i++;
		if (i == ARRAY_SIZE(keys))
			return tl_fail(l, k, "inventory: unknown key (gpus, tpu, vcpus, memoryMb, zones)");
		if (seen[i])
			return tl_fail(l, k, "inventory: duplicate key \"%s\"", key);
		seen[i] = true;
		int rc = i == 0 ? load_limits(l, v, "gpus", 64, &inv->gpus, &inv->ngpus) :
			 i == 1 ? load_limits(l, v, "tpu", 2048, &inv->tpus, &inv->ntpus) :
			 i == 2 ? tl_count(l, v, "vcpus", 1 << 20, &inv->vcpus) :
			 i == 3 ? tl_count(l, v, "memoryMb", INT64_C(1) << 40, &inv->memory_mb) :
				  load_zones(l, v, inv);
		if (rc)
			return -1;
	}
	return 0;
}

/* role: a user role, or agent or metrics (t->kind). */
static int load_role(struct tl *l, const yaml_node_t *role, struct auth_token *t)
{
	const char *r = tl_scalar(role);

	if (!strcmp(r, "agent")) {
		t->kind = TOKEN_AGENT;
		return 0;
	}
	if (!strcmp(r, "metrics")) {
		t->kind = TOKEN_METRICS;
		return 0;
	}
	for (int i = ROLE_VIEWER; i <= ROLE_ADMIN; i++)
		if (!strcmp(r, role_names[i]))
			t->role = (enum auth_role)i;
	if (t->role == ROLE_NONE)
		return tl_fail(l, role, "role must be viewer, developer or admin, not \"%s\" (or "
				       "agent and metrics, the roles of agents' and scrapers' tokens)", r);
	return 0;
}

static int load_token(struct tl *l, const yaml_node_t *map, struct auth_token *t)
{
	const yaml_node_t *hash = NULL, *role = NULL, *projects = NULL, *nodes = NULL,
			  *inventory = NULL;

	if (map->type != YAML_MAPPING_NODE)
		return tl_fail(l, map, "each token must be a mapping (name, sha256, role, projects)");
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		const yaml_node_t *k = tl_node(l, p->key), *v = tl_node(l, p->value);
		const char *key = tl_scalar(k), *val = tl_scalar(v);
		if (!key)
			return tl_fail(l, k, "keys must be names");
		if (!strcmp(key, "projects") || !strcmp(key, "nodes") || !strcmp(key, "inventory")) {
			const yaml_node_t **slot = key[0] == 'p' ? &projects :
						   key[0] == 'n' ? &nodes : &inventory;
			if (*slot)
				return tl_fail(l, k, "duplicate key \"%s\"", key);
			*slot = v;
			continue;
		}
		if (!val)
			return tl_fail(l, v, "%s must be a single value", key);
		if (!strcmp(key, "name") && !t->name)
			t->name = xstrdup(val);
		else if (!strcmp(key, "member") && !t->member)
			t->member = xstrdup(val);
		else if (!strcmp(key, "sha256") && !hash)
			hash = v;
		else if (!strcmp(key, "role") && !role)
			role = v;
		else if (!strcmp(key, "name") || !strcmp(key, "member") || !strcmp(key, "sha256") ||
			 !strcmp(key, "role"))
			return tl_fail(l, k, "duplicate key \"%s\"", key);
		else
			return tl_fail(l, k, "unknown key \"%s\" (name, sha256, role, projects, nodes, "
				       "inventory, member)", key);
	}
	if (!t->name || !*t->name)
		return tl_fail(l, map, "a token needs a name");
	if (!hash)
		return tl_fail(l, map, "token %s needs sha256 (printf %%s TOKEN | sha256sum)",
			       t->name);
	const char *h = tl_scalar(hash);
	if (strlen(h) != 64)
		return tl_fail(l, hash, "sha256 must be 64 hex digits (the token's SHA-256, never the "
				     "token itself)");
	for (int i = 0; i < 32; i++) {
		int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return tl_fail(l, hash, "sha256 must be 64 hex digits");
		t->sha256[i] = (unsigned char)(hi << 4 | lo);
	}
	if (!role)
		return tl_fail(l, map, "token %s needs a role (viewer, developer or admin; agent or "
				       "metrics)", t->name);
	if (load_role(l, role, t))
		return -1;
	if (inventory && t->kind != TOKEN_AGENT)
		return tl_fail(l, inventory, "inventory: only an agent token (role: agent) bounds "
					     "what its nodes declare");
	switch (t->kind) {
	case TOKEN_USER:
		if (nodes)
			return tl_fail(l, nodes, "nodes: only an agent token (role: agent) names nodes");
		if (!projects)
			return tl_fail(l, map, "token %s needs projects (a list, or [\"*\"] for all)",
				       t->name);
		if (load_projects(l, projects, t))
			return -1;
		break;
	case TOKEN_AGENT:
		if (projects)
			return tl_fail(l, projects, "projects: an agent token reaches no project, only "
						    "the agent routes of its nodes");
		if (!nodes)
			return tl_fail(l, map, "agent token %s needs nodes (the node names it may act "
					       "for)", t->name);
		if (load_nodes(l, nodes, t))
			return -1;
		if (inventory && load_inventory(l, inventory, &t->inventory))
			return -1;
		break;
	case TOKEN_METRICS:
		if (projects || nodes)
			return tl_fail(l, projects ? projects : nodes, "%s: a metrics token opens "
				       "/metrics only", projects ? "projects" : "nodes");
		break;
	}
	if (!t->member)
		t->member = xasprintf("user:%s", t->name);
	return 0;
}

static int load_root(struct tl *l, const yaml_node_t *root, struct auth_tokens *t)
{
	const yaml_node_t *list = NULL;

	if (root->type != YAML_MAPPING_NODE)
		return tl_fail(l, root, "the tokens file must be a mapping with a \"tokens\" list");
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
	     p < root->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = tl_node(l, p->key);
		if (!tl_scalar(k) || strcmp(tl_scalar(k), "tokens"))
			return tl_fail(l, k, "unknown key (the file holds one key: tokens)");
		list = tl_node(l, p->value);
	}
	if (!list || list->type != YAML_SEQUENCE_NODE)
		return tl_fail(l, list ? list : root, "tokens must be a list");
	size_t n = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
	t->v = xcalloc(n ? n : 1, sizeof(*t->v));
	for (size_t i = 0; i < n; i++) {
		const yaml_node_t *item = tl_node(l, list->data.sequence.items.start[i]);
		t->n = i + 1;
		if (load_token(l, item, &t->v[i]))
			return -1;
		for (size_t j = 0; j < i; j++) {
			if (!strcmp(t->v[j].name, t->v[i].name))
				return tl_fail(l, item, "duplicate token name \"%s\"", t->v[i].name);
			if (!memcmp(t->v[j].sha256, t->v[i].sha256, 32))
				return tl_fail(l, item, "tokens %s and %s have the same hash",
					       t->v[j].name, t->v[i].name);
		}
	}
	return 0;
}

int auth_tokens_load(const char *path, struct auth_tokens **out, char *err, size_t errlen)
{
	struct tl l = { path, NULL, err, errlen };
	struct auth_tokens *t = NULL;
	yaml_document_t doc;
	int rc = -1;

	*out = NULL;
	if (yaml_doc_load(path, &doc, err, errlen))
		return -1;
	l.doc = &doc;
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root) {
		snprintf(err, errlen, "%s:1:1: the tokens file is empty", path);
		goto out;
	}
	t = xcalloc(1, sizeof(*t));
	if (load_root(&l, root, t))
		goto out;
	*out = t;
	t = NULL;
	rc = 0;
out:
	auth_tokens_free(t);
	yaml_document_delete(&doc);
	return rc;
}

static void sha256(const char *s, unsigned char out[32])
{
	unsigned int n = 32;
	if (!EVP_Digest(s, strlen(s), out, &n, EVP_sha256(), NULL))
		abort();
}

void auth_sha256_hex(const char *token, char out[65])
{
	unsigned char h[32];
	sha256(token, h);
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", h[i]);
}

const struct auth_token *auth_tokens_find(const struct auth_tokens *t, const char *token)
{
	unsigned char h[32];
	const struct auth_token *found = NULL;

	if (!t)
		return NULL;
	sha256(token, h);
	for (size_t i = 0; i < t->n; i++) {
		unsigned char diff = 0;
		for (int b = 0; b < 32; b++)
			diff |= (unsigned char)(h[b] ^ t->v[i].sha256[b]);
		if (!diff)
			found = &t->v[i];
	}
	return found;
}

/* --- permissions ---------------------------------------------------------- */

bool auth_permission(const char *op, char *buf, size_t len)
{
	const char *first = strchr(op, '.'), *last = strrchr(op, '.');
	const char *coll_end, *coll;

	if (!first)
		return false;
	if (!strcmp(op, "logging.entries.list")) {
		snprintf(buf, len, "logging.logEntries.list");
		return true;
	}
	/* service . [projects . [locations .]] collection . verb */
	coll_end = last;
	coll = coll_end;
	while (coll > first && coll[-1] != '.')
		coll--;
	const char *verb = last + 1;
	if (!strcmp(verb, "patch"))
		verb = "update";
	/* Cloud Storage's methods and its permissions (storage.objects.create) */
	if (!strcmp(verb, "insert") || !strcmp(verb, "upload") || !strcmp(verb, "rewrite") ||
	    !strcmp(verb, "copy") || !strcmp(verb, "compose") || !strcmp(verb, "resumableInsert") ||
	    !strcmp(verb, "resumableUpload"))
		verb = "create";
	else if (!strcmp(verb, "download") || !strcmp(verb, "getStorageLayout"))
		verb = "get";
	snprintf(buf, len, "%.*s.%.*s.%s", (int)(first - op), op, (int)(coll_end - coll), coll,
		 verb);
	return true;
}

enum auth_role auth_role_needed(const char *permission)
{
	static const char *const viewer[] = { "get", "list", "getConfig", "wait",
					      "testIamPermissions" };
	static const char *const developer[] = { "create", "cancel", "update", "delete" };
	const char *verb = strrchr(permission, '.');

	verb = verb ? verb + 1 : permission;
	/* Of trainplane's own API, a user reads who they are and the replicas
	 * of their projects' jobs (what a job page shows). */
	if (!strcmp(permission, AUTH_WHOAMI_PERMISSION) ||
	    !strcmp(permission, "trainplane.replicas.list"))
		return ROLE_VIEWER;
	if (!strncmp(permission, "trainplane.", 11))
		return ROLE_ADMIN;	/* the nodes API: the cluster is the admins' */
	for (size_t i = 0; i < ARRAY_SIZE(viewer); i++)
		if (!strcmp(verb, viewer[i]))
			return ROLE_VIEWER;
	for (size_t i = 0; i < ARRAY_SIZE(developer); i++)
		if (!strcmp(verb, developer[i]))
			return ROLE_DEVELOPER;
	return ROLE_ADMIN;	/* IAM, and whatever a later route adds, until said otherwise */
}

static bool token_reaches(const struct auth_token *t, const char *project)
{
	if (t->all_projects)
		return true;
	for (size_t i = 0; i < t->nprojects; i++)
		if (!strcmp(t->projects[i], project))
			return true;
	return false;
}

bool auth_token_allows(const struct auth_token *t, const char *project, const char *permission)
{
	switch (t->kind) {
	case TOKEN_AGENT:
		return false;	/* its routes are checked by auth_agent_allows() */
	case TOKEN_METRICS:
		return !strcmp(permission, AUTH_METRICS_PERMISSION);
	case TOKEN_USER:
		break;
	}
	return t->role >= auth_role_needed(permission) && (!project || token_reaches(t, project));
}

bool auth_route_permission(enum auth_mode mode, const char *op, char *buf, size_t len)
{
	if (mode == AUTH_TOKENS && !strcmp(op, "metrics")) {
		snprintf(buf, len, "%s", AUTH_METRICS_PERMISSION);
		return true;
	}
	return auth_permission(op, buf, len);
}

/* --- secrets held in clear: the cluster token ----------------------------- */

/* Public values nobody may guard a cluster with; matched without case. */
static const char *const known_weak[] = {
	"trainplane-dev-token",	/* the default of open mode, in every README */
};
static const char *const placeholder_marks[] = {
	"change-me", "change_me", "changeme", "replace-me", "replace_me", "replaceme",
	"placeholder", "example", "your-token", "secret-here",
};

double auth_secret_bits(const char *s)
{
	bool lower_hex = false, lower = false, upper_hex = false, upper = false;
	bool b64 = false, b64url = false, other = false;
	size_t n = strlen(s);

	while (n && s[n - 1] == '=')
		n--;	/* base64 padding carries nothing */
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= 0x20 || c >= 0x7f)
			return 0;
		if (c >= '0' && c <= '9')
			continue;
		if (c >= 'a' && c <= 'f')
			lower_hex = true;
		else if (c >= 'a' && c <= 'z')
			lower = true;
		else if (c >= 'A' && c <= 'F')
			upper_hex = true;
		else if (c >= 'A' && c <= 'Z')
			upper = true;
		else if (c == '+' || c == '/')
			b64 = true;
		else if (c == '-' || c == '_')
			b64url = true;
		else
			other = true;
	}
	bool any_lower = lower || lower_hex, any_upper = upper || upper_hex;
	bool digits = strpbrk(s, "0123456789") != NULL;
	double alphabet;
	if (any_lower && any_upper) {
		/* Mixed case: base64 and friends draw from the whole set. */
		if (other || (b64 && b64url))
			alphabet = 94;
		else if (b64 || b64url)
			alphabet = 64;
		else
			alphabet = 62;
	} else if (!lower && !upper && !b64 && !b64url && !other) {
		alphabet = lower_hex || upper_hex ? 16 : 10;	/* hex, or digits */
	} else {
		/* One case: a random string of base64's alphabet would hold both
		 * (all but about 1 in 10^9 of them), so count only the classes
		 * used: "a-lowercase-phrase" is 27 symbols, not 64. */
		alphabet = (digits ? 10 : 0) + 26 + (b64 ? 2 : 0) + (b64url ? 2 : 0) +
			   (other ? 32 : 0);
	}
	return (double)n * log2(alphabet);
}

/* The alphabet size auth_secret_bits() chose, for the message. */
static int secret_alphabet(const char *s, size_t n)
{
	double bits = auth_secret_bits(s);
	return n ? (int)lround(exp2(bits / (double)n)) : 0;
}

PRINTF_LIKE(3, 4)
static bool weak(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return false;
}

bool auth_secret_strong(const char *s, char *why, size_t len)
{
	size_t n = strlen(s), counts[256] = { 0 }, max = 0, steps = 0;

	for (size_t i = 0; i < ARRAY_SIZE(known_weak); i++)
		if (strcasestr(s, known_weak[i]))
			return weak(why, len, "it holds the public default of open mode, known to "
				    "anyone who read the README");
	for (size_t i = 0; i < ARRAY_SIZE(placeholder_marks); i++)
		if (strcasestr(s, placeholder_marks[i]))
			return weak(why, len, "it is a placeholder (it holds \"%s\")",
				    placeholder_marks[i]);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= 0x20 || c >= 0x7f)
			return weak(why, len, "it holds a space, a control or a non-ASCII character "
				    "(position %zu)", i + 1);
	}
	double bits = auth_secret_bits(s);
	size_t counted = n;
	while (counted && s[counted - 1] == '=')
		counted--;
	if (bits < AUTH_SECRET_MIN_BITS)
		return weak(why, len, "%zu characters from an alphabet of %d: %.0f bits, %d needed",
			    counted, secret_alphabet(s, counted), floor(bits), AUTH_SECRET_MIN_BITS);
	for (size_t i = 0; i < counted; i++) {
		unsigned char c = (unsigned char)s[i];
		if (++counts[c] > max)
			max = counts[c];
		if (i) {
			int d = (int)c - (int)(unsigned char)s[i - 1];
			steps += d >= -1 && d <= 1;
		}
	}
	if (max * 3 > counted)
		return weak(why, len, "one character makes up %zu of its %zu characters", max,
			    counted);
	for (size_t p = 1; p <= counted / 2; p++) {
		size_t i = p;
		while (i < counted && s[i] == s[i - p])
			i++;
		if (i == counted)
			return weak(why, len, "it is a block of %zu characters repeated", p);
	}
	if (steps * 2 > counted - 1)
		return weak(why, len, "%zu of its %zu neighbouring characters are equal or in "
			    "sequence (\"abcd\", \"aaaa\")", steps, counted - 1);
	return true;
}

/* --- the agents' credentials ---------------------------------------------- */

static bool digest_equal(const unsigned char a[32], const unsigned char b[32])
{
	unsigned char diff = 0;
	for (int i = 0; i < 32; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return !diff;
}

bool auth_is_cluster_token(const char *cluster_token, const char *bearer)
{
	unsigned char a[32], b[32];

	if (!cluster_token || !*cluster_token || !bearer)
		return false;
	/* Digests compare in constant time whatever the lengths. */
	sha256(cluster_token, a);
	sha256(bearer, b);
	return digest_equal(a, b);
}

enum auth_agent_verdict auth_agent_allows(const char *cluster_token,
					  const struct auth_tokens *tokens, const char *node,
					  const char *bearer)
{
	if (!bearer || !*bearer)
		return AUTH_AGENT_UNAUTHENTICATED;
	if (auth_is_cluster_token(cluster_token, bearer))
		return AUTH_AGENT_ALLOWED;
	const struct auth_token *t = auth_tokens_find(tokens, bearer);
	if (!t || t->kind != TOKEN_AGENT)
		return AUTH_AGENT_UNAUTHENTICATED;
	for (size_t i = 0; i < t->nnodes; i++)
		if (!strcmp(t->nodes[i], node))
			return AUTH_AGENT_ALLOWED;
	return AUTH_AGENT_OTHER_NODE;
}

static int64_t limit_of(const struct auth_inventory_limit *v, size_t n, const char *type)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].type, type))
			return v[i].most;
	return 0;
}

bool auth_inventory_allows(const struct auth_token *t, const struct auth_node_claim *c,
			   char *why, size_t whylen)
{
	const struct auth_inventory *inv = &t->inventory;

	if (!inv->given) {
		snprintf(why, whylen, "the tokens file gives its agent token (%s) no inventory, so "
			 "its nodes may declare nothing: give the token an inventory (the most its "
			 "nodes may declare), or inventory: any", t->name);
		return false;
	}
	if (inv->any)
		return true;
	if (inv->vcpus && c->vcpus > inv->vcpus) {
		snprintf(why, whylen, "it declares %lld vCPUs, and its agent token (%s) allows at "
			 "most %lld", (long long)c->vcpus, t->name, (long long)inv->vcpus);
		return false;
	}
	if (inv->memory_mb && c->memory_mb > inv->memory_mb) {
		snprintf(why, whylen, "it declares %lld MB of memory, and its agent token (%s) "
			 "allows at most %lld", (long long)c->memory_mb, t->name,
			 (long long)inv->memory_mb);
		return false;
	}
	if (inv->nzones && c->zone) {
		bool listed = false;
		for (size_t i = 0; i < inv->nzones && !listed; i++)
			listed = !strcmp(inv->zones[i], c->zone);
		if (!listed) {
			size_t at = (size_t)snprintf(why, whylen, "it declares zone %s, and its agent token "
						     "(%s) allows only ", zone_valid(c->zone) ? c->zone :
						     "(not a zone name)", t->name);
			for (size_t i = 0; i < inv->nzones && at < whylen; i++)
				at += (size_t)snprintf(why + at, whylen - at, "%s%s", i ? ", " : "",
						       inv->zones[i]);
			return false;
		}
	}
	const struct {
		const char *type, *what;
		int64_t n;
		const struct auth_inventory_limit *v;
		size_t nv;
	} kinds[] = {
		{ c->gpu_type, "GPUs", c->gpus, inv->gpus, inv->ngpus },
		{ c->tpu_type, "TPU cores", c->tpu_cores, inv->tpus, inv->ntpus },
	};
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		if (!kinds[i].type || kinds[i].n <= 0)
			continue;
		int64_t most = accel_type_valid(kinds[i].type) ?
			       limit_of(kinds[i].v, kinds[i].nv, kinds[i].type) : 0;
		if (kinds[i].n <= most)
			continue;
		snprintf(why, whylen, "it declares %lld %s of type %s, and its agent token (%s) "
			 "allows %s%lld", (long long)kinds[i].n, kinds[i].what,
			 accel_type_valid(kinds[i].type) ? kinds[i].type : "(not a catalog name)",
			 t->name, most ? "at most " : "", (long long)most);
		return false;
	}
	return true;
}

const char *const auth_ml_job_permissions[] = {
	"ml.jobs.get", "ml.jobs.cancel", "ml.jobs.update", "ml.jobs.getIamPolicy",
	"ml.jobs.setIamPolicy",
};
const size_t auth_ml_job_permissions_count = ARRAY_SIZE(auth_ml_job_permissions);

enum auth_role auth_iam_role(const char *role)
{
	static const struct {
		const char *name;
		enum auth_role role;
	} roles[] = {
		{ "roles/ml.viewer", ROLE_VIEWER },   { "roles/viewer", ROLE_VIEWER },
		{ "roles/ml.developer", ROLE_DEVELOPER }, { "roles/editor", ROLE_DEVELOPER },
		{ "roles/ml.admin", ROLE_ADMIN },     { "roles/ml.jobOwner", ROLE_ADMIN },
		{ "roles/owner", ROLE_ADMIN },
	};
	for (size_t i = 0; i < ARRAY_SIZE(roles); i++)
		if (!strcmp(role, roles[i].name))
			return roles[i].role;
	return ROLE_NONE;
}

bool auth_policy_allows(const json_t *policy, const char *member, const char *permission)
{
	const json_t *b;
	size_t i;

	if (strncmp(permission, "ml.jobs.", 8))
		return false;	/* job policies grant only job permissions */
	json_array_foreach(json_object_get(policy, "bindings"), i, b) {
		const char *role = json_string_value(json_object_get(b, "role"));
		if (!role || auth_iam_role(role) < auth_role_needed(permission))
			continue;
		const json_t *m;
		size_t k;
		json_array_foreach(json_object_get(b, "members"), k, m) {
			const char *s = json_string_value(m);
			if (!s)
				continue;
			if (!strcmp(s, "allUsers") ||
			    (member && (!strcmp(s, "allAuthenticatedUsers") || !strcmp(s, member))))
				return true;
		}
	}
	return false;
}

/* --- decisions on requests -------------------------------------------------- */

static struct auth_decision allow(void)
{
	return (struct auth_decision){ .allowed = true, .store_rc = STORE_OK };
}

/* A refusal: code, HTTP status (0: the code's), details (stolen) and the message. */
PRINTF_LIKE(4, 5)
static struct auth_decision refuse(enum api_code code, int http, json_t *details,
				   const char *fmt, ...)
{
	struct auth_decision d = { .code = code, .http = http, .details = details,
				   .store_rc = STORE_OK };
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&d.message, fmt, ap) < 0)
		abort();
	va_end(ap);
	return d;
}

void auth_decision_release(struct auth_decision *d)
{
	json_decref(d->details);
	free(d->message);
	*d = (struct auth_decision){ 0 };
}

static const char *param(const struct auth_request *ar, size_t i)
{
	return i < ar->nparams ? ar->params[i] : NULL;
}

/* The Bearer credential of the Authorization header, or NULL. */
static const char *bearer(const struct auth_request *ar)
{
	const char *auth = ar->authorization;
	return auth && !strncasecmp(auth, "Bearer ", 7) ? auth + 7 : NULL;
}

/* A user's credential: the Bearer token, else ?key=. */
static const char *credential(const struct auth_request *ar)
{
	const char *b = bearer(ar);
	return b ? b : ar->key;
}

#define AUTH_HELP "Expected OAuth 2 access token, login cookie or other valid authentication " \
		  "credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."

static struct auth_decision unauthenticated(bool missing)
{
	json_t *details = json_pack("[{s:s, s:s, s:s}]", "@type",
				    "type.googleapis.com/google.rpc.ErrorInfo", "reason",
				    missing ? "CREDENTIALS_MISSING" : "ACCESS_TOKEN_TYPE_UNSUPPORTED",
				    "domain", "googleapis.com");
	return refuse(API_UNAUTHENTICATED, 0, details, "%s",
		      missing ? "Request is missing required authentication credential. " AUTH_HELP
			      : "Request had invalid authentication credentials. " AUTH_HELP);
}

/*
 * The tokens file version this request uses, held until the request ends.
 * The agent check and authentication never both take it (agent routes skip
 * the one, user routes the other); a second take drops the first rather
 * than leak it.
 */
static const struct auth_tokens *request_tokens(const struct auth_request *ar)
{
	snapshot_release(*ar->tokens_ref);
	*ar->tokens_ref = NULL;
	return snapshot_acquire(ar->tokens, ar->tokens_ref);
}

struct auth_decision auth_check_agent(const struct auth_request *ar)
{
	const char *token = bearer(ar);
	char perm[128];

	if (ar->agent_route) {
		const struct auth_tokens *t = ar->mode == AUTH_TOKENS ? request_tokens(ar) : NULL;
		const char *node = param(ar, 0);
		if (api_slurm_pilot_token(token)) {
			/* A Slurm job's pilot: its job's secret, for that job's nodes only. */
			struct pilot_claim claim;
			bool ok = false;
			bool reg = ar->path && strstr(ar->path, ":register");
			enum store_rc rc = api_slurm_pilot_check(ar->store, node ? node : "", token, reg,
								 &ok, &claim);
			if (rc != STORE_OK)
				return (struct auth_decision){ .store_rc = rc };
			if (ok)
				return allow();
			return refuse(API_UNAUTHENTICATED, 0, NULL, "%s",
				      "Request had invalid authentication credentials: this pilot token "
				      "is not valid for this node (another job's, an ended job's, or, to "
				      "register, a run of the job that Slurm has since restarted).");
		}
		switch (auth_agent_allows(ar->cluster_token, t, node ? node : "", token)) {
		case AUTH_AGENT_ALLOWED:
			return allow();
		case AUTH_AGENT_OTHER_NODE:
			return refuse(API_PERMISSION_DENIED, 0, NULL,
				      "The caller does not have permission: this agent token is not "
				      "bound to node %s.", node);
		case AUTH_AGENT_UNAUTHENTICATED:
			break;
		}
		return refuse(API_UNAUTHENTICATED, 0, NULL, "%s",
			      "Request had invalid authentication credentials: agent routes need the "
			      "cluster token or the node's agent token (Authorization: Bearer).");
	}
	if (auth_route_permission(ar->mode, ar->operation_id, perm, sizeof(perm)) &&
	    auth_is_cluster_token(ar->cluster_token, token)) {
		/* (public routes such as /healthz take anyone) */
		return refuse(API_PERMISSION_DENIED, 0, NULL, "%s",
			      "The caller does not have permission: the agents' cluster token "
			      "cannot call user APIs.");
	}
	return allow();
}

struct auth_decision auth_authenticate(struct auth_request *ar)
{
	if (ar->mode == AUTH_TOKENS && ar->agent_route) {
		/* Admitted by auth_check_agent(): a node's own token is the caller
		 * (its inventory bounds the register), the cluster token none. */
		const char *b = bearer(ar);
		const struct auth_token *t = !b || auth_is_cluster_token(ar->cluster_token, b) ?
					     NULL : auth_tokens_find(request_tokens(ar), b);
		ar->caller = t && t->kind == TOKEN_AGENT ? t : NULL;
		return allow();
	}
	if (ar->mode == AUTH_OPEN || ar->agent_route)
		return allow();	/* agent routes: auth_check_agent() */
	char perm[128];
	if (!auth_route_permission(ar->mode, ar->operation_id, perm, sizeof(perm)))
		return allow();	/* public */
	const char *cred = credential(ar);
	if (!cred || !*cred)
		return unauthenticated(true);
	ar->caller = auth_tokens_find(request_tokens(ar), cred);
	if (!ar->caller)
		return unauthenticated(false);
	if (ar->caller->kind != TOKEN_USER && !auth_token_allows(ar->caller, NULL, perm)) {
		/* Before any IAM policy: an agent's or a scraper's token is no user. */
		return refuse(API_PERMISSION_DENIED, 0, NULL,
			      "The caller does not have permission: %s tokens open %s only.",
			      ar->caller->kind == TOKEN_AGENT ? "agent" : "metrics",
			      ar->caller->kind == TOKEN_AGENT ? "the agent routes of their nodes"
							      : "/metrics");
	}
	return allow();
}

/*
 * "projects/p/jobs/j" for /v1/projects/p/jobs/j:cancel (and trainplane's
 * /trainplane/v1/projects/p/...); the parent for list/create.
 */
static char *resource_name(const char *path, const char *permission)
{
	const char *p = path;
	const char *verb = strrchr(permission, '.') + 1;

	if (!strncmp(p, "/v1/", 4))
		p += 4;
	else if (!strncmp(p, "/trainplane/v1/", 15))
		p += 15;
	else if (*p == '/')
		p++;
	size_t n = strcspn(p, ":");
	if (!strcmp(verb, "list") || !strcmp(verb, "create")) {
		const char *slash = memrchr(p, '/', n);
		if (slash)
			n = (size_t)(slash - p);
	}
	return xstrndup(p, n);
}

static struct auth_decision denied(const char *permission, const char *resource)
{
	json_t *details = json_pack("[{s:s, s:s, s:s, s:{s:s}}]", "@type",
				    "type.googleapis.com/google.rpc.ErrorInfo", "reason",
				    "IAM_PERMISSION_DENIED", "domain", "iam.googleapis.com",
				    "metadata", "permission", permission);
	return refuse(API_PERMISSION_DENIED, 0, details,
		      "Permission '%s' denied on resource '%s' (or it may not exist).", permission,
		      resource);
}

static bool is_ml_job_route(const struct auth_request *ar)
{
	return !strncmp(ar->operation_id, "ml.projects.jobs.", 17) && param(ar, 1);
}

enum store_rc auth_allows_job(struct store *st, enum auth_mode mode,
			      const struct auth_token *caller, const char *project,
			      const char *job_id, const char *permission, bool *allowed)
{
	char *policy = NULL;
	int64_t etag;

	*allowed = true;
	if (mode == AUTH_OPEN || auth_token_allows(caller, project, permission))
		return STORE_OK;
	*allowed = false;
	enum store_rc rc = store_iam_get(st, "ml", project, job_id, &policy, &etag);
	if (rc == STORE_NOT_FOUND)
		return STORE_OK;
	if (rc != STORE_OK)
		return rc;
	json_t *p = json_loads(policy, 0, NULL);
	*allowed = p && auth_policy_allows(p, caller->member, permission);
	json_decref(p);
	free(policy);
	return STORE_OK;
}

/* logging's entries:list names its projects in the body: "projects/<id>". */
static bool logging_allowed(const struct auth_request *ar, const char *permission,
			    char **denied_name)
{
	const json_t *names = json_object_get(ar->body, "resourceNames"), *n;
	size_t i;

	json_array_foreach(names, i, n) {
		const char *s = json_string_value(n);
		if (!s || strncmp(s, "projects/", 9))
			continue;	/* the handler refuses what is not a project */
		if (!auth_token_allows(ar->caller, s + 9, permission)) {
			*denied_name = xstrdup(s);
			return false;
		}
	}
	return true;
}

struct auth_decision auth_authorize(const struct auth_request *ar)
{
	char perm[128];

	if (ar->mode == AUTH_OPEN || ar->agent_route || !ar->caller ||
	    !auth_route_permission(ar->mode, ar->operation_id, perm, sizeof(perm)))
		return allow();
	if (!strcmp(perm, "ml.jobs.testIamPermissions"))
		return allow();	/* anyone signed in; the answer is what they hold */
	if (!strcmp(perm, "logging.logEntries.list")) {
		char *name = NULL;
		if (logging_allowed(ar, perm, &name))
			return allow();
		struct auth_decision d = denied(perm, name);
		free(name);
		return d;
	}
	/* Routes under /v1/projects/{projectsId}/ and trainplane's
	 * /trainplane/v1/projects/{projectsId}/ have the project first. */
	const char *project = ar->project ? ar->project :
			      !strncmp(ar->pattern, "/v1/projects/{", 14) ||
			      !strncmp(ar->pattern, "/trainplane/v1/projects/{", 25) ? param(ar, 0) : NULL;
	bool ok = true;
	if (!is_ml_job_route(ar)) {
		ok = auth_token_allows(ar->caller, project, perm);
	} else {
		enum store_rc rc = auth_allows_job(ar->store, ar->mode, ar->caller, project,
						   param(ar, 1), perm, &ok);
		if (rc != STORE_OK)
			return (struct auth_decision){ .store_rc = rc };
	}
	if (ok)
		return allow();
	char *res = resource_name(ar->path, perm);
	struct auth_decision d = denied(perm, res);
	free(res);
	return d;
}
