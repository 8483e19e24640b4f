/*
 * list.c - the items of a paged list, sorted and cut as gcloud does.
 */
#include "list.h"

#include <stdlib.h>

#include "cli.h"
#include "client.h"
#include "common.h"

json_t *cli_list_all(const struct cmd *c, const char *base_path, const char *items_key, const char *filter,
			const char *limit_s, const char *page_s, const char *sort_by)
{
	long limit = limit_s ? atol(limit_s) : -1;
	if (limit_s && limit < 1)
		cli_usage_error(c, "argument --limit: Value must be greater than or equal to 1; received: %s", limit_s);
	long fetch = sort_by ? -1 : limit;
	json_t *all = json_array();
	char *token = NULL;
	do {
		struct strbuf path = STRBUF_INIT;
		sb_addf(&path, "%s?pageSize=%s", base_path, page_s ? page_s : "100");
		if (filter) {
			char *f = cli_escape(filter);
			sb_addf(&path, "&filter=%s", f);
			free(f);
		}
		if (token) {
			char *t = cli_escape(token);
			sb_addf(&path, "&pageToken=%s", t);
			free(t);
		}
		json_t *r = cli_call("GET", sb_str(&path), NULL);
		sb_release(&path);
		free(token);
		token = NULL;
		if (!r) {
			json_decref(all);
			return NULL;
		}
		size_t i;
		json_t *j;
		json_array_foreach(json_object_get(r, items_key), i, j)
			if (fetch < 0 || (long)json_array_size(all) < fetch)
				json_array_append(all, j);
		const char *t = json_string_value(json_object_get(r, "nextPageToken"));
		if (t && *t && (fetch < 0 || (long)json_array_size(all) < fetch))
			token = xstrdup(t);
		json_decref(r);
	} while (token);
	if (sort_by) {
		char *err = NULL;
		if (cli_sort(all, sort_by, &err)) {
			json_decref(all);
			cli_usage_error(c, "%s", err);
		}
		while (limit >= 0 && (long)json_array_size(all) > limit)
			json_array_remove(all, json_array_size(all) - 1);
	}
	return all;
}
