/*
 * http.c - see http.h.
 */
#include "http.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#define HTTP_BODY_MAX (64 << 20)

struct http_client {
	CURLM *multi;
	CURL *easy;
	struct curl_slist *headers;
	char *ca_file;		/* NULL: the system's CAs */
	char *body;
	struct strbuf resp;
	bool busy, overflow;
	bool allow_insecure_http;	/* else plain HTTP reaches loopback addresses only */
	char refused[160];	/* why a connection was refused, for http_error() */
	char error[CURL_ERROR_SIZE];
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct http_client *c = arg;
	if (c->resp.len + size * n > HTTP_BODY_MAX) {
		c->overflow = true;
		return 0;
	}
	sb_add(&c->resp, p, size * n);
	return size * n;
}

bool http_addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

static bool name_is_localhost(const char *host)
{
	size_t n = strlen(host);
	return !strcasecmp(host, "localhost") ||
	       (n > 10 && !strcasecmp(host + n - 10, ".localhost"));
}

bool http_url_is_loopback(const char *url, char *host, size_t hostlen)
{
	CURLU *u = curl_url();
	char *h = NULL;
	bool loopback = false;

	snprintf(host, hostlen, "%s", "");
	/* libcurl's own parser: the host it will connect to, userinfo and all. */
	if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &h, 0) != CURLUE_OK || !h || !*h)
		goto out;
	size_t n = strlen(h);
	if (h[0] == '[' && n > 2 && h[n - 1] == ']')
		snprintf(host, hostlen, "%.*s", (int)(n - 2), h + 1);
	else
		snprintf(host, hostlen, "%s", h);
	if (name_is_localhost(host)) {
		loopback = true;
		goto out;
	}
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
	if (getaddrinfo(host, NULL, &hints, &res) || !res)
		goto out;
	loopback = true;
	for (const struct addrinfo *a = res; a; a = a->ai_next)
		loopback = loopback && http_addr_is_loopback(a->ai_addr);
	freeaddrinfo(res);
out:
	curl_free(h);
	curl_url_cleanup(u);
	return loopback;
}

/*
 * Plain HTTP without allow_insecure_http: every connection libcurl opens,
 * to the server or a proxy, goes to a loopback address or not at all.
 */
static curl_socket_t open_loopback_only(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct http_client *c = arg;

	if (purpose == CURLSOCKTYPE_IPCXN && !http_addr_is_loopback(&a->addr)) {
		char ip[INET6_ADDRSTRLEN] = "?";
		const void *bin = a->family == AF_INET6 ?
			(const void *)&((const struct sockaddr_in6 *)&a->addr)->sin6_addr :
			(const void *)&((const struct sockaddr_in *)&a->addr)->sin_addr;
		inet_ntop(a->family, bin, ip, sizeof(ip));
		snprintf(c->refused, sizeof(c->refused), "refused to send the token over plain HTTP "
			 "to %s, not a loopback address (use https://, or allow_insecure_http)", ip);
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

struct http_client *http_client_new(const char *token, const char *ca_file,
				    bool allow_insecure_http)
{
	static bool global_done;
	if (!global_done) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT))
			return NULL;
		global_done = true;
	}
	struct http_client *c = xcalloc(1, sizeof(*c));
	c->multi = curl_multi_init();
	c->easy = curl_easy_init();
	if (!c->multi || !c->easy) {
		http_client_free(c);
		return NULL;
	}
	c->ca_file = ca_file && *ca_file ? xstrdup(ca_file) : NULL;
	c->allow_insecure_http = allow_insecure_http;
	char *auth = xasprintf("Authorization: Bearer %s", token ? token : "");
	c->headers = curl_slist_append(NULL, auth);
	c->headers = curl_slist_append(c->headers, "Content-Type: application/json");
	c->headers = curl_slist_append(c->headers, "Expect:");
	free(auth);
	return c;
}

