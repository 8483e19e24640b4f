/*
 * proc.c - processes by pid and /proc start time.
 */
#include "proc.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* /proc/<pid>/stat: start time (field 22) and state (field 3). 0 or -1. */
static int proc_stat(pid_t pid, unsigned long long *start, char *state)
{
	char path[64], buf[1024];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* "pid (comm) S ..." - comm may hold spaces and parens: skip to the last ')'. */
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -1;
	*state = p[2];
	p += 2;
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p)
		return -1;
	*start = strtoull(p, NULL, 10);
	return 0;
}

unsigned long long proc_start_ticks(pid_t pid)
{
	unsigned long long start;
	char state;
	return pid > 0 && !proc_stat(pid, &start, &state) ? start : 0;
}

bool proc_alive(pid_t pid, unsigned long long start_ticks)
{
	unsigned long long start;
	char state;
	if (pid <= 0 || proc_stat(pid, &start, &state))
		return false;
	return start == start_ticks && state != 'Z' && state != 'X';
}
