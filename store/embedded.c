#include "embedded.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "log.h"

#define DB_USER "trainplane"
#define DB_NAME "trainplane"

struct pg_embedded {
	char *bin_dir;
	char *data_dir;
	char *log_path;
	uid_t uid;		/* the user PostgreSQL runs as */
	gid_t gid;
	bool drop_privileges;
	int lock_fd;		/* state_dir/server.lock, held (flock) while this server runs */
};

/* The newest /usr/lib/postgresql/<N>/bin holding pg_ctl, or NULL. */
static char *find_bin_dir(void)
{
	DIR *d = opendir("/usr/lib/postgresql");
	struct dirent *e;
	long best = -1;
	char *out = NULL;

	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		char *end;
		long v = strtol(e->d_name, &end, 10);
		if (end == e->d_name || *end || v <= best)
			continue;
		char *cand = xasprintf("/usr/lib/postgresql/%s/bin", e->d_name);
		char *ctl = xasprintf("%s/pg_ctl", cand);
		if (!access(ctl, X_OK)) {
			free(out);
			out = cand;
			best = v;
		} else {
			free(cand);
		}
		free(ctl);
	}
	closedir(d);
	return out;
}

/*
 * Runs argv as the database user with stdout+stderr appended to log_path.
 * Returns the exit status (0 = success), or -1 if it could not run.
 */
