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

/*
 * An idle listening session hears nothing when its server turns read-only
 * (a failover that kept the old primary up): NOTIFYs of the new primary
 * would never reach it. A round trip this often makes the server say so.
 */
#define CHECK_EVERY_US (INT64_C(2) * 1000000)

static void *listener_main(void *arg)
{
	struct listener *l = arg;
	struct store_conn *c = NULL;
	char err[512];
	int64_t checked = 0;

	while (!__atomic_load_n(&l->stopping, __ATOMIC_ACQUIRE)) {
		if (!c) {
			c = store_conn_open(l->conninfo, "listener", err, sizeof(err));
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
			checked = mono_usec();
		}
		struct pollfd fd = { .fd = PQsocket(store_conn_pg(c)), .events = POLLIN };
		bool lost = poll(&fd, 1, 250) > 0 && store_notifications(c, on_notify, l) != STORE_OK;
		if (!lost && mono_usec() - checked >= CHECK_EVERY_US) {
			checked = mono_usec();
			lost = store_conn_check(c) != STORE_OK ||
			       store_notifications(c, on_notify, l) != STORE_OK;
		}
		if (lost) {
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
