/*
 * yamldoc.h - a YAML file read as one libyaml document, with the file,
 * line and column in every error (the catalog, the tokens file).
 */
#ifndef TP_YAMLDOC_H
#define TP_YAMLDOC_H

#include <stddef.h>
#include <jansson.h>
#include <yaml.h>

/*
 * Reads path into doc (caller yaml_document_delete()s it). Returns -1 with
 * err "path: cannot open: ..." or "path:line:col: problem" and doc untouched.
 * An empty file gives a document without a root node.
 */
int yaml_doc_load(const char *path, yaml_document_t *doc, char *err, size_t errlen);

/*
 * The same from len bytes of text held in memory (a file compiled into the
 * binary); name stands for the path in errors ("name:line:col: problem").
 */
int yaml_doc_load_text(const char *name, const char *text, size_t len, yaml_document_t *doc,
		       char *err, size_t errlen);

/*
 * Node n of doc as JSON (new reference), with the scalars a YAML reader
 * expects: plain true/false, null/~/empty, integers and numbers as such,
 * anything else (and every quoted scalar) a string. NULL with
 * "name:line:col: a key must be a string" in err when a key is not a scalar.
 */
json_t *yaml_doc_json(yaml_document_t *doc, yaml_node_t *n, const char *name, char *err,
		      size_t errlen);

#endif
