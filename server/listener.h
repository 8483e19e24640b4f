/*
 * listener.h - agents' parked syncs woken by the database's notifications:
 * a node's desired set changed ("tp_node", payload: the node's name), heard
 * on the server's LISTEN hub (store/listen_hub.h). Each time the hub
 * listens again after a lost connection every parked sync is woken, since
 * notifications may have been missed meanwhile.
 */
#ifndef TP_LISTENER_H
#define TP_LISTENER_H

struct httpd;
struct listen_hub;
struct listener;

/* Subscribes; hub and http are borrowed until listener_stop(). */
struct listener *listener_start(struct listen_hub *hub, struct httpd *http);
/* Unsubscribes: nothing is woken once it returns. NULL is a no-op. */
void listener_stop(struct listener *l);

#endif
