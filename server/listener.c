#include "listener.h"

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "log.h"
#include "store_sched.h"

struct listener {
	char *conninfo;
	struct http_server *http;
	pthread_t thread;
	bool stopping;
};

static void on_notify(void *ctx, const char *channel, const char *payload)
{
	struct listener *l = ctx;
	if (!strcmp(channel, "tp_node"))
		http_wake(l->http, payload);
}

static void *listener_main(void *arg)
{
	struct listener *l = arg;
	struct store_conn *c = NULL;
	char err[512];

	while (!__atomic_load_n(&l->stopping, __ATOMIC_ACQUIRE)) {
		if (!c) {
			c = store_conn_open(l->conninfo, err, sizeof(err));
			if (c && store_listen(c, "tp_node") != STORE_OK) {
				store_conn_close(c);
				c = NULL;
			}
			if (!c) {
				struct pollfd none = { .fd = -1 };
				poll(&none, 0, 1000);
				continue;
			}
			http_wake(l->http, NULL);	/* we may have missed some */
		}
		struct pollfd fd = { .fd = PQsocket(store_conn_pg(c)), .events = POLLIN };
		if (poll(&fd, 1, 250) > 0 && store_notifications(c, on_notify, l) != STORE_OK) {
			log_warn("notification listener: connection lost; reconnecting");
			store_conn_close(c);
			c = NULL;
		}
	}
	store_conn_close(c);
	return NULL;
}

struct listener *listener_start(const char *conninfo, struct http_server *http)
{
	struct listener *l = xcalloc(1, sizeof(*l));
	l->conninfo = xstrdup(conninfo);
	l->http = http;
	if (pthread_create(&l->thread, NULL, listener_main, l))
		abort();
	return l;
}

void listener_stop(struct listener *l)
{
	if (!l)
		return;
	__atomic_store_n(&l->stopping, true, __ATOMIC_RELEASE);
	pthread_join(l->thread, NULL);
	free(l->conninfo);
	free(l);
}
