/*
 * console.c - the web console (console/, docs/console.md): its files,
 * compiled in by tools/embed_console.sh (console_assets.h), at GET and
 * HEAD /console/ (index.html; GET /console too: the page's <base> names
 * its files under /console/) and /console/{file}. A name is looked up in
 * the table, never made into a path, so nothing outside it can be reached
 * ("..", "%2F" and the like name no file: 404). Each reply carries the
 * file's ETag (If-None-Match: 304), Cache-Control: no-cache (a browser
 * revalidates, so a new build shows at once), and a Content-Security-Policy
 * that allows this origin alone: no inline script, nothing from elsewhere.
 * The console is a client of the public API like any other: its files are
 * public, the data it reads takes the caller's credentials.
 */
#include "console.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console_assets.h"

#define CONSOLE_HEADERS \
	"Cache-Control: no-cache\r\n" \
	"X-Content-Type-Options: nosniff\r\n" \
	"Referrer-Policy: no-referrer\r\n" \
	"Content-Security-Policy: default-src 'self'; img-src 'self' data:; " \
	"frame-ancestors 'none'; base-uri 'self'; form-action 'none'\r\n"

static const struct console_asset *asset_named(const char *name)
{
	for (size_t i = 0; i < console_assets_count; i++)
		if (!strcmp(console_assets[i].name, name))
			return &console_assets[i];
	return NULL;
}

/* Whether an If-None-Match value ("*", or a list of tags, weak or not) names etag. */
static bool etag_listed(const char *header, const char *etag)
{
	size_t n = strlen(etag);
	const char *p = header;

	while (*p) {
		p += strspn(p, " \t,");
		if (*p == '*')
			return true;
		if (!strncmp(p, "W/", 2))
			p += 2;
		size_t len = strcspn(p, " \t,");
		if (len == n && !memcmp(p, etag, n))
			return true;
		p += len;
	}
	return false;
}

void api_console_get(struct request *req)
{
	const char *name = req->params[0] ? req->params[0] : "index.html";
	const struct console_asset *a = asset_named(name);

	if (!a) {
		reply_error(req, API_NOT_FOUND, "The requested URL %s was not found on this server.",
			    req->path);
		return;
	}
	char extra[512];
	snprintf(extra, sizeof(extra), "ETag: %s\r\n" CONSOLE_HEADERS, a->etag);
	const char *since = req_header(req, "If-None-Match");
	int status = since && etag_listed(since, a->etag) ? 304 : 200;
	char *body = xmalloc(a->len);
	memcpy(body, a->data, a->len);
	reply_bytes(req, status, a->content_type, body, a->len, extra);
}
