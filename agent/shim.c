/*
 * shim.c - the replica supervisors (a process replica's, a container's),
 * and small helpers that run commands.
 *
 * Everything after fork() here runs in a copy of a single-threaded agent,
 * so ordinary library calls are safe; the copies leave with _exit() so that
 * no atexit handler or leak check of the agent runs in them.
 */
#include "shim.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lease.h"
#include "replica.h"
#include "strbuf.h"
#include "strvec.h"
#include "wire.h"

#define SHIM_LINE_MAX 16384

/* Closes every descriptor >= 3 except keep (-1: none; keep >= 3). */
static void close_fds_except(int keep)
{
	int rc;
	if (keep < 0) {
		rc = close_range(3, ~0U, 0);
	} else {
		rc = keep > 3 ? close_range(3, (unsigned)keep - 1, 0) : 0;
		if (!rc)
			rc = close_range((unsigned)keep + 1, ~0U, 0);
	}
	if (!rc)
		return;
	for (int fd = 3; fd < 4096; fd++)	/* kernels before 5.9 */
		if (fd != keep)
			close(fd);
}

static void reset_signals(void)
{
	sigset_t none;
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGQUIT, SIGCHLD,
				    SIGTTOU, SIGTTIN, SIGUSR1, SIGUSR2 };
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		signal(sigs[i], SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static int exit_code_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 255;
}

/* The value of NAME in a NULL-terminated K=V vector, or NULL. */
static const char *env_get(char *const *envp, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; envp && envp[i]; i++)
		if (!strncmp(envp[i], name, n) && envp[i][n] == '=')
			return envp[i] + n + 1;
	return NULL;
}

/* execve() with argv[0] searched in path (when it has no '/'). Returns errno. */
static int exec_in_path(char *const *argv, char *const *envp, const char *path)
{
	int err = ENOENT;
	if (strchr(argv[0], '/')) {
		execve(argv[0], argv, envp);
		return errno;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path;; p++) {
		const char *end = strchrnul(p, ':');
		char file[4096];
		int n = end == p ? snprintf(file, sizeof(file), "./%s", argv[0]) :
			snprintf(file, sizeof(file), "%.*s/%s", (int)(end - p), p, argv[0]);
		if (n > 0 && (size_t)n < sizeof(file)) {
			execve(file, argv, envp);
			if (errno != ENOENT && errno != ENOTDIR)
				err = errno;	/* e.g. EACCES: remember, keep looking */
		}
		if (!*end)
			break;
		p = end;
	}
	return err;
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* ---- descendants ---------------------------------------------------- */

struct proc_link {
	pid_t pid, ppid;
	bool zombie;
};

static int by_pid(const void *a, const void *b)
{
	pid_t x = ((const struct proc_link *)a)->pid, y = ((const struct proc_link *)b)->pid;
	return (x > y) - (x < y);
}

/* Every process in /proc with its parent, sorted by pid (*n of them). */
static struct proc_link *proc_links(size_t *n)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	struct proc_link *v = NULL;
	size_t cap = 0;

	*n = 0;
	while (d && (e = readdir(d))) {
		char path[64], buf[512], *paren, state;
		int ppid, fd;
		ssize_t got;
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/stat", e->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;	/* gone meanwhile */
		got = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (got <= 0)
			continue;
		buf[got] = '\0';
		/* "pid (comm) state ppid ...": comm may hold anything, ')' too. */
		if (!(paren = strrchr(buf, ')')) || sscanf(paren + 1, " %c %d", &state, &ppid) != 2)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 256;
			v = xrealloc(v, cap * sizeof(*v));
		}
		v[(*n)++] = (struct proc_link){ (pid_t)atoi(e->d_name), ppid, state == 'Z' };
	}
	if (d)
		closedir(d);
	if (*n)
		qsort(v, *n, sizeof(*v), by_pid);
	return v;
}

/*
 * Signals every descendant of root; returns how many were not zombies, and
 * in *all how many there were.
 */
