/*
 * console_assets.h - the web console's files, compiled in: the table
 * tools/embed_console.sh generates from console/ at build time
 * (build/gen/console_assets.c). server/console.c serves them.
 */
#ifndef TP_CONSOLE_ASSETS_H
#define TP_CONSOLE_ASSETS_H

#include <stddef.h>

struct console_asset {
	const char *name;		/* "index.html": a file name, no folder */
	const char *content_type;	/* "text/html; charset=utf-8" */
	const char *etag;		/* "\"0123456789abcdef\"": of its bytes */
	const unsigned char *data;
	size_t len;
};

extern const struct console_asset console_assets[];
extern const size_t console_assets_count;

#endif
