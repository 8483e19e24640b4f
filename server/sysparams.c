/*
 * sysparams.c - Google's system parameters (docs/api.md, "System
 * parameters"): read once per request by the router, before anything else
 * reads the query; what they change is applied where replies are written
 * (reply.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fields.h"
#include "http_internal.h"

/* A system parameter by its name or its "$" form ("fields", "$fields"); the first given. */
static const char *sys_query(struct request *req, const char *name, const char **sent_as)
{
	char dollar[32];

	snprintf(dollar, sizeof(dollar), "$%s", name);
	for (size_t i = 0; i < req->nquery; i++) {
		const char *k = req->query[i].key;
		if (!strcmp(k, name) || !strcmp(k, dollar)) {
			*sent_as = k;
			return req->query[i].value ? req->query[i].value : "";
		}
	}
	return NULL;
}

/* A 400 naming the parameter in a BadRequest detail. */
static void refuse(struct request *req, const char *field, const char *description,
		   const char *message)
{
	struct violations vs = VIOLATIONS_INIT;

	violations_add(&vs, field, "%s", description);
	reply_violations(req, &vs, message);
	violations_release(&vs);
}

/* prettyPrint (and pp, its One Platform twin, which gcloud's apitools sends as 0). */
static int read_pretty(struct request *req, const char *name, const char *field)
{
	const char *as, *v = sys_query(req, name, &as);

	if (!v || req->sys.pretty)
		return 0;
	if (!strcasecmp(v, "true") || !strcmp(v, "1")) {
		req->sys.pretty = SYS_PRETTY_ON;
		return 0;
	}
	if (!strcasecmp(v, "false") || !strcmp(v, "0")) {
		req->sys.pretty = SYS_PRETTY_OFF;
		return 0;
	}
	char *msg = xasprintf("Invalid value at '%s' (TYPE_BOOL), \"%.128s\"", field, v);
	char *why = xasprintf("%s is true or false (or 1 or 0); it is true when not given", as);
	refuse(req, field, why, msg);
	free(why);
	free(msg);
	return -1;
}

/* $.xgafv: the last repeat counts, as Google's front end reads it. */
static int read_xgafv(struct request *req)
{
	const char *v = NULL;

	for (size_t i = 0; i < req->nquery; i++)
		if (!strcmp(req->query[i].key, "$.xgafv"))
			v = req->query[i].value ? req->query[i].value : "";
	if (!v)
		return 0;
	if (!strcmp(v, "1") || !strcmp(v, "2")) {
		req->sys.xgafv = (unsigned char)(v[0] - '0');
		return 0;
	}
	char *msg = xasprintf("Invalid query parameters. Invalid value '%.128s' for system query "
			      "parameter : $.xgafv", v);
	refuse(req, "$.xgafv", "$.xgafv selects the error format: 1 (with the errors[] list) or 2 "
	       "(the default)", msg);
	free(msg);
	return -1;
}

/* fields, or the X-Goog-FieldMask header when the parameter is not given. */
static int read_fields(struct request *req)
{
	const char *as, *mask = sys_query(req, "fields", &as);
	char err[160];

	if (!mask) {
		mask = req_header(req, "X-Goog-FieldMask");
		as = "X-Goog-FieldMask";
	}
	if (!mask || !fields_parse(mask, &req->sys.fields, err, sizeof(err)))
		return 0;
	char *msg = xasprintf("Error expanding '%s' parameter '%.200s': %s.", as, mask, err);
	refuse(req, as, err, msg);
	free(msg);
	return -1;
}

int sysparams_read_or_reply(struct request *req)
{
	const char *as, *callback;

	if (read_pretty(req, "prettyPrint", "pretty_print") || read_pretty(req, "pp", "pp") ||
	    read_xgafv(req) || read_fields(req))
		return -1;
	/* JSONP: an empty callback is none (Google's reading too). */
	callback = sys_query(req, "callback", &as);
	if (callback && *callback) {
		refuse(req, as, "JSONP is not supported: remove the callback parameter",
		       "JSONP is not supported: trainplane answers JSON only; remove the callback "
		       "parameter.");
		return -1;
	}
	return 0;
}

static const char *const xgafv_values[] = { "1", "2", NULL };
static const char *const alt_values[] = { "json", "media", NULL };