static int run_as_db_user(const struct pg_embedded *pg, const char *const argv[])
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(pg->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0) {
			dup2(devnull, 0);
			close(devnull);
		}
		/* The server's own process group gets our Ctrl-C; PostgreSQL is
		 * stopped by us, in order, not by the terminal. */
		setsid();
		if (pg->drop_privileges &&
		    (setgroups(0, NULL) || setgid(pg->gid) || setuid(pg->uid))) {
			perror("dropping privileges");
			_exit(126);
		}
		/* execv's argv is char *const[] for history's sake: it writes nothing. */
		execv(argv[0], (char *const *)argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Runs argv as this process's user, quietly; its exit status, or -1. */
static int run_plain(const char *const argv[])
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
			close(devnull);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * The prepared cluster a fresh state directory copies instead of running
 * initdb (a fresh emulator starts in a fraction of the time): initdb's
 * output, kept under $XDG_CACHE_HOME/trainplane (else ~/.cache/trainplane),
 * named after the initdb binary (its path, inode, size and time), so that
 * another PostgreSQL makes another. NULL: no cache directory to use
 * (TRAINPLANE_PG_TEMPLATE=0 turns the cache off).
 */
static char *template_path(const char *initdb, char **cache_dir)
{
	const char *off = getenv("TRAINPLANE_PG_TEMPLATE");
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	struct stat st;

	*cache_dir = NULL;
	if ((off && !strcmp(off, "0")) || stat(initdb, &st))
		return NULL;
	if (xdg && xdg[0] == '/')
		*cache_dir = xasprintf("%s/trainplane", xdg);
	else if (home && home[0] == '/')
		*cache_dir = xasprintf("%s/.cache/trainplane", home);
	else
		return NULL;
	uint64_t h = 1469598103934665603ULL;
	for (const char *c = initdb; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	h ^= (uint64_t)st.st_ino * 31 + (uint64_t)st.st_size * 17 + (uint64_t)st.st_mtime;
	return xasprintf("%s/pgdata-%016llx", *cache_dir, (unsigned long long)h);
}

/* cp -a (with reflinks where the filesystem has them): 0 or -1. */
static int copy_tree(const char *from, const char *to)
{
	const char *const argv[] = { "/bin/cp", "-a", "--reflink=auto", from, to, NULL };
	return run_plain(argv) ? -1 : 0;
}

/* The data directory from the template: 0, or -1 (then initdb it). */
static int data_from_template(const char *tpl, const char *data_dir)
{
	char *version = xasprintf("%s/PG_VERSION", tpl);
	int ok = !access(version, F_OK);
	free(version);
	if (!ok)
		return -1;
	if (rmdir(data_dir) && errno != ENOENT)
		return -1;	/* not empty: leave it to initdb's judgement */
	if (copy_tree(tpl, data_dir)) {
		const char *const rm[] = { "/bin/rm", "-rf", data_dir, NULL };
		(void)run_plain(rm);
		return -1;
	}
	return 0;
}

/* Keeps a copy of a fresh initdb as the template; a race loses harmlessly. */
static void save_template(const char *tpl, const char *cache_dir, const char *data_dir)
{
	char *parent = xasprintf("%.*s", (int)(strrchr(cache_dir, '/') - cache_dir), cache_dir);
	char *tmp = xasprintf("%s.tmp-%ld", tpl, (long)getpid());

	if ((mkdir(parent, 0755) && errno != EEXIST) || (mkdir(cache_dir, 0755) && errno != EEXIST) ||
	    copy_tree(data_dir, tmp) || rename(tmp, tpl)) {
		const char *const rm[] = { "/bin/rm", "-rf", tmp, NULL };
		(void)run_plain(rm);
	} else {
		log_info("kept a template of the fresh database in %s", tpl);
	}
	free(parent);
	free(tmp);
}

/* Appends the last lines of the PostgreSQL log to err. */
static void add_log_tail(const struct pg_embedded *pg, char *err, size_t errlen)
{
	char tail[1024];
	FILE *f = fopen(pg->log_path, "r");
	size_t n;

	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fseek(f, size > (long)sizeof(tail) - 1 ? size - (long)sizeof(tail) + 1 : 0, SEEK_SET);
	n = fread(tail, 1, sizeof(tail) - 1, f);
	tail[n] = '\0';
	fclose(f);
	size_t used = strlen(err);
	snprintf(err + used, errlen - used, " (see %s):\n%s", pg->log_path, tail);
}

static int make_dir(const char *path, mode_t mode, const struct pg_embedded *pg, bool chown_it,
		    char *err, size_t errlen)
{
	if (mkdir(path, mode) && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		return -1;
	}
	if (chown_it && pg->drop_privileges && chown(path, pg->uid, pg->gid)) {
		snprintf(err, errlen, "cannot chown %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int create_database(const char *conninfo, char *err, size_t errlen)
{
	char *admin = xasprintf("%s dbname=postgres", conninfo);
	PGconn *c = PQconnectdb(admin);
	PGresult *res;
	int rc = -1;

	free(admin);
	if (PQstatus(c) != CONNECTION_OK) {
		snprintf(err, errlen, "embedded database: %s", PQerrorMessage(c));
		goto out;
	}
	res = PQexec(c, "SELECT 1 FROM pg_database WHERE datname = '" DB_NAME "'");
	bool exists = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
	PQclear(res);
	if (!exists) {
		res = PQexec(c, "CREATE DATABASE " DB_NAME);
		if (PQresultStatus(res) != PGRES_COMMAND_OK) {
			snprintf(err, errlen, "creating database: %s", PQresultErrorMessage(res));
			PQclear(res);
			goto out;
		}
		PQclear(res);
	}
	rc = 0;
out:
	PQfinish(c);
	return rc;
}

int pg_embedded_start(const char *state_dir, const char *bin_dir, struct pg_embedded **out,
		      char **conninfo, char *err, size_t errlen)
{
	struct pg_embedded *pg = xcalloc(1, sizeof(*pg));
	char abs_state[PATH_MAX];

	pg->lock_fd = -1;
	char *run_dir = NULL, *pg_ctl = NULL, *initdb = NULL, *opts = NULL, *version = NULL;
	int rc = -1;

	*conninfo = NULL;
	if (mkdir(state_dir, 0755) && errno != EEXIST) {
		snprintf(err, errlen, "cannot create state directory %s: %s", state_dir,
			 strerror(errno));
		goto out;
	}
	if (!realpath(state_dir, abs_state)) {
		snprintf(err, errlen, "state directory %s: %s", state_dir, strerror(errno));
		goto out;
	}
	/*
	 * One server per state directory: a second one would adopt the first's
	 * running database and, failing later (its port taken), stop it under
	 * the first. The lock goes with the process (a crash leaves the
	 * database to adopt, and no lock); PostgreSQL does not inherit it.
	 */
	char *lock_path = xasprintf("%s/server.lock", abs_state);
	pg->lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	free(lock_path);
	if (pg->lock_fd < 0) {
		snprintf(err, errlen, "state directory %s: cannot open server.lock: %s", abs_state,
			 strerror(errno));
		goto out;
	}
	if (flock(pg->lock_fd, LOCK_EX | LOCK_NB)) {
		char holder[32] = "";
		ssize_t n = pread(pg->lock_fd, holder, sizeof(holder) - 1, 0);
		holder[n > 0 ? n : 0] = '\0';
		holder[strcspn(holder, "\n")] = '\0';
		snprintf(err, errlen, "another trainplane-server%s%s%s runs on the state directory %s "
			 "and its embedded database: give this one a state_dir of its own",
			 *holder ? " (pid " : "", holder, *holder ? ")" : "", abs_state);
		goto out;
	}
	char pidtext[32];
	int plen = snprintf(pidtext, sizeof(pidtext), "%ld\n", (long)getpid());
	if (ftruncate(pg->lock_fd, 0) || pwrite(pg->lock_fd, pidtext, (size_t)plen, 0) != plen)
		log_warn("cannot write server.lock in %s: %s", abs_state, strerror(errno));
	pg->bin_dir = bin_dir && *bin_dir ? xstrdup(bin_dir) : find_bin_dir();
	if (!pg->bin_dir) {
		snprintf(err, errlen, "no PostgreSQL server found in /usr/lib/postgresql/*/bin: "
			 "install the postgresql package or set postgres_bin_dir");
		goto out;
	}
	pg_ctl = xasprintf("%s/pg_ctl", pg->bin_dir);
	initdb = xasprintf("%s/initdb", pg->bin_dir);
	pg->data_dir = xasprintf("%s/postgres", abs_state);
	pg->log_path = xasprintf("%s/postgres.log", abs_state);
	run_dir = xasprintf("%s/run", abs_state);
	if (strlen(run_dir) + sizeof("/.s.PGSQL.5432") > sizeof(((struct sockaddr_un *)0)->sun_path)) {
		snprintf(err, errlen, "state directory path %s is too long for a unix socket",
			 abs_state);
		goto out;
	}
	if (geteuid() == 0) {
		struct passwd *pw = getpwnam("postgres");
		if (!pw) {
			snprintf(err, errlen, "running as root needs the 'postgres' system user "
				 "for the embedded database (install the postgresql package)");
			goto out;
		}
		pg->uid = pw->pw_uid;
		pg->gid = pw->pw_gid;
		pg->drop_privileges = true;
		/* The log is written by the database user. */
		int fd = open(pg->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			if (fchown(fd, pg->uid, pg->gid))
				log_warn("cannot chown %s: %s", pg->log_path, strerror(errno));
			close(fd);
		}
	}
	if (make_dir(run_dir, 0700, pg, true, err, errlen))
		goto out;

	version = xasprintf("%s/PG_VERSION", pg->data_dir);
	if (access(version, F_OK)) {
		char *cache_dir = NULL, *tpl = template_path(initdb, &cache_dir);
		if (tpl && !data_from_template(tpl, pg->data_dir)) {
			log_info("the embedded database in %s: a copy of %s", pg->data_dir, tpl);
		} else {
			log_info("initialising the embedded database in %s", pg->data_dir);
			if (make_dir(pg->data_dir, 0700, pg, true, err, errlen)) {
				free(tpl);
				free(cache_dir);
				goto out;
			}
			const char *const argv[] = { initdb, "-D", pg->data_dir, "-U", DB_USER, "-A",
					       "trust", "-E", "UTF8", "--locale=C", "--no-instructions",
					       NULL };
			if (run_as_db_user(pg, argv)) {
				snprintf(err, errlen, "initdb failed");
				add_log_tail(pg, err, errlen);
				free(tpl);
				free(cache_dir);
				goto out;
			}
			if (tpl)
				save_template(tpl, cache_dir, pg->data_dir);
		}
		free(tpl);
		free(cache_dir);
	}

	const char *const status_argv[] = { pg_ctl, "-D", pg->data_dir, "status", NULL };
	if (run_as_db_user(pg, status_argv) == 0) {
		log_info("embedded database already running; adopting it");
	} else {
		opts = xasprintf("-c listen_addresses='' -c unix_socket_directories='%s' "
				 "-c max_connections=300 -c shared_buffers=128MB", run_dir);
		const char *const argv[] = { pg_ctl, "-D", pg->data_dir, "-l", pg->log_path, "-w",
				       "-t", "60", "-o", opts, "start", NULL };
		if (run_as_db_user(pg, argv)) {
			snprintf(err, errlen, "starting the embedded database failed");
			add_log_tail(pg, err, errlen);
			goto out;
		}
	}
	*conninfo = xasprintf("host=%s user=" DB_USER, run_dir);
	if (create_database(*conninfo, err, errlen))
		goto out;
	char *full = xasprintf("%s dbname=" DB_NAME, *conninfo);
	free(*conninfo);
	*conninfo = full;
	*out = pg;
	pg = NULL;
	rc = 0;
out:
	if (rc) {
		free(*conninfo);
		*conninfo = NULL;
	}
	if (pg && rc) {
		/* Stop a database we may have started before failing. */
		if (pg->data_dir && pg_ctl && !access(version ? version : "/", F_OK)) {
			const char *const argv[] = { pg_ctl, "-D", pg->data_dir, "-m", "fast", "-w",
					       "stop", NULL };
			(void)run_as_db_user(pg, argv);
		}
		if (pg->lock_fd >= 0)
			close(pg->lock_fd);
		free(pg->bin_dir);
		free(pg->data_dir);
		free(pg->log_path);
		free(pg);
	}
	free(run_dir);
	free(pg_ctl);
	free(initdb);
	free(opts);
	free(version);
	return rc;
}

void pg_embedded_stop(struct pg_embedded *pg)
{
	if (!pg)
		return;
	char *pg_ctl = xasprintf("%s/pg_ctl", pg->bin_dir);
	const char *const argv[] = { pg_ctl, "-D", pg->data_dir, "-m", "fast", "-w", "stop", NULL };
	if (run_as_db_user(pg, argv))
		log_warn("stopping the embedded database failed; see %s", pg->log_path);
	else
		log_info("embedded database stopped");
	free(pg_ctl);
	if (pg->lock_fd >= 0)
		close(pg->lock_fd);
	free(pg->bin_dir);
	free(pg->data_dir);
	free(pg->log_path);
	free(pg);
}
