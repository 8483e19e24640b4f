/*
 * list.h - `list` commands: every page of a list.
 */
#ifndef TP_CLI_LIST_H
#define TP_CLI_LIST_H

#include <jansson.h>

#include "flags.h"

/*
 * Every item of a paged list, GET base_path?pageSize=..&filter=..&pageToken=..,
 * the items under items_key. --sort-by sorts them all before --limit cuts
 * (gcloud's order: sort, then limit). NULL when a call failed; a bad
 * --limit or --sort-by is a usage error of c (exits 2).
 */
json_t *cli_list_all(const struct cmd *c, const char *base_path, const char *items_key,
		     const char *filter, const char *limit_s, const char *page_s,
		     const char *sort_by);

#endif
