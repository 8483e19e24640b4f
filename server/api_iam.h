/*
 * api_iam.h - IAM on ml v1 jobs: getIamPolicy, setIamPolicy,
 * testIamPermissions. Route handlers for the table in routes.c.
 */
#ifndef TP_API_IAM_H
#define TP_API_IAM_H

#include "http.h"

void api_iam_get_policy(struct request *req);
void api_iam_set_policy(struct request *req);
void api_iam_test_permissions(struct request *req);

#endif