void http_client_free(struct http_client *c)
{
	if (!c)
		return;
	http_abort(c);
	if (c->easy)
		curl_easy_cleanup(c->easy);
	if (c->multi)
		curl_multi_cleanup(c->multi);
	curl_slist_free_all(c->headers);
	free(c->ca_file);
	free(c->body);
	sb_release(&c->resp);
	free(c);
}

int http_post_start(struct http_client *c, const char *url, const char *body, long timeout_s)
{
	http_abort(c);
	free(c->body);
	c->body = xstrdup(body);
	sb_reset(&c->resp);
	c->overflow = false;
	c->error[0] = '\0';
	c->refused[0] = '\0';
	curl_easy_reset(c->easy);
	curl_easy_setopt(c->easy, CURLOPT_URL, url);
	curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, c->headers);
	curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, c->body);
	curl_easy_setopt(c->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(c->body));
	curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(c->easy, CURLOPT_ERRORBUFFER, c->error);
	curl_easy_setopt(c->easy, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(c->easy, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(c->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->easy, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c->easy, CURLOPT_USERAGENT, "trainplane-agent");
	/* https: the peer and its name are always verified (libcurl's default,
	 * never turned off); against server_ca_file when set. */
	if (c->ca_file)
		curl_easy_setopt(c->easy, CURLOPT_CAINFO, c->ca_file);
	if (!c->allow_insecure_http && !strncasecmp(url, "http://", 7)) {
		curl_easy_setopt(c->easy, CURLOPT_OPENSOCKETFUNCTION, open_loopback_only);
		curl_easy_setopt(c->easy, CURLOPT_OPENSOCKETDATA, c);
	}
	if (curl_multi_add_handle(c->multi, c->easy) != CURLM_OK)
		return -1;
	c->busy = true;
	return 0;
}

bool http_busy(const struct http_client *c)
{
	return c->busy;
}

bool http_step(struct http_client *c, int wait_ms, int wake_fd, long *status)
{
	struct curl_waitfd wake = { wake_fd, CURL_WAIT_POLLIN, 0 };
	int running = 0, left;
	CURLMsg *msg;

	*status = 0;
	if (!c->busy)
		return true;
	curl_multi_perform(c->multi, &running);
	if (running) {
		curl_multi_poll(c->multi, wake_fd >= 0 ? &wake : NULL, wake_fd >= 0 ? 1 : 0,
				wait_ms, NULL);
		curl_multi_perform(c->multi, &running);
	}
	while ((msg = curl_multi_info_read(c->multi, &left))) {
		if (msg->msg != CURLMSG_DONE || msg->easy_handle != c->easy)
			continue;
		CURLcode rc = msg->data.result;
		curl_multi_remove_handle(c->multi, c->easy);
		c->busy = false;
		if (rc == CURLE_OK) {
			curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, status);
		} else if (c->refused[0]) {
			snprintf(c->error, sizeof(c->error), "%s", c->refused);
		} else if (!c->error[0]) {
			snprintf(c->error, sizeof(c->error), "%s", c->overflow ?
				 "answer too large" : curl_easy_strerror(rc));
		}
		return true;
	}
	return false;
}

void http_abort(struct http_client *c)
{
	if (c->busy) {
		curl_multi_remove_handle(c->multi, c->easy);
		c->busy = false;
	}
}

const char *http_body(const struct http_client *c, size_t *len)
{
	*len = c->resp.len;
	return sb_str(&c->resp);
}

const char *http_error(const struct http_client *c)
{
	return c->error[0] ? c->error : "no error";
}

long http_post(struct http_client *c, const char *url, const char *body, long timeout_s)
{
	long status = 0;
	if (http_post_start(c, url, body, timeout_s)) {
		snprintf(c->error, sizeof(c->error), "cannot start the request");
		return 0;
	}
	while (!http_step(c, 1000, -1, &status))
		;
	return status;
}
