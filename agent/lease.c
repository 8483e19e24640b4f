/*
 * lease.c - the node's lease, its file, and the supervisors' fence.
 */
#include "lease.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "replica.h"

#define LEASE_MAGIC "trainplane-lease"
#define LEASE_READ_EVERY_USEC 1000000
#define LONG_PAST 1	/* a deadline that has passed whatever the clock says */

int64_t lease_clock_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t lease_deadline(int64_t sent_usec, int lease_s)
{
	return sent_usec + (int64_t)lease_s * 1000000;
}

bool lease_expired(const struct lease *l, int64_t now)
{
	return l->deadline_usec != 0 && now >= l->deadline_usec;
}

/* This boot's id ("" if unknown), read once per process. */
static const char *boot_id(void)
{
	static char id[64];
	static bool done;
	if (!done) {
		int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, id, sizeof(id) - 1) : -1;
		id[n > 0 ? n : 0] = '\0';
		id[strcspn(id, "\n")] = '\0';
		if (fd >= 0)
			close(fd);
		done = true;
	}
	return id;
}

int lease_write(const char *path, const struct lease *l)
{
	char text[256];
	int n = snprintf(text, sizeof(text), LEASE_MAGIC " 1 %lld %d %s %s\n",
			 (long long)l->deadline_usec, l->grace_s,
			 l->fence ? "fence" : "keep_running", *boot_id() ? boot_id() : "-");
	if (n < 0 || (size_t)n >= sizeof(text)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return replica_write_atomic(path, text, (size_t)n);
}

int lease_read(const char *path, struct lease *out)
{
	char buf[256], magic[32], policy[32], boot[64];
	long long deadline;
	int version, grace;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0 && errno == ENOENT)
		return 0;
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	*out = (struct lease){ .deadline_usec = LONG_PAST, .grace_s = 0, .fence = true };
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (sscanf(buf, "%31s %d %lld %d %31s %63s", magic, &version, &deadline, &grace, policy,
		   boot) != 6 || strcmp(magic, LEASE_MAGIC) || version != 1 || deadline < 0 ||
	    grace < 0 || (strcmp(policy, "fence") && strcmp(policy, "keep_running")))
		return -1;
	out->grace_s = grace;
	out->fence = !strcmp(policy, "fence");
	/* Written in another boot: its clock is not ours, and its replicas are gone. */
	if (strcmp(boot, *boot_id() ? boot_id() : "-"))
		return -1;
	out->deadline_usec = deadline;
	return 1;
}

bool lease_allows_start(const char *path, int64_t now)
{
	struct lease l;
	int rc = path ? lease_read(path, &l) : 0;
	return rc == 0 || (rc == 1 && !lease_expired(&l, now));
}

enum fence_action lease_fence_step(struct lease_fence *f, int64_t now, int64_t *next_usec)
{
	*next_usec = INT64_MAX;
	if (!f->path || f->stage == 2)
		return FENCE_NONE;
	if (f->stage == 1) {
		if (now >= f->kill_at) {
			f->stage = 2;
			return FENCE_KILL;
		}
		*next_usec = f->kill_at;
		return FENCE_NONE;
	}
	/* At most once a second, and at the deadline: a chatty replica wakes
	 * its supervisor far more often than that. */
	if (now >= f->next_read || (f->seen.fence && lease_expired(&f->seen, now))) {
		struct lease l;
		int rc = lease_read(f->path, &l);
		if (rc != 0)
			f->seen = l;	/* read, or unusable (expired); none: keep the last */
		f->next_read = now + LEASE_READ_EVERY_USEC;
	}
	*next_usec = f->next_read;
	if (!f->seen.fence || !lease_expired(&f->seen, now)) {
		if (f->seen.fence && f->seen.deadline_usec && f->seen.deadline_usec < *next_usec)
			*next_usec = f->seen.deadline_usec;
		return FENCE_NONE;
	}
	f->stage = 1;
	/* Counted from the deadline, not from now: a supervisor that woke late
	 * (a loaded host) kills sooner rather than later. */
	f->kill_at = f->seen.deadline_usec + (int64_t)f->seen.grace_s * 1000000;
	*next_usec = f->kill_at > now ? f->kill_at : now;
	return FENCE_TERM;
}
