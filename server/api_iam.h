/*
 * api_iam.h - IAM on ml v1 jobs: getIamPolicy, setIamPolicy,
 * testIamPermissions; and who the caller is. Route handlers for the table
 * in routes.c.
 */
#ifndef TP_API_IAM_H
#define TP_API_IAM_H

#include "http.h"

void api_iam_get_policy(struct request *req);
void api_iam_set_policy(struct request *req);
void api_iam_test_permissions(struct request *req);
/*
 * GET /trainplane/v1/whoami: the caller as the server sees it (auth mode,
 * token name, IAM member, role, projects) and the permissions its role
 * grants in those projects, so that a client (the web console) offers only
 * what it may do. The server still checks every call.
 */
void api_whoami_get(struct request *req);

#endif
