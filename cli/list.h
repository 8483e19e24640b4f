/*
 * list.h - `list` commands: every page of a list, filtered, sorted and cut
 * as gcloud does (--filter, --sort-by, --limit, --page-size in
 * cli_list_flags).
 */
#ifndef TP_CLI_LIST_H
#define TP_CLI_LIST_H

#include <jansson.h>

#include "flags.h"

/*
 * Every item of a paged list, GET base_path?pageSize=..&pageToken=.., the
 * items under items_key, in gcloud's order: --filter (client-side, gcloud's
 * expressions: gcloud sends these lists no filter either), then --sort-by,
 * then --limit (without --sort-by, paging stops once --limit items
 * matched). NULL when a call failed; a bad --filter or --sort-by is a
 * usage error of c (exits 2).
 */
json_t *cli_list_all(const struct cmd *c, const char *base_path, const char *items_key);

#endif
