/*
 * strbuf.h - a growable, always NUL-terminated byte buffer.
 *
 * Usage:  struct strbuf sb = STRBUF_INIT; sb_addstr(&sb, "x"); ...;
 *         sb_release(&sb);  or  char *s = sb_detach(&sb);  (caller frees)
 */
#ifndef TP_STRBUF_H
#define TP_STRBUF_H

#include "common.h"

struct strbuf {
	char *buf;	/* never NULL after the first add; "" until then */
	size_t len;
	size_t alloc;
};

#define STRBUF_INIT { NULL, 0, 0 }

void sb_grow(struct strbuf *sb, size_t extra);
void sb_add(struct strbuf *sb, const void *data, size_t len);
void sb_addstr(struct strbuf *sb, const char *s);
void sb_addch(struct strbuf *sb, char c);
void sb_addf(struct strbuf *sb, const char *fmt, ...) PRINTF_LIKE(2, 3);
/* Appends s as a JSON string literal, quotes included. */
void sb_add_json_str(struct strbuf *sb, const char *s);
void sb_reset(struct strbuf *sb);
/* Drops what follows the first len bytes (len <= sb->len). */
void sb_setlen(struct strbuf *sb, size_t len);
/* Returns the buffer (caller frees) and leaves sb empty. */
char *sb_detach(struct strbuf *sb);
void sb_release(struct strbuf *sb);
/* The contents as a C string: "" for an untouched buffer. */
const char *sb_str(const struct strbuf *sb);

#endif
