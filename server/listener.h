/*
 * listener.h - each server listens for the database's notifications on
 * its own connection and wakes what waits on them: an agent's parked sync
 * when its node's desired set changed ("tp_node", payload: node name).
 * After a reconnection every parked sync is woken, since notifications may
 * have been missed meanwhile.
 */
#ifndef TP_LISTENER_H
#define TP_LISTENER_H

struct http_server;
struct listener;

struct listener *listener_start(const char *conninfo, struct http_server *http);
void listener_stop(struct listener *l);	/* NULL is a no-op */

#endif