static int signal_tree(pid_t root, int sig, size_t *all)
{
	size_t n;
	struct proc_link *v = proc_links(&n);
	bool *mine = n ? xcalloc(n, sizeof(bool)) : NULL;
	bool grew = true;
	int live = 0;

	*all = 0;
	/* A pass marks the children of root and of those already marked; as
	 * many passes as the tree is deep. */
	while (grew) {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			if (mine[i] || v[i].pid == root)
				continue;
			struct proc_link key = { .pid = v[i].ppid }, *up;
			if (v[i].ppid == root ||
			    ((up = bsearch(&key, v, n, sizeof(*v), by_pid)) && mine[up - v])) {
				mine[i] = true;
				grew = true;
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (!mine[i])
			continue;
		kill(v[i].pid, sig);
		(*all)++;
		live += !v[i].zombie;
	}
	free(mine);
	free(v);
	return live;
}

int shim_signal_tree(pid_t root, int sig)
{
	size_t all;
	return signal_tree(root, sig, &all);
}

void shim_signal_replica(pid_t shim_pid, pid_t pgid, int sig)
{
	if (pgid > 0)
		kill(-pgid, sig);
	if (shim_pid > 0)
		shim_signal_tree(shim_pid, sig);
}

void shim_kill_supervisor(pid_t pid)
{
	if (pid <= 0)
		return;
	shim_signal_tree(pid, SIGKILL);
	kill(pid, SIGKILL);
}

/*
 * The main process has ended: SIGKILL what is left of its group and every
 * other descendant, reaping them as they come to us (the subreaper), until
 * none is left, or 5 s passed (a process stuck in the kernel).
 */
static void end_descendants(pid_t child)
{
	int64_t until = mono_usec() + 5000000;
	size_t all;

	kill(-child, SIGKILL);
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		signal_tree(getpid(), SIGKILL, &all);
		if (!all || mono_usec() >= until)
			break;
		struct timespec ts = { 0, 5 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

struct stream {
	int fd;
	char tag;
	char buf[SHIM_LINE_MAX];
	size_t len;
};

static void emit(int logfd, char tag, const char *text, size_t n)
{
	char head[48];
	int h = snprintf(head, sizeof(head), "%lld %c ", (long long)now_usec(), tag);
	char *rec = xmalloc((size_t)h + n + 1);
	memcpy(rec, head, (size_t)h);
	memcpy(rec + h, text, n);
	rec[(size_t)h + n] = '\n';
	/* One write per record: with O_APPEND a reader never sees two mixed. */
	write_all(logfd, rec, (size_t)h + n + 1);
	free(rec);
}

/* Reads what is available; emits whole lines. Returns 0 at EOF, 1 otherwise. */
static int stream_read(struct stream *s, int logfd)
{
	for (;;) {
		ssize_t got = read(s->fd, s->buf + s->len, sizeof(s->buf) - s->len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return errno == EAGAIN ? 1 : 0;
		if (got == 0) {
			if (s->len)
				emit(logfd, s->tag, s->buf, s->len);
			s->len = 0;
			return 0;
		}
		s->len += (size_t)got;
		size_t start = 0;
		for (size_t i = 0; i < s->len; i++) {
			if (s->buf[i] == '\n') {
				size_t n = i - start;
				if (n && s->buf[i - 1] == '\r')
					n--;
				emit(logfd, s->tag, s->buf + start, n);
				start = i + 1;
			}
		}
		memmove(s->buf, s->buf + start, s->len - start);
		s->len -= start;
		if (s->len == sizeof(s->buf)) {
			emit(logfd, s->tag, s->buf, s->len);	/* an over-long line: cut */
			s->len = 0;
		}
	}
}

static void report(int fd, const char *fmt, long a)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), fmt, a);
	write_all(fd, buf, (size_t)n);
}

/* Writes <dir>/fenced: whoever sees the replica end sees it was fenced. */
static void mark_fenced(const char *dir)
{
	char path[4096], text[32];
	int n = snprintf(text, sizeof(text), "%lld\n", (long long)now_usec());
	if ((size_t)snprintf(path, sizeof(path), "%s/fenced", dir) < sizeof(path) &&
	    replica_write_atomic(path, text, (size_t)n) != 0) {
		/* Unwritable (disk full): stopped all the same, then reported
		 * as an exit; the server gives the node up anyway. */
	}
}

/*
 * The fence's actions (lease.h). The marker is written before the signal,
 * so whoever sees the replica end sees that it was fenced.
 */
static void fence_act(const struct shim_spec *s, enum fence_action act, pid_t child)
{
	if (act == FENCE_TERM) {
		mark_fenced(s->dir);
		shim_signal_replica(getpid(), child, SIGTERM);
	} else if (act == FENCE_KILL) {
		shim_signal_replica(getpid(), child, SIGKILL);
	}
}

/*
 * The start of every supervisor: leaves the agent's session, ignores the
 * signals meant for the agent, keeps only rep (moved to >= 3, returned) of
 * the agent's descriptors, and puts /dev/null on 0-2.
 */
static int detach(int rep)
{
	int devnull;

	setsid();
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGCHLD, SIG_DFL);
	if (rep < 3)
		rep = fcntl(rep, F_DUPFD_CLOEXEC, 3);
	close_fds_except(rep);
	devnull = open("/dev/null", O_RDWR);
	if (devnull >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		if (devnull > 2)
			close(devnull);
	}
	return rep;
}

