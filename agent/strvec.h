/*
 * strvec.h - a growable NULL-terminated vector of owned strings (argv, envp).
 */
#ifndef TP_AGENT_STRVEC_H
#define TP_AGENT_STRVEC_H

#include <stddef.h>

#include "common.h"

struct strvec {
	char **v;	/* NULL-terminated once anything was pushed; NULL before */
	size_t n, cap;
};

#define STRVEC_INIT { NULL, 0, 0 }

/* Appends a copy of s. */
void strvec_push(struct strvec *sv, const char *s);
/* Appends s, taking ownership. */
void strvec_push_own(struct strvec *sv, char *s);
void strvec_pushf(struct strvec *sv, const char *fmt, ...) PRINTF_LIKE(2, 3);
/* Appends the words of s split on blanks (no quoting). NULL is fine. */
void strvec_split(struct strvec *sv, const char *s);
/* The vector, never NULL (an empty one is {NULL}); still owned by sv. */
char **strvec_get(struct strvec *sv);
void strvec_clear(struct strvec *sv);

#endif
