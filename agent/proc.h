/*
 * proc.h - whether a process we started is still that process: a pid and
 * its /proc start time name one process for all time, where a pid alone
 * may have been reused after an agent restart.
 */
#ifndef TP_AGENT_PROC_H
#define TP_AGENT_PROC_H

#include <stdbool.h>
#include <sys/types.h>

/* Whether pid is alive and still the process that started at start_ticks
 * (its /proc start time); zombies count as dead. */
bool proc_alive(pid_t pid, unsigned long long start_ticks);
/* /proc/<pid>/stat start time in clock ticks (also of a zombie), 0 if the
 * pid is gone. */
unsigned long long proc_start_ticks(pid_t pid);

#endif
