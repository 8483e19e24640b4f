/*
 * client.h - the CLI's calls to the server.
 *
 * One request at a time, to cli_endpoint (--endpoint, TRAINPLANE_ENDPOINT,
 * the endpoint file of `make run`, or http://127.0.0.1:8080/), with TRAINPLANE_TOKEN as a Bearer token when
 * set; an https endpoint is always verified, against cli_ca_file when set
 * (--ca-file, TRAINPLANE_CA_FILE), else the system's CAs. Errors are
 * printed as gcloud prints them, naming cli_cmd_name.
 */
#ifndef TP_CLI_CLIENT_H
#define TP_CLI_CLIENT_H

#include <jansson.h>

#include "strbuf.h"

extern const char *cli_endpoint;
/* Where cli_endpoint came from: "--endpoint", "TRAINPLANE_ENDPOINT", the endpoint file's path, or "the default". */
extern const char *cli_endpoint_source;

/*
 * The endpoint of the file `make run` writes, $TRAINPLANE_STATE_DIR/endpoint
 * (./var/endpoint): its first line, trimmed, in buf; *source is its path
 * (static storage). When the file is missing or empty: the default
 * http://127.0.0.1:8080/ and *source "the default".
 */
const char *cli_endpoint_file(char *buf, size_t size, const char **source);
extern const char *cli_ca_file;		/* NULL or "": the system's CAs */
extern const char *cli_cmd_name;	/* "trainplane.ai-platform.jobs.describe", for errors */

/*
 * Sends method path (body as JSON when not NULL) and appends the reply's
 * body to resp. Returns the HTTP status, or -1 (message printed) when the
 * server could not be reached.
 */
long cli_http(const char *method, const char *path, const json_t *body, struct strbuf *resp);
/* Calls the API; on success returns the parsed reply, else prints the error and returns NULL. */
json_t *cli_call(const char *method, const char *path, const json_t *body);
/* s percent-escaped for a path segment or query value. Caller frees. */
char *cli_escape(const char *s);
/* "/v1/" + a resource name, each segment escaped, then suffix (may be NULL). Caller frees. */
char *cli_name_path(const char *name, const char *suffix);
#endif
