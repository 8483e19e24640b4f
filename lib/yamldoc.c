#include "yamldoc.h"

#include <errno.h>
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
