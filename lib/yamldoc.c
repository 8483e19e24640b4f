#include "yamldoc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int yaml_doc_load(const char *path, yaml_document_t *doc, char *err, size_t errlen)
{
	yaml_parser_t parser;
	int rc = -1;
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
	if (yaml_parser_load(&parser, doc))
		rc = 0;
	else
		snprintf(err, errlen, "%s:%zu:%zu: %s%s%s", path, parser.problem_mark.line + 1,
			 parser.problem_mark.column + 1, parser.problem ? parser.problem : "YAML error",
			 parser.context ? " " : "", parser.context ? parser.context : "");
	yaml_parser_delete(&parser);
	fclose(f);
	return rc;
}
