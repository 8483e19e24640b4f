/*
 * main.c - trainplane-agent: the node agent.
 *
 *   trainplane-agent [--config FILE] [--stop-replicas-on-exit | --drain-on-exit | --pilot]
 *
 * Exit status: 0 after SIGTERM/SIGINT/SIGHUP, 1 on a fatal runtime error, 2
 * on bad configuration or usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "agent_config.h"
#include "common.h"
#include "log.h"
#include "sync_msg.h"

static volatile sig_atomic_t quit;

static void on_signal(int sig)
{
	(void)sig;
	if (quit < 2)
		quit++;	/* a second signal cuts a drain short */
}

/* A TCP port nobody listens on now (the kernel's pick). */
static int pilot_free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd < 0)
		return -1;
	if (!bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
	    !getsockname(fd, (struct sockaddr *)&sa, &len))
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	if (remove(path))
		log_warn("pilot: cannot remove %s: %s", path, strerror(errno));
	return 0;
}

/* A pilot whose replica ended and was reported leaves nothing on the node. */
static void pilot_cleanup(const char *work_dir)
{
	if (work_dir && strstr(work_dir, "/trainplane-pilots/slurm-"))
		nftw(work_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: trainplane-agent [--config FILE] [--stop-replicas-on-exit | --drain-on-exit]\n"
		"  --config FILE             YAML configuration (default: $TRAINPLANE_AGENT_CONFIG)\n"
		"  --stop-replicas-on-exit   on SIGTERM/SIGINT/SIGHUP, stop the replicas as a\n"
		"                            maintenance event does: their jobs restart them\n"
		"                            (attempt + 1) elsewhere, or here when the agent is back\n"
		"  --drain-on-exit           on SIGTERM/SIGINT/SIGHUP, take no new replica and leave\n"
		"                            once the replicas have ended; a second signal stops\n"
		"                            them as --stop-replicas-on-exit does\n"
		"  --pilot                   the agent of one task of a Slurm job trainplane submitted\n"
		"                            (docs/slurm.md): set up from the job's environment, it\n"
		"                            runs the replica the server places there, then leaves\n"
		"  By default the replicas keep running and a restarted agent re-adopts them.\n"
		"Every key can be set with TRAINPLANE_AGENT_<KEY>; see agent/README.md.\n");
}

/*
 * --pilot: the agent of one task of a Slurm job (docs/slurm.md), started by
 * the job's batch script with srun. Its settings come from the job's
 * environment (TRAINPLANE_PILOT_*: written by trainplane, never by a
 * tenant) and from Slurm's (SLURM_*, CUDA_VISIBLE_DEVICES); they become
 * TRAINPLANE_AGENT_* settings: a node named for the job, its run, its
 * group and its task, a work dir of its own, one free port, the GPUs
 * Slurm bound to the task. 0, or -1 with why in err.
 */
