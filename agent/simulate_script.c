/*
 * simulate_script.c - the simulate runtime's scripts.
 */
#include "simulate_script.h"

#include <stdio.h>

int simulate_script_parse(const char *s, double *seconds, int *exit_code)
{
	double sec;
	int code, end = -1;

	if (!s)
		return -1;
	if ((sscanf(s, "run-%lfs-exit-%d%n", &sec, &code, &end) == 2 && end >= 0 && !s[end]) ||
	    (end = -1, sscanf(s, "fail-%d-after-%lfs%n", &code, &sec, &end) == 2 && end >= 0 &&
	     !s[end])) {
		/* both forms parsed */
	} else if (end = -1, sscanf(s, "succeed-after-%lfs%n", &sec, &end) == 1 && end >= 0 &&
		   !s[end]) {
		code = 0;
	} else {
		return -1;
	}
	if (!(sec >= 0 && sec <= 86400 * 365) || code < 0 || code > 255)
		return -1;
	*seconds = sec;
	*exit_code = code;
	return 0;
}
