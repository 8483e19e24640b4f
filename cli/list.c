/*
 * list.c - the items of a paged list, filtered, sorted and cut as gcloud does.
 */
#include "list.h"

#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "client.h"
#include "common.h"
#include "format.h"

json_t *cli_list_all(const struct cmd *c, const char *base_path, const char *items_key)
{
	const struct list_flags *lf = &cli_list_flags;
	long limit = lf->limit ? atol(lf->limit) : -1;	/* checked by cli_parse */
	struct filter *filter = NULL;
	if (lf->filter) {
		char *err = NULL;
		filter = filter_parse(lf->filter, &err);
		if (!filter) {
			fprintf(stderr, "ERROR: (trainplane.%s) argument --filter: %s\n", c->name, err);
			free(err);
			exit(EXIT_USAGE);
		}
	}
	if (lf->sort_by) {	/* a bad key is refused before anything is sent */
		char *err = NULL;
		json_t *none = json_array();
		int bad = cli_sort(none, lf->sort_by, &err);
		json_decref(none);
		if (bad) {
			filter_free(filter);
			cli_usage_error(c, "%s", err);
		}
	}
	long fetch = lf->sort_by ? -1 : limit;
	json_t *all = json_array();
	char *token = NULL;
	do {
		struct strbuf path = STRBUF_INIT;
		sb_addf(&path, "%s?pageSize=%s", base_path, lf->page_size ? lf->page_size : "100");
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
			filter_free(filter);
			return NULL;
		}
		size_t i;
		json_t *j;
		json_array_foreach(json_object_get(r, items_key), i, j)
			if ((fetch < 0 || (long)json_array_size(all) < fetch) && (!filter || filter_match(filter, j)))
				json_array_append(all, j);
		const char *t = json_string_value(json_object_get(r, "nextPageToken"));
		if (t && *t && (fetch < 0 || (long)json_array_size(all) < fetch))
			token = xstrdup(t);
		json_decref(r);
	} while (token);
	filter_free(filter);
	if (lf->sort_by) {
		char *err = NULL;
		if (cli_sort(all, lf->sort_by, &err)) {	/* checked above */
			json_decref(all);
			cli_usage_error(c, "%s", err);
		}
		while (limit >= 0 && (long)json_array_size(all) > limit)
			json_array_remove(all, json_array_size(all) - 1);
	}
	return all;
}
