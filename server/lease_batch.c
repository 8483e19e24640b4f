#include "lease_batch.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "log.h"
#include "metrics.h"
#include "store_node.h"

METRIC_COUNTER(batches_total, "trainplane_lease_batches_total",
	       "Transactions that renewed quiet agent syncs' leases in a batch.")
METRIC_COUNTER(renewals_total, "trainplane_lease_batch_renewals_total",
	       "Leases renewed through those batches.")

struct renewal {
	struct renewal *next;
	char *node, *incarnation;
	void (*done)(void *arg, bool renewed);
	void *arg;
};

struct lease_batch {
	struct store *st;
	int lease_s;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct renewal *head, **tail;	/* pending, in arrival order */
	size_t n;
	bool stopping;
};

static void write_batch(struct lease_batch *lb, struct renewal *list, size_t n)
{
	const char **names = xcalloc(n, sizeof(*names)), **incs = xcalloc(n, sizeof(*incs));
	bool *renewed = xcalloc(n, sizeof(*renewed));
	size_t i = 0, ok = 0;

	for (struct renewal *r = list; r; r = r->next, i++) {
		names[i] = r->node;
		incs[i] = r->incarnation;
	}
	enum store_rc rc = store_node_renew_leases(lb->st, names, incs, n, lb->lease_s, renewed);
	if (rc != STORE_OK) {
		log_warn("agents' lease renewals: %zu not written (%s): those syncs go the long way",
			 n, store_rc_name(rc));
		memset(renewed, 0, n * sizeof(*renewed));
	}
	i = 0;
	while (list) {
		struct renewal *r = list;
		list = r->next;
		ok += renewed[i];
		r->done(r->arg, renewed[i++]);
		free(r->node);
		free(r->incarnation);
		free(r);
	}
	metric_add(&batches_total, 1);
	metric_add(&renewals_total, ok);
	free(names);
	free(incs);
	free(renewed);
}

static void *batch_main(void *arg)
{
	struct lease_batch *lb = arg;

	pthread_setname_np(pthread_self(), "lease-batch");
	pthread_mutex_lock(&lb->mu);
	for (;;) {
		while (!lb->head && !lb->stopping)
			pthread_cond_wait(&lb->cv, &lb->mu);
		if (!lb->head)
			break;	/* stopping, nothing pending */
		if (!lb->stopping) {
			/* Gather what arrives meanwhile: one transaction for all. */
			struct timespec until;
			clock_gettime(CLOCK_MONOTONIC, &until);
			until.tv_nsec += LEASE_BATCH_USEC * 1000L;
			if (until.tv_nsec >= 1000000000L) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000L;
			}
			while (!lb->stopping &&
			       pthread_cond_timedwait(&lb->cv, &lb->mu, &until) != ETIMEDOUT)
				;
		}
		struct renewal *list = lb->head;
		size_t n = lb->n;
		lb->head = NULL;
		lb->tail = &lb->head;
		lb->n = 0;
		pthread_mutex_unlock(&lb->mu);
		write_batch(lb, list, n);
		pthread_mutex_lock(&lb->mu);
	}
	pthread_mutex_unlock(&lb->mu);
	return NULL;
}

struct lease_batch *lease_batch_start(struct store *st, int lease_s)
{
	struct lease_batch *lb = xcalloc(1, sizeof(*lb));
	pthread_condattr_t ca;

	lb->st = st;
	lb->lease_s = lease_s;
	lb->tail = &lb->head;
	pthread_mutex_init(&lb->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&lb->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&lb->thread, NULL, batch_main, lb))
		abort();
	return lb;
}

void lease_batch_stop(struct lease_batch *lb)
{
	if (!lb)
		return;
	pthread_mutex_lock(&lb->mu);
	lb->stopping = true;
	pthread_cond_broadcast(&lb->cv);
	pthread_mutex_unlock(&lb->mu);
	pthread_join(lb->thread, NULL);
	pthread_cond_destroy(&lb->cv);
	pthread_mutex_destroy(&lb->mu);
	free(lb);
}

void lease_batch_renew(struct lease_batch *lb, const char *node, const char *incarnation,
		       void (*done)(void *arg, bool renewed), void *arg)
{
	pthread_mutex_lock(&lb->mu);
	if (lb->stopping) {
		pthread_mutex_unlock(&lb->mu);
		done(arg, false);
		return;
	}
	struct renewal *r = xcalloc(1, sizeof(*r));
	r->node = xstrdup(node);
	r->incarnation = xstrdup(incarnation);
	r->done = done;
	r->arg = arg;
	*lb->tail = r;
	lb->tail = &r->next;
	if (!lb->n++)
		pthread_cond_signal(&lb->cv);
	pthread_mutex_unlock(&lb->mu);
}