/* What the code above reads, and what it accepts and ignores (docs/api.md). */
const struct sysparam_doc sysparam_docs[] = {
	{ "$.xgafv", "string", NULL, xgafv_values,
	  "The error format: 2 (the default) is the envelope {\"error\": {code, message, "
	  "status, details}}; 1 adds the errors[] list of Google's older clients." },
	{ "access_token", "string", NULL, NULL,
	  "Accepted and ignored: credentials are read from the Authorization header (and from "
	  "key in auth_mode tokens)." },
	{ "alt", "string", "json", alt_values,
	  "json (the default); media serves an object's bytes (Cloud Storage downloads only)." },
	{ "callback", "string", NULL, NULL,
	  "JSONP is not supported: a non-empty callback is refused (400)." },
	{ "fields", "string", NULL, NULL,
	  "A partial response: the fields of a successful reply to keep, e.g. "
	  "jobs(jobId,state),nextPageToken." },
	{ "key", "string", NULL, NULL,
	  "An API key: a token of the tokens file in auth_mode tokens; accepted and ignored in "
	  "auth_mode open." },
	{ "oauth_token", "string", NULL, NULL,
	  "Accepted and ignored: credentials are read from the Authorization header." },
	{ "prettyPrint", "boolean", "true", NULL,
	  "Indented JSON replies (true, the default), or compact ones (false)." },
	{ "quotaUser", "string", NULL, NULL, "Accepted and ignored." },
	{ "uploadType", "string", NULL, NULL,
	  "Cloud Storage uploads: media, multipart or resumable; accepted and ignored "
	  "elsewhere." },
	{ "upload_protocol", "string", NULL, NULL, "Accepted and ignored." },
};
const size_t sysparam_docs_count = ARRAY_SIZE(sysparam_docs);

/* Routes whose answer may be the object's bytes (alt=media). */
static bool serves_media(const struct route *r)
{
	return !strcmp(r->operation_id, "storage.objects.get") ||
	       !strcmp(r->operation_id, "storage.objects.download");
}

int sysparams_alt_or_reply(struct request *req)
{
	const char *as, *alt = sys_query(req, "alt", &as);
	size_t flen;

	if (!alt)
		return 0;
	/* "json;enum-encoding=int" is what google-gax's REST transport sends. */
	flen = strcspn(alt, ";");
	if (flen == 0 && !alt[0])
		return 0;	/* alt= is the default */
	if (flen == 4 && !strncasecmp(alt, "json", 4)) {
		const char *opt = alt + flen;
		if (!*opt || !strcasecmp(opt, ";enum-encoding=int") ||
		    !strcasecmp(opt, ";enum-encoding=string"))
			return 0;
	} else if (flen == 5 && !strncasecmp(alt, "media", 5) && !alt[5]) {
		if (serves_media(req->route)) {
			req->sys.media = true;
			return 0;
		}
		refuse(req, as, "alt=media is for object downloads",
		       "Unsupported alt type \"media\" for non byte stream request.");
		return -1;
	} else if ((flen == 5 && !strncasecmp(alt, "proto", 5)) ||
		   (flen == 3 && !strncasecmp(alt, "sse", 3))) {
		char *msg = xasprintf("Unsupported alt type \"%.*s\": trainplane answers JSON only "
				      "(alt=json).", (int)flen, alt);
		refuse(req, as, "alt is json (the default), or media on object downloads", msg);
		free(msg);
		return -1;
	}
	char *msg = xasprintf("Invalid value \"%.128s\" for query parameter '%s'.", alt, as);
	refuse(req, as, "alt is json (the default), or media on object downloads", msg);
	free(msg);
	return -1;
}

/*
 * The routes of Google's APIs (ml v1, Vertex, Logging, Cloud Storage), and
 * what no route matched (Google's front end answers it). trainplane's own
 * (health, nodes, the agents') keep their compact replies.
 */
static bool google_api(const struct route *r)
{
	/* (the discovery documents' ids have no dot: they are public) */
	static const char *const prefixes[] = { "ml.", "aiplatform.", "logging.", "storage.",
						"discovery" };

	if (!r)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (!strncmp(r->operation_id, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

bool sysparams_pretty(const struct request *req, int status)
{
	if (req->sys.pretty == SYS_PRETTY_ON)
		return true;
	if (!google_api(req->route))
		return false;
	/* Google indents its errors whatever prettyPrint says. */
	return status >= 400 || req->sys.pretty != SYS_PRETTY_OFF;
}

const char *sysparams_error_reason(enum api_code code)
{
	switch (code) {
	case API_INVALID_ARGUMENT:
	case API_OUT_OF_RANGE: return "badRequest";
	case API_FAILED_PRECONDITION: return "failedPrecondition";
	case API_NOT_FOUND: return "notFound";
	case API_ALREADY_EXISTS: return "conflict";
	case API_ABORTED: return "aborted";
	case API_PERMISSION_DENIED: return "forbidden";
	case API_UNAUTHENTICATED: return "authError";
	case API_RESOURCE_EXHAUSTED: return "rateLimitExceeded";
	case API_UNIMPLEMENTED: return "notImplemented";
	case API_DEADLINE_EXCEEDED: return "deadlineExceeded";
	case API_CANCELLED: return "cancelled";
	default: return "backendError";
	}
}
