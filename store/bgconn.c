#include "bgconn.h"

#include <stdlib.h>
#include <string.h>

#include "store_pg.h"

struct bgconn {
	char *conninfo;
	struct bgconn_config cfg;
	const struct bgconn_ops *ops;
	void *ctx;
	struct bgloop *loop;
	struct store_conn *conn;	/* the thread's own */
};

static int conn_open(void *arg, char *err, size_t errlen)
{
	struct bgconn *b = arg;
	struct store_conn *c = store_conn_open(b->conninfo, b->cfg.component, err, errlen);

	if (!c)
		return -1;
	if (b->ops->up && b->ops->up(b->ctx, c, err, errlen) != STORE_OK) {
		store_conn_close(c);
		return -1;
	}
	b->conn = c;
	return PQsocket(store_conn_pg(c));
}

static void conn_close(void *arg, const char *why)
{
	struct bgconn *b = arg;
	struct store_conn *c = b->conn;

	b->conn = NULL;
	if (b->ops->down)
		b->ops->down(b->ctx, c, why);
	store_conn_close(c);
}

static void conn_turn(void *arg, short revents, struct bgloop_wait *wait)
{
	struct bgconn *b = arg;

	b->ops->turn(b->ctx, b->conn, revents, wait);
}

static const struct bgloop_ops conn_ops = { conn_open, conn_close, conn_turn };

void bgconn_start(const char *conninfo, const struct bgconn_config *cfg,
		  const struct bgconn_ops *ops, void *ctx, struct bgconn **out)
{
	struct bgconn *b = xcalloc(1, sizeof(*b));

	b->conninfo = xstrdup(conninfo);
	b->cfg = *cfg;
	b->ops = ops;
	b->ctx = ctx;
	*out = b;
	bgloop_start(&b->cfg.loop, &conn_ops, b, &b->loop);
}

void bgconn_wake(struct bgconn *b)
{
	bgloop_wake(b->loop);
}

int64_t bgconn_now(const struct bgconn *b)
{
	return bgloop_now(b->loop);
}

bool bgconn_stopping(const struct bgconn *b)
{
	return bgloop_stopping(b->loop);
}

struct store_conn *bgconn_connect(struct bgconn *b)
{
	return bgloop_session(b->loop) ? b->conn : NULL;
}

void bgconn_drop(struct bgconn *b, const char *why)
{
	bgloop_drop(b->loop, why);
}

void bgconn_stop(struct bgconn *b)
{
	if (b)
		bgloop_stop(b->loop);
}

void bgconn_free(struct bgconn *b)
{
	if (!b)
		return;
	bgloop_free(b->loop);
	free(b->conninfo);
	free(b);
}
