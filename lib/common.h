/*
 * common.h - tiny macros shared by every module.
 *
 * Allocation helpers abort on out-of-memory: a control plane that cannot
 * allocate a few hundred bytes has no sane way to continue, and checking
 * every malloc() in request code hides the real error paths.
 */
#ifndef TP_COMMON_H
#define TP_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define MUST_CHECK __attribute__((warn_unused_result))
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a newly allocated string; caller frees. */
char *xasprintf(const char *fmt, ...) PRINTF_LIKE(1, 2);

/* mkdir -p: creates path and its missing parents (mode 0755). 0 or -1 (errno). */
int mkdir_p(const char *path) MUST_CHECK;

/* Microseconds since the Unix epoch, wall clock. */
int64_t now_usec(void);
/* Microseconds from a monotonic clock, for measuring intervals. */
int64_t mono_usec(void);

#endif
