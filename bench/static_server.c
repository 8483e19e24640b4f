/*
 * The baseline for jobs.get: libmicrohttpd, configured as trainplane-server
 * is (epoll, same thread pool), answering every request with the bytes of
 * a file. What the server costs beyond this is routing, the database round
 * trip and rendering.
 *
 *   static_server PORT THREADS FILE
 */
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *body;
static size_t body_len;

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *data,
			      size_t *size, void **ctx)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	(void)cls; (void)url; (void)method; (void)version; (void)data; (void)size;
	if (!*ctx) {
		*ctx = conn;
		return MHD_YES;
	}
	resp = MHD_create_response_from_buffer(body_len, body, MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				"application/json; charset=UTF-8");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

int main(int argc, char **argv)
{
	FILE *f;
	sigset_t sigs;
	int sig;

	if (argc != 4 || !(f = fopen(argv[3], "rb"))) {
		fprintf(stderr, "usage: static_server PORT THREADS FILE\n");
		return 2;
	}
	fseek(f, 0, SEEK_END);
	body_len = (size_t)ftell(f);
	rewind(f);
	body = malloc(body_len + 1);
	if (fread(body, 1, body_len, f) != body_len)
		return 1;
	fclose(f);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	struct MHD_Daemon *d = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO, (uint16_t)atoi(argv[1]), NULL, NULL,
		answer, NULL, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)atoi(argv[2]),
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)4096, MHD_OPTION_END);
	if (!d)
		return 1;
	sigwait(&sigs, &sig);
	MHD_stop_daemon(d);
	free(body);
	return 0;
}
