/*
 * listener.h - agents' parked syncs woken by the database's notifications:
 * a node's desired set changed ("tp_node", payload: the node's name), heard
 * on the server's LISTEN hub (store/listen_hub.h). Each time the hub
 * listens again after a lost connection every parked sync is woken, since
 * notifications may have been missed meanwhile. The same notifications
 * keep what the server knows of each node (node_cache.h) fresh: a node's
 * entry is dropped before its polls are woken, everything while not
 * listening.
 */
#ifndef TP_LISTENER_H
#define TP_LISTENER_H

struct httpd;
struct listen_hub;
struct listener;
struct node_cache;

/* Subscribes; hub, http and nodes (NULL: none) are borrowed until listener_stop(). */
struct listener *listener_start(struct listen_hub *hub, struct httpd *http,
				struct node_cache *nodes);
/* Unsubscribes: nothing is woken once it returns. NULL is a no-op. */
void listener_stop(struct listener *l);

#endif