/* The supervisor's body; never returns. */
static void shim_main(const struct shim_spec *s, int rep)
{
	int outp[2], errp[2], execp[2], logfd;
	char path[4096];
	static struct stream so, se;
	pid_t child;
	int status = 0, e = 0;
	bool exited;

	rep = detach(rep);
	/* Orphans of the replica come to us, not to init: none escapes the
	 * stop, the fence or the end by leaving its group or session. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	snprintf(path, sizeof(path), "%s/output.log", s->dir);
	logfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (logfd < 0 || pipe2(outp, O_CLOEXEC) || pipe2(errp, O_CLOEXEC) ||
	    pipe2(execp, O_CLOEXEC)) {
		report(rep, "E %ld\n", errno);
		_exit(1);
	}
	child = fork();
	if (child < 0) {
		report(rep, "E %ld\n", errno);
		_exit(1);
	}
	if (child == 0) {
		setpgid(0, 0);
		reset_signals();
		dup2(outp[1], 1);
		dup2(errp[1], 2);
		if (s->cwd && chdir(s->cwd)) {
			e = errno;
		} else {
			e = exec_in_path(s->argv, s->envp, env_get(s->envp, "PATH"));
		}
		write_all(execp[1], (const char *)&e, sizeof(e));
		_exit(127);
	}
	setpgid(child, child);	/* also here: no window where the group is missing */
	close(outp[1]);
	close(errp[1]);
	close(execp[1]);
	ssize_t got;
	while ((got = read(execp[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(execp[0]);
	if (got == sizeof(e)) {
		waitpid(child, NULL, 0);
		report(rep, "E %ld\n", e);
		_exit(1);
	}
	report(rep, "P %ld\n", (long)child);
	close(rep);

	so.fd = outp[0];
	so.tag = 'O';
	se.fd = errp[0];
	se.tag = 'E';
	fcntl(so.fd, F_SETFL, O_NONBLOCK);
	fcntl(se.fd, F_SETFL, O_NONBLOCK);
	bool open_o = true, open_e = true;
	struct lease_fence fence = { .path = s->lease_path };
	for (;;) {
		/* The exit first: a replica that ended by itself is never fenced.
		 * Orphans that came to us are reaped on the way. */
		pid_t w;
		int st;
		exited = false;
		while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
			if (w == child) {
				status = st;
				exited = true;
			}
		}
		if (exited || (w < 0 && errno == ECHILD))
			break;
		int64_t now = lease_clock_usec(), next;
		enum fence_action act = lease_fence_step(&fence, now, &next);
		if (act != FENCE_NONE)
			fence_act(s, act, child);
		int timeout = 200;
		if (next - now < (int64_t)timeout * 1000)
			timeout = next <= now ? 0 : (int)((next - now + 999) / 1000);
		struct pollfd pfd[2];
		nfds_t n = 0;
		if (open_o)
			pfd[n++] = (struct pollfd){ .fd = so.fd, .events = POLLIN };
		if (open_e)
			pfd[n++] = (struct pollfd){ .fd = se.fd, .events = POLLIN };
		if (n) {
			poll(pfd, n, timeout);
			if (open_o)
				open_o = stream_read(&so, logfd);
			if (open_e)
				open_e = stream_read(&se, logfd);
		} else {
			/* Both pipes closed, the process still runs: look again soon. */
			struct timespec ts = { 0, (long)(timeout < 50 ? timeout : 50) * 1000000 };
			nanosleep(&ts, NULL);
		}
	}
	/* The leader is gone: end its group and every other descendant, then
	 * take what the pipes still hold (a killed straggler may have held them
	 * open). */
	end_descendants(child);
	for (int i = 0; i < 50 && (open_o || open_e); i++) {
		if (open_o)
			open_o = stream_read(&so, logfd);
		if (open_e)
			open_e = stream_read(&se, logfd);
		if (open_o || open_e) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	if (so.len)
		emit(logfd, 'O', so.buf, so.len);
	if (se.len)
		emit(logfd, 'E', se.buf, se.len);
	close(logfd);
	replica_write_exit(s->dir, exit_code_of(status), now_usec());
	_exit(0);
}

int shim_spawn(const struct shim_spec *s, pid_t *shim_pid, pid_t *child_pid,
	       char *err, size_t errlen)
{
	int rep[2];
	pid_t pid;
	char buf[128];
	size_t len = 0;

	if (!s->argv || !s->argv[0] || !*s->argv[0]) {
		snprintf(err, errlen, "no command to run");
		return -1;
	}
	if (pipe2(rep, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(rep[0]);
		close(rep[1]);
		return -1;
	}
	if (pid == 0) {
		close(rep[0]);
		shim_main(s, rep[1]);
	}
	close(rep[1]);
	for (;;) {
		ssize_t got = read(rep[0], buf + len, sizeof(buf) - 1 - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		len += (size_t)got;
		if (memchr(buf, '\n', len) || len == sizeof(buf) - 1)
			break;
	}
	close(rep[0]);
	buf[len] = '\0';
	long v = 0;
	char tag = 0;
	if (sscanf(buf, "%c %ld", &tag, &v) == 2 && tag == 'P' && v > 0) {
		*shim_pid = pid;
		*child_pid = (pid_t)v;
		return 0;
	}
	waitpid(pid, NULL, 0);
	if (tag == 'E')
		snprintf(err, errlen, "exec '%s': %s", s->argv[0], strerror((int)v));
	else
		snprintf(err, errlen, "the supervisor of '%s' failed to start", s->argv[0]);
	return -1;
}

/* ---- a container's supervisor ---------------------------------------- */

#define CS_INSPECT_TIMEOUT_USEC (20 * 1000000LL)
#define CS_ACT_TIMEOUT_USEC (30 * 1000000LL)	/* `kill`, and `stop` past its grace */
#define CS_RETRY_USEC 1000000			/* inspect, re-follow, kill again */
#define CS_LAST_LINES_USEC 2000000		/* for `logs -f` to end once it has */

enum cs_call { CS_START, CS_LOGS, CS_INSPECT, CS_STOP, CS_KILL, CS_CALLS };

struct cs {
	const struct shim_container_spec *s;
	pid_t pid[CS_CALLS];		/* engine calls in flight (0: none) */
	int64_t began[CS_CALLS];	/* mono_usec() */
	int code[CS_CALLS];		/* how the last one ended */
	int logfd;
	struct stream out, err;
	bool out_open, err_open;
	int inspect_fd;			/* `inspect`'s stdout and stderr (a pipe), or -1 */
};

/* <dir>/<name>, in a static buffer (one at a time). */
static const char *cs_path(const struct cs *c, const char *name)
{
	static char path[4096];
	snprintf(path, sizeof(path), "%s/%s", c->s->dir, name);
	return path;
}

static void cs_say_started(const struct cs *c, const char *word, int code)
{
	char text[64];
	int n = code ? snprintf(text, sizeof(text), "%s %d\n", word, code) :
		snprintf(text, sizeof(text), "%s\n", word);
	if (replica_write_atomic(cs_path(c, "started"), text, (size_t)n) != 0) {
		/* Unwritable: the agent finds out from inspect instead. */
	}
}

/*
 * Runs `<engine> <verb> [opt] [opt2] <name>` as our child, in a process
 * group of its own (the wrapper's shell, unshare and the engine die
 * together), stdout on out_fd and stderr on err_fd (-1: /dev/null).
 */
static void cs_call(struct cs *c, enum cs_call which, const char *verb, const char *opt,
		    const char *opt2, int out_fd, int err_fd)
{
	struct strvec sv = STRVEC_INIT;
	for (size_t i = 0; c->s->engine[i]; i++)
		strvec_push(&sv, c->s->engine[i]);
	strvec_push(&sv, verb);
	if (opt)
		strvec_push(&sv, opt);
	if (opt2)
		strvec_push(&sv, opt2);
	strvec_push(&sv, c->s->name);
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);
		setpgid(0, 0);
		dup2(devnull, 0);
		dup2(out_fd >= 0 ? out_fd : devnull, 1);
		dup2(err_fd >= 0 ? err_fd : devnull, 2);
		close_fds_except(-1);
		reset_signals();
		execvp(strvec_get(&sv)[0], strvec_get(&sv));
		_exit(127);
	}
	if (pid > 0) {
		setpgid(pid, pid);	/* also here: no window without the group */
		c->pid[which] = pid;
		c->began[which] = mono_usec();
	} else {
		c->code[which] = 127;	/* fork failed: as if it could not run */
	}
	strvec_clear(&sv);
}

/* Kills an engine call in flight with everything it started (its group). */
static void cs_abandon(struct cs *c, enum cs_call which)
{
	if (c->pid[which] > 0)
		kill(-c->pid[which], SIGKILL);
}

static void cs_follow(struct cs *c, int64_t since_usec)
{
	int outp[2], errp[2];
	char since[80], ts[48];

	if (pipe2(outp, O_CLOEXEC))
		return;
	if (pipe2(errp, O_CLOEXEC)) {
		close(outp[0]);
		close(outp[1]);
		return;
	}
	if (since_usec) {
		wire_time_format(since_usec, ts, sizeof(ts));
		snprintf(since, sizeof(since), "--since=%s", ts);
	}
	cs_call(c, CS_LOGS, "logs", "-f", since_usec ? since : NULL, outp[1], errp[1]);
	close(outp[1]);
	close(errp[1]);
	c->out = (struct stream){ .fd = outp[0], .tag = 'O' };
	c->err = (struct stream){ .fd = errp[0], .tag = 'E' };
	fcntl(outp[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	c->out_open = c->err_open = true;
}

/* Takes what the follower's pipes still hold (up to 500 ms), and closes them. */
static void cs_drain(struct cs *c)
{
	for (int i = 0; i < 50 && (c->out_open || c->err_open); i++) {
		if (c->out_open)
			c->out_open = stream_read(&c->out, c->logfd);
		if (c->err_open)
			c->err_open = stream_read(&c->err, c->logfd);
		if (c->out_open || c->err_open) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	for (int i = 0; i < 2; i++) {
		struct stream *st = i ? &c->err : &c->out;
		if (st->fd >= 0) {
			if (st->len)
				emit(c->logfd, st->tag, st->buf, st->len);
			st->len = 0;
			close(st->fd);
			st->fd = -1;
		}
	}
	c->out_open = c->err_open = false;
}

/*
 * Starts `inspect` with its output on a pipe (a few bytes: the call ends
 * before the pipe could fill). Not a file in the replica's directory: the
 * supervisor must see "no such container" and end even when that is gone.
 */
static void cs_inspect(struct cs *c)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC))
		return;
	cs_call(c, CS_INSPECT, "inspect", "--type=container",
		"--format={{.State.Status}} {{.State.ExitCode}}", p[1], p[1]);
	close(p[1]);
	if (c->pid[CS_INSPECT]) {
		fcntl(p[0], F_SETFL, O_NONBLOCK);
		c->inspect_fd = p[0];
	} else {
		close(p[0]);
	}
}

/*
 * What the `inspect` that ended with rc said: 1 running (or paused, or on
 * its way), 0 never started, 2 ended (*code), 3 no such container; -1 the
 * engine failed.
 */
static int cs_inspected(struct cs *c, int rc, int *code)
{
	char buf[4096], status[32];
	size_t n = 0;
	ssize_t got;
	while (c->inspect_fd >= 0 && n < sizeof(buf) - 1 &&
	       ((got = read(c->inspect_fd, buf + n, sizeof(buf) - 1 - n)) > 0 ||
		(got < 0 && errno == EINTR)))
		n += got > 0 ? (size_t)got : 0;
	if (c->inspect_fd >= 0)
		close(c->inspect_fd);
	c->inspect_fd = -1;
	buf[n] = '\0';
	if (rc != 0)
		return strcasestr(buf, "no such") ? 3 : -1;
	if (sscanf(buf, "%31s %d", status, code) != 2)
		return -1;
	if (!strcmp(status, "exited") || !strcmp(status, "stopped") || !strcmp(status, "dead"))
		return 2;
	if (!strcmp(status, "created") || !strcmp(status, "configured") ||
	    !strcmp(status, "initialized"))
		return 0;
	return 1;	/* running, paused, restarting, stopping, removing, ... */
}

/* The container supervisor's body; never returns. */
static void container_main(const struct shim_container_spec *s, int rep)
{
	static struct cs c;
	enum { WAIT_START, STARTING, UP } phase = s->start ? WAIT_START : UP;
	struct lease_fence fence = { .path = s->lease_path };
	bool over = false, want_logs = !s->start, inspect_due = false;
	int64_t over_at = 0, inspect_at = 0, logs_at = 0, kill_again_at = 0;
	int64_t logs_since = s->logs_since_usec;
	int code = 255;
	char grace[32];

	rep = detach(rep);
	c.s = s;
	c.out.fd = c.err.fd = c.inspect_fd = -1;
	c.logfd = open(cs_path(&c, "output.log"), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (c.logfd < 0) {
		report(rep, "E %ld\n", errno);
		_exit(1);
	}
	report(rep, "P %ld\n", (long)getpid());
	close(rep);
	snprintf(grace, sizeof(grace), "--time=%d", s->stop_grace_s);

	for (;;) {
		int64_t now = mono_usec();
		pid_t w;
		int st;

		/* 1. Engine calls that ended. */
		while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
			for (int i = 0; i < CS_CALLS; i++) {
				if (c.pid[i] != w)
					continue;
				c.pid[i] = 0;
				c.code[i] = exit_code_of(st);
				if (i == CS_START && c.code[i] == 0) {
					cs_say_started(&c, SHIM_STARTED, 0);
					phase = UP;
					want_logs = true;
				} else if (i == CS_START && fence.stage) {
					/* Abandoned at the deadline: it may have got
					 * through all the same; the fence goes on and
					 * inspect tells. */
					cs_say_started(&c, SHIM_START_LEASE, 0);
					phase = UP;
					inspect_due = true;
				} else if (i == CS_START) {
					cs_say_started(&c, SHIM_START_FAILED, c.code[i]);
					over = true;	/* it never ran */
				} else if (i == CS_LOGS) {
					/* The container ended, or the engine restarted, or
					 * the follower was killed: inspect says which. */
					kill(-w, SIGKILL);	/* whatever of it lingers */
					cs_drain(&c);
					logs_since = now_usec();
					inspect_due = true;
				} else if (i == CS_INSPECT) {
					kill(-w, SIGKILL);	/* none of it lingers on the pipe */
					int got = cs_inspected(&c, c.code[i], &code);
					if (got == 2 || got == 3) {
						over = true;
						if (got == 3)
							code = 255;
					} else if (got == 0 && fence.stage == 2 && phase == UP) {
						/* Its start abandoned, and past the grace
						 * and a `kill`: it never ran. */
						over = true;
					} else if (got == 1) {
						if (!c.pid[CS_LOGS] && phase == UP)
							want_logs = true;	/* follow again */
						if (fence.stage == 2) {
							if (!c.pid[CS_KILL] && now >= kill_again_at) {
								cs_call(&c, CS_KILL, "kill", NULL, NULL,
									-1, -1);
								kill_again_at = now + CS_RETRY_USEC;
							}
							inspect_due = true;
						}
					} else if (got < 0 || !fence.stage) {
						/* The engine failed, or it is not started
						 * yet: look again in a second. (Fenced, the
						 * `kill` to come asks again.) */
						inspect_due = true;
					}
				} else if (fence.stage) {
					inspect_due = true;	/* `stop`/`kill` done: did it work? */
				}
			}
		}

		/* 2. The fence. */
		int64_t lnow = lease_clock_usec(), lnext;
		enum fence_action act = over ? FENCE_NONE : lease_fence_step(&fence, lnow, &lnext);
		if (over)
			lnext = INT64_MAX;
		if (act == FENCE_TERM) {
			mark_fenced(s->dir);
			if (phase == WAIT_START) {
				cs_say_started(&c, SHIM_START_LEASE, 0);
				over = true;	/* nothing was started: nothing to stop */
			} else {
				cs_abandon(&c, CS_START);
				if (!c.pid[CS_STOP])
					cs_call(&c, CS_STOP, "stop", grace, NULL, -1, -1);
			}
		} else if (act == FENCE_KILL && !c.pid[CS_KILL]) {
			cs_call(&c, CS_KILL, "kill", NULL, NULL, -1, -1);
			kill_again_at = now + CS_RETRY_USEC;
		}

		/* 3. Start, only while the lease holds. */
		if (phase == WAIT_START && !over) {
			struct lease l;
			int got = s->lease_path ? lease_read(s->lease_path, &l) : 0;
			if (got == 0 || (got == 1 && !lease_expired(&l, lnow))) {
				int errfd = open(cs_path(&c, "start.err"),
						 O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
				cs_call(&c, CS_START, "start", NULL, NULL, -1, errfd);
				if (errfd >= 0)
					close(errfd);
				if (c.pid[CS_START]) {
					phase = STARTING;
				} else {
					cs_say_started(&c, SHIM_START_FAILED, c.code[CS_START]);
					over = true;
				}
			} else {
				/* Past the lease (keep_running: the fence itself
				 * acted above for `fence`): the server may have
				 * moved the replica; start nothing. */
				if (l.fence)
					mark_fenced(s->dir);
				cs_say_started(&c, SHIM_START_LEASE, 0);
				over = true;
			}
		}

		/* 4. Follow the logs; ask the engine. */
		if (want_logs && !over && !c.pid[CS_LOGS] && now >= logs_at) {
			cs_follow(&c, logs_since);
			logs_at = now + CS_RETRY_USEC;
			want_logs = false;
		}
		if (inspect_due && !c.pid[CS_INSPECT] && now >= inspect_at) {
			cs_inspect(&c);
			inspect_due = !c.pid[CS_INSPECT];
			inspect_at = now + CS_RETRY_USEC;
		}
		/* An engine call that hangs is killed (and then counts as failed). */
		if (c.pid[CS_INSPECT] && now - c.began[CS_INSPECT] > CS_INSPECT_TIMEOUT_USEC)
			cs_abandon(&c, CS_INSPECT);
		if (c.pid[CS_STOP] && now - c.began[CS_STOP] >
		    (int64_t)s->stop_grace_s * 1000000 + CS_ACT_TIMEOUT_USEC)
			cs_abandon(&c, CS_STOP);
		if (c.pid[CS_KILL] && now - c.began[CS_KILL] > CS_ACT_TIMEOUT_USEC)
			cs_abandon(&c, CS_KILL);

		/* 5. Done: give `logs -f` a moment for the last lines. */
		if (over) {
			if (!over_at)
				over_at = now;
			if (!c.pid[CS_LOGS] || now >= over_at + CS_LAST_LINES_USEC)
				break;
		}

		/* 6. Wait for output, or for the next thing to do. */
		int64_t wait_usec = 200000;
		if (lnext - lnow < wait_usec)
			wait_usec = lnext <= lnow ? 0 : lnext - lnow;
		if (inspect_due && inspect_at - now < wait_usec)
			wait_usec = inspect_at <= now ? 0 : inspect_at - now;
		int timeout = (int)((wait_usec + 999) / 1000);
		struct pollfd pfd[2];
		nfds_t n = 0;
		if (c.out_open)
			pfd[n++] = (struct pollfd){ .fd = c.out.fd, .events = POLLIN };
		if (c.err_open)
			pfd[n++] = (struct pollfd){ .fd = c.err.fd, .events = POLLIN };
		if (n) {
			poll(pfd, n, timeout);
			if (c.out_open)
				c.out_open = stream_read(&c.out, c.logfd);
			if (c.err_open)
				c.err_open = stream_read(&c.err, c.logfd);
		} else {
			struct timespec ts = { timeout / 1000, (long)(timeout % 1000) * 1000000 };
			nanosleep(&ts, NULL);
		}
	}
	/* Whatever engine call is still in flight is no use any more. */
	for (int i = 0; i < CS_CALLS; i++) {
		if (!c.pid[i])
			continue;
		kill(-c.pid[i], SIGKILL);
		while (waitpid(c.pid[i], NULL, 0) < 0 && errno == EINTR)
			;
	}
	cs_drain(&c);
	close(c.logfd);
	replica_write_exit(s->dir, code, now_usec());
	_exit(0);
}

int shim_spawn_container(const struct shim_container_spec *s, pid_t *pid, char *err,
			 size_t errlen)
{
	int rep[2];
	char buf[64];
	ssize_t got;
	long v = 0;
	char tag = 0;

	if (pipe2(rep, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t p = fork();
	if (p < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(rep[0]);
		close(rep[1]);
		return -1;
	}
	if (p == 0) {
		close(rep[0]);
		container_main(s, rep[1]);
	}
	close(rep[1]);
	while ((got = read(rep[0], buf, sizeof(buf) - 1)) < 0 && errno == EINTR)
		;
	close(rep[0]);
	buf[got > 0 ? got : 0] = '\0';
	if (sscanf(buf, "%c %ld", &tag, &v) == 2 && tag == 'P') {
		*pid = p;
		return 0;
	}
	waitpid(p, NULL, 0);
	snprintf(err, errlen, "the supervisor of container %s failed to start: %s", s->name,
		 tag == 'E' ? strerror((int)v) : "no word from it");
	return -1;
}

int run_command(char *const *argv, struct strbuf *out, struct strbuf *errout, int timeout_ms)
{
	int op[2], ep[2], status = 0;
	pid_t pid;
	int64_t deadline = mono_usec() + (int64_t)timeout_ms * 1000;

	if (pipe2(op, O_CLOEXEC))
		return -1;
	if (pipe2(ep, O_CLOEXEC)) {
		close(op[0]);
		close(op[1]);
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(op[0]);
		close(op[1]);
		close(ep[0]);
		close(ep[1]);
		return -1;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(op[1], 1);
		dup2(ep[1], 2);
		close_fds_except(-1);
		reset_signals();
		setpgid(0, 0);
		execvp(argv[0], argv);
		dprintf(2, "exec '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(op[1]);
	close(ep[1]);
	struct pollfd pfd[2] = { { .fd = op[0], .events = POLLIN }, { .fd = ep[0], .events = POLLIN } };
	int open_n = 2;
	bool killed = false;
	while (open_n) {
		int64_t left = (deadline - mono_usec()) / 1000;
		if (left <= 0 && !killed) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			killed = true;
		}
		if (poll(pfd, 2, left > 0 ? (int)(left < 1000 ? left : 1000) : 100) < 0 &&
		    errno != EINTR)
			break;
		for (int i = 0; i < 2; i++) {
			if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char buf[4096];
			ssize_t got = read(pfd[i].fd, buf, sizeof(buf));
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
				open_n--;
				continue;
			}
			struct strbuf *sb = i == 0 ? out : errout;
			if (sb && sb->len < (1 << 20))
				sb_add(sb, buf, (size_t)got);
		}
	}
	for (int i = 0; i < 2; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (killed && errout)
		sb_addf(errout, "timed out after %d ms\n", timeout_ms);
	return exit_code_of(status);
}

pid_t spawn_background(char *const *argv, const char *out_path, const char *err_path)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	int in = open("/dev/null", O_RDONLY);
	int o = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);
	int e = open(err_path ? err_path : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (in >= 0)
		dup2(in, 0);
	if (o >= 0)
		dup2(o, 1);
	if (e >= 0)
		dup2(e, 2);
	close_fds_except(-1);
	reset_signals();
	setsid();
	execvp(argv[0], argv);
	dprintf(2, "exec '%s': %s\n", argv[0], strerror(errno));
	_exit(127);
}
