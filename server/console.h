/*
 * console.h - the web console's files at /console/ (docs/console.md).
 */
#ifndef TP_CONSOLE_H
#define TP_CONSOLE_H

#include "http.h"

/* GET and HEAD /console/ (and GET /console: index.html) and /console/{file}. */
void api_console_get(struct request *req);

#endif
