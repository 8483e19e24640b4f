#include "bgloop.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define BACKOFF_MIN_US 100000
#define BACKOFF_MAX_US 1000000

struct bgloop {
	struct bgloop_config cfg;
	const struct bgloop_ops *ops;
	void *ctx;
	pthread_t thread;
	int efd;
	bool stopping;		/* atomic */

	/* the thread's own */
	bool up;		/* a session is open */
	int fd;			/* its descriptor: -1 without one, or none to watch */
	uint64_t session;	/* counts sessions: revents belong to the one they were polled on */
	int64_t backoff_us;	/* the next wait; 0 after a success */
	int64_t next_open_us;	/* no open before (loop's clock) */
	int64_t opened_us;	/* when the session opened */
	bool outage;		/* an open failed since the last success: told once */
	uint64_t seed;		/* for the jitter */
};

int64_t bgloop_now(const struct bgloop *b)
{
	return b->cfg.clock ? b->cfg.clock() : mono_usec();
}

void bgloop_one_line(char *out, size_t n, const char *why)
{
	size_t len = 0;

	if (!n)
		return;
	for (; why && *why && len + 1 < n; why++) {
		bool space = *why == '\n' || *why == '\t' || *why == '\r';
		if (space && (!len || out[len - 1] == ' '))
			continue;
		out[len++] = space ? ' ' : *why;
	}
	while (len && out[len - 1] == ' ')
		len--;
	out[len] = '\0';
}

/* The next wait: between half and all of the current step, which doubles. */
static void back_off(struct bgloop *b)
{
	int64_t step = b->backoff_us ? b->backoff_us : b->cfg.backoff_min_us;

	b->seed = b->seed * 6364136223846793005ULL + 1442695040888963407ULL;
	int64_t wait = step / 2 + (int64_t)((b->seed >> 33) % (uint64_t)(step / 2 + 1));
	b->next_open_us = bgloop_now(b) + wait;
	b->backoff_us = step * 2 > b->cfg.backoff_max_us ? b->cfg.backoff_max_us : step * 2;
}

bool bgloop_session(struct bgloop *b)
{
	char err[512], line[512];

	if (b->up)
		return true;
	if (bgloop_now(b) < b->next_open_us)
		return false;
	err[0] = '\0';
	int fd = b->ops->open(b->ctx, err, sizeof(err));
	bgloop_one_line(line, sizeof(line), err);
	if (fd < 0 && fd != BGLOOP_NO_FD) {
		if (!b->outage)
			log_warn("%s: cannot connect (%s); retrying", b->cfg.name, line);
		else
			log_debug("%s: cannot connect (%s); retrying", b->cfg.name, line);
		b->outage = true;
		back_off(b);
		return false;
	}
	if (b->outage)
		log_info("%s: connected again", b->cfg.name);
	b->outage = false;
	b->backoff_us = 0;
	b->opened_us = bgloop_now(b);
	b->up = true;
	b->fd = fd < 0 ? -1 : fd;
	b->session++;
	return true;
}

void bgloop_drop(struct bgloop *b, const char *why)
{
	char line[512];

	if (!b->up)
		return;
	bgloop_one_line(line, sizeof(line), why);
	log_warn("%s: connection lost (%s); reconnecting", b->cfg.name, line);
	b->up = false;
	b->fd = -1;
	b->ops->close(b->ctx, why ? why : "");
	/* A session that served a while is opened again at once (a killed
	 * backend, a failover: the next one may well work); one that died as
	 * it opened backs off, so that it does not spin. */
	if (bgloop_now(b) - b->opened_us < b->cfg.backoff_min_us)
		back_off(b);
}

bool bgloop_stopping(const struct bgloop *b)
{
	return __atomic_load_n(&b->stopping, __ATOMIC_ACQUIRE);
}

void bgloop_wake(struct bgloop *b)
{
	uint64_t one = 1;

	if (write(b->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_error("%s: cannot wake its thread: %s", b->cfg.name, strerror(errno));
}

static void *loop_main(void *arg)
{
	struct bgloop *b = arg;
	short revents = 0;
	uint64_t polled = 0;	/* the session revents belong to */
	char name[16];

	/* top -H and gdb show which loop a thread is (15 characters at most) */
	snprintf(name, sizeof(name), "%s", b->cfg.name);
	pthread_setname_np(pthread_self(), name);

	for (;;) {
		bool stopping = bgloop_stopping(b);
		if (b->cfg.eager && !stopping)
			(void)bgloop_session(b);
		struct bgloop_wait w = { .events = 0, .deadline_us = BGLOOP_NEVER, .busy = false };
		b->ops->turn(b->ctx, b->up && polled == b->session ? revents : 0, &w);
		if (stopping && !w.busy)
			break;

		int64_t deadline = w.deadline_us;
		if (b->cfg.eager && !b->up && b->next_open_us < deadline)
			deadline = b->next_open_us;
		int timeout = -1;
		if (deadline != BGLOOP_NEVER) {
			int64_t left = deadline - bgloop_now(b);
			timeout = left <= 0 ? 0 : left / 1000 >= 60000 ? 60000 : (int)((left + 999) / 1000);
		}
		struct pollfd fds[2] = { { .fd = b->efd, .events = POLLIN },
					 { .fd = b->fd, .events = w.events } };
		nfds_t n = b->fd >= 0 && w.events ? 2 : 1;
		polled = b->session;
		if (poll(fds, n, timeout) < 0 && errno != EINTR)
			log_error("%s: poll: %s", b->cfg.name, strerror(errno));
		if (fds[0].revents & POLLIN) {
			uint64_t v;
			if (read(b->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				log_error("%s: eventfd: %s", b->cfg.name, strerror(errno));
		}
		revents = n == 2 ? fds[1].revents : 0;
	}
	if (b->up) {
		b->up = false;
		b->fd = -1;
		b->ops->close(b->ctx, NULL);
	}
	return NULL;
}

void bgloop_start(const struct bgloop_config *cfg, const struct bgloop_ops *ops, void *ctx,
		  struct bgloop **out)
{
	struct bgloop *b = xcalloc(1, sizeof(*b));
	struct timespec ts;

	b->cfg = *cfg;
	if (b->cfg.backoff_min_us <= 0)
		b->cfg.backoff_min_us = BACKOFF_MIN_US;
	if (b->cfg.backoff_max_us < b->cfg.backoff_min_us)
		b->cfg.backoff_max_us = b->cfg.backoff_min_us > BACKOFF_MAX_US ?
					b->cfg.backoff_min_us : BACKOFF_MAX_US;
	b->ops = ops;
	b->ctx = ctx;
	b->fd = -1;
	clock_gettime(CLOCK_REALTIME, &ts);
	b->seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)b;
	b->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	*out = b;
	if (b->efd < 0 || pthread_create(&b->thread, NULL, loop_main, b)) {
		log_error("%s: cannot start its thread: %s", cfg->name, strerror(errno));
		abort();
	}
}

void bgloop_stop(struct bgloop *b)
{
	if (!b)
		return;
	__atomic_store_n(&b->stopping, true, __ATOMIC_RELEASE);
	bgloop_wake(b);
	pthread_join(b->thread, NULL);
}

void bgloop_free(struct bgloop *b)
{
	if (!b)
		return;
	close(b->efd);
	free(b);
}
