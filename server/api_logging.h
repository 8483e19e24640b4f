/*
 * api_logging.h - Cloud Logging v2 entries:list for job logs.
 */
#ifndef TP_API_LOGGING_H
#define TP_API_LOGGING_H

#include "http.h"

void api_logging_entries_list(struct request *req);

#endif
