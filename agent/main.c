/*
 * main.c - trainplane-agent: the node agent.
 *
 *   trainplane-agent [--config FILE] [--stop-replicas-on-exit | --drain-on-exit]
 *
 * Exit status: 0 after SIGTERM/SIGINT/SIGHUP, 1 on a fatal runtime error, 2
 * on bad configuration or usage.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "agent_config.h"
#include "log.h"
#include "sync_msg.h"

static volatile sig_atomic_t quit;

static void on_signal(int sig)
{
	(void)sig;
	if (quit < 2)
		quit++;	/* a second signal cuts a drain short */
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
		"  By default the replicas keep running and a restarted agent re-adopts them.\n"
		"Every key can be set with TRAINPLANE_AGENT_<KEY>; see agent/README.md.\n");
}

int main(int argc, char **argv)
{
	const char *path = getenv("TRAINPLANE_AGENT_CONFIG");
	enum agent_exit_mode exit_mode = AGENT_EXIT_LEAVE;
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
	rc = agent_run(&a, &quit);
	agent_release(&a);
	agent_config_free(&cfg);
	return rc;
}