static int pilot_setup(int **gpu_map, size_t *ngpus, char *err, size_t errlen)
{
	const char *server = getenv("TRAINPLANE_PILOT_SERVER"),
		   *token = getenv("TRAINPLANE_PILOT_TOKEN"), *job = getenv("TRAINPLANE_PILOT_JOB"),
		   *group = getenv("TRAINPLANE_PILOT_GROUP"),
		   *dir = getenv("TRAINPLANE_PILOT_WORK_DIR"), *task = getenv("SLURM_PROCID"),
		   *restart = getenv("SLURM_RESTART_COUNT"), *cpus = getenv("SLURM_CPUS_PER_TASK"),
		   *gpus = getenv("CUDA_VISIBLE_DEVICES");
	char node[128], buf[64];

	if (!server || !token || !job || !group || !dir || !task) {
		snprintf(err, errlen, "--pilot runs inside a Slurm job that trainplane submitted: "
			 "TRAINPLANE_PILOT_SERVER, _TOKEN, _JOB, _GROUP, _WORK_DIR and SLURM_PROCID "
			 "are required");
		return -1;
	}
	for (const char *const *v = (const char *const[]){ job, group, task, restart ? restart : "0",
							   NULL }; *v; v++)
		if (!**v || strspn(*v, "0123456789") != strlen(*v) || strlen(*v) > 18) {
			snprintf(err, errlen, "--pilot: the job's numbers (TRAINPLANE_PILOT_JOB, "
				 "TRAINPLANE_PILOT_GROUP, SLURM_PROCID, SLURM_RESTART_COUNT) must be "
				 "decimal");
			return -1;
		}
	snprintf(node, sizeof(node), "slurm-%s-r%s-g%s-t%s", job, restart ? restart : "0", group,
		 task);
	setenv("TRAINPLANE_AGENT_NODE", node, 1);
	setenv("TRAINPLANE_AGENT_SERVER", server, 1);
	setenv("TRAINPLANE_AGENT_TOKEN", token, 1);
	/* the server puts a pilot in its job's own region, whatever it says */
	setenv("TRAINPLANE_AGENT_REGION", "slurm", 1);
	setenv("TRAINPLANE_AGENT_ZONE", "slurm-a", 1);
	setenv("TRAINPLANE_AGENT_DISCONNECT_POLICY", "fence", 1);
	char *wd = xasprintf("%s/trainplane-pilots/%s", dir, node);
	setenv("TRAINPLANE_AGENT_WORK_DIR", wd, 1);
	free(wd);
	if (cpus && *cpus)
		setenv("TRAINPLANE_AGENT_VCPUS", cpus, 1);
	/* One port for its one replica: a free one, on this host shared with
	 * other tasks. */
	int port = pilot_free_port();
	if (port <= 0) {
		snprintf(err, errlen, "--pilot: no free TCP port for the replica");
		return -1;
	}
	snprintf(buf, sizeof(buf), "%d-%d", port, port);
	setenv("TRAINPLANE_AGENT_PORT_RANGE", buf, 1);
	/* Slurm's GPU indices for the task: the node's GPU i is gpus[i]. */
	*gpu_map = NULL;
	*ngpus = 0;
	if (gpus && *gpus && strcmp(gpus, "NoDevFiles")) {
		*gpu_map = xcalloc(strlen(gpus) + 1, sizeof(**gpu_map));
		for (const char *p = gpus; *p;) {
			char *end;
			long v = strtol(p, &end, 10);
			if (end == p || v < 0 || v > 1023 || (*end && *end != ',')) {
				snprintf(err, errlen, "--pilot: CUDA_VISIBLE_DEVICES=%.64s is not a list of "
					 "GPU indices", gpus);
				return -1;
			}
			(*gpu_map)[(*ngpus)++] = (int)v;
			p = *end ? end + 1 : end;
		}
		snprintf(buf, sizeof(buf), "%zu", *ngpus);
		setenv("TRAINPLANE_AGENT_GPU_COUNT", buf, 1);
	} else {
		unsetenv("TRAINPLANE_AGENT_GPU_TYPE");
	}
	unsetenv("TRAINPLANE_PILOT_TOKEN");	/* not for the replicas */
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = getenv("TRAINPLANE_AGENT_CONFIG");
	enum agent_exit_mode exit_mode = AGENT_EXIT_LEAVE;
	bool pilot = false;
	int *gpu_map = NULL;
	size_t ngpus = 0;
	struct agent_config cfg;
	struct agent a;
	char err[1024];
	int rc;

	/* First: a signal that comes while the configuration loads (a test
	 * that stops the agent once it has said something) is an orderly stop
	 * too, never the default action's death. */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);	/* the terminal closed: an orderly stop too */
	signal(SIGPIPE, SIG_IGN);

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--config") && i + 1 < argc) {
			path = argv[++i];
		} else if (!strncmp(argv[i], "--config=", 9)) {
			path = argv[i] + 9;
		} else if (!strcmp(argv[i], "--stop-replicas-on-exit")) {
			exit_mode = AGENT_EXIT_STOP;
		} else if (!strcmp(argv[i], "--drain-on-exit")) {
			exit_mode = AGENT_EXIT_DRAIN;
		} else if (!strcmp(argv[i], "--pilot")) {
			pilot = true;
		} else if (!strcmp(argv[i], "--version")) {
			printf("trainplane-agent %s\n", AGENT_VERSION);
			return 0;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "trainplane-agent: unknown argument '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	if (pilot) {
		if (pilot_setup(&gpu_map, &ngpus, err, sizeof(err))) {
			fprintf(stderr, "trainplane-agent: %s\n", err);
			free(gpu_map);
			return 2;
		}
		exit_mode = AGENT_EXIT_STOP;	/* Slurm's cancel and time limit stop the replica */
	}
	if (path && !*path)
		path = NULL;
	if (agent_config_load(&cfg, path, err, sizeof(err))) {
		fprintf(stderr, "trainplane-agent: bad configuration: %s\n", err);
		agent_config_free(&cfg);
		return 2;
	}
	enum log_level level;
	if (!log_level_parse(cfg.log_level, &level))
		log_set_level(level);
	if (cfg.server_insecure)
		log_warn("server %s: plain HTTP off loopback (allow_insecure_http): the token crosses "
			 "the network in clear and anyone on the path can choose what this node runs; "
			 "serve HTTPS and use https://", cfg.server);

	if (agent_init(&a, &cfg, err, sizeof(err))) {
		log_error("%s", err);
		agent_release(&a);
		agent_config_free(&cfg);
		return 1;
	}
	a.exit_mode = exit_mode;
	a.pilot = pilot;
	a.gpu_map = gpu_map;
	a.ngpu_map = ngpus;
	a.pilot_started_usec = mono_usec();
	if (pilot)
		log_info("pilot %s: Slurm job %s, node %s, GPUs %s", cfg.node,
			 getenv("SLURM_JOB_ID") ?: "?", getenv("SLURMD_NODENAME") ?: "?",
			 ngpus ? getenv("CUDA_VISIBLE_DEVICES") : "none");
	rc = agent_run(&a, &quit);
	a.gpu_map = NULL;
	free(gpu_map);
	if (pilot && !quit)
		pilot_cleanup(cfg.work_dir);
	agent_release(&a);
	agent_config_free(&cfg);
	return rc;
}
