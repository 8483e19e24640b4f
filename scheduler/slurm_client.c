/*
 * slurm_client.c - HTTP to slurmrestd with libcurl: one kept-alive
 * connection, TCP with a JWT (X-SLURM-USER-NAME / X-SLURM-USER-TOKEN) or a
 * UNIX socket (rest_auth/local). The token is a secret: read from its file
 * (mode checked), never logged, never defaulted.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "slurm.h"
#include "strbuf.h"

struct slurm_client {
	struct slurm_client_config cfg;
	const struct slurm_api *api;
	CURL *curl;
	char *base;		/* http://host:port/slurm/v0.0.38 */
	char *unix_path;	/* NULL: TCP */
	char *token;		/* NULL: no JWT (UNIX socket) */
};

struct slurm_client *slurm_client_new(const struct slurm_client_config *cfg)
{
	struct slurm_client *c = xcalloc(1, sizeof(*c));

	c->cfg = *cfg;
	c->api = slurm_api_find(cfg->version);
	if (!strncmp(cfg->url, "unix:", 5)) {
		c->unix_path = xstrdup(cfg->url + 5);
		c->base = xasprintf("http://localhost/slurm/%s", c->api ? c->api->version : "");
	} else {
		size_t n = strlen(cfg->url);
		while (n && cfg->url[n - 1] == '/')
			n--;
		c->base = xasprintf("%.*s/slurm/%s", (int)n, cfg->url, c->api ? c->api->version : "");
	}
	return c;
}

void slurm_client_free(struct slurm_client *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	if (c->token) {
		explicit_bzero(c->token, strlen(c->token));
		free(c->token);
	}
	free(c->unix_path);
	free(c->base);
	free(c);
}

const struct slurm_api *slurm_client_api(const struct slurm_client *c)
{
	return c->api;
}

/* The JWT: the file's first line, the file not readable by others. */
static int read_token(struct slurm_client *c, char *err, size_t errlen)
{
	char buf[8192];
	struct stat st;
	int fd = open(c->cfg.token_file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0) {
		snprintf(err, errlen, "cannot read the Slurm token file %s: %s", c->cfg.token_file,
			 strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || (st.st_mode & 077)) {
		close(fd);
		snprintf(err, errlen, "the Slurm token file %s may be read by others (mode %03o): "
			 "it is a secret; chmod 600 it", c->cfg.token_file,
			 (unsigned)(st.st_mode & 0777));
		return -1;
	}
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) {
		snprintf(err, errlen, "the Slurm token file %s is empty", c->cfg.token_file);
		return -1;
	}
	buf[n] = 0;
	buf[strcspn(buf, "\r\n")] = 0;
	const char *t = buf;
	if (!strncmp(t, "SLURM_JWT=", 10))
		t += 10;	/* scontrol token's own output */
	for (const char *p = t; *p; p++)
		if (*p <= ' ' || *p > '~') {
			explicit_bzero(buf, sizeof(buf));
			snprintf(err, errlen, "the Slurm token file %s holds no token (a JWT: one "
				 "line of printable characters)", c->cfg.token_file);
			return -1;
		}
	if (!*t) {
		snprintf(err, errlen, "the Slurm token file %s is empty", c->cfg.token_file);
		return -1;
	}
	if (c->token) {
		explicit_bzero(c->token, strlen(c->token));
		free(c->token);
	}
	c->token = xstrdup(t);
	explicit_bzero(buf, sizeof(buf));
	return 0;
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct strbuf *sb = arg;
	if (sb->len + size * n > (size_t)64 << 20)
		return 0;	/* 64 MiB: no sane reply is larger */
	sb_add(sb, data, size * n);
	return size * n;
}

int slurm_client_call(struct slurm_client *c, const char *method, const char *path,
		      const json_t *body, int *http, json_t **reply, char *err, size_t errlen)
{
	struct strbuf out = STRBUF_INIT;
	struct curl_slist *h = NULL;
	char *url = xasprintf("%s%s", c->base, path), *text = NULL;
	long code = 0;
	int rc = -1;

	*http = 0;
	*reply = NULL;
	if (!c->curl && !(c->curl = curl_easy_init())) {
		snprintf(err, errlen, "libcurl could not start");
		goto out;
	}
	CURL *e = c->curl;
	curl_easy_reset(e);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(c->cfg.timeout_ms > 0 ? c->cfg.timeout_ms : 10000));
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &out);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	if (c->unix_path)
		curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, c->unix_path);
	h = curl_slist_append(h, "Accept: application/json");
	if (c->token) {
		char *u = xasprintf("X-SLURM-USER-NAME: %s", c->cfg.user ? c->cfg.user : "");
		char *t = xasprintf("X-SLURM-USER-TOKEN: %s", c->token);
		h = curl_slist_append(h, u);
		h = curl_slist_append(h, t);
		explicit_bzero(t, strlen(t));
		free(t);
		free(u);
	}
	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		h = curl_slist_append(h, "Content-Type: application/json");
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, text);
	}
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	CURLcode cr = curl_easy_perform(e);
	if (cr != CURLE_OK) {
		snprintf(err, errlen, "slurmrestd at %s did not answer: %s", c->cfg.url,
			 curl_easy_strerror(cr));
		goto out;
	}
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	*http = (int)code;
	if (out.len) {
		*reply = json_loadb(out.buf, out.len, 0, NULL);
		if (!*reply) {
			snprintf(err, errlen, "slurmrestd at %s answered HTTP %ld with a body that is "
				 "not JSON", c->cfg.url, code);
			goto out;
		}
	}
	rc = 0;
out:
	curl_slist_free_all(h);
	free(text);
	free(url);
	sb_release(&out);
	return rc;
}

int slurm_client_open(struct slurm_client *c, char *err, size_t errlen)
{
	char why[512], release[64];
	json_t *reply = NULL;
	int http, rc = -1;

	if (!c->api) {
		snprintf(err, errlen, "slurmrestd's schema %s is not one trainplane speaks (v0.0.38 "
			 "is)", c->cfg.version);
		return -1;
	}
	if (c->cfg.token_file && read_token(c, err, errlen))
		return -1;
	if (slurm_client_call(c, "GET", "/ping", NULL, &http, &reply, err, errlen))
		return -1;
	if (c->api->error(http, reply, why, sizeof(why)) != SLURM_OK) {
		snprintf(err, errlen, "slurmrestd at %s refused trainplane's ping (HTTP %d): %s%s",
			 c->cfg.url, http, why,
			 http == 500 || http == 401 ? "; is the token in its file valid and "
			 "unexpired, and the user right?" : "");
		goto out;
	}
	if (c->api->check_release(reply, release, sizeof(release), why, sizeof(why))) {
		snprintf(err, errlen, "slurmrestd at %s (Slurm %s): %s", c->cfg.url,
			 *release ? release : "of an unknown release", why);
		goto out;
	}
	rc = 0;
out:
	json_decref(reply);
	return rc;
}
