#include "listener.h"

#include <stdlib.h>

#include "common.h"
#include "http.h"
#include "listen_hub.h"
#include "node_cache.h"

struct listener {
	struct listen_hub *hub;
	struct listen_sub *sub;
	struct httpd *http;
	struct node_cache *nodes;
};

/* The hub's thread: the node's desired set changed. */
static void node_changed(void *arg, const char *node)
{
	struct listener *l = arg;
	node_cache_changed(l->nodes, node);	/* first: a poll that parks after sees it */
	httpd_wake(l->http, node);
}

/* Listening (again): what changed meanwhile went unheard. */
static void listening(void *arg)
{
	struct listener *l = arg;
	node_cache_listening(l->nodes, true);
	httpd_wake(l->http, NULL);
}

/* Lost: nothing is heard until listening again, so nothing is known. */
static void not_listening(void *arg, const char *why)
{
	struct listener *l = arg;
	(void)why;
	node_cache_listening(l->nodes, false);
}

static const struct listen_sub_ops node_ops = { node_changed, listening, not_listening };

struct listener *listener_start(struct listen_hub *hub, struct httpd *http,
				struct node_cache *nodes)
{
	struct listener *l = xcalloc(1, sizeof(*l));

	l->hub = hub;
	l->http = http;
	l->nodes = nodes;
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
