/*
 * shim.c - the replica supervisor, and small helpers that run commands.
 *
 * Everything after fork() here runs in a copy of a single-threaded agent,
 * so ordinary library calls are safe; the copies leave with _exit() so that
 * no atexit handler or leak check of the agent runs in them.
 */
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lease.h"
#include "replica.h"
#include "strbuf.h"

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

/*
 * The fence's actions (lease.h). The marker is written before the signal,
 * so whoever sees the replica end sees that it was fenced.
 */
static void fence_act(const struct shim_spec *s, enum fence_action act, pid_t child,
		      pid_t helpers[2])
{
	if (act == FENCE_TERM) {
		char path[4096], text[32];
		int n = snprintf(text, sizeof(text), "%lld\n", (long long)now_usec());
		if ((size_t)snprintf(path, sizeof(path), "%s/fenced", s->dir) < sizeof(path) &&
		    replica_write_atomic(path, text, (size_t)n) != 0) {
			/* Unwritable (disk full): stopped all the same, then reported
			 * as an exit; the server gives the node up anyway. */
		}
		if (s->fence_argv)
			helpers[0] = spawn_background(s->fence_argv, NULL, NULL);
		else
			kill(-child, SIGTERM);
	} else if (act == FENCE_KILL) {
		if (s->kill_argv)
			helpers[1] = spawn_background(s->kill_argv, NULL, NULL);
		else
			kill(-child, SIGKILL);
	}
}

/* The supervisor's body; never returns. */
static void shim_main(const struct shim_spec *s, int rep)
{
	int outp[2], errp[2], execp[2], logfd, devnull;
	char path[4096];
	static struct stream so, se;
	pid_t child;
	int status = 0, e = 0;
	bool exited;

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
	pid_t helpers[2] = { 0, 0 };
	for (;;) {
		/* The exit first: a replica that ended by itself is never fenced. */
		pid_t w = waitpid(child, &status, WNOHANG);
		exited = w == child || (w < 0 && errno == ECHILD);
		if (exited)
			break;
		int64_t now = lease_clock_usec(), next;
		enum fence_action act = lease_fence_step(&fence, now, &next);
		if (act != FENCE_NONE)
			fence_act(s, act, child, helpers);
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
		for (int i = 0; i < 2; i++)
			if (helpers[i] > 0 && waitpid(helpers[i], NULL, WNOHANG) == helpers[i])
				helpers[i] = 0;
	}
	/* The leader is gone: end its group, then take what the pipes still hold
	 * (a killed straggler may have held them open). */
	kill(-child, SIGKILL);
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
