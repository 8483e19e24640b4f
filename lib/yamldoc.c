#include "yamldoc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* Loads one document from a parser whose input is set; name is for errors. */
static int load(yaml_parser_t *parser, const char *name, yaml_document_t *doc, char *err,
		size_t errlen)
{
	if (yaml_parser_load(parser, doc))
		return 0;
	snprintf(err, errlen, "%s:%zu:%zu: %s%s%s", name, parser->problem_mark.line + 1,
		 parser->problem_mark.column + 1, parser->problem ? parser->problem : "YAML error",
		 parser->context ? " " : "", parser->context ? parser->context : "");
	return -1;
}

int yaml_doc_load(const char *path, yaml_document_t *doc, char *err, size_t errlen)
{
	yaml_parser_t parser;
	int rc;
	FILE *f = fopen(path, "rb");

	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	if (!yaml_parser_initialize(&parser)) {
		snprintf(err, errlen, "%s: cannot initialise the YAML parser", path);
		fclose(f);
		return -1;
	}
	yaml_parser_set_input_file(&parser, f);
	rc = load(&parser, path, doc, err, errlen);
	yaml_parser_delete(&parser);
	fclose(f);
	return rc;
}

int yaml_doc_load_text(const char *name, const char *text, size_t len, yaml_document_t *doc,
		       char *err, size_t errlen)
{
	yaml_parser_t parser;
	int rc;

	if (!yaml_parser_initialize(&parser)) {
		snprintf(err, errlen, "%s: cannot initialise the YAML parser", name);
		return -1;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	rc = load(&parser, name, doc, err, errlen);
	yaml_parser_delete(&parser);
	return rc;
}

static bool plain_int(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static json_t *scalar_json(const yaml_node_t *n)
{
	const char *s = (const char *)n->data.scalar.value;
	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return json_string(s);
	if (!strcmp(s, "true") || !strcmp(s, "True"))
		return json_true();
	if (!strcmp(s, "false") || !strcmp(s, "False"))
		return json_false();
	if (!strcmp(s, "null") || !strcmp(s, "~") || !*s)
		return json_null();
	if (plain_int(s))
		return json_integer(strtoll(s, NULL, 10));
	char *end;
	errno = 0;
	double d = strtod(s, &end);
	if (!*end && end != s && !errno)
		return json_real(d);
	return json_string(s);
}

json_t *yaml_doc_json(yaml_document_t *doc, yaml_node_t *n, const char *name, char *err,
		      size_t errlen)
{
	json_t *out;

	switch (n->type) {
	case YAML_SCALAR_NODE:
		return scalar_json(n);
	case YAML_SEQUENCE_NODE:
		out = json_array();
		for (yaml_node_item_t *it = n->data.sequence.items.start;
		     it < n->data.sequence.items.top; it++) {
			json_t *v = yaml_doc_json(doc, yaml_document_get_node(doc, *it), name, err, errlen);
			if (!v) {
				json_decref(out);
				return NULL;
			}
			json_array_append_new(out, v);
		}
		return out;
	case YAML_MAPPING_NODE:
		out = json_object();
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
		     p++) {
			yaml_node_t *k = yaml_document_get_node(doc, p->key);
			json_t *v = k->type != YAML_SCALAR_NODE ? NULL :
				    yaml_doc_json(doc, yaml_document_get_node(doc, p->value), name, err,
						  errlen);
			if (!v) {
				if (k->type != YAML_SCALAR_NODE)
					snprintf(err, errlen, "%s:%zu:%zu: a key must be a string", name,
						 k->start_mark.line + 1, k->start_mark.column + 1);
				json_decref(out);
				return NULL;
			}
			json_object_set_new(out, (const char *)k->data.scalar.value, v);
		}
		return out;
	default:
		return json_null();
	}
}
