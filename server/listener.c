#include "listener.h"

#include <stdlib.h>

#include "common.h"
#include "http.h"
#include "listen_hub.h"

struct listener {
	struct listen_hub *hub;
	struct listen_sub *sub;
	struct httpd *http;
};

/* The hub's thread: the node's desired set changed. */
static void node_changed(void *arg, const char *node)
{
	struct listener *l = arg;
	httpd_wake(l->http, node);
}

/* Listening (again): what changed meanwhile went unheard. */
static void listening(void *arg)
{
	struct listener *l = arg;
	httpd_wake(l->http, NULL);
}

static const struct listen_sub_ops node_ops = { node_changed, listening, NULL };

struct listener *listener_start(struct listen_hub *hub, struct httpd *http)
{
	struct listener *l = xcalloc(1, sizeof(*l));

	l->hub = hub;
	l->http = http;
	l->sub = listen_hub_subscribe(hub, "tp_node", &node_ops, l);
	return l;
}

void listener_stop(struct listener *l)
{
	if (!l)
		return;
	listen_hub_unsubscribe(l->hub, l->sub);
	free(l);
}
