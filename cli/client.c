/*
 * client.c - the CLI's calls to the server: one request with the caller's
 * token (curl; https always verified), the reply parsed or its error
 * rendered as gcloud does, escaped paths.
 */
#include "client.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"

const char *cli_endpoint, *cli_ca_file;
const char *cli_endpoint_source = "the default";

const char *cli_endpoint_file(char *buf, size_t size, const char **source)
{
	static char path[1024];
	const char *dir = getenv("TRAINPLANE_STATE_DIR");
	snprintf(path, sizeof path, "%s/endpoint", dir && *dir ? dir : "./var");
	FILE *f = fopen(path, "r");
	if (f) {
		if (fgets(buf, (int)size, f)) {
			size_t n = strcspn(buf, "\r\n");
			buf[n] = '\0';
			while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\t'))
				buf[--n] = '\0';
			char *b = buf;
			while (*b == ' ' || *b == '\t')
				b++;
			if (*b) {
				fclose(f);
				*source = path;
				return b;
			}
		}
		fclose(f);
	}
	*source = "the default";
	return "http://127.0.0.1:8080/";
}
const char *cli_cmd_name = "trainplane";

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	sb_add(ud, p, sz * n);
	return sz * n;
}

long cli_http(const char *method, const char *path, const json_t *body, struct strbuf *resp)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char *url, *data = NULL, *auth = NULL;
	size_t el = strlen(cli_endpoint);
	long status = -1;
	char errbuf[CURL_ERROR_SIZE] = "";
	url = xasprintf("%.*s%s", (int)(el && cli_endpoint[el - 1] == '/' ? el - 1 : el), cli_endpoint, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	/* https: always verified; against --ca-file / TRAINPLANE_CA_FILE when set. */
	if (cli_ca_file && *cli_ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, cli_ca_file);
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
	if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_OPERATION_TIMEDOUT) {
		/* say which endpoint, from where, and how to choose another */
		const char *why = !strcmp(cli_endpoint_source, "--endpoint") ? "from --endpoint"
				  : !strcmp(cli_endpoint_source, "TRAINPLANE_ENDPOINT") ? "from TRAINPLANE_ENDPOINT"
				  : !strcmp(cli_endpoint_source, "the default") ? "the default" : NULL;
		fprintf(stderr, "ERROR: (%s) cannot reach the trainplane server at %s (%s%s; set TRAINPLANE_ENDPOINT "
			"or --endpoint, or start it with make run): %s\n", cli_cmd_name, cli_endpoint,
			why ? why : "from the file ", why ? "" : cli_endpoint_source, *errbuf ? errbuf : curl_easy_strerror(rc));
	} else if (rc != CURLE_OK) {
		fprintf(stderr, "ERROR: (%s) Could not reach %s: %s\n", cli_cmd_name, url, curl_easy_strerror(rc));
	}
	else
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(url);
	free(data);
	free(auth);
	return status;
}

json_t *cli_call(const char *method, const char *path, const json_t *body)
{
	struct strbuf resp = STRBUF_INIT;
	long st = cli_http(method, path, body, &resp);
	json_t *out = NULL;
	if (st >= 200 && st < 300) {
		out = json_loads(sb_str(&resp), 0, NULL);
		if (!out)
			out = json_object();
	} else if (st > 0) {
		struct strbuf e = STRBUF_INIT;
		cli_render_error(&e, cli_cmd_name, st, path, sb_str(&resp));
		fputs(sb_str(&e), stderr);
		sb_release(&e);
	}
	sb_release(&resp);
	return out;
}

char *cli_escape(const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0);
	char *out = xstrdup(e);
	curl_free(e);
	return out;
}

char *cli_name_path(const char *name, const char *suffix)
{
	struct strbuf sb = STRBUF_INIT;
	char *copy = xstrdup(name), *save = NULL;
	sb_addstr(&sb, "/v1");
	for (char *s = strtok_r(copy, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
		char *e = cli_escape(s);
		sb_addf(&sb, "/%s", e);
		free(e);
	}
	sb_addstr(&sb, suffix ? suffix : "");
	free(copy);
	return sb_detach(&sb);
}
